package polymarket

// The REST side of the venue as a test exchange serves it
// (venue.ServerProtocol.REST): Gamma's GET /markets with its slug,
// condition_ids, offset and limit filters, and the CLOB's book summaries,
// POST /books (an array of {"token_id":…}) and GET /book?token_id=….

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/tapedeck/tapedeck/venue"
)

func (server) REST(docs venue.RESTDocs) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/markets", func(w http.ResponseWriter, r *http.Request) { serveMarkets(docs, w, r) })
	mux.HandleFunc("/books", func(w http.ResponseWriter, r *http.Request) { serveBooks(docs, w, r) })
	mux.HandleFunc("/book", func(w http.ResponseWriter, r *http.Request) { serveBooks(docs, w, r) })
	return mux
}

func serveMarkets(docs venue.RESTDocs, w http.ResponseWriter, r *http.Request) {
	var markets []byte
	if docs.Listing != nil {
		markets = docs.Listing("markets")
	}
	if markets == nil {
		http.NotFound(w, r)
		return
	}
	var all []json.RawMessage
	if err := json.Unmarshal(markets, &all); err != nil {
		http.Error(w, "bad test market list", http.StatusInternalServerError)
		return
	}
	q := r.URL.Query()
	var out []json.RawMessage
	for _, m := range all {
		var f struct {
			Slug        string `json:"slug"`
			ConditionID string `json:"conditionId"`
		}
		_ = json.Unmarshal(m, &f)
		if v := q.Get("slug"); v != "" && v != f.Slug {
			continue
		}
		if v := q.Get("condition_ids"); v != "" && v != f.ConditionID {
			continue
		}
		out = append(out, m)
	}
	off, _ := strconv.Atoi(q.Get("offset"))
	lim, err := strconv.Atoi(q.Get("limit"))
	if err != nil || lim <= 0 {
		lim = len(out)
	}
	off = min(max(off, 0), len(out))
	out = out[off:min(off+lim, len(out))]
	if out == nil {
		out = []json.RawMessage{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func serveBooks(docs venue.RESTDocs, w http.ResponseWriter, r *http.Request) {
	var ids []string
	batch := r.URL.Path == BooksPath
	switch {
	case batch && r.Method == http.MethodPost:
		var req []struct {
			TokenID string `json:"token_id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"Invalid payload"}`, http.StatusBadRequest)
			return
		}
		for _, q := range req {
			ids = append(ids, q.TokenID)
		}
	case !batch && r.Method == http.MethodGet:
		ids = []string{r.URL.Query().Get("token_id")}
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if docs.BookRequest != nil {
		if status := docs.BookRequest(r.Context(), ids); status != 0 {
			w.WriteHeader(status)
			w.Write([]byte(`{"error":"test exchange: failing book requests"}`))
			return
		}
	}
	book := func(id string) []byte {
		if docs.Book == nil {
			return nil
		}
		return docs.Book(id)
	}
	if !batch {
		b := book(ids[0])
		if b == nil {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"No orderbook exists for the requested token id"}`))
			return
		}
		w.Write(b)
		return
	}
	out := []byte{'['}
	n := 0
	for _, id := range ids {
		if b := book(id); b != nil {
			if n > 0 {
				out = append(out, ',')
			}
			out = append(out, b...)
			n++
		}
	}
	w.Write(append(out, ']'))
}
