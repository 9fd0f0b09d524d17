package replayer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// fixtureBaseNs is the receive time given to the first fixture frame; the
// fixtures carry no receive times of their own.
const fixtureBaseNs = int64(1_761_179_883_000_000_000)

// fixtureLines returns the lines of testdata files, in order.
func fixtureLines(t testing.TB, files ...string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) > 0 {
				out = append(out, slices.Clone(sc.Bytes()))
			}
		}
	}
	return out
}

// fixtureDataset writes frames into a dataset, 1 ms apart from fixtureBaseNs.
func fixtureDataset(t testing.TB, venueName string, frames [][]byte) string {
	t.Helper()
	var recs []rec
	for i, f := range frames {
		recs = append(recs, frame(0, fixtureBaseNs+int64(i)*int64(time.Millisecond), string(f)))
	}
	return writeDataset(t, venueName, recs)
}

// restSummary is a Polymarket REST GET /book body.
type restSummary struct {
	AssetID string `json:"asset_id"`
	Hash    string `json:"hash"`
	Bids    []struct{ Price, Size string }
	Asks    []struct{ Price, Size string }
}

// restLevels returns a REST side best-first at the Polymarket scale.
func restLevels(t *testing.T, side []struct{ Price, Size string }, bid bool) []book.Level {
	t.Helper()
	var out []book.Level
	for _, l := range side {
		p, err := book.ParseDecimal([]byte(l.Price), polymarket.Scale.PriceDecimals)
		if err != nil {
			t.Fatal(err)
		}
		s, err := book.ParseDecimal([]byte(l.Size), polymarket.Scale.SizeDecimals)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, book.Level{Price: p, Size: s})
	}
	slices.SortFunc(out, func(a, b book.Level) int {
		if bid {
			return int(b.Price - a.Price)
		}
		return int(a.Price - b.Price)
	})
	return out
}

func sameLevels(a, b []book.Level) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Price != b[i].Price || a[i].Size != b[i].Size {
			return false
		}
	}
	return true
}

// TestPolymarketReplayReproducesRESTSummaries replays a real initial book
// and two real price_change frames (polypy 2025-10) and compares the book
// after each price_change with the venue's REST summary taken right then.
func TestPolymarketReplayReproducesRESTSummaries(t *testing.T) {
	frames := fixtureLines(t, "polypy_hash_vector_ws_2025-10.ndjson")
	var summaries []restSummary
	for _, l := range fixtureLines(t, "polypy_hash_vector_rest_book_summaries_2025-10.ndjson") {
		var s restSummary
		if err := json.Unmarshal(l, &s); err != nil {
			t.Fatal(err)
		}
		summaries = append(summaries, s)
	}
	dir := fixtureDataset(t, venue.Polymarket, frames)
	for i, want := range summaries {
		// Frame i+1 is the price_change the summary follows.
		at := fixtureBaseNs + int64(i+1)*int64(time.Millisecond)
		r, err := New([]string{dir}, WithWindow(0, at+1))
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s.DecodeErrors != 0 {
			t.Fatalf("decode errors: %+v", s.FirstDecodeErrors)
		}
		var got *BookState
		books := r.Books()
		for k := range books {
			if books[k].Instrument == want.AssetID {
				got = &books[k]
			}
		}
		if got == nil {
			t.Fatalf("summary %d: no book for %s in %+v", i, want.AssetID, books)
		}
		bids := got.Book.Top(book.Bid, nil, -1)
		asks := got.Book.Top(book.Ask, nil, -1)
		if !sameLevels(bids, restLevels(t, want.Bids, true)) || !sameLevels(asks, restLevels(t, want.Asks, false)) {
			t.Fatalf("summary %d: book differs from REST\nbids %v\nasks %v", i, bids, asks)
		}
		if !got.Book.Valid() || got.Book.Crossed() {
			t.Fatalf("summary %d: valid %v crossed %v", i, got.Book.Valid(), got.Book.Crossed())
		}
	}
}

// TestPolymarketStreamReplays runs the semi-synthetic single-asset stream
// (initial dump array, price_changes, a trade, a later book, a tick size
// change) and checks the event mix and that nothing was rejected.
func TestPolymarketStreamReplays(t *testing.T) {
	frames := fixtureLines(t, "polypy_semisynthetic_stream_single_asset.ndjson")
	dir := fixtureDataset(t, venue.Polymarket, frames)
	r, err := New([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var trades, ticks int
	r.Subscribe(Key{Venue: venue.Polymarket, Channel: ChannelTrades}, SubscriberFunc(func(e *Event) error {
		trades++
		if e.Decoded.Type != venue.EventTrade || e.Scale != polymarket.Scale {
			t.Errorf("trade channel got %v", e.Decoded.Type)
		}
		return nil
	}))
	r.Subscribe(Key{Channel: ChannelOther}, SubscriberFunc(func(e *Event) error {
		if e.Decoded.Type == venue.EventTickSize {
			ticks++
		}
		return nil
	}))
	s, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.DecodeErrors != 0 || s.Frames != uint64(len(frames)) {
		t.Fatalf("frames %d, decode errors %+v", s.Frames, s.FirstDecodeErrors)
	}
	// The initial book may carry tick_size too; the subscriber must see
	// every tick size event the decoder yielded, the last frame's included.
	if trades != 1 || ticks == 0 || uint64(ticks) != s.Events["tick_size"] || s.Events["snapshot"] != 2 || s.Instruments != 1 {
		t.Fatalf("trades %d ticks %d summary events %v instruments %d", trades, ticks, s.Events, s.Instruments)
	}
}

// TestHyperliquidReplay replays real Hyperliquid frames and checks the book
// after the l2Book snapshot is the snapshot, best first.
func TestHyperliquidReplay(t *testing.T) {
	frames := fixtureLines(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")
	dir := fixtureDataset(t, venue.Hyperliquid, frames)
	r, err := New([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var snaps int
	r.Subscribe(Key{Venue: venue.Hyperliquid, Instrument: "BTC", Channel: ChannelBook}, SubscriberFunc(func(e *Event) error {
		snaps++
		return nil
	}))
	s, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.DecodeErrors != 0 || snaps != 1 || s.Events["trade"] == 0 {
		t.Fatalf("snaps %d summary %+v", snaps, s)
	}
	books := r.Books()
	if len(books) != 1 || books[0].Instrument != "BTC" {
		t.Fatalf("books %+v", books)
	}
	bk := books[0].Book
	bb, _ := bk.Best(book.Bid)
	ba, _ := bk.Best(book.Ask)
	if bk.Len(book.Bid) != 20 || bk.Len(book.Ask) != 20 ||
		book.FormatDecimal(bb.Price, books[0].Scale.PriceDecimals) != "106217" ||
		book.FormatDecimal(ba.Price, books[0].Scale.PriceDecimals) != "106233" ||
		book.FormatDecimal(ba.Size, books[0].Scale.SizeDecimals) != "0.26739" || ba.Count != 3 {
		t.Fatalf("book: %d/%d levels, best %v / %v", bk.Len(book.Bid), bk.Len(book.Ask), bb, ba)
	}
}

// TestPolymarketRESTSummaryEnablesHashChecks records the real REST /book
// summary taken after the first price_change as a REST record: it teaches
// the decoder the hash fields WebSocket books lack, so the second
// price_change's hash is recomputed from the replayed book and must match
// the venue's.
func TestPolymarketRESTSummaryEnablesHashChecks(t *testing.T) {
	ws := fixtureLines(t, "polypy_hash_vector_ws_2025-10.ndjson")
	rest := fixtureLines(t, "polypy_hash_vector_rest_book_summaries_2025-10.ndjson")
	ms := int64(time.Millisecond)
	dir := writeDataset(t, venue.Polymarket, []rec{
		frame(0, fixtureBaseNs, string(ws[0])),
		frame(0, fixtureBaseNs+ms, string(ws[1])),
		{datasets.KindRESTResponse, 0, fixtureBaseNs + 2*ms, string(rest[0])},
		frame(0, fixtureBaseNs+3*ms, string(ws[2])),
	})
	r, err := New([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var restEvents, restControls int
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		if e.Kind == datasets.KindRESTResponse {
			if e.Decoded != nil {
				restEvents++
			} else if e.Channel == ChannelControl && e.Control != nil && len(e.Payload) == len(rest[0]) {
				restControls++
			}
		}
		return nil
	}))
	s, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.DecodeErrors != 0 || s.RESTUndecoded != 0 {
		t.Fatalf("decode errors %d, REST undecoded %d", s.DecodeErrors, s.RESTUndecoded)
	}
	if restControls != 1 || restEvents == 0 {
		t.Fatalf("REST record delivered as %d control and %d venue events", restControls, restEvents)
	}
	if s.HashChecked == 0 || s.HashOK != s.HashChecked {
		t.Fatalf("hash checks: %d ok of %d", s.HashOK, s.HashChecked)
	}
}

// TestSamples replays the shipped sample datasets: every frame decodes,
// every Polymarket hash the REST summaries make checkable matches, the
// recorded disconnects are reported, and two runs agree.
func TestSamples(t *testing.T) {
	paths := []string{"../datasets/samples/polymarket", "../datasets/samples/hyperliquid"}
	for _, p := range paths {
		if _, err := datasets.ReadManifest(p); err != nil {
			t.Skipf("no sample at %s: %v", p, err)
		}
	}
	var digest string
	for pass := range 2 {
		r, err := New(paths)
		if err != nil {
			t.Fatal(err)
		}
		var losses int
		r.Subscribe(Key{Channel: ChannelControl}, SubscriberFunc(func(e *Event) error {
			if e.Kind.IsLoss() && e.Instrument != "" && e.Book != nil && e.Book.Valid() {
				t.Errorf("loss for %s with a valid book", e.Instrument)
			}
			if e.Kind.IsLoss() && e.Instrument == "" {
				losses++
			}
			return nil
		}))
		s, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s.DecodeErrors != 0 || s.Frames == 0 || s.Instruments < 2 {
			t.Fatalf("frames %d instruments %d decode errors %+v", s.Frames, s.Instruments, s.FirstDecodeErrors)
		}
		if s.HashChecked == 0 || s.HashOK != s.HashChecked || s.TopMismatch != 0 {
			t.Fatalf("hash %d ok of %d, top-of-book mismatches %d", s.HashOK, s.HashChecked, s.TopMismatch)
		}
		var want uint64
		for _, n := range s.Losses {
			want += n
		}
		if want == 0 || uint64(losses) != want {
			t.Fatalf("losses delivered %d, summary %v", losses, s.Losses)
		}
		if pass == 1 && s.Digest != digest {
			t.Fatalf("digests differ: %s, %s", digest, s.Digest)
		}
		digest = s.Digest
	}
}

// TestHashCheckOff replays the REST-enabled fixture with hash checks off: the
// books and the digest are the same, only the hash counters stay 0.
func TestHashCheckOff(t *testing.T) {
	ws := fixtureLines(t, "polypy_hash_vector_ws_2025-10.ndjson")
	rest := fixtureLines(t, "polypy_hash_vector_rest_book_summaries_2025-10.ndjson")
	dir := writeDataset(t, venue.Polymarket, []rec{
		frame(0, fixtureBaseNs, string(ws[0])),
		frame(0, fixtureBaseNs+1, string(ws[1])),
		{datasets.KindRESTResponse, 0, fixtureBaseNs + 2, string(rest[0])},
		frame(0, fixtureBaseNs+3, string(ws[2])),
	})
	var sums []*Summary
	for _, on := range []bool{true, false} {
		r, err := New([]string{dir}, WithHashCheck(on))
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, s)
	}
	if sums[0].HashChecked == 0 || sums[1].HashChecked != 0 || sums[0].Digest != sums[1].Digest {
		t.Fatalf("on: %d checks, digest %s; off: %d checks, digest %s",
			sums[0].HashChecked, sums[0].Digest, sums[1].HashChecked, sums[1].Digest)
	}
}
