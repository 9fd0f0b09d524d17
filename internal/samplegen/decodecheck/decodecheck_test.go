// Package decodecheck_test runs the generated sessions through the venue
// decoders. It lives apart from samplegen so that the generator's own tests
// do not depend on the venue packages.
package decodecheck_test

import (
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/samplegen"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// replay feeds a session through a venue decoder the way the replayer does:
// frames decoded, losses invalidate, a final Flush. REST book summaries are
// decoded too: they carry the hash fields WebSocket books lack.
func replay(t *testing.T, d venue.Decoder, recs []datasets.Record) venue.Stats {
	t.Helper()
	var out venue.Frame
	for i, r := range recs {
		switch {
		case r.Kind == datasets.KindFrame || r.Kind == datasets.KindRESTResponse:
			if err := d.Decode(r.Payload, r.WallNs, &out); err != nil {
				t.Fatalf("record %d: %v\n%.300s", i, err, r.Payload)
			}
		case r.Kind.IsLoss():
			d.Flush(&out)
			d.Invalidate()
		}
	}
	d.Flush(&out)
	return d.Stats()
}

// TestPolymarketDecoderAgrees runs the generated session through the
// polymarket decoder: every frame decodes, every hash matches (the REST
// summaries recorded first give it min_order_size and neg_risk), and every
// batch's best_bid/best_ask matches its book.
func TestPolymarketDecoderAgrees(t *testing.T) {
	recs := generate(t, "polymarket")
	d := polymarket.NewDecoder()
	st := replay(t, d, recs)
	if st.Errors != 0 || st.UnknownTypes != 0 {
		t.Fatalf("errors %d, unknown types %d", st.Errors, st.UnknownTypes)
	}
	if st.HashChecked < 1000 || st.HashOK != st.HashChecked {
		t.Errorf("hashes: %d of %d match", st.HashOK, st.HashChecked)
	}
	if st.TopChecked < 1000 || st.TopMismatch != 0 {
		t.Errorf("top of book: %d mismatches in %d checks", st.TopMismatch, st.TopChecked)
	}
	if st.CrossedBatches != 0 {
		t.Errorf("%d batches ended crossed; matches must uncross within their batch", st.CrossedBatches)
	}
	for _, typ := range []venue.EventType{venue.EventSnapshot, venue.EventLevel, venue.EventTrade, venue.EventTickSize, venue.EventControl} {
		if st.Events[typ] == 0 {
			t.Errorf("no %s events", typ)
		}
	}
	for _, id := range samplegen.Instruments("polymarket") {
		if b := d.Book(id); b == nil || !b.Valid() || b.Len(book.Bid) == 0 || b.Len(book.Ask) == 0 {
			t.Errorf("%s: no valid two-sided book at the end", id)
		}
	}
}

func TestHyperliquidDecoderAgrees(t *testing.T) {
	recs := generate(t, "hyperliquid")
	st := replay(t, hyperliquid.NewDecoder(), recs)
	if st.Errors != 0 || st.UnknownTypes != 0 {
		t.Fatalf("errors %d, unknown types %d", st.Errors, st.UnknownTypes)
	}
	for _, typ := range []venue.EventType{venue.EventSnapshot, venue.EventTrade, venue.EventQuote,
		venue.EventMids, venue.EventAssetCtx, venue.EventControl} {
		if st.Events[typ] == 0 {
			t.Errorf("no %s events", typ)
		}
	}
}

type memAppender struct{ recs []datasets.Record }

func (m *memAppender) Append(r *datasets.Record) (uint64, error) {
	c := *r
	c.Payload = append([]byte(nil), r.Payload...)
	m.recs = append(m.recs, c)
	return uint64(len(m.recs)), nil
}

// generate returns the shipped session of venue.
func generate(t *testing.T, venue string) []datasets.Record {
	t.Helper()
	var m memAppender
	if _, err := samplegen.Generate(venue, samplegen.Options{Seed: samplegen.ShippedSeed}, &m); err != nil {
		t.Fatal(err)
	}
	return m.recs
}
