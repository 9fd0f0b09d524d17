package polymarket

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// Real shapes the venue sends (issue 12) and frames it must not take (issue
// 13, items 7 and 8), built from the real fixtures in testdata/real.

const emptyLtpFile = "real/nautilus_rest_book_empty_ltp_2026-08.ndjson"

// setField rewrites one top-level string field of a JSON object frame,
// keeping the key order (encoding/json would sort the keys).
func setField(t *testing.T, frame []byte, key, value string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(frame, &m); err != nil {
		t.Fatal(err)
	}
	old, ok := m[key]
	if !ok {
		t.Fatalf("no %s in %.60s", key, frame)
	}
	pat := append([]byte(`"`+key+`":`), old...)
	v, _ := json.Marshal(value)
	out := bytes.Replace(frame, pat, append([]byte(`"`+key+`":`), v...), 1)
	if bytes.Equal(out, frame) && string(old) != string(v) {
		t.Fatalf("could not rewrite %s", key)
	}
	return out
}

func eventsOf(out *venue.Frame, typ venue.EventType) []venue.Event {
	var evs []venue.Event
	for _, ev := range out.Events {
		if ev.Type == typ {
			evs = append(evs, ev)
		}
	}
	return evs
}

// The real REST summary with "last_trade_price":"" is accepted, and its own
// hash verifies: the venue hashes the empty value as a tenth field.
func TestEmptyLastTradePriceHashes(t *testing.T) {
	frame := readLines(t, emptyLtpFile)[0]
	if !bytes.Contains(frame, []byte(`"last_trade_price":""`)) {
		t.Fatal("fixture lost its empty last_trade_price")
	}
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, frame, &out)
	jb := parseJSONBook(t, frame)
	assertBook(t, d.Book(jb.AssetID), jb)
	if q := d.Quality(jb.AssetID); q.HashChecked != 1 || q.HashOK != 1 {
		t.Fatalf("quality %+v: the venue's own hash did not verify", q)
	}
	if !d.Book(jb.AssetID).Valid() {
		t.Fatal("book invalid")
	}

	// BookHash reproduces it with LastTradePricePresent, and only so.
	f := HashFields{Market: jb.Market, AssetID: jb.AssetID, Timestamp: jb.Timestamp.String(),
		MinOrderSize: jb.MinOrderSize, TickSize: jb.TickSize, NegRisk: jb.NegRisk, LastTradePricePresent: true}
	if got := string(BookHash(nil, f, d.Book(jb.AssetID))); got != jb.Hash {
		t.Fatalf("BookHash ten fields = %s, want %s", got, jb.Hash)
	}
	f.LastTradePricePresent = false
	if got := string(BookHash(nil, f, d.Book(jb.AssetID))); got == jb.Hash {
		t.Fatal("the nine-field form matched too")
	}

	// A trade then a summary without the field: the price replaces "".
	trade := []byte(`{"event_type":"last_trade_price","asset_id":"` + jb.AssetID + `","market":"` + jb.Market +
		`","price":"0.002","size":"5","side":"BUY","timestamp":"1785734468999","transaction_hash":"0xabc"}`)
	mustDecode(t, d, trade, &out)
	if len(out.Events) != 1 || string(out.Events[0].ID) != "0xabc" {
		t.Fatalf("trade events %+v", out.Events)
	}
	if in := d.byID[jb.AssetID]; in.ltp != 20 {
		t.Fatalf("ltp %d after a trade", in.ltp)
	}
}

// A POST /books body is an array of summaries: the empty-ltp one verifies
// beside the polypy summaries, each against its own hash.
func TestBooksArrayWithEmptyLtp(t *testing.T) {
	empty := readLines(t, emptyLtpFile)[0]
	py := readLines(t, "real/polypy_hash_vector_rest_book_summaries_2025-10.ndjson")
	body := []byte("[" + string(py[0]) + "," + string(empty) + "," + string(py[1]) + "]")
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, body, &out)
	if n := len(eventsOf(&out, venue.EventSnapshot)); n != 3 {
		t.Fatalf("%d snapshots, want 3", n)
	}
	if st := d.Stats(); st.HashChecked != 3 || st.HashOK != 3 {
		t.Fatalf("stats %+v", st)
	}
	eb := parseJSONBook(t, empty)
	assertBook(t, d.Book(eb.AssetID), eb)
	assertBook(t, d.Book(pyAsset), parseJSONBook(t, py[1]))
}

// Each element of an initial dump stands alone: a book with
// "last_trade_price":"" is one of three good books; a bad one is rejected
// alone, named with its asset id, and the other two apply.
func TestInitialDumpElementsStandAlone(t *testing.T) {
	wsBook := readLines(t, "real/polypy_hash_vector_ws_2025-10.ndjson")[0]
	empty := readLines(t, emptyLtpFile)[0]
	nautilus := readLines(t, "real/nautilus_ws_book_2024-10.ndjson")[0]
	renamed := setField(t, nautilus, "asset_id", "111")
	emptyWS := append(renamed[:len(renamed)-1:len(renamed)-1], `,"last_trade_price":""}`...)
	dump := []byte("[" + string(wsBook) + "," + string(emptyWS) + "," + string(empty) + "]")
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, dump, &out)
	if n := len(eventsOf(&out, venue.EventSnapshot)); n != 3 {
		t.Fatalf("%d snapshots, want 3", n)
	}
	for _, id := range []string{pyAsset, "111", parseJSONBook(t, empty).AssetID} {
		if b := d.Book(id); b == nil || !b.Valid() {
			t.Fatalf("book %s missing or invalid", id)
		}
	}

	// The middle one with a duplicate level: two books apply.
	dupBids := bytes.Replace(emptyWS, []byte(`"bids":[`), []byte(`"bids":[{"price":"0.5","size":"1"},{"price":"0.50","size":"2"},`), 1)
	bad := []byte("[" + string(wsBook) + "," + string(dupBids) + "," + string(empty) + "]")
	d = NewDecoder()
	err := d.Decode(bad, 0, &out)
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, book.ErrDuplicatePrice) || de.Asset != "111" {
		t.Fatalf("err = %v (%+v), want a duplicate-price DecodeError naming asset 111", err, de)
	}
	if !strings.Contains(err.Error(), "asset 111") {
		t.Fatalf("message %q does not name the asset", err)
	}
	if n := len(eventsOf(&out, venue.EventSnapshot)); n != 2 {
		t.Fatalf("%d snapshots beside the rejected one, want 2", n)
	}
	if d.Book("111") != nil {
		t.Fatal("the rejected, never-seen asset got a book")
	}
	if rej := eventsOf(&out, venue.EventReject); len(rej) != 1 || rej[0].Book != nil || !bytes.Contains(rej[0].Text, []byte("asset 111")) {
		t.Fatalf("reject events %+v", rej)
	}
	if st := d.Stats(); st.Errors != 1 || st.Rejected != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Empty-side sentinels: best_ask "1" (and "", "0") on an empty ask side and
// best_bid "0" or "" on an empty bid side count no top-of-book mismatch.
func TestEmptySideSentinels(t *testing.T) {
	empty := readLines(t, emptyLtpFile)[0] // bids 0.002 and 0.001, no asks
	jb := parseJSONBook(t, empty)
	for _, c := range []struct{ bb, ba string }{{"0.002", "1"}, {"0.002", "0"}, {"0.002", ""}} {
		d := NewDecoder()
		var out venue.Frame
		mustDecode(t, d, empty, &out)
		pc := []byte(`{"event_type":"price_change","market":"` + jb.Market + `","timestamp":"1785734469000","price_changes":[` +
			`{"asset_id":"` + jb.AssetID + `","price":"0.001","size":"600","side":"BUY","hash":"x","best_bid":"` + c.bb + `","best_ask":"` + c.ba + `"}]}`)
		mustDecode(t, d, pc, &out)
		d.Flush(nil)
		if q := d.Quality(jb.AssetID); q.TopChecked != 1 || q.TopMismatch != 0 {
			t.Fatalf("best_ask %q: quality %+v", c.ba, q)
		}
	}
	// An empty book: the bid side's "" and "0" are empty too (both sides
	// empty is the semi-synthetic placeholder, so unchecked).
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, empty, &out)
	for _, p := range []string{"0.001", "0.002"} {
		pc := []byte(`{"event_type":"price_change","market":"` + jb.Market + `","timestamp":"2","price_changes":[` +
			`{"asset_id":"` + jb.AssetID + `","price":"` + p + `","size":"0","side":"BUY","best_bid":"","best_ask":"0.7"}]}`)
		mustDecode(t, d, pc, &out)
	}
	mustDecode(t, d, []byte(`{"event_type":"price_change","market":"`+jb.Market+`","timestamp":"3","price_changes":[`+
		`{"asset_id":"`+jb.AssetID+`","price":"0.7","size":"1","side":"SELL","best_bid":"","best_ask":"0.7"}]}`), &out)
	d.Flush(nil)
	if q := d.Quality(jb.AssetID); q.TopChecked != 2 || q.TopMismatch != 1 {
		// Batch 2 ends with no bids and no asks, but its last entry says ask
		// 0.7: one mismatch; batch 3 matches.
		t.Fatalf("quality %+v", q)
	}

	// best_bid_ask events: "" and "1" are empty sides, not prices.
	quote := readLines(t, "real/nautilus_ws_misc_events.ndjson")[2]
	for _, c := range []struct {
		bb, ba         string
		hasBid, hasAsk bool
	}{{"0.73", "0.77", true, true}, {"", "0.77", false, true}, {"0.73", "", true, false}, {"0.73", "1", true, false}, {"0", "1", false, false}} {
		f := setField(t, setField(t, quote, "best_bid", c.bb), "best_ask", c.ba)
		mustDecode(t, d, f, &out)
		ev := out.Events[0]
		if ev.Type != venue.EventQuote || ev.HasBid != c.hasBid || ev.HasAsk != c.hasAsk {
			t.Fatalf("%q/%q: %+v", c.bb, c.ba, ev)
		}
	}
}

// Issue 13 item 7: a rejected snapshot (duplicate level, negative size) or
// price_change invalidates the books it would have changed until the next
// snapshot, and says so with EventReject events carrying the invalid book.
func TestRejectedFramesInvalidate(t *testing.T) {
	lines := readLines(t, "real/polypy_hash_vector_ws_2025-10.ndjson")
	wsBook := lines[0]
	other := setField(t, wsBook, "asset_id", pyOther)
	setup := func(t *testing.T) *Decoder {
		d := NewDecoder()
		var out venue.Frame
		mustDecode(t, d, wsBook, &out)
		mustDecode(t, d, other, &out)
		return d
	}
	dup := bytes.Replace(wsBook, []byte(`"bids":[`), []byte(`"bids":[{"price":"0.5","size":"1"},{"price":"0.5","size":"2"},`), 1)
	neg := bytes.Replace(wsBook, []byte(`"asks":[`), []byte(`"asks":[{"price":"0.9","size":"-2"},`), 1)
	pcBad := []byte(`{"event_type":"price_change","market":"` + pyMarket + `","timestamp":"5","price_changes":[` +
		`{"asset_id":"` + pyAsset + `","price":"0.5","size":"1","side":"BUY"},{"asset_id":"` + pyOther + `","price":"0.5","size":"-1","side":"SELL"}]}`)
	noMarket := []byte(`{"event_type":"price_change","timestamp":"5","price_changes":[{"asset_id":"` + pyAsset + `","price":"0.5","size":"x","side":"BUY"}]}`)
	truncated := pcBad[:len(pcBad)-20]
	cases := []struct {
		name    string
		frame   []byte
		invalid []string // books invalid afterwards
	}{
		{"duplicate-level", dup, []string{pyAsset}},
		{"negative-size", neg, []string{pyAsset}},
		{"price_change", pcBad, []string{pyAsset, pyOther}},
		{"price_change-no-market", noMarket, []string{pyAsset, pyOther}},
		{"truncated", truncated, []string{pyAsset, pyOther}},
		{"trade", []byte(`{"event_type":"last_trade_price","asset_id":"` + pyAsset + `","price":"5","size":"1","side":"BUY"}`), nil},
		{"null", []byte("null"), nil},
		{"string", []byte(`"str"`), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := setup(t)
			before := levelsDigest(d)
			var out venue.Frame
			if err := d.Decode(c.frame, 0, &out); err == nil {
				t.Fatal("accepted")
			}
			if levelsDigest(d) != before {
				t.Fatal("levels changed")
			}
			rej := eventsOf(&out, venue.EventReject)
			if len(rej) != len(out.Events) || len(rej) == 0 {
				t.Fatalf("events %+v", out.Events)
			}
			for _, id := range []string{pyAsset, pyOther} {
				want := !slicesContains(c.invalid, id)
				if d.Book(id).Valid() != want {
					t.Fatalf("book %s valid=%v, want %v", id, d.Book(id).Valid(), want)
				}
				if !want && !d.Quality(id).AfterGap {
					t.Fatalf("book %s invalid without AfterGap", id)
				}
			}
			if len(c.invalid) > 0 && len(rej) != len(c.invalid) {
				t.Fatalf("%d reject events for %d invalidated books", len(rej), len(c.invalid))
			}
			for _, ev := range rej {
				if len(ev.Text) == 0 || (len(c.invalid) > 0 && (ev.Book == nil || ev.Book.Valid())) {
					t.Fatalf("reject event %+v", ev)
				}
			}
			if st := d.Stats(); st.Invalidated != uint64(len(c.invalid)) || st.Errors != 1 {
				t.Fatalf("stats %+v", st)
			}
			// The next snapshot makes the book valid again.
			mustDecode(t, d, wsBook, &out)
			if !d.Book(pyAsset).Valid() {
				t.Fatal("snapshot did not restore the book")
			}
		})
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// An empty array is an empty list of messages: one EventUnknown, counted,
// no error (a REST /books body for no assets, an empty Gamma page).
func TestEmptyArray(t *testing.T) {
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, []byte(" [ ] "), &out)
	if len(out.Events) != 1 || out.Events[0].Type != venue.EventUnknown || string(out.Events[0].Text) != "[]" {
		t.Fatalf("events %+v", out.Events)
	}
	if st := d.Stats(); st.UnknownTypes != 1 || st.Errors != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A price_change for an asset never snapshotted (not subscribed, or before
// its book) applies to an invalid book and is counted.
func TestPriceChangeForUnknownAsset(t *testing.T) {
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, []byte(`{"event_type":"price_change","market":"0x1","timestamp":"1","price_changes":[`+
		`{"asset_id":"999","price":"0.5","size":"1","side":"BUY","best_bid":"0.5","best_ask":"1"}]}`), &out)
	if b := d.Book("999"); b == nil || b.Valid() || len(out.Events) != 1 {
		t.Fatalf("book %v events %+v", b, out.Events)
	}
	if st := d.Stats(); st.Unsnapshotted != 1 || st.Errors != 0 {
		t.Fatalf("stats %+v", st)
	}
}
