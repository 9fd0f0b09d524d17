package sample

import (
	"encoding/json"
	"testing"

	"github.com/tapedeck/tapedeck/venue/venuesample"
)

// TestSummaryHashVectors checks the book hash against the two real REST
// summaries of polypy's 2025-10 capture, whose hashes the venue computed.
func TestSummaryHashVectors(t *testing.T) {
	for i, line := range realLines("polypy_hash_vector_rest_book_summaries_2025-10.ndjson") {
		var s struct {
			Market    string      `json:"market"`
			AssetID   string      `json:"asset_id"`
			Timestamp json.Number `json:"timestamp"`
			Hash      string      `json:"hash"`
			Bids      []struct{ Price, Size string }
			Asks      []struct{ Price, Size string }
			TickSize  string          `json:"tick_size"`
			Extra     json.RawMessage `json:"-"`
		}
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatal(err)
		}
		conv := func(ls []struct{ Price, Size string }) []venuesample.Level {
			var out []venuesample.Level
			for _, l := range ls {
				out = append(out, venuesample.Level{Px: venuesample.MustDec(l.Price, pmPx), Sz: venuesample.MustDec(l.Size, pmSz)})
			}
			return out
		}
		ts, _ := s.Timestamp.Int64()
		g := &pmGen{e: venuesample.NewSession(venuesample.Options{}, "polymarket", nil)}
		m := &pmMarket{spec: pmMarketSpec{cond: s.Market}, tick: venuesample.MustDec(s.TickSize, pmPx), ltp: -1} // 2025-10: nine fields
		tok := &pmToken{id: s.AssetID, book: venuesample.Book{Bids: conv(s.Bids), Asks: conv(s.Asks)}}
		var h [40]byte
		g.hash(&h, m, tok, ts)
		if string(h[:]) != s.Hash {
			t.Errorf("vector %d: hash %s, want %s", i, h[:], s.Hash)
		}
	}
}
