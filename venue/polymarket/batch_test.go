package polymarket

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

const (
	tA = "1111"
	tB = "2222"
	mk = "0xmarket"
)

func bookFrame(asset, ts, bids, asks string) []byte {
	return []byte(`{"event_type":"book","market":"` + mk + `","asset_id":"` + asset + `","timestamp":"` + ts +
		`","hash":"0x0","bids":[` + bids + `],"asks":[` + asks + `]}`)
}

func lvl(p, s string) string { return `{"price":"` + p + `","size":"` + s + `"}` }

// pcEntry is one price_changes entry; bb/ba "" omit best_bid/best_ask.
func pcEntry(asset, price, size, side, bb, ba string) string {
	e := `{"asset_id":"` + asset + `","price":"` + price + `","size":"` + size + `","side":"` + side + `","hash":"x"`
	if bb != "" {
		e += `,"best_bid":"` + bb + `","best_ask":"` + ba + `"`
	}
	return e + "}"
}

func pcFrame(ts string, entries ...string) []byte {
	s := `{"event_type":"price_change","market":"` + mk + `","timestamp":"` + ts + `","price_changes":[`
	for i, e := range entries {
		if i > 0 {
			s += ","
		}
		s += e
	}
	return []byte(s + "]}")
}

// A match: two frames on one timestamp leave the book transiently crossed;
// the batch is judged only when it closes, against the last best_bid/best_ask.
func TestTimestampBatches(t *testing.T) {
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, bookFrame(tA, "100", lvl("0.40", "10")+","+lvl("0.45", "5"), lvl("0.55", "7")+","+lvl("0.50", "3")), &out)
	// A new ask below the best bid: crossed inside the batch.
	mustDecode(t, d, pcFrame("200", pcEntry(tA, "0.44", "2", "SELL", "0.40", "0.44")), &out)
	if !d.Book(tA).Crossed() {
		t.Fatal("book should be transiently crossed")
	}
	if q := d.Quality(tA); q.TopChecked != 0 || q.Crossed || q.CrossedBatch != 0 {
		t.Fatalf("batch judged before it closed: %+v", q)
	}
	// Same timestamp: the bid at 0.45 goes; the batch stays open.
	mustDecode(t, d, pcFrame("200", pcEntry(tA, "0.45", "0", "BUY", "0.40", "0.44")), &out)
	if q := d.Quality(tA); q.TopChecked != 0 {
		t.Fatalf("batch closed early: %+v", q)
	}
	// A new timestamp closes it: uncrossed and agreeing with the venue.
	mustDecode(t, d, pcFrame("300", pcEntry(tA, "0.30", "1", "BUY", "0.40", "0.43")), &out)
	q := d.Quality(tA)
	if q.TopChecked != 1 || q.TopMismatch != 0 || q.Crossed || q.CrossedBatch != 0 {
		t.Fatalf("after first batch: %+v", q)
	}
	// The open batch at 300 claims best ask 0.43, but the book says 0.44.
	d.Flush(nil)
	q = d.Quality(tA)
	if q.TopChecked != 2 || q.TopMismatch != 1 {
		t.Fatalf("after flush: %+v", q)
	}
	// A batch that ends crossed is flagged, not rejected.
	mustDecode(t, d, pcFrame("400", pcEntry(tA, "0.41", "1", "SELL", "0.40", "0.41"), pcEntry(tA, "0.42", "1", "BUY", "0.42", "0.41")), &out)
	if len(out.Events) != 2 {
		t.Fatalf("%d events", len(out.Events))
	}
	mustDecode(t, d, pcFrame("500", pcEntry(tA, "0.42", "0", "BUY", "0.40", "0.41")), &out)
	q = d.Quality(tA)
	if !q.Crossed || q.CrossedBatch != 1 || q.TopChecked != 3 || q.TopMismatch != 1 {
		t.Fatalf("crossed batch: %+v", q)
	}
	d.Flush(nil)
	q = d.Quality(tA)
	if q.Crossed || q.CrossedBatch != 1 || q.TopChecked != 4 {
		t.Fatalf("after uncrossing: %+v", q)
	}
	st := d.Stats()
	if st.TopChecked != 4 || st.TopMismatch != 1 || st.CrossedBatches != 1 {
		t.Fatalf("stats %+v", st)
	}
	// "0"/"0" placeholders and missing fields are unknown, not mismatches;
	// "0" on one side means that side is empty.
	mustDecode(t, d, pcFrame("600", pcEntry(tA, "0.5", "1", "BUY", "0", "0")), &out)
	mustDecode(t, d, pcFrame("700", pcEntry(tA, "0.5", "2", "BUY", "", "")), &out)
	d.Flush(nil)
	if q := d.Quality(tA); q.TopChecked != 4 {
		t.Fatalf("placeholders were checked: %+v", q)
	}
}

// One frame may touch both tokens of a market; both books are kept, entries
// apply in order, and each batch belongs to its own asset.
func TestTwoAssetsOneFrame(t *testing.T) {
	d := NewDecoder()
	var out venue.Frame
	dump := "[" + string(bookFrame(tA, "100", lvl("0.40", "10"), lvl("0.60", "10"))) + "," +
		string(bookFrame(tB, "100", lvl("0.40", "10"), lvl("0.60", "10"))) + "]"
	mustDecode(t, d, []byte(dump), &out)
	if len(out.Events) != 2 || out.Events[0].Instrument != tA || out.Events[1].Instrument != tB {
		t.Fatalf("initial dump events %+v", out.Events)
	}
	mustDecode(t, d, pcFrame("200",
		pcEntry(tA, "0.41", "5", "BUY", "0.41", "0.60"),
		pcEntry(tB, "0.59", "5", "SELL", "0.40", "0.59"),
		pcEntry(tA, "0.41", "6", "BUY", "0.41", "0.60")), &out)
	var got []string
	for _, ev := range out.Events {
		got = append(got, fmt.Sprintf("%s %v %d %d", ev.Instrument, ev.Side, ev.Price, ev.Size))
		if ev.Type != venue.EventLevel || ev.Market != mk || ev.ExchangeNs != 200e6 || ev.Book != d.Book(ev.Instrument) {
			t.Fatalf("event %+v", ev)
		}
		// Raw is the entry object of this level.
		var e struct {
			AssetID string `json:"asset_id"`
		}
		if err := json.Unmarshal(ev.Raw, &e); err != nil || e.AssetID != ev.Instrument {
			t.Fatalf("Raw %q: %v", ev.Raw, err)
		}
	}
	want := []string{tA + " bid 4100 5000000", tB + " ask 5900 5000000", tA + " bid 4100 6000000"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if s, _ := d.Book(tA).Level(book.Bid, 4100); s != 6e6 {
		t.Fatalf("array order not kept: size %d", s)
	}
	if s, _ := d.Book(tB).Level(book.Ask, 5900); s != 5e6 {
		t.Fatalf("second asset: size %d", s)
	}
	d.Flush(nil)
	for _, id := range []string{tA, tB} {
		if q := d.Quality(id); q.TopChecked != 1 || q.TopMismatch != 0 {
			t.Fatalf("%s: %+v", id, q)
		}
	}
	if ids := d.Instruments([]string{"x"}); !slices.Equal(ids, []string{"x", tA, tB}) {
		t.Fatalf("Instruments = %q", ids)
	}
}

// A price change for an asset without a snapshot lands on a new, invalid
// book; a snapshot later makes it valid.
func TestChangeBeforeSnapshot(t *testing.T) {
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, pcFrame("1", pcEntry(tA, "0.5", "1", "BUY", "0.5", "0.6")), &out)
	b := d.Book(tA)
	if b == nil || b.Valid() || b.Len(book.Bid) != 1 {
		t.Fatalf("book %+v", b)
	}
	d.Flush(nil)
	if q := d.Quality(tA); q.TopChecked != 0 {
		t.Fatalf("invalid book was checked: %+v", q)
	}
	mustDecode(t, d, bookFrame(tA, "2", lvl("0.1", "1"), ""), &out)
	if !b.Valid() || b.Len(book.Bid) != 1 || b.Len(book.Ask) != 0 {
		t.Fatal("snapshot did not replace")
	}
}

func TestInvalidateAfterGap(t *testing.T) {
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, bookFrame(tA, "1", lvl("0.4", "1"), lvl("0.6", "1")), &out)
	mustDecode(t, d, pcFrame("2", pcEntry(tA, "0.4", "2", "BUY", "0.4", "0.6")), &out)
	if q := d.Quality(tA); q.AfterGap {
		t.Fatal("AfterGap before any gap")
	}
	d.Invalidate()
	b := d.Book(tA)
	if b.Valid() || b.Len(book.Bid) != 1 {
		t.Fatal("Invalidate must keep levels and clear validity")
	}
	if q := d.Quality(tA); !q.AfterGap || q.TopChecked != 1 {
		t.Fatalf("Invalidate must close the batch and flag the gap: %+v", q)
	}
	mustDecode(t, d, bookFrame(tA, "3", lvl("0.4", "1"), lvl("0.6", "1")), &out)
	if q := d.Quality(tA); !q.AfterGap || !b.Valid() {
		t.Fatalf("first snapshot after the gap: %+v", q)
	}
	mustDecode(t, d, bookFrame(tA, "4", lvl("0.4", "1"), lvl("0.6", "1")), &out)
	if q := d.Quality(tA); q.AfterGap {
		t.Fatalf("second snapshot still after gap: %+v", q)
	}
}

// Since about 2025-12 the server appends last_trade_price to the hashed
// object; the decoder tries both forms and learns which one matches.
func TestHashWithLastTradePrice(t *testing.T) {
	ref := book.New(Scale)
	if err := ref.Replace([]book.Level{{Price: 4000, Size: 1e6}}, []book.Level{{Price: 6000, Size: 2e6}}); err != nil {
		t.Fatal(err)
	}
	f := HashFields{Market: mk, AssetID: tA, Timestamp: "100", MinOrderSize: "5", TickSize: "0.01", LastTradePrice: "0.5"}
	h := string(BookHash(nil, f, ref))
	frame := []byte(`{"event_type":"book","market":"` + mk + `","asset_id":"` + tA + `","timestamp":"100","hash":"` + h +
		`","bids":[{"price":"0.4","size":"1"}],"asks":[{"price":"0.6","size":"2"}],"tick_size":"0.01","last_trade_price":"0.50"}`)
	d := NewDecoder(withInstrumentInfo(instrumentInfo{AssetID: tA, MinOrderSize: "5"}))
	var out venue.Frame
	mustDecode(t, d, frame, &out)
	mustDecode(t, d, frame, &out)
	if q := d.Quality(tA); q.HashChecked != 2 || q.HashOK != 2 {
		t.Fatalf("quality %+v", q)
	}
	// A hash that no known last trade price explains waits for a trade;
	// none comes, so it is unverifiable, and never fatal.
	bad := []byte(string(frame[:len(frame)-1]) + `,"neg_risk":true}`)
	mustDecode(t, d, bad, &out)
	if q := d.Quality(tA); q.HashChecked != 2 || q.HashPending != 1 || !d.Book(tA).Valid() {
		t.Fatalf("pending: %+v", q)
	}
	d.Flush(nil)
	if q := d.Quality(tA); q.HashChecked != 3 || q.HashOK != 2 || q.HashUnverifiable != 1 || q.HashPending != 0 || !d.Book(tA).Valid() {
		t.Fatalf("unverifiable: %+v", q)
	}
}

func TestSetInstrumentInfoErrors(t *testing.T) {
	d := NewDecoder()
	for _, info := range []instrumentInfo{
		{AssetID: "", MinOrderSize: "5"},
		{AssetID: "1", MinOrderSize: "five"},
		{AssetID: "1", MinOrderSize: "5", TickSize: "0.00001"},
	} {
		if err := d.setInstrumentInfo(info); err == nil {
			t.Errorf("%+v: no error", info)
		}
	}
	if len(d.Instruments(nil)) != 0 {
		t.Fatal("rejected info created an instrument")
	}
}
