package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// table is an export read back: column names and rows of cells rendered
// canonically ("" for null, shortest float text, decimal text for decimals).
type table struct {
	cols []string
	rows [][]string
	meta map[string]string
}

func (tb *table) col(t testing.TB, name string) int {
	t.Helper()
	for i, c := range tb.cols {
		if c == name {
			return i
		}
	}
	t.Fatalf("no column %q in %v", name, tb.cols)
	return -1
}

func readArrowTable(t testing.TB, f Format, data []byte) *table {
	t.Helper()
	var recs []arrow.Record
	var schema *arrow.Schema
	switch f {
	case FormatArrow:
		r, err := ipc.NewFileReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		schema = r.Schema()
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.Record(i)
			if err != nil {
				t.Fatal(err)
			}
			rec.Retain()
			recs = append(recs, rec)
		}
	case FormatParquet:
		tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), parquet.NewReaderProperties(nil),
			pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		defer tbl.Release()
		schema = tbl.Schema()
		tr := array.NewTableReader(tbl, 1<<20)
		defer tr.Release()
		for tr.Next() {
			rec := tr.Record()
			rec.Retain()
			recs = append(recs, rec)
		}
	default:
		t.Fatalf("readArrowTable: %s", f)
	}
	out := &table{meta: map[string]string{}}
	md := schema.Metadata()
	for i, k := range md.Keys() {
		out.meta[k] = md.Values()[i]
	}
	if f == FormatParquet { // the key/value metadata of the file footer
		pr, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range pr.MetaData().KeyValueMetadata() {
			if kv.Value != nil {
				out.meta[kv.Key] = *kv.Value
			}
		}
		pr.Close()
	}
	for _, fd := range schema.Fields() {
		out.cols = append(out.cols, fd.Name)
	}
	for _, rec := range recs {
		for r := 0; r < int(rec.NumRows()); r++ {
			row := make([]string, rec.NumCols())
			for c := 0; c < int(rec.NumCols()); c++ {
				row[c] = cell(rec.Column(c), r)
			}
			out.rows = append(out.rows, row)
		}
		rec.Release()
	}
	return out
}

func cell(a arrow.Array, r int) string {
	if a.IsNull(r) {
		return ""
	}
	switch a := a.(type) {
	case *array.Int64:
		return itoa(a.Value(r))
	case *array.Timestamp:
		return itoa(int64(a.Value(r)))
	case *array.Int32:
		return itoa(int64(a.Value(r)))
	case *array.Float64:
		return strconv.FormatFloat(a.Value(r), 'g', -1, 64)
	case *array.Boolean:
		return strconv.FormatBool(a.Value(r))
	case *array.String:
		return a.Value(r)
	case *array.Decimal128:
		sc := a.DataType().(*arrow.Decimal128Type).Scale
		return decText(a.Value(r).BigInt(), sc)
	}
	return fmt.Sprintf("?%T", a)
}

// decText renders an unscaled decimal as book.FormatDecimal does (trailing
// zeros trimmed), via math/big: an independent path to the same text.
func decText(v *big.Int, scale int32) string {
	r := new(big.Rat).SetFrac(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	s := r.FloatString(int(scale))
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func readCSV(t testing.TB, data []byte) *table {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("csv: no header")
	}
	for _, r := range rows[1:] {
		for i, c := range r {
			r[i] = wholeDecimal(c)
		}
	}
	return &table{cols: rows[0], rows: rows[1:]}
}

// wholeDecimal is a CSV cell as book.FormatDecimal prints it: a whole
// number the writer prints with ".0" (so that readers guess a decimal
// column) without it.
func wholeDecimal(c string) string {
	d, ok := strings.CutSuffix(c, ".0")
	if !ok || d == "" || strings.Trim(strings.TrimPrefix(d, "-"), "0123456789") != "" || d == "-" {
		return c
	}
	return d
}

// floatText is the float64 nearest the decimal text, rendered as cell does.
func floatText(t testing.TB, dec string) string {
	t.Helper()
	if dec == "" {
		return ""
	}
	f, err := strconv.ParseFloat(dec, 64)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

type dataset struct {
	name  string
	venue string
	paths func(t testing.TB) []string
}

var testDatasets = []dataset{
	{"polymarket", venue.Polymarket, func(t testing.TB) []string {
		return []string{writeDataset(t, venue.Polymarket, 0, pmRecords(t))}
	}},
	{"hyperliquid", venue.Hyperliquid, func(t testing.TB) []string {
		return []string{writeDataset(t, venue.Hyperliquid, 0, hlRecords(t))}
	}},
}

// exportAll replays paths once into one sink per (table, format) and returns
// the files and the truth recorder's states.
func exportOne(t testing.TB, paths []string, tb Table, f Format, levels int, opts ...Option) ([]byte, *truth) {
	t.Helper()
	var buf bytes.Buffer
	s := sinkTo(t, &buf, tb, f, opts...)
	tr := newTruth(levels)
	replay(t, paths, s, tr)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), tr
}

func TestDepthEveryEventEqualsBooks(t *testing.T) {
	for _, ds := range testDatasets {
		for _, f := range []Format{FormatParquet, FormatArrow} {
			for _, levels := range []int{1, 3, 25} {
				t.Run(fmt.Sprintf("%s/%s/%d", ds.name, f, levels), func(t *testing.T) {
					paths := ds.paths(t)
					data, tr := exportOne(t, paths, TableDepth, f, levels, WithLevels(levels))
					tb := readArrowTable(t, f, data)
					if len(tr.states) < 4 {
						t.Fatalf("only %d book states: the test data is not exercising the books", len(tr.states))
					}
					if len(tb.rows) != len(tr.states) {
						t.Fatalf("%d rows, want one per book change: %d", len(tb.rows), len(tr.states))
					}
					counts := ds.venue == venue.Hyperliquid
					for i, st := range tr.states {
						checkDepthRow(t, tb, i, st, levels, st.recvNs, counts, false)
					}
					if tb.meta[MetaVenue] != ds.venue || tb.meta[MetaTable] != "depth" || tb.meta[MetaLevels] != itoa(int64(levels)) {
						t.Errorf("metadata %v", tb.meta)
					}
				})
			}
		}
	}
}

// checkDepthRow compares row i of a depth table with a book state.
func checkDepthRow(t testing.TB, tb *table, i int, st state, levels int, localNs int64, counts, exact bool) {
	t.Helper()
	row := tb.rows[i]
	get := func(name string) string { return row[tb.col(t, name)] }
	where := fmt.Sprintf("row %d (%s at %d)", i, st.instrument, st.recvNs)
	if get("instrument") != st.instrument || get("local_ts_ns") != itoa(localNs) {
		t.Fatalf("%s: instrument %s local %s", where, get("instrument"), get("local_ts_ns"))
	}
	if get("book_valid") != strconv.FormatBool(st.valid) || get("crossed") != strconv.FormatBool(st.crossed) ||
		get("estimated") != strconv.FormatBool(st.estimated) {
		t.Errorf("%s: valid %s crossed %s estimated %s, want %v %v %v", where,
			get("book_valid"), get("crossed"), get("estimated"), st.valid, st.crossed, st.estimated)
	}
	conv := func(s string) string {
		if exact {
			return s
		}
		return floatText(t, s)
	}
	for side, lv := range map[string][][3]string{"bid": st.bids, "ask": st.asks} {
		for k := 0; k < levels; k++ {
			var want [3]string
			if k < len(lv) {
				want = lv[k]
			}
			n := strconv.Itoa(k)
			if got := get(side + "_price_" + n); got != conv(want[0]) {
				t.Fatalf("%s: %s_price_%d = %q, want %q", where, side, k, got, want[0])
			}
			if got := get(side + "_size_" + n); got != conv(want[1]) {
				t.Fatalf("%s: %s_size_%d = %q, want %q", where, side, k, got, want[1])
			}
			if counts {
				if got := get(side + "_count_" + n); got != want[2] {
					t.Fatalf("%s: %s_count_%d = %q, want %q", where, side, k, got, want[2])
				}
			}
		}
	}
}

func TestDepthIntervalIsBookAtBucketEnd(t *testing.T) {
	for _, ds := range testDatasets {
		for _, iv := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, time.Second} {
			t.Run(fmt.Sprintf("%s/%v", ds.name, iv), func(t *testing.T) {
				paths := ds.paths(t)
				data, tr := exportOne(t, paths, TableDepth, FormatArrow, 5, WithLevels(5), WithInterval(iv))
				tb := readArrowTable(t, FormatArrow, data)
				// One row per (instrument, bucket) with a change, at the bucket's end.
				type ib struct {
					inst string
					end  int64
				}
				last := map[ib]state{}
				var order []ib
				for _, st := range tr.states {
					k := ib{st.instrument, (floorDiv(st.recvNs, int64(iv)) + 1) * int64(iv)}
					if _, ok := last[k]; !ok {
						order = append(order, k)
					}
					last[k] = st
				}
				if len(tb.rows) != len(order) {
					t.Fatalf("%d rows, want %d (instrument, bucket) pairs with a change", len(tb.rows), len(order))
				}
				for i := range tb.rows {
					k := ib{tb.rows[i][tb.col(t, "instrument")], 0}
					k.end, _ = strconv.ParseInt(tb.rows[i][tb.col(t, "local_ts_ns")], 10, 64)
					st, ok := last[k]
					if !ok {
						t.Fatalf("row %d: no change of %s in the bucket ending %d", i, k.inst, k.end)
					}
					checkDepthRow(t, tb, i, st, 5, k.end, ds.venue == venue.Hyperliquid, false)
				}
			})
		}
	}
}

func TestExactDecimals(t *testing.T) {
	for _, ds := range testDatasets {
		for _, f := range []Format{FormatParquet, FormatArrow} {
			t.Run(ds.name+"/"+f.String(), func(t *testing.T) {
				data, tr := exportOne(t, ds.paths(t), TableDepth, f, 10, WithLevels(10), WithExact())
				tb := readArrowTable(t, f, data)
				if len(tb.rows) != len(tr.states) {
					t.Fatalf("%d rows, want %d", len(tb.rows), len(tr.states))
				}
				for i, st := range tr.states {
					checkDepthRow(t, tb, i, st, 10, st.recvNs, ds.venue == venue.Hyperliquid, true)
				}
				if tb.meta[MetaExact] != "true" {
					t.Errorf("metadata %v", tb.meta)
				}
			})
		}
	}
}

func TestFixedToFloatIsNearestDouble(t *testing.T) {
	cases := []struct {
		v   int64
		dec uint8
	}{
		{4800, 4}, {1, 4}, {9999, 4}, {100_250_000, 6}, {219_217_767, 6}, {10621700000000, 8},
		{1<<53 - 1, 8}, {1 << 53, 8}, {1<<53 + 1, 8}, {1<<63 - 1, 18}, {-(1 << 53) - 7, 3}, {123456789, 0},
	}
	for _, c := range cases {
		want, err := strconv.ParseFloat(book.FormatDecimal(c.v, c.dec), 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := columnar.FixedToFloat(c.v, c.dec); got != want {
			t.Errorf("columnar.FixedToFloat(%d, %d) = %v, want %v", c.v, c.dec, got, want)
		}
	}
}

// TestTardisMatchesParquet checks every Tardis layout: the header exactly,
// and every value equal to the Parquet export's (CSV text is the exact
// decimal, whose nearest double is the Parquet value) under the documented
// mapping of names (FormatTardis).
func TestTardisMatchesParquet(t *testing.T) {
	headers := map[Table]string{
		TableBookChanges: "exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount",
		TableTrades:      "exchange,symbol,timestamp,local_timestamp,id,side,price,amount",
		TableQuotes:      "exchange,symbol,timestamp,local_timestamp,ask_amount,ask_price,bid_price,bid_amount",
		TableDepth: "exchange,symbol,timestamp,local_timestamp,asks[0].price,asks[0].amount,bids[0].price,bids[0].amount," +
			"asks[1].price,asks[1].amount,bids[1].price,bids[1].amount",
	}
	// CSV column → Parquet column (µs timestamps are checked separately).
	mapping := map[string]string{"exchange": "venue", "symbol": "instrument", "is_snapshot": "is_snapshot", "id": "id",
		"side": "side", "price": "price", "amount": "size", "ask_amount": "ask_size", "ask_price": "ask_price",
		"bid_price": "bid_price", "bid_amount": "bid_size"}
	for i := 0; i < 2; i++ {
		n := strconv.Itoa(i)
		for _, s := range []string{"ask", "bid"} {
			mapping[s+"s["+n+"].price"] = s + "_price_" + n
			mapping[s+"s["+n+"].amount"] = s + "_size_" + n
		}
	}
	for _, ds := range testDatasets {
		for tbl, header := range headers {
			t.Run(ds.name+"/"+tbl.String(), func(t *testing.T) {
				paths := ds.paths(t)
				var cbuf, pbuf bytes.Buffer
				var opts []Option
				if tbl == TableDepth {
					opts = append(opts, WithLevels(2))
				}
				cs := sinkTo(t, &cbuf, tbl, FormatTardis, opts...)
				ps := sinkTo(t, &pbuf, tbl, FormatParquet, opts...)
				replay(t, paths, cs, ps)
				if err := cs.Close(); err != nil {
					t.Fatal(err)
				}
				if err := ps.Close(); err != nil {
					t.Fatal(err)
				}
				if got, _, _ := strings.Cut(cbuf.String(), "\n"); got != header {
					t.Fatalf("header\n%s\nwant\n%s", got, header)
				}
				c := readCSV(t, cbuf.Bytes())
				p := readArrowTable(t, FormatParquet, pbuf.Bytes())
				if len(c.rows) != len(p.rows) || (len(c.rows) == 0 && tbl != TableTrades) {
					t.Fatalf("csv %d rows, parquet %d", len(c.rows), len(p.rows))
				}
				for r := range c.rows {
					pr := p.rows[r]
					local, _ := strconv.ParseInt(pr[p.col(t, "local_ts_ns")], 10, 64)
					if got := c.rows[r][c.col(t, "local_timestamp")]; got != itoa(floorDiv(local, 1000)) {
						t.Fatalf("row %d local_timestamp %s, want µs of %d", r, got, local)
					}
					exch := pr[p.col(t, "exchange_ts_ns")]
					wantTS := itoa(floorDiv(local, 1000))
					if exch != "" {
						e, _ := strconv.ParseInt(exch, 10, 64)
						wantTS = itoa(floorDiv(e, 1000))
					}
					if got := c.rows[r][c.col(t, "timestamp")]; got != wantTS {
						t.Fatalf("row %d timestamp %s, want %s", r, got, wantTS)
					}
					for ci, name := range c.cols {
						pc, ok := mapping[name]
						if !ok {
							continue
						}
						got, want := c.rows[r][ci], pr[p.col(t, pc)]
						if strings.Contains(pc, "price") || strings.Contains(pc, "size") {
							got = floatText(t, got)
						}
						if got != want {
							t.Fatalf("row %d %s = %q, parquet %s = %q", r, name, c.rows[r][ci], pc, want)
						}
					}
				}
			})
		}
	}
}

// TestBookChangesRebuildTheBooks applies the book_changes export the way
// Tardis incremental_book_L2 consumers do and must arrive at the book the
// replay had after its last snapshot or level change, for each instrument:
// a reader that resets a book when its rows turn to is_snapshot=true
// (NautilusTrader), with full and diff snapshots, and one that clears only
// the price range a snapshot block covers, from the best price to the
// block's worst (hftbacktest), with full snapshots (the default).
func TestBookChangesRebuildTheBooks(t *testing.T) {
	for _, ds := range testDatasets {
		for _, mode := range []struct {
			name       string
			snaps      Snapshots
			rangeClear bool
		}{{"full/reset", SnapshotsFull, false}, {"full/range-clear", SnapshotsFull, true}, {"diff/reset", SnapshotsDiff, false}} {
			t.Run(ds.name+"/"+mode.name, func(t *testing.T) {
				paths := ds.paths(t)
				var buf bytes.Buffer
				s := sinkTo(t, &buf, TableBookChanges, FormatTardis, WithSnapshots(mode.snaps))
				// The book after the last snapshot or level event, per instrument.
				want := map[string][2]map[string]string{}
				replay(t, paths, s, replayer.SubscriberFunc(func(e *replayer.Event) error {
					if e.Decoded == nil || e.Book == nil || (e.Decoded.Type != venue.EventSnapshot && e.Decoded.Type != venue.EventLevel) {
						return nil
					}
					var sides [2]map[string]string
					for i, sd := range []book.Side{book.Bid, book.Ask} {
						sides[i] = map[string]string{}
						for _, l := range e.Book.Top(sd, nil, -1) {
							sides[i][book.FormatDecimal(l.Price, e.Scale.PriceDecimals)] = book.FormatDecimal(l.Size, e.Scale.SizeDecimals)
						}
					}
					want[e.Instrument] = sides
					return nil
				}))
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				c := readCSV(t, buf.Bytes())
				books, snaps, diffs := applyTardisChanges(t, c.rows, mode.rangeClear)
				if len(want) == 0 || snaps == 0 || diffs == 0 {
					t.Fatalf("%d books, %d snapshot blocks, %d change rows: the data does not exercise the table", len(want), snaps, diffs)
				}
				for inst, w := range want {
					b := books[inst]
					if b == nil {
						if len(w[0])+len(w[1]) == 0 {
							continue
						}
						t.Fatalf("%s: no rows", inst)
					}
					for i := range w {
						if fmt.Sprint(b[i]) != fmt.Sprint(w[i]) {
							t.Fatalf("%s side %d: rebuilt %v\nbook    %v", inst, i, b[i], w[i])
						}
					}
				}
			})
		}
	}
}

// applyTardisChanges rebuilds books from incremental_book_L2 rows. A
// snapshot block is the run of is_snapshot=true rows of one instrument.
// Without rangeClear the book resets at a block; with it, each side loses
// only the levels from its best price to the block's worst price on that
// side, as hftbacktest's snapshot handling does, and deeper levels stay.
func applyTardisChanges(t *testing.T, rows [][]string, rangeClear bool) (books map[string]*[2]map[string]string, snaps, diffs int) {
	t.Helper()
	books = map[string]*[2]map[string]string{}
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for r := 0; r < len(rows); {
		inst := rows[r][1]
		b := books[inst]
		if b == nil {
			b = &[2]map[string]string{{}, {}}
			books[inst] = b
		}
		end := r + 1
		if rows[r][4] == "true" {
			for end < len(rows) && rows[end][4] == "true" && rows[end][1] == inst {
				end++
			}
			snaps++
			if !rangeClear {
				*b = [2]map[string]string{{}, {}}
			} else {
				for i, sd := range []string{"bid", "ask"} {
					worst, have := 0.0, false
					for _, row := range rows[r:end] {
						if row[5] != sd {
							continue
						}
						p := num(row[6])
						if !have || (sd == "bid" && p < worst) || (sd == "ask" && p > worst) {
							worst, have = p, true
						}
					}
					for px := range b[i] {
						if p := num(px); have && ((sd == "bid" && p >= worst) || (sd == "ask" && p <= worst)) {
							delete(b[i], px)
						}
					}
				}
			}
		} else {
			diffs++
		}
		for _, row := range rows[r:end] {
			i := 0
			if row[5] == "ask" {
				i = 1
			}
			if row[7] == "0" {
				delete(b[i], row[6])
			} else {
				b[i][row[6]] = row[7]
			}
		}
		r = end
	}
	return books, snaps, diffs
}

// With diff snapshots a later snapshot that equals the book writes nothing;
// one that drops a level writes size 0 for it (not a snapshot block a
// consumer would merge). With full snapshots (the default) every snapshot
// is a block, then size-0 rows for the levels it no longer has.
func TestBookChangesSnapshotDiff(t *testing.T) {
	for _, tc := range []struct {
		mode Snapshots
		want []string
	}{
		{SnapshotsDiff, []string{
			"true bid 0.48 1", "true bid 0.47 2", "true ask 0.52 3",
			"false bid 0.47 0",
			"false ask 0.52 0", "false ask 0.53 1",
		}},
		{SnapshotsFull, []string{
			"true bid 0.48 1", "true bid 0.47 2", "true ask 0.52 3",
			"true bid 0.48 1", "true bid 0.47 2", "true ask 0.52 3",
			"true bid 0.48 1", "true ask 0.52 3", "false bid 0.47 0",
			"true bid 0.48 1", "true ask 0.53 1", "false ask 0.52 0",
		}},
	} {
		snapshotRows(t, tc.mode, tc.want)
	}
}

func snapshotRows(t *testing.T, mode Snapshots, want []string) {
	t.Helper()
	var buf bytes.Buffer
	s := sinkTo(t, &buf, TableBookChanges, FormatTardis, WithSnapshots(mode))
	sb := newSynthBook("x", 3)
	snap := func(bids, asks []book.Level) {
		t.Helper()
		if err := sb.bk.Replace(bids, asks); err != nil {
			t.Fatal(err)
		}
		sb.now += 1e6
		sb.dec = venue.Event{Type: venue.EventSnapshot, Instrument: "x", Book: sb.bk}
		sb.ev.RecvNs = sb.now
		if err := s.OnEvent(&sb.ev); err != nil {
			t.Fatal(err)
		}
	}
	a := []book.Level{{Price: 4800, Size: 1e6}, {Price: 4700, Size: 2e6}}
	b := []book.Level{{Price: 5200, Size: 3e6}}
	snap(a, b)
	snap(a, b)                                          // unchanged: no rows
	snap(a[:1], b)                                      // 0.47 gone
	snap(a[:1], []book.Level{{Price: 5300, Size: 1e6}}) // ask moved
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := readCSV(t, buf.Bytes())
	var lines []string
	for _, r := range got.rows {
		lines = append(lines, strings.Join(r[4:], " "))
	}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Fatalf("mode %d rows\n%s\nwant\n%s", mode, strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestEventsTable(t *testing.T) {
	paths := testDatasets[0].paths(t)
	data, _ := exportOne(t, paths, TableEvents, FormatArrow, 0)
	tb := readArrowTable(t, FormatArrow, data)
	want := []struct{ kind, detail, col string }{
		{"connect", "wss://ws-subscriptions-clob.polymarket.com/ws/market", "url"},
		{"disconnect", "1006", "code"},
		{"reconnect", "1", "attempt"},
		{"connect", "wss://ws-subscriptions-clob.polymarket.com/ws/market", "url"},
		{"gap", "test gap", "text"},
		{"clean_close", "", "text"},
	}
	if len(tb.rows) != len(want) {
		t.Fatalf("%d event rows, want %d: %v", len(tb.rows), len(want), tb.rows)
	}
	for i, w := range want {
		if got := tb.rows[i][tb.col(t, "kind")]; got != w.kind {
			t.Errorf("row %d kind %s, want %s", i, got, w.kind)
		}
		if got := tb.rows[i][tb.col(t, w.col)]; got != w.detail {
			t.Errorf("row %d %s %q, want %q", i, w.col, got, w.detail)
		}
	}
	if got := tb.rows[1][tb.col(t, "reason")]; got != "abnormal closure" {
		t.Errorf("disconnect reason %q", got)
	}
	if got := tb.rows[4][tb.col(t, "to_ns")]; got != itoa(baseNs+stepNs) {
		t.Errorf("gap to_ns %q", got)
	}
}

func TestTradesAndQuotes(t *testing.T) {
	for _, ds := range testDatasets {
		t.Run(ds.name, func(t *testing.T) {
			paths := ds.paths(t)
			var tbuf, qbuf bytes.Buffer
			ts := sinkTo(t, &tbuf, TableTrades, FormatArrow)
			qs := sinkTo(t, &qbuf, TableQuotes, FormatArrow)
			var trades []venue.Event
			tops := map[string]string{}
			var wantQuotes int
			replay(t, paths, ts, qs, replayer.SubscriberFunc(func(e *replayer.Event) error {
				if e.Decoded != nil && e.Decoded.Type == venue.EventTrade {
					trades = append(trades, *e.Decoded)
				}
				if e.Book != nil && e.Instrument != "" {
					bb, _ := e.Book.Best(book.Bid)
					ba, _ := e.Book.Best(book.Ask)
					top := fmt.Sprint(bb.Price, bb.Size, ba.Price, ba.Size, e.Book.Len(book.Bid) > 0, e.Book.Len(book.Ask) > 0, e.Book.Valid())
					if old, ok := tops[e.Instrument]; !ok || old != top {
						wantQuotes++
						tops[e.Instrument] = top
					}
				}
				return nil
			}))
			for _, s := range []*Sink{ts, qs} {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			tt := readArrowTable(t, FormatArrow, tbuf.Bytes())
			if len(trades) == 0 || len(tt.rows) != len(trades) {
				t.Fatalf("%d trade rows, %d trades", len(tt.rows), len(trades))
			}
			sc := book.Scale{PriceDecimals: 4, SizeDecimals: 6}
			if ds.venue == venue.Hyperliquid {
				sc = book.Scale{PriceDecimals: 8, SizeDecimals: 8}
			}
			for i, tr := range trades {
				row := tt.rows[i]
				side := "sell"
				if tr.Side == book.Bid {
					side = "buy"
				}
				if row[tt.col(t, "side")] != side || row[tt.col(t, "price")] != floatText(t, book.FormatDecimal(tr.Price, sc.PriceDecimals)) ||
					row[tt.col(t, "size")] != floatText(t, book.FormatDecimal(tr.Size, sc.SizeDecimals)) {
					t.Errorf("trade %d: row %v, event %+v", i, row, tr)
				}
			}
			qt := readArrowTable(t, FormatArrow, qbuf.Bytes())
			if len(qt.rows) != wantQuotes {
				t.Fatalf("%d quote rows, want %d top-of-book changes", len(qt.rows), wantQuotes)
			}
		})
	}
}

// TestByteIdentical exports every table in every format twice.
func TestByteIdentical(t *testing.T) {
	for _, ds := range testDatasets {
		paths := ds.paths(t)
		for tbl := TableDepth; tbl <= TableInstruments; tbl++ {
			for _, f := range []Format{FormatParquet, FormatArrow, FormatCSV} {
				t.Run(fmt.Sprintf("%s/%s/%s", ds.name, tbl, f), func(t *testing.T) {
					var outs [2][]byte
					for i := range outs {
						opts := []Option{WithBatchRows(16), WithDatasets(paths...)} // several batches
						if tbl == TableDepth {
							opts = append(opts, WithInterval(100*time.Millisecond))
						}
						data, _ := exportOne(t, paths, tbl, f, 25, opts...)
						outs[i] = data
					}
					if len(outs[0]) == 0 || !bytes.Equal(outs[0], outs[1]) {
						t.Fatalf("two exports differ (%d and %d bytes)", len(outs[0]), len(outs[1]))
					}
				})
			}
		}
	}
}

func TestEmptyExportIsValid(t *testing.T) {
	for _, f := range []Format{FormatParquet, FormatArrow} {
		var buf bytes.Buffer
		s := sinkTo(t, &buf, TableDepth, f, WithSource(hyperliquid.Driver), WithExact())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		tb := readArrowTable(t, f, buf.Bytes())
		if len(tb.rows) != 0 || tb.meta[MetaPriceDecimals] != "8" || tb.col(t, "bid_count_24") < 0 {
			t.Fatalf("%s: %d rows, meta %v", f, len(tb.rows), tb.meta)
		}
	}
}

func TestMixedScaleIsAnError(t *testing.T) {
	var buf bytes.Buffer
	s := sinkTo(t, &buf, TableDepth, FormatArrow, WithSource(polymarket.Driver))
	sb := newSynthBook("x", 5)
	e := sb.next(1)
	e.Scale = book.Scale{PriceDecimals: 8, SizeDecimals: 8}
	if err := s.OnEvent(e); !errors.Is(err, ErrMixedScale) {
		t.Fatalf("err %v, want ErrMixedScale", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.OnEvent(sb.next(2)); !errors.Is(err, ErrClosed) {
		t.Fatalf("OnEvent after Close: %v", err)
	}
}

func TestOptionErrors(t *testing.T) {
	cases := []struct {
		name string
		tbl  Table
		f    Format
		opts []Option
	}{
		{"levels 0", TableDepth, FormatParquet, []Option{WithLevels(0)}},
		{"levels too many", TableDepth, FormatParquet, []Option{WithLevels(MaxLevels + 1)}},
		{"negative interval", TableDepth, FormatParquet, []Option{WithInterval(-time.Second)}},
		{"interval on trades", TableTrades, FormatParquet, []Option{WithInterval(time.Second)}},
		{"snappy arrow", TableDepth, FormatArrow, []Option{WithCompression(columnar.Snappy)}},
		{"batch rows 0", TableDepth, FormatCSV, []Option{WithBatchRows(0)}},
		{"bad table", Table(99), FormatCSV, nil},
		{"bad format", TableDepth, Format(0), nil},
		{"bad scale", TableDepth, FormatCSV, []Option{WithSource(scaledDriver{polymarket.Driver, book.Scale{PriceDecimals: 19}})}},
	}
	for _, c := range cases {
		if _, err := New(&bytes.Buffer{}, c.tbl, c.f, c.opts...); !errors.Is(err, ErrOption) {
			t.Errorf("%s: err %v, want ErrOption", c.name, err)
		}
	}
	for _, s := range []string{"depth", "book_changes", "trades", "quotes", "events"} {
		if tb, err := ParseTable(s); err != nil || tb.String() != s {
			t.Errorf("ParseTable(%q) = %v, %v", s, tb, err)
		}
	}
	if _, err := ParseTable("raw"); err == nil {
		t.Error("ParseTable(raw) is the CLI's business")
	}
}

// failWriter fails every write after n bytes, as a full disk would.
type failWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) <= w.n {
		w.n -= len(p)
		return len(p), nil
	}
	k := w.n
	w.n = 0
	return k, errDiskFull
}

func TestWriteErrorIsSticky(t *testing.T) {
	for _, f := range []Format{FormatParquet, FormatArrow, FormatCSV} {
		for _, at := range []int{0, 100, 5000} {
			t.Run(fmt.Sprintf("%s/%d", f, at), func(t *testing.T) {
				s, err := New(&failWriter{n: at}, TableDepth, f, WithBatchRows(16))
				if err != nil {
					t.Fatal(err)
				}
				sb := newSynthBook("x", 30)
				var first error
				for i := 0; i < 2000 && first == nil; i++ {
					first = s.OnEvent(sb.next(i))
				}
				if first == nil {
					first = s.Close()
				}
				var we *WriteError
				if !errors.As(first, &we) || !errors.Is(first, errDiskFull) {
					t.Fatalf("err %v, want a *WriteError wrapping the disk error", first)
				}
				if err := s.OnEvent(sb.next(1)); err != nil && !errors.Is(err, ErrClosed) && !errors.As(err, &we) {
					t.Fatalf("after failure: %v", err)
				}
			})
		}
	}
}

// TestDepthAllocs: a depth row costs no allocation once the sink is warm
// (batches are preallocated; a flush is amortised over WithBatchRows rows).
func TestDepthAllocs(t *testing.T) {
	for _, f := range []Format{FormatParquet, FormatArrow, FormatCSV} {
		for _, iv := range []time.Duration{0, 100 * time.Millisecond} {
			var buf bytes.Buffer
			opts := []Option{WithBatchRows(1 << 16)}
			if iv > 0 {
				opts = append(opts, WithInterval(iv))
			}
			s := sinkTo(t, &buf, TableDepth, f, opts...)
			sb := newSynthBook("0x1234", 40)
			i := 0
			for ; i < 10; i++ {
				if err := s.OnEvent(sb.next(i)); err != nil {
					t.Fatal(err)
				}
			}
			allocs := testing.AllocsPerRun(2000, func() {
				i++
				if err := s.OnEvent(sb.next(i)); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s interval %v: %.2f allocations per event, want 0", f, iv, allocs)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The datasets package's kinds used by the events table must stay distinct
// from frames; a guard against a renumbering.
var _ = datasets.KindFrame

// TestEventsTableLiveRecords: the live engine's records of a capture (an
// integrity finding, the resubscribe healing it, a lag) and the clean close
// of a connection are rows of the events table with their details.
func TestEventsTableLiveRecords(t *testing.T) {
	asset := "94022367472047775158269173293876979533288470167463650966689320774843018181757"
	recs := []rec{ctl(datasets.KindConnect, datasets.Control{URL: "wss://ws-subscriptions-clob.polymarket.com/ws/market"})}
	recs = append(recs, frames(t, "polypy_hash_vector_ws_2025-10.ndjson")...)
	recs = append(recs,
		ctl(datasets.KindIntegrity, datasets.Control{Instruments: []string{asset}, Reason: datasets.CheckHashMismatch,
			FromNs: baseNs, ToNs: baseNs, Text: "book hash mismatch at record 3"}),
		ctl(datasets.KindResubscribe, datasets.Control{Instruments: []string{asset}, Reason: datasets.CheckHashMismatch, Attempt: 1}),
		ctl(datasets.KindLiveLag, datasets.Control{Dropped: 12, FromNs: baseNs, ToNs: baseNs + stepNs, Text: "live engine fell behind"}),
		ctl(datasets.KindCleanClose, datasets.Control{Code: 1000, Reason: "shutdown"}))
	data, _ := exportOne(t, []string{writeDataset(t, "polymarket", 0, recs)}, TableEvents, FormatArrow, 0)
	tb := readArrowTable(t, FormatArrow, data)
	want := []struct{ kind, col, detail string }{
		{"connect", "url", "wss://ws-subscriptions-clob.polymarket.com/ws/market"},
		{"integrity", "instruments", asset},
		{"resubscribe", "attempt", "1"},
		{"live_lag", "dropped", "12"},
		{"clean_close", "code", "1000"},
	}
	if len(tb.rows) != len(want) {
		t.Fatalf("%d event rows, want %d: %v", len(tb.rows), len(want), tb.rows)
	}
	for i, w := range want {
		if got := tb.rows[i][tb.col(t, "kind")]; got != w.kind {
			t.Errorf("row %d kind %s, want %s", i, got, w.kind)
		}
		if got := tb.rows[i][tb.col(t, w.col)]; got != w.detail {
			t.Errorf("row %d %s %q, want %q", i, w.col, got, w.detail)
		}
	}
	if got := tb.rows[1][tb.col(t, "reason")]; got != datasets.CheckHashMismatch {
		t.Errorf("integrity reason %q", got)
	}
}

// TestReconnectSnapshotClearsDeepLevels is the case: a deep book,
// a disconnect, and the reconnect snapshot narrower than the book before. A
// reader that clears only the snapshot's price range (hftbacktest) must not
// keep the deep levels the venue no longer has: with full snapshots it gets
// explicit size-0 rows for them, and both kinds of reader end with the
// venue's book. With diff snapshots that reader keeps them, which is why
// full is the default.
func TestReconnectSnapshotClearsDeepLevels(t *testing.T) {
	for _, mode := range []Snapshots{SnapshotsFull, SnapshotsDiff} {
		var buf bytes.Buffer
		s := sinkTo(t, &buf, TableBookChanges, FormatTardis, WithSnapshots(mode))
		sb := newSynthBook("x", 10) // bids 0.48 … 0.471, asks 0.52 … 0.529
		sb.ev.RecvNs = sb.now
		if err := s.OnEvent(&sb.ev); err != nil {
			t.Fatal(err)
		}
		if err := s.OnEvent(sb.next(1)); err != nil { // a level change: the rows are no longer a block
			t.Fatal(err)
		}
		loss := replayer.Event{Venue: venue.Polymarket, Kind: datasets.KindDisconnect, Instrument: "x", RecvNs: sb.now + 1}
		if err := s.OnEvent(&loss); err != nil {
			t.Fatal(err)
		}
		narrow := [2][]book.Level{{{Price: 4790, Size: 5e6}, {Price: 4780, Size: 6e6}}, {{Price: 5210, Size: 7e6}}}
		if err := sb.bk.Replace(narrow[0], narrow[1]); err != nil {
			t.Fatal(err)
		}
		sb.now += 1e9
		sb.ev.RecvNs = sb.now
		sb.dec = venue.Event{Type: venue.EventSnapshot, Instrument: "x", Book: sb.bk}
		if err := s.OnEvent(&sb.ev); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		want := "[map[0.478:6 0.479:5] map[0.521:7]]"
		rows := readCSV(t, buf.Bytes()).rows
		for _, rangeClear := range []bool{false, true} {
			books, _, _ := applyTardisChanges(t, rows, rangeClear)
			got := fmt.Sprint(*books["x"])
			if ok := got == want; ok != (mode == SnapshotsFull || !rangeClear) {
				t.Errorf("snapshots %d, range-clearing reader %v: book %s (venue's %s)", mode, rangeClear, got, want)
			}
		}
	}
}

// TestCSVIsTheTableVocabulary: FormatCSV has exactly the columns of the
// Parquet table, in order and by name, and every value equal (times as
// integer ns, decimals exact text whose nearest double is Parquet's).
func TestCSVIsTheTableVocabulary(t *testing.T) {
	for _, ds := range testDatasets {
		for tbl := TableDepth; tbl <= TableInstruments; tbl++ {
			t.Run(ds.name+"/"+tbl.String(), func(t *testing.T) {
				paths := ds.paths(t)
				var cbuf, pbuf bytes.Buffer
				cs := sinkTo(t, &cbuf, tbl, FormatCSV, WithLevels(3))
				ps := sinkTo(t, &pbuf, tbl, FormatParquet, WithLevels(3))
				if tbl != TableDepth {
					cs = sinkTo(t, &cbuf, tbl, FormatCSV)
					ps = sinkTo(t, &pbuf, tbl, FormatParquet)
				}
				replay(t, paths, cs, ps)
				if err := cs.Close(); err != nil {
					t.Fatal(err)
				}
				if err := ps.Close(); err != nil {
					t.Fatal(err)
				}
				c := readCSV(t, cbuf.Bytes())
				p := readArrowTable(t, FormatParquet, pbuf.Bytes())
				if strings.Join(c.cols, ",") != strings.Join(p.cols, ",") {
					t.Fatalf("csv columns\n%v\nparquet\n%v", c.cols, p.cols)
				}
				if len(c.rows) != len(p.rows) || len(c.rows) == 0 {
					t.Fatalf("csv %d rows, parquet %d", len(c.rows), len(p.rows))
				}
				for r := range c.rows {
					for i, name := range c.cols {
						got, want := c.rows[r][i], p.rows[r][i]
						if strings.Contains(name, "price") || strings.Contains(name, "size") {
							if got != "" {
								got = floatText(t, got)
							}
						}
						if want == "" && (got == "0" || got == "-1") {
							continue // an integer column's null: no empty integer cells in CSV
						}
						if got != want {
							t.Fatalf("row %d %s: csv %q, parquet %q", r, name, c.rows[r][i], want)
						}
					}
				}
				if tbl != TableEvents {
					if i := c.col(t, "instrument"); !strings.Contains(cbuf.String(), `,"`+c.rows[0][i]+`",`) {
						t.Errorf("instrument %s is not quoted", c.rows[0][i])
					}
				}
			})
		}
	}
}

// scaledDriver is a driver with another scale.
type scaledDriver struct {
	venue.Driver
	scale book.Scale
}

func (d scaledDriver) Scale() book.Scale { return d.scale }
