package hyperliquid

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

// TestServerSession: the venue's answers (PROTOCOLS.md §2) and what a session
// selects, on real frames.
func TestServerSession(t *testing.T) {
	s := Driver.Server().NewSession()
	for _, c := range []struct{ msg, want string }{
		{`{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC"}}`,
			`{"channel":"subscriptionResponse","data":{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC","nSigFigs":null,"mantissa":null}}}`},
		{`{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC","nSigFigs":5}}`,
			`{"channel":"error","data":"Already subscribed: {\"type\":\"l2Book\",\"coin\":\"BTC\",\"nSigFigs\":5}"}`},
		{`{"method":"subscribe","subscription":{"type":"trades","coin":"ETH"}}`,
			`{"channel":"subscriptionResponse","data":{"method":"subscribe","subscription":{"type":"trades","coin":"ETH"}}}`},
		{`{"method":"unsubscribe","subscription":{"type":"trades","coin":"ETH"}}`,
			`{"channel":"subscriptionResponse","data":{"method":"unsubscribe","subscription":{"type":"trades","coin":"ETH"}}}`},
		{`{"method":"unsubscribe","subscription":{"type":"trades","coin":"ETH"}}`,
			`{"channel":"error","data":"Already unsubscribed: {\"type\":\"trades\",\"coin\":\"ETH\"}"}`},
		{`{"method":"ping"}`, `{"channel":"pong"}`},
		{`nonsense`, `{"channel":"error","data":"Error parsing JSON into valid websocket request: nonsense"}`},
	} {
		r := s.Handle([]byte(c.msg), false)
		if len(r.Answers) != 1 || string(r.Answers[0]) != c.want || r.Close {
			t.Errorf("%s:\n got %q\nwant %s", c.msg, r.Answers, c.want)
		}
	}
	r := s.Handle([]byte(`{"method":"subscribe","subscription":{"type":"bbo","coin":"SOL"}}`), false)
	if len(r.Added) != 1 || r.Added[0] != (venueTopic{Channel: "bbo", Instrument: "SOL", Key: "bbo@SOL"}) {
		t.Errorf("added %+v", r.Added)
	}
	lines := strings.Split(strings.TrimSpace(string(mustRead(t, "testdata/order_book_server_ack_l2book_trades_2025-07.ndjson"))), "\n")
	ack, book, trades := lines[0], lines[1], lines[2]
	if s.Wants([]byte(ack)) || !s.Wants([]byte(book)) || s.Wants([]byte(trades)) || s.Wants([]byte(pongText)) {
		t.Error("Wants: want the BTC book only")
	}
}

type venueTopic = venue.Topic

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestREST: POST /info answers meta and spotMeta as a test exchange serves
// them, and nothing else.
func TestREST(t *testing.T) {
	h := Driver.Server().REST(venue.RESTDocs{Listing: func(name string) []byte { return []byte(`{"doc":"` + name + `"}`) }})
	for _, c := range []struct {
		method, body string
		code         int
		want         string
	}{
		{"POST", metaRequest, 200, `{"doc":"meta"}`},
		{"POST", spotMetaRequest, 200, `{"doc":"spotMeta"}`},
		{"POST", `{"type":"l2Book"}`, 400, "unknown type"},
		{"GET", "", 405, "POST only"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, "/info", strings.NewReader(c.body)))
		if got := strings.TrimSpace(rec.Body.String()); rec.Code != c.code || got != c.want {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.body, rec.Code, got, c.code, c.want)
		}
	}
}
