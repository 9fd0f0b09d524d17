package hyperliquid

// The REST side of the venue as a test exchange serves it
// (venue.ServerProtocol.REST): POST /info with {"type":"meta"} or
// {"type":"spotMeta"}.

import (
	"encoding/json"
	"net/http"

	"github.com/tapedeck/tapedeck/venue"
)

func (server) REST(docs venue.RESTDocs) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/info", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			Type string `json:"type"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var doc []byte
		if docs.Listing != nil && (req.Type == "meta" || req.Type == "spotMeta") {
			doc = docs.Listing(req.Type)
		}
		if doc == nil {
			http.Error(w, "unknown type", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})
	return mux
}
