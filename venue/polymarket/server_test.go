package polymarket

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

func TestAssetIDs(t *testing.T) {
	for _, tt := range []struct {
		frame string
		ids   []string
	}{
		{`{"asset_id":"1","x":{"asset_id" : "2"}}`, []string{"1", "2"}},
		{`[{"event_type":"new_market","assets_ids":["3", "4"]},{"asset_id":"5"}]`, []string{"3", "4", "5"}},
		{`{"market":"0x1","asset":"no","asset_idx":"no"}`, nil},
		{`{"asset_id":"6`, nil},
	} {
		var got []string
		assetIDs([]byte(tt.frame), func(id []byte) bool { got = append(got, string(id)); return true })
		if !slices.Equal(got, tt.ids) {
			t.Errorf("%s: %q, want %q", tt.frame, got, tt.ids)
		}
	}
}

// TestServerSession: subscribe, a duplicate, unsubscribe, PING, an oversized
// frame, and what a session selects.
func TestServerSession(t *testing.T) {
	s := Driver.Server().NewSession()
	r := s.Handle([]byte(`{"assets_ids":["1","2"],"type":"market"}`), false)
	if len(r.Added) != 2 || r.Added[0].Key != "1" || len(r.Answers) != 0 || r.Close {
		t.Fatalf("subscribe: %+v", r)
	}
	if r := s.Handle([]byte(`{"assets_ids":["2","3"],"operation":"subscribe"}`), false); len(r.Added) != 1 || r.Added[0].Instrument != "3" {
		t.Fatalf("dynamic subscribe: %+v", r)
	}
	if r := s.Handle([]byte(`{"assets_ids":["1"],"operation":"unsubscribe"}`), false); len(r.Removed) != 1 {
		t.Fatalf("unsubscribe: %+v", r)
	}
	if r := s.Handle([]byte("PING"), false); len(r.Answers) != 1 || string(r.Answers[0]) != "PONG" {
		t.Fatalf("PING: %+v", r)
	}
	ids := make([]string, MaxSubscribeIDs+1)
	for i := range ids {
		ids[i] = "9"
	}
	if r := s.Handle(appendSubscribe(nil, ids), false); !r.Close {
		t.Fatalf("%d ids: %+v, want the socket closed", len(ids), r)
	}
	for _, c := range []struct {
		frame string
		want  bool
	}{
		{`{"event_type":"book","asset_id":"2"}`, true},
		{`{"event_type":"book","asset_id":"1"}`, false},
		{`[{"asset_id":"1"},{"asset_id":"3"}]`, true},
		{`{"event_type":"tick_size_change"}`, true},
		{`PONG`, false},
	} {
		if got := s.Wants([]byte(c.frame)); got != c.want {
			t.Errorf("Wants(%s) = %v", c.frame, got)
		}
	}
}

// TestREST: the Gamma filters and pagination, and the book summaries, as a
// test exchange serves them.
func TestREST(t *testing.T) {
	var asked [][]string
	h := Driver.Server().REST(venue.RESTDocs{
		Listing: func(name string) []byte {
			if name != "markets" {
				return nil
			}
			return []byte(`[{"slug":"a","conditionId":"0x1"},{"slug":"b","conditionId":"0x2"},{"slug":"c","conditionId":"0x3"}]`)
		},
		Book: func(id string) []byte {
			if id == "2" {
				return nil
			}
			return []byte(`{"asset_id":"` + id + `"}`)
		},
		BookRequest: func(_ context.Context, ids []string) int { asked = append(asked, ids); return 0 },
	})
	get := func(method, target, body string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	for _, c := range []struct {
		method, target, body string
		code                 int
		want                 string
	}{
		{"GET", "/markets?slug=b", "", 200, `[{"slug":"b","conditionId":"0x2"}]`},
		{"GET", "/markets?condition_ids=0x3", "", 200, `[{"slug":"c","conditionId":"0x3"}]`},
		{"GET", gammaMarketsPath(1, 1), "", 200, `[{"slug":"b","conditionId":"0x2"}]`},
		{"POST", BooksPath, string(booksRequest([]string{"1", "2", "3"})), 200, `[{"asset_id":"1"},{"asset_id":"3"}]`},
		{"GET", bookPath("2"), "", 404, `{"error":"No orderbook exists for the requested token id"}`},
		{"GET", "/info", "", 404, "404 page not found"},
	} {
		if code, body := get(c.method, c.target, c.body); code != c.code || body != c.want {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.target, code, body, c.code, c.want)
		}
	}
	if len(asked) != 2 || len(asked[0]) != 3 {
		t.Errorf("book requests seen: %v", asked)
	}
}
