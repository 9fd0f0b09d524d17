package replayer

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// A POST /books body whose summaries include the real empty-last-trade-price
// one and a bad one: the good summaries apply (the empty-ltp one verifies
// against its own hash), the bad one is named in the summary's REST errors.
// A later rejected WebSocket snapshot invalidates its book, which reaches
// subscribers as a venue.EventReject with the invalid book.
func TestRejectedElementsStandAloneAndInvalidate(t *testing.T) {
	ws := fixtureLines(t, "polypy_hash_vector_ws_2025-10.ndjson")
	rest := fixtureLines(t, "polypy_hash_vector_rest_book_summaries_2025-10.ndjson")
	empty := fixtureLines(t, "nautilus_rest_book_empty_ltp_2026-08.ndjson")[0]
	bad := bytes.Replace(rest[0], []byte(`"asset_id":"`), []byte(`"asset_id":"77`), 1)
	bad = bytes.Replace(bad, []byte(`"bids":[`), []byte(`"bids":[{"price":"0.5","size":"-1"},`), 1)
	body := "[" + string(rest[0]) + "," + string(empty) + "," + string(bad) + "]"
	dupBook := bytes.Replace(ws[0], []byte(`"asks":[`), []byte(`"asks":[{"price":"0.9","size":"1"},{"price":"0.90","size":"2"},`), 1)
	ms := int64(time.Millisecond)
	dir := writeDataset(t, venue.Polymarket, []rec{
		frame(0, fixtureBaseNs, string(ws[0])),
		{datasets.KindRESTResponse, 0, fixtureBaseNs + ms, body},
		frame(0, fixtureBaseNs+2*ms, string(dupBook)),
	})
	r, err := New([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var snapshots, rejects int
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		switch {
		case e.Decoded == nil:
		case e.Decoded.Type == venue.EventSnapshot && e.Kind == datasets.KindRESTResponse:
			snapshots++
		case e.Decoded.Type == venue.EventReject:
			if e.Channel != ChannelBook {
				t.Errorf("reject on channel %v", e.Channel)
			}
			if e.Kind == datasets.KindFrame {
				rejects++
				if e.Book == nil || e.Book.Valid() || !e.Quality.AfterGap {
					t.Errorf("reject event for %s: book %v quality %+v", e.Instrument, e.Book, e.Quality)
				}
			}
		}
		return nil
	}))
	s, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snapshots != 2 {
		t.Fatalf("%d REST snapshots delivered, want 2", snapshots)
	}
	if s.RESTUndecoded != 1 || len(s.FirstRESTErrors) != 1 || !strings.Contains(s.FirstRESTErrors[0].Err, "asset 77") {
		t.Fatalf("REST errors %d %+v", s.RESTUndecoded, s.FirstRESTErrors)
	}
	if s.DecodeErrors != 1 || rejects != 1 || s.BooksInvalidated != 1 || s.RejectedMessages != 2 {
		t.Fatalf("decode errors %d, reject events %d, invalidated %d, rejected %d", s.DecodeErrors, rejects, s.BooksInvalidated, s.RejectedMessages)
	}
	if s.HashChecked < 2 || s.HashOK != s.HashChecked {
		t.Fatalf("hash checks %d ok of %d", s.HashOK, s.HashChecked)
	}
	for _, b := range r.Books() {
		want := !strings.HasPrefix(b.Instrument, "9402236") // the dup snapshot's asset
		if b.Book.Valid() != want {
			t.Fatalf("%s valid %v", b.Instrument, b.Book.Valid())
		}
	}
}
