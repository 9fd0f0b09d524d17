package fakeexchange

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// TestDerivedHashBook derives the WebSocket book PolymarketHashConfig sends
// from the real REST summary again, as the venue hashes it, and checks that
// the embedded frame is that book byte for byte and that the decoder
// verifies its hash.
func TestDerivedHashBook(t *testing.T) {
	sum := polymarketSummary().Frame
	var raw struct {
		Market       string          `json:"market"`
		AssetID      string          `json:"asset_id"`
		Timestamp    json.Number     `json:"timestamp"` // a bare number in this body
		Bids         json.RawMessage `json:"bids"`
		Asks         json.RawMessage `json:"asks"`
		MinOrderSize string          `json:"min_order_size"`
		TickSize     string          `json:"tick_size"`
		NegRisk      bool            `json:"neg_risk"`
	}
	if err := json.Unmarshal(sum, &raw); err != nil {
		t.Fatal(err)
	}
	d := polymarket.NewDecoder()
	if err := d.Decode(sum, 0, nil); err != nil {
		t.Fatal(err)
	}
	ms, err := raw.Timestamp.Int64()
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(ms+1000, 10) // one second after the summary
	h := polymarket.BookHash(nil, polymarket.HashFields{Market: raw.Market, AssetID: raw.AssetID, Timestamp: ts,
		MinOrderSize: raw.MinOrderSize, TickSize: raw.TickSize, NegRisk: raw.NegRisk}, d.Book(raw.AssetID))
	// Keys as in the real 2025-10 book of the same token
	// (polypy_hash_vector_ws_2025-10): no min_order_size, tick_size or neg_risk.
	want := fmt.Appendf(nil, `{"event_type":"book","market":%q,"asset_id":%q,"timestamp":%q,"hash":%q,"bids":%s,"asks":%s}`,
		raw.Market, raw.AssetID, ts, h, raw.Bids, raw.Asks)
	got := PolymarketHashConfig().Snapshot.Frame
	if !bytes.Equal(got, want) {
		t.Fatalf("embedded book is not the one derived from the summary:\n got %s\nwant %s", got, want)
	}

	// The decoder, told the summary's instrument facts, verifies both hashes.
	v := polymarket.NewDecoder(polymarket.WithHashCheck(true))
	var f venue.Frame
	for _, frame := range [][]byte{sum, got} {
		if err := v.Decode(frame, 0, &f); err != nil {
			t.Fatal(err)
		}
	}
	if q := v.Quality(PolymarketHashAsset); q.HashChecked != 2 || q.HashOK != 2 {
		t.Fatalf("hashes checked %d, ok %d; want 2 and 2", q.HashChecked, q.HashOK)
	}
}

func TestWithoutHashes(t *testing.T) {
	cfg := WithoutHashes(PolymarketConfig())
	frames := [][]byte{cfg.Snapshot.Frame, cfg.Summary.Frame}
	for _, f := range cfg.Feed["market"] {
		frames = append(frames, f.Frame)
	}
	n := 0
	for _, f := range frames {
		if hashValue.Match(f) && !bytes.Contains(f, []byte(`"hash":""`)) {
			t.Errorf("a hash left: %.120s", f)
		}
		n += bytes.Count(f, []byte(`"hash":""`))
	}
	if n < 5 || !bytes.Contains(PolymarketConfig().Summary.Frame, []byte(`"hash":"b9ee8c0d`)) {
		t.Errorf("%d hashes blanked; the original config must keep its own", n)
	}
	tx := 0
	for _, f := range cfg.Feed["market"] {
		tx += bytes.Count(f.Frame, []byte(`"transaction_hash":"1234"`))
	}
	if tx == 0 {
		t.Error("a trade's transaction_hash was blanked too")
	}
}
