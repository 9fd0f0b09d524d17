package export

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// verdictRecords is a Polymarket session whose one price_change carries a
// hash of another book: a REST-summary-shaped book (its hash of the
// nine-field form verifies and teaches the hash fields), the bad change, a
// good change closing its batch, a snapshot. Timestamps are 3 s apart, so
// the default sampled mode judges every hash.
func verdictRecords(t testing.TB) []rec {
	const (
		mk    = "0x2f1ab0ffaf465c4acd76b9a4a1f8980db26bfae7d248a6bb289350586028307e"
		asset = "94022367472047775158269173293876979533288470167463650966689320774843018181757"
	)
	ref := book.New(polymarket.Scale)
	if err := ref.Replace([]book.Level{{Price: 4000, Size: 10e6}}, []book.Level{{Price: 6000, Size: 10e6}}); err != nil {
		t.Fatal(err)
	}
	hash := func(ts string) string {
		return string(polymarket.BookHash(nil, polymarket.HashFields{Market: mk, AssetID: asset, Timestamp: ts,
			MinOrderSize: "5", TickSize: "0.01"}, ref))
	}
	summary := func(ts string) []byte {
		return []byte(`{"market":"` + mk + `","asset_id":"` + asset + `","timestamp":"` + ts + `","hash":"` + hash(ts) +
			`","bids":[{"price":"0.4","size":"10"}],"asks":[{"price":"0.6","size":"10"}],"min_order_size":"5","tick_size":"0.01","neg_risk":false}`)
	}
	change := func(ts, price, h string) []byte {
		return []byte(`{"event_type":"price_change","market":"` + mk + `","timestamp":"` + ts + `","price_changes":[{"asset_id":"` +
			asset + `","price":"` + price + `","size":"1","side":"BUY","hash":"` + h + `","best_bid":"0.4","best_ask":"0.6"}]}`)
	}
	wrong := strings.Repeat("ab", 20)
	ref.Set(book.Bid, 3000, 1e6, 0)
	ref.Set(book.Bid, 3100, 1e6, 0)
	good := hash("1761179889000")
	ref.Set(book.Bid, 3000, 0, 0)
	ref.Set(book.Bid, 3100, 0, 0)
	return []rec{
		ctl(datasets.KindConnect, datasets.Control{URL: "wss://ws-subscriptions-clob.polymarket.com/ws/market"}),
		{kind: datasets.KindFrame, payload: summary("1761179880000")},
		{kind: datasets.KindFrame, payload: change("1761179883000", "0.3", wrong)},
		{kind: datasets.KindFrame, payload: change("1761179886000", "0.3", wrong)},
		{kind: datasets.KindFrame, payload: change("1761179889000", "0.31", good)},
		{kind: datasets.KindFrame, payload: summary("1761179892000")},
	}
}

// A confirmed hash mismatch is an events row naming the book, and the depth
// rows flag it (hash_mismatch) with the book not valid until the snapshot.
func TestHashVerdictRows(t *testing.T) {
	path := writeDataset(t, venue.Polymarket, 0, verdictRecords(t))
	ev, _ := exportOne(t, []string{path}, TableEvents, FormatCSV, 0)
	et := readCSV(t, ev)
	var kinds []string
	for _, r := range et.rows {
		kinds = append(kinds, r[et.col(t, "kind")])
		if k := r[et.col(t, "kind")]; k == "hash_mismatch" && (r[et.col(t, "reason")] != k ||
			!strings.HasPrefix(r[et.col(t, "instruments")], "9402236747") || !strings.Contains(r[et.col(t, "text")], "ok, ")) {
			t.Errorf("row %q", r)
		}
	}
	if n := strings.Count(strings.Join(kinds, ","), "hash_mismatch"); n != 2 {
		t.Fatalf("events kinds %v: %d hash_mismatch rows, want one per bad batch", kinds, n)
	}
	dp, _ := exportOne(t, []string{path}, TableDepth, FormatCSV, 1, WithLevels(1))
	dt := readCSV(t, dp)
	var flags []string
	for _, r := range dt.rows {
		flags = append(flags, r[dt.col(t, "book_valid")]+"/"+r[dt.col(t, "hash_checked")]+"/"+r[dt.col(t, "hash_ok")]+"/"+
			r[dt.col(t, "hash_mismatch")]+"/"+r[dt.col(t, "hash_unverifiable")])
	}
	// valid/checked/ok/mismatch/unverifiable per row: the summary (ok); the
	// first bad change (its batch still open); the second (the first's
	// verdict: mismatch, the book no longer valid); the good change (the
	// second's: mismatch); the snapshot (the good change's batch is judged
	// as the snapshot replaces it: ok; then the snapshot's own: ok).
	want := []string{"true/true/true/false/false", "true/false/false/false/false", "false/true/false/true/false",
		"false/true/false/true/false", "true/true/true/false/false"}
	if strings.Join(flags, " ") != strings.Join(want, " ") {
		t.Errorf("depth flags\n%s\nwant\n%s", strings.Join(flags, " "), strings.Join(want, " "))
	}
	if bytes.Contains(ev, []byte("hash_unverifiable")) {
		t.Errorf("unverifiable rows in a session of the nine-field form")
	}
}
