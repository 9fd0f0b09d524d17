package polymarket

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// verdictHarness is a two-asset market (tA, tB) whose hashes are computed
// from a reference book with BookHash, the venue's algorithm, independently
// of the decoder's incremental hashing.
type verdictHarness struct {
	t   *testing.T
	d   *Decoder
	ref map[string]*book.Book
	out venue.Frame
}

func newVerdictHarness(t *testing.T, opts ...Option) *verdictHarness {
	opts = append([]Option{withInstrumentInfo(
		instrumentInfo{AssetID: tA, Market: mk, MinOrderSize: "5", TickSize: "0.01"},
		instrumentInfo{AssetID: tB, Market: mk, MinOrderSize: "5", TickSize: "0.01"})}, opts...)
	h := &verdictHarness{t: t, d: NewDecoder(opts...), ref: map[string]*book.Book{}}
	for _, a := range []string{tA, tB} {
		h.ref[a] = book.New(Scale)
	}
	return h
}

// hash is the venue's hash of asset's reference book at ts with last trade
// price ltp.
func (h *verdictHarness) hash(asset, ts, ltp string) string {
	return string(BookHash(nil, HashFields{Market: mk, AssetID: asset, Timestamp: ts, MinOrderSize: "5",
		TickSize: "0.01", LastTradePrice: ltp}, h.ref[asset]))
}

// snapshot sends a book of asset (one bid, one ask) with last_trade_price
// ltp, hashed correctly.
func (h *verdictHarness) snapshot(asset, ts, bid, ask, ltp string) {
	h.t.Helper()
	bp, _ := book.ParseDecimal([]byte(bid), 4)
	ap, _ := book.ParseDecimal([]byte(ask), 4)
	if err := h.ref[asset].Replace([]book.Level{{Price: bp, Size: 100e6}}, []book.Level{{Price: ap, Size: 100e6}}); err != nil {
		h.t.Fatal(err)
	}
	h.decode(`{"event_type":"book","market":"` + mk + `","asset_id":"` + asset + `","timestamp":"` + ts + `","hash":"` +
		h.hash(asset, ts, ltp) + `","bids":[` + lvl(bid, "100") + `],"asks":[` + lvl(ask, "100") +
		`],"tick_size":"0.01","last_trade_price":"` + ltp + `"}`)
}

// lvChange is one level change of asset applied to the reference book.
type lvChange struct{ asset, price, size, side string }

// apply applies changes to the reference books.
func (h *verdictHarness) apply(cs ...lvChange) {
	for _, c := range cs {
		p, _ := book.ParseDecimal([]byte(c.price), 4)
		z, _ := book.ParseDecimal([]byte(c.size), 6)
		side := book.Bid
		if c.side == "SELL" {
			side = book.Ask
		}
		if err := h.ref[c.asset].Set(side, p, z, 0); err != nil {
			h.t.Fatal(err)
		}
	}
}

// frames sends changes as one price_change frame per entry, all at ts, each
// entry carrying hash(asset) (the caller computes it from the reference after
// the whole batch, as the venue does).
func (h *verdictHarness) frames(ts string, hash func(asset string) string, cs ...lvChange) {
	for _, c := range cs {
		e := pcEntry(c.asset, c.price, c.size, c.side, "", "")
		e = strings.Replace(e, `"hash":"x"`, `"hash":"`+hash(c.asset)+`"`, 1)
		h.decode(string(pcFrame(ts, e)))
	}
}

func (h *verdictHarness) trade(asset, ts, price string) {
	h.decode(`{"event_type":"last_trade_price","market":"` + mk + `","asset_id":"` + asset + `","price":"` + price +
		`","size":"10","side":"BUY","fee_rate_bps":"0","timestamp":"` + ts + `"}`)
}

func (h *verdictHarness) decode(frame string) {
	h.t.Helper()
	mustDecode(h.t, h.d, []byte(frame), &h.out)
}

func (h *verdictHarness) want(asset string, ok, mismatch, unverifiable, pending uint64, valid bool) {
	h.t.Helper()
	q := h.d.Quality(asset)
	if q.HashOK != ok || q.HashMismatch != mismatch || q.HashUnverifiable != unverifiable || q.HashPending != pending ||
		q.HashChecked != ok+mismatch+unverifiable || h.d.Book(asset).Valid() != valid {
		h.t.Fatalf("%s: quality %+v valid %v; want ok %d, mismatch %d, unverifiable %d, pending %d, valid %v",
			asset[:4], q, h.d.Book(asset).Valid(), ok, mismatch, unverifiable, pending, valid)
	}
}

// A batch of three frames at one timestamp, every entry with the hash of
// the book after all three, as the venue sends it: one verdict, ok, although
// the book after the first or second entry does not match it.
func TestVerdictBatchSharesOneHash(t *testing.T) {
	h := newVerdictHarness(t)
	h.snapshot(tA, "1000", "0.40", "0.60", "0.5")
	cs := []lvChange{{tA, "0.41", "5", "BUY"}, {tA, "0.42", "7", "BUY"}, {tA, "0.41", "0", "BUY"}}
	h.apply(cs...)
	post := h.hash(tA, "1001", "0.5")
	h.frames("1001", func(string) string { return post }, cs...)
	h.want(tA, 1, 0, 0, 0, true) // the batch is open: not judged yet
	h.trade(tB, "1002", "0.5")   // another asset's message does not close it
	h.want(tA, 1, 0, 0, 0, true)
	h.d.Flush(nil)
	h.want(tA, 2, 0, 0, 0, true)
}

// A trade's price_change carries the hash computed with the post-trade last
// trade price before its last_trade_price arrives: pending, then ok when the
// trade comes on the asset, or on the other asset at 1 − p.
func TestVerdictPostTradeLastTradePrice(t *testing.T) {
	for _, tc := range []struct {
		name, asset, price string
	}{
		{"same asset", tA, "0.6"},
		{"complement", tB, "0.4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newVerdictHarness(t)
			h.snapshot(tA, "1000", "0.40", "0.60", "0.5")
			h.snapshot(tB, "1000", "0.40", "0.60", "0.5")
			cs := []lvChange{{tA, "0.6", "60", "SELL"}} // a buy took 40 at 0.60
			h.apply(cs...)
			post := h.hash(tA, "1001", "0.6")
			h.frames("1001", func(string) string { return post }, cs...)
			h.decode(`{"event_type":"tick_size_change","market":"` + mk + `","asset_id":"` + tA +
				`","old_tick_size":"0.01","new_tick_size":"0.01","timestamp":"1029"}`) // closes the batch
			h.want(tA, 1, 0, 0, 1, true)
			h.trade(tc.asset, "1029", tc.price)
			h.want(tA, 2, 0, 0, 0, true)
			// The price is learned: the next batch's hash matches at once.
			cs = []lvChange{{tA, "0.40", "50", "BUY"}}
			h.apply(cs...)
			next := h.hash(tA, "1100", "0.6")
			h.frames("1100", func(string) string { return next }, cs...)
			h.d.Flush(nil)
			h.want(tA, 3, 0, 0, 0, true)
		})
	}
}

// No trade comes within the window: unverifiable, the book stays valid.
// A trade comes but does not explain it: a mismatch, the book is invalid
// until a matching hash (or a snapshot).
func TestVerdictWindow(t *testing.T) {
	h := newVerdictHarness(t)
	h.snapshot(tA, "1000", "0.40", "0.60", "0.5")
	h.snapshot(tB, "1000", "0.40", "0.60", "0.5")
	cs := []lvChange{{tA, "0.41", "5", "BUY"}}
	h.apply(cs...)
	wrong := h.hash(tA, "1001", "0.7") // explained by no trade that will come
	h.frames("1001", func(string) string { return wrong }, cs...)
	h.trade(tB, "1500", "0.5") // closes nothing of tA; within the window
	h.decode(`{"event_type":"tick_size_change","market":"` + mk + `","asset_id":"` + tA +
		`","old_tick_size":"0.01","new_tick_size":"0.01","timestamp":"1600"}`)
	h.want(tA, 1, 0, 0, 1, true)
	h.trade(tA, "1700", "0.45") // tried: does not explain it
	h.want(tA, 1, 0, 0, 1, true)
	h.trade(tB, "2100", "0.5") // window over (1001 + 1000 < 2100)
	h.want(tA, 1, 1, 0, 0, false)
	// A later matching hash makes the book valid again.
	cs = []lvChange{{tA, "0.42", "5", "BUY"}}
	h.apply(cs...)
	good := h.hash(tA, "2200", "0.45")
	h.frames("2200", func(string) string { return good }, cs...)
	h.d.Flush(nil)
	h.want(tA, 2, 1, 0, 0, true)

	// Unverifiable: nothing tried before the window ends.
	cs = []lvChange{{tA, "0.43", "5", "BUY"}}
	h.apply(cs...)
	wrong = h.hash(tA, "3000", "0.9")
	h.frames("3000", func(string) string { return wrong }, cs...)
	h.frames("3001", func(string) string { return "" }) // no entries: closes nothing
	h.decode(`{"event_type":"tick_size_change","market":"` + mk + `","asset_id":"` + tA +
		`","old_tick_size":"0.01","new_tick_size":"0.01","timestamp":"3001"}`)
	h.want(tA, 2, 1, 0, 1, true)
	h.trade(tB, "4500", "0.3") // tried on tA as 0.7 — but after the window: expiry first
	h.want(tA, 2, 1, 1, 0, true)
}

// A corrupted level: every later hash fails whatever the last trade price;
// the first trade confirms the mismatch, and the next snapshot heals.
func TestVerdictCorruptedLevel(t *testing.T) {
	h := newVerdictHarness(t)
	h.snapshot(tA, "1000", "0.40", "0.60", "0.5")
	h.snapshot(tB, "1000", "0.40", "0.60", "0.5")
	// The venue's book gets a level the stream never told.
	h.apply(lvChange{tA, "0.30", "9", "BUY"})
	for i, ts := range []string{"1100", "1200", "1300"} {
		cs := []lvChange{{tA, "0.4" + string(rune('1'+i)), "1", "BUY"}}
		h.apply(cs...)
		hs := h.hash(tA, ts, "0.5")
		h.frames(ts, func(string) string { return hs }, cs...)
	}
	h.trade(tA, "1400", "0.5")
	h.want(tA, 1, 0, 0, 3, true)
	h.trade(tB, "2400", "0.5")
	h.want(tA, 1, 3, 0, 0, false)
	h.snapshot(tA, "2500", "0.40", "0.60", "0.5")
	h.want(tA, 2, 3, 0, 0, true)
}

// The real evidence that one hash covers a whole batch (polypy, captured
// 2024-12-06; testdata/PROVENANCE.md): a price_change of the pre-2025
// schema carries three changes and one hash, and that hash is the book's
// after all three, which the REST /book summary taken after it repeats. The
// book after the first or the first two changes does not hash to it. The
// hash of that era has six fields (no min_order_size, tick_size, neg_risk
// or last trade price) and the book's own timestamp, the summary's.
func TestRealBatchSharesOneHash(t *testing.T) {
	lines := readLines(t, "real/polypy_legacy_batch_one_hash_2024-12.ndjson")
	if len(lines) != 3 {
		t.Fatalf("fixture: %d lines", len(lines))
	}
	snap, rest := parseJSONBook(t, lines[0]), parseJSONBook(t, lines[2])
	var pc struct {
		Changes []struct{ Price, Side, Size string } `json:"changes"`
		Hash    string                               `json:"hash"`
	}
	if err := json.Unmarshal(lines[1], &pc); err != nil {
		t.Fatal(err)
	}
	if len(pc.Changes) != 3 || pc.Hash != rest.Hash {
		t.Fatalf("fixture: %d changes, hash %s, summary %s", len(pc.Changes), pc.Hash, rest.Hash)
	}
	b := book.New(Scale)
	if err := b.Replace(levelsOf(t, snap.Bids, true), levelsOf(t, snap.Asks, false)); err != nil {
		t.Fatal(err)
	}
	if got := legacyHash(t, snap.Market, snap.AssetID, snap.Timestamp.String(), b); got != snap.Hash {
		t.Fatalf("snapshot: hash %s, sent %s", got, snap.Hash)
	}
	for i, c := range pc.Changes {
		side := book.Bid
		if c.Side == "SELL" {
			side = book.Ask
		}
		l := levelsOf(t, []jsonLevel{{c.Price, c.Size}}, true)[0]
		if err := b.Set(side, l.Price, l.Size, 0); err != nil {
			t.Fatal(err)
		}
		got := legacyHash(t, rest.Market, rest.AssetID, rest.Timestamp.String(), b)
		if last := i == len(pc.Changes)-1; (got == pc.Hash) != last {
			t.Fatalf("after change %d of %d: hash %s, message's %s", i+1, len(pc.Changes), got, pc.Hash)
		}
	}
	assertBook(t, b, rest)
}

// legacyHash is the six-field hash of 2024, computed with encoding/json as
// an independent check.
func legacyHash(t *testing.T, market, asset, ts string, b *book.Book) string {
	t.Helper()
	return jsonSHA1(t, hashHead{market, asset, ts, "", jsonSide(b, book.Bid), jsonSide(b, book.Ask)})
}

// hashHead is the hash input's first six fields, all of it before 2025.
type hashHead struct {
	Market    string      `json:"market"`
	AssetID   string      `json:"asset_id"`
	Timestamp string      `json:"timestamp"`
	Hash      string      `json:"hash"`
	Bids      []jsonLevel `json:"bids"`
	Asks      []jsonLevel `json:"asks"`
}

// jsonSide is one side of b as the hash input lists it, worst level first.
func jsonSide(b *book.Book, s book.Side) []jsonLevel {
	lv := b.Top(s, nil, -1)
	slices.Reverse(lv)
	out := []jsonLevel{}
	for _, l := range lv {
		out = append(out, jsonLevel{book.FormatDecimal(l.Price, 4), book.FormatDecimal(l.Size, 6)})
	}
	return out
}

// jsonSHA1 is the hex SHA-1 of v's compact JSON.
func jsonSHA1(t *testing.T, v any) string {
	t.Helper()
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(j)
	return hex.EncodeToString(sum[:])
}

// tenFieldHash is the venue's hash (PROTOCOLS.md §3.1, ten fields) of b with
// last_trade_price text ltp, computed with encoding/json and crypto/sha1 as
// an independent check of the decoder's incremental hashing.
func tenFieldHash(t *testing.T, market, asset, ts string, b *book.Book, ltp string) string {
	t.Helper()
	return jsonSHA1(t, struct {
		hashHead
		MinOrderSize   string `json:"min_order_size"`
		TickSize       string `json:"tick_size"`
		NegRisk        bool   `json:"neg_risk"`
		LastTradePrice string `json:"last_trade_price"`
	}{hashHead{market, asset, ts, "", jsonSide(b, book.Bid), jsonSide(b, book.Ask)}, "5", "0.01", false, ltp})
}

// A real sequence of a two-asset market (testdata/real/polybotv2_trade_post_ltp_2025-12.ndjson,
// see PROVENANCE.md): the initial dump of both books, one price_change
// whose two entries are a trade (5 shares at 0.49 taken from the bid of
// one asset, the mirrored ask of the other), and a later book of the second
// asset. Recomputed independently, every hash holds, and only with the last
// trade price as the venue writes it: "0.500" in the books (not "0.5"),
// and "0.490" in both entries of the trade's price_change, the post-trade
// price, for both assets alike (not 0.51 = 1 − p for the second), whose
// last_trade_price message the capture does not hold. Replayed, the books
// are ok and the trade's batch unverifiable (no trade message came to
// decide it), never a mismatch; with a last_trade_price of either asset
// added after it, everything is ok.
func TestRealPostTradeLastTradePrice(t *testing.T) {
	lines := readLines(t, "real/polybotv2_trade_post_ltp_2025-12.ndjson")
	if len(lines) != 3 {
		t.Fatalf("fixture: %d lines", len(lines))
	}
	var dump []jsonBook
	if err := json.Unmarshal(lines[0], &dump); err != nil || len(dump) != 2 {
		t.Fatalf("fixture: dump of %d books: %v", len(dump), err)
	}
	var pc struct {
		Market  string `json:"market"`
		Changes []struct {
			AssetID string `json:"asset_id"`
			Price   string `json:"price"`
			Size    string `json:"size"`
			Side    string `json:"side"`
			Hash    string `json:"hash"`
		} `json:"price_changes"`
		Timestamp string `json:"timestamp"`
	}
	if err := json.Unmarshal(lines[1], &pc); err != nil || len(pc.Changes) != 2 {
		t.Fatalf("fixture: price_change of %d entries: %v", len(pc.Changes), err)
	}
	later := parseJSONBook(t, lines[2])
	a, b, m := dump[0].AssetID, dump[1].AssetID, dump[0].Market

	// The venue's hashes, recomputed.
	books := map[string]*book.Book{}
	for _, s := range dump {
		bk := book.New(Scale)
		if err := bk.Replace(levelsOf(t, s.Bids, true), levelsOf(t, s.Asks, false)); err != nil {
			t.Fatal(err)
		}
		books[s.AssetID] = bk
		ts := s.Timestamp.String()
		if got := tenFieldHash(t, m, s.AssetID, ts, bk, "0.500"); got != s.Hash {
			t.Fatalf("dump %.6s: hash %s, sent %s", s.AssetID, got, s.Hash)
		}
		if tenFieldHash(t, m, s.AssetID, ts, bk, "0.5") == s.Hash {
			t.Fatalf("dump %.6s: hash holds with \"0.5\" too", s.AssetID)
		}
	}
	for _, c := range pc.Changes {
		side := book.Bid
		if c.Side == "SELL" {
			side = book.Ask
		}
		l := levelsOf(t, []jsonLevel{{c.Price, c.Size}}, true)[0]
		if err := books[c.AssetID].Set(side, l.Price, l.Size, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range pc.Changes {
		bk := books[c.AssetID]
		for ltp, want := range map[string]bool{"0.500": false, "0.490": true, "0.510": false, "0.49": false} {
			if got := tenFieldHash(t, m, c.AssetID, pc.Timestamp, bk, ltp) == c.Hash; got != want {
				t.Fatalf("price_change %.6s with last trade price %s: holds %v, want %v", c.AssetID, ltp, got, want)
			}
		}
	}
	lb := book.New(Scale)
	if err := lb.Replace(levelsOf(t, later.Bids, true), levelsOf(t, later.Asks, false)); err != nil {
		t.Fatal(err)
	}
	if later.AssetID != b || tenFieldHash(t, m, b, later.Timestamp.String(), lb, "0.500") != later.Hash {
		t.Fatalf("later book of %.6s: hash does not hold with \"0.500\"", later.AssetID)
	}

	// The decoder's verdicts: min_order_size, tick_size and neg_risk are not
	// in WebSocket books; they are what the hashes above hold with.
	replay := func(trade []byte) *Decoder {
		d := NewDecoder(withInstrumentInfo(
			instrumentInfo{AssetID: a, Market: m, MinOrderSize: "5", TickSize: "0.01"},
			instrumentInfo{AssetID: b, Market: m, MinOrderSize: "5", TickSize: "0.01"}))
		var out venue.Frame
		for i, f := range lines {
			mustDecode(t, d, f, &out)
			if i == 1 && trade != nil {
				mustDecode(t, d, trade, &out)
			}
		}
		d.Flush(&out)
		return d
	}
	check := func(d *Decoder, asset string, ok, unverifiable uint64) {
		t.Helper()
		q := d.Quality(asset)
		if q.HashOK != ok || q.HashUnverifiable != unverifiable || q.HashMismatch != 0 || q.HashPending != 0 || !d.Book(asset).Valid() {
			t.Fatalf("%.6s: %+v valid %v; want ok %d, unverifiable %d, no mismatch, valid",
				asset, q, d.Book(asset).Valid(), ok, unverifiable)
		}
	}
	d := replay(nil)
	check(d, a, 1, 1)
	check(d, b, 2, 1)
	assertBook(t, d.Book(b), later)
	// Not in the capture: the trade's last_trade_price (its shape as in
	// nautilus_ws_misc_events.ndjson), reported on either asset, 24 ms later.
	for _, tr := range []struct{ asset, price string }{{a, "0.49"}, {b, "0.51"}} {
		trade := `{"asset_id":"` + tr.asset + `","event_type":"last_trade_price","fee_rate_bps":"0","market":"` + m +
			`","price":"` + tr.price + `","side":"SELL","size":"5","timestamp":"1766481546800"}`
		d := replay([]byte(trade))
		check(d, a, 2, 0)
		check(d, b, 3, 0)
	}
}
