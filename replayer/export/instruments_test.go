package export

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
)

const (
	insYes  = "72936048731589292555781174533757608024096898681344338816447372274344589246891"
	insNo   = "101155325224907042624192777106604175185803921887395325080529159889944296783944"
	insCond = "0x84c0ffe3f56cb357ff5ff8bc5d2182ae90be4dd6718e8403a6af472b452dbfa8"
)

// instrumentsDataset: a Gamma listing, a book summary that confirms it, a
// tick_size_change, a summary that contradicts the listing's neg-risk, a
// repeated tick_size_change, a stale summary (its time before the change) and
// a listing with an unreadable market. Record
// i is at baseNs + i·stepNs.
func instrumentsDataset(t *testing.T) string {
	rest := func(body string) rec { return rec{kind: datasets.KindRESTResponse, payload: []byte(body)} }
	frame := func(body string) rec { return rec{kind: datasets.KindFrame, payload: []byte(body)} }
	gamma := `[{"conditionId":"` + insCond + `","slug":"m","question":"Q?","active":true,"closed":false,"negRisk":false,"orderMinSize":5,"orderPriceMinTickSize":0.01,` +
		`"outcomes":"[\"Yes\", \"No\"]","clobTokenIds":"[\"` + insYes + `\", \"` + insNo + `\"]"}]`
	summary := func(id, negRisk string) string {
		return `{"market":"` + insCond + `","asset_id":"` + id + `","timestamp":"1761179880500","hash":"x","bids":[],"asks":[],"min_order_size":"5","tick_size":"0.01","neg_risk":` + negRisk + `}`
	}
	tick := `{"event_type":"tick_size_change","asset_id":"` + insYes + `","market":"` + insCond + `","old_tick_size":"0.01","new_tick_size":"0.001","timestamp":"1761179881000"}`
	return writeDataset(t, "polymarket", 0, []rec{
		ctl(datasets.KindConnect, datasets.Control{URL: "wss://ws-subscriptions-clob.polymarket.com/ws/market"}),
		rest(gamma),                    // 1
		rest(summary(insYes, "false")), // 2: confirms
		frame(tick),                    // 3: 0.01 → 0.001
		rest(summary(insNo, "true")),   // 4: neg_risk contradicts
		frame(tick),                    // 5: no change
		rest(summary(insYes, "false")), // 6: tick 0.01 again, but from before the change: stale
		rest(`[{"conditionId":"0xbad","orderPriceMinTickSize":"x","clobTokenIds":"[\"` + insYes + `\"]"}]`), // 6: unreadable
		ctl(datasets.KindCleanClose, datasets.Control{}),
	})
}

func exportInstruments(t *testing.T, dir string, opts ...Option) (*table, *Sink) {
	t.Helper()
	var buf bytes.Buffer
	s := sinkTo(t, &buf, TableInstruments, FormatParquet, opts...)
	replay(t, []string{dir}, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return readArrowTable(t, FormatParquet, buf.Bytes()), s
}

// TestInstrumentsMerge: a fact that only confirms or adds fills the row in,
// one that contradicts it starts a new row at its time (tick size from a
// tick_size_change at the venue's time, neg_risk from a summary), the
// previous row ends there, a summary older than the change by the venue's
// clock starts no row, and an unreadable listing changes nothing and is
// reported with its record.
func TestInstrumentsMerge(t *testing.T) {
	dir := instrumentsDataset(t)
	at := func(i int64) string { return itoa(baseNs + i*stepNs) }
	tb, s := exportInstruments(t, dir)
	type row map[string]string
	want := []row{
		{"instrument": insNo, "local_ts_ns": at(1), "exchange_ts_ns": "", "valid_until_ns": at(4), "neg_risk": "false", "tick_size": "0.01",
			"outcome": "No", "outcome_index": "1", "paired_instrument": insYes, "source": "gamma_markets", "min_order_size": "5", "market": insCond},
		{"instrument": insNo, "local_ts_ns": at(4), "exchange_ts_ns": "1761179880500000000", "valid_until_ns": "", "neg_risk": "true", "tick_size": "0.01",
			"outcome": "No", "source": "book_summary"},
		{"instrument": insYes, "local_ts_ns": at(1), "exchange_ts_ns": "", "valid_until_ns": at(3), "neg_risk": "false", "tick_size": "0.01",
			"outcome": "Yes", "outcome_index": "0", "paired_instrument": insNo, "source": "gamma_markets", "active": "true", "name": "Q?", "slug": "m", "type": "binary_option"},
		{"instrument": insYes, "local_ts_ns": at(3), "exchange_ts_ns": "1761179881000000000", "valid_until_ns": "", "tick_size": "0.001",
			"outcome": "Yes", "source": "tick_size_change", "sz_decimals": "", "max_leverage": ""},
	}
	if len(tb.rows) != len(want) {
		t.Fatalf("%d rows, want %d: %v", len(tb.rows), len(want), tb.rows)
	}
	for i, w := range want {
		for c, v := range w {
			if got := tb.rows[i][tb.col(t, c)]; got != v {
				t.Errorf("row %d %s: %q, want %q", i, c, got, v)
			}
		}
	}
	if p := s.Problems(); len(p) != 1 || !strings.Contains(p[0], "seq 8") || !strings.Contains(p[0], "orderPriceMinTickSize") {
		t.Fatalf("problems %q", p)
	}

	// The window keeps the rows in effect in it; --instrument by id or market.
	tb, _ = exportInstruments(t, dir, WithWindow(baseNs+4*stepNs, 0))
	if len(tb.rows) != 2 || tb.rows[0][tb.col(t, "source")] != "book_summary" || tb.rows[1][tb.col(t, "source")] != "tick_size_change" {
		t.Fatalf("window: %v", tb.rows)
	}
	tb, _ = exportInstruments(t, dir, WithWindow(0, baseNs+2*stepNs))
	if len(tb.rows) != 2 || tb.rows[0][tb.col(t, "source")] != "gamma_markets" || tb.rows[1][tb.col(t, "source")] != "gamma_markets" {
		t.Fatalf("window to: %v", tb.rows)
	}
	if tb, _ = exportInstruments(t, dir, WithInstruments(insYes)); len(tb.rows) != 2 || tb.rows[0][tb.col(t, "instrument")] != insYes {
		t.Fatalf("by id: %v", tb.rows)
	}
	if tb, _ = exportInstruments(t, dir, WithInstruments(insCond)); len(tb.rows) != 4 {
		t.Fatalf("by market: %v", tb.rows)
	}
	// A recorded instrument nothing describes: one row of nulls, at the first record.
	tb, _ = exportInstruments(t, dir, WithRecordedInstruments("7"))
	if r := tb.rows[2]; len(tb.rows) != 5 || r[tb.col(t, "instrument")] != "7" || r[tb.col(t, "source")] != "" ||
		r[tb.col(t, "local_ts_ns")] != at(0) || r[tb.col(t, "tick_size")] != "" {
		t.Fatalf("recorded (sorted between the two tokens): %v", tb.rows)
	}
}

func TestInstrumentsOptions(t *testing.T) {
	if _, err := New(io.Discard, TableInstruments, FormatTardis); !errors.Is(err, ErrOption) {
		t.Fatalf("tardis: %v", err)
	}
	if _, err := NewSplit(nil, TableInstruments, FormatCSV); !errors.Is(err, ErrOption) {
		t.Fatalf("split: %v", err)
	}
	if _, err := NewPartitioned(nil, nil, TableInstruments, FormatParquet, []PartitionField{PartVenue}, 0); !errors.Is(err, ErrOption) {
		t.Fatalf("partitioned: %v", err)
	}
	if _, err := New(io.Discard, TableTrades, FormatCSV, WithWindow(1, 2)); !errors.Is(err, ErrOption) {
		t.Fatalf("window on trades: %v", err)
	}
	if _, err := New(io.Discard, TableInstruments, FormatCSV, WithWindow(2, 1)); !errors.Is(err, ErrOption) {
		t.Fatalf("window backwards: %v", err)
	}
}

// TestInstrumentsFees: a Gamma listing's fees (feesEnabled, feeType,
// feeSchedule) are columns; a later listing with another rate starts a new
// row at its time, one that repeats it changes nothing, and a listing that
// states none leaves them null.
func TestInstrumentsFees(t *testing.T) {
	gamma := func(fees string) rec {
		return rec{kind: datasets.KindRESTResponse, payload: []byte(`[{"conditionId":"` + insCond + `","slug":"m","question":"Q?","active":true,"closed":false,` +
			`"outcomes":"[\"Yes\", \"No\"]","clobTokenIds":"[\"` + insYes + `\", \"` + insNo + `\"]"` + fees + `}]`)}
	}
	book := func(id string) rec {
		return rec{kind: datasets.KindFrame, payload: []byte(`{"event_type":"book","asset_id":"` + id + `","market":"` + insCond +
			`","timestamp":"1761179880000","hash":"x","bids":[{"price":"0.4","size":"10"}],"asks":[{"price":"0.6","size":"10"}]}`)}
	}
	dir := writeDataset(t, "polymarket", 0, []rec{
		ctl(datasets.KindConnect, datasets.Control{URL: "wss://ws-subscriptions-clob.polymarket.com/ws/market"}),
		gamma(``), // 1: no fees said
		gamma(`,"feesEnabled":true,"feeType":"crypto_fees","feeSchedule":{"exponent":1,"rate":"0.072","takerOnly":true,"rebateRate":0.2}`), // 2: fills in
		gamma(`,"feesEnabled":true,"feeType":"crypto_fees","feeSchedule":{"exponent":1,"rate":0.072,"rebateRate":0.2}`),                    // 3: the same
		gamma(`,"feesEnabled":true,"feeType":"crypto_fees","feeSchedule":{"exponent":1,"rate":0.07,"rebateRate":0.2}`),                     // 4: a new rate
		book(insYes), book(insNo), // events naming the tokens: the recording's instruments
		ctl(datasets.KindCleanClose, datasets.Control{}),
	})
	at := func(i int64) string { return itoa(baseNs + i*stepNs) }
	tb, s := exportInstruments(t, dir)
	if len(tb.rows) != 4 || len(s.Problems()) != 0 {
		t.Fatalf("%d rows (want 2 per token), problems %q: %v", len(tb.rows), s.Problems(), tb.rows)
	}
	for i, w := range []map[string]string{
		{"local_ts_ns": at(1), "valid_until_ns": at(4), "fees_enabled": "true", "fee_type": "crypto_fees", "taker_fee_rate": "0.072", "fee_exponent": "1", "maker_rebate_share": "0.2"},
		{"local_ts_ns": at(4), "valid_until_ns": "", "fees_enabled": "true", "fee_type": "crypto_fees", "taker_fee_rate": "0.07", "fee_exponent": "1", "maker_rebate_share": "0.2"},
	} {
		for c, v := range w {
			if got := tb.rows[i][tb.col(t, c)]; got != v {
				t.Errorf("row %d %s: %q, want %q", i, c, got, v)
			}
		}
	}
}
