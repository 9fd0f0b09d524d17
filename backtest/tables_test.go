package backtest

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/columnar"
)

// colType is a column's documented type: "int64", "string", "bool",
// "timestamp" (timestamp[ns], UTC) or "price", "size", "money" (decimal128
// at the run's finest price or size scale, or CashDecimals). A trailing "?"
// marks a nullable column.
type wantCol struct{ name, typ string }

// The tables as the package doc documents them.
var wantTables = map[string][]wantCol{
	"orders": {{"order_id", "int64"}, {"venue", "string"}, {"instrument", "string"}, {"side", "string"}, {"tif", "string"},
		{"post_only", "bool"}, {"reduce_only", "bool"}, {"price", "price"}, {"size", "size"}, {"amount", "price?"},
		{"filled", "size"}, {"status", "string"}, {"reason", "string"}, {"submit_ns", "timestamp?"}, {"active_ns", "timestamp?"},
		{"done_ns", "timestamp?"}, {"expire_ns", "timestamp?"}, {"tag", "string"}},
	"fills": {{"fill_seq", "int64"}, {"order_id", "int64"}, {"venue", "string"}, {"instrument", "string"}, {"side", "string"},
		{"price", "price"}, {"size", "size"}, {"liquidity", "string"}, {"queue_ahead", "size?"}, {"fee", "money"},
		{"exchange_ts_ns", "timestamp?"}, {"local_ts_ns", "timestamp"}, {"tag", "string"}},
	"positions": {{"local_ts_ns", "timestamp"}, {"venue", "string"}, {"instrument", "string"}, {"position", "size"},
		{"mark", "price"}, {"value", "money"}},
	"equity":   {{"local_ts_ns", "timestamp"}, {"cash", "money"}, {"equity", "money"}},
	"markouts": {{"fill_seq", "int64"}, {"venue", "string"}, {"instrument", "string"}, {"horizon_ns", "int64"}, {"mid", "price"}, {"pnl_per_unit", "price"}},
}

// expected renders r's rows as text cells, independently of WriteTables:
// decimals at the columns' scales (pd, sd: the finest of the run), times as
// integer ns, "" for null.
func expected(r *Result, pd, sd uint8) map[string][][]string {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	at := func(v int64, from, to uint8) string { return book.FormatDecimal(v*pow10(to-from), to) }
	px := func(id string, v int64) string { return at(v, r.Scales[id].PriceDecimals, pd) }
	sz := func(id string, v int64) string { return at(v, r.Scales[id].SizeDecimals, sd) }
	money := func(v int64) string { return book.FormatDecimal(v, CashDecimals) }
	tm := func(v int64) string {
		if v == 0 {
			return ""
		}
		return i(v)
	}
	out := map[string][][]string{}
	for _, o := range r.Orders {
		amt := ""
		if o.Amount != 0 {
			amt = px(o.Instrument, o.Amount)
		}
		out["orders"] = append(out["orders"], []string{u(o.ID), o.Venue, o.Instrument, o.Side.String(), o.TIF.String(),
			strconv.FormatBool(o.PostOnly), strconv.FormatBool(o.ReduceOnly), px(o.Instrument, o.Price), sz(o.Instrument, o.Size),
			amt, sz(o.Instrument, o.Filled), o.Status.String(), o.Reason, tm(o.SubmitNs), tm(o.ActiveNs), tm(o.DoneNs), tm(o.ExpireNs), o.Tag})
	}
	for _, f := range r.Fills {
		q := ""
		if f.Liquidity == Maker {
			q = sz(f.Instrument, f.Queue)
		}
		out["fills"] = append(out["fills"], []string{u(f.Seq), u(f.OrderID), f.Venue, f.Instrument, f.Side.String(),
			px(f.Instrument, f.Price), sz(f.Instrument, f.Size), f.Liquidity.String(), q, money(f.Fee), tm(f.ExchangeNs), i(f.RecvNs), f.Tag})
	}
	for _, p := range r.Positions {
		out["positions"] = append(out["positions"], []string{i(p.RecvNs), p.Venue, p.Instrument, sz(p.Instrument, p.Position),
			px(p.Instrument, p.Mark), money(p.Value)})
	}
	for _, p := range r.Equity {
		out["equity"] = append(out["equity"], []string{i(p.RecvNs), money(p.Cash), money(p.Equity)})
	}
	for _, m := range r.Markouts {
		f := r.Fills[m.Fill-1]
		out["markouts"] = append(out["markouts"], []string{u(m.Fill), f.Venue, f.Instrument, i(m.Horizon),
			px(f.Instrument, m.Mid), px(f.Instrument, m.PnL)})
	}
	return out
}

// cellOf renders row i of a as the CSV table prints it.
func cellOf(t *testing.T, a arrow.Array, i int) string {
	if a.IsNull(i) {
		return ""
	}
	switch a := a.(type) {
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.String:
		return a.Value(i)
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Timestamp:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Decimal128:
		v := a.Value(i)
		if v.HighBits() != 0 && v.HighBits() != -1 {
			t.Fatalf("decimal %v beyond int64", v)
		}
		return book.FormatDecimal(int64(v.LowBits()), uint8(a.DataType().(*arrow.Decimal128Type).Scale))
	}
	t.Fatalf("unexpected array %T", a)
	return ""
}

// checkSchema checks an Arrow schema against the documented table.
func checkSchema(t *testing.T, name string, sch *arrow.Schema, pd, sd uint8) {
	t.Helper()
	want := wantTables[name]
	if sch.NumFields() != len(want) {
		t.Fatalf("%s: %d columns, want %d: %v", name, sch.NumFields(), len(want), sch)
	}
	for k, w := range want {
		f := sch.Field(k)
		typ, null := strings.CutSuffix(w.typ, "?")
		var dt string
		switch typ {
		case "int64", "bool":
			dt = typ
		case "string":
			dt = "utf8"
		case "timestamp":
			dt = "timestamp[ns]"
		case "price":
			dt = "decimal(38, " + strconv.Itoa(int(pd)) + ")"
		case "size":
			dt = "decimal(38, " + strconv.Itoa(int(sd)) + ")"
		case "money":
			dt = "decimal(38, " + strconv.Itoa(CashDecimals) + ")"
		}
		if f.Name != w.name || f.Type.String() != dt || f.Nullable != null {
			t.Errorf("%s column %d: %s %s nullable=%v, want %s %s nullable=%v", name, k, f.Name, f.Type, f.Nullable, w.name, dt, null)
		}
	}
}

func readParquet(t *testing.T, name string, data []byte, pd, sd uint8) [][]string {
	t.Helper()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), parquet.NewReaderProperties(nil),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer tbl.Release()
	checkSchema(t, name, tbl.Schema(), pd, sd)
	rows := make([][]string, tbl.NumRows())
	for c := 0; c < int(tbl.NumCols()); c++ {
		r := 0
		for _, ch := range tbl.Column(c).Data().Chunks() {
			for i := 0; i < ch.Len(); i++ {
				rows[r] = append(rows[r], cellOf(t, ch, i))
				r++
			}
		}
	}
	return rows
}

func readArrowIPC(t *testing.T, name string, data []byte, pd, sd uint8) [][]string {
	t.Helper()
	r, err := ipc.NewFileReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer r.Close()
	checkSchema(t, name, r.Schema(), pd, sd)
	var rows [][]string
	for k := 0; k < r.NumRecords(); k++ {
		rec, err := r.Record(k)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			var row []string
			for c := 0; c < int(rec.NumCols()); c++ {
				row = append(row, cellOf(t, rec.Column(c), i))
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func readCSV(t *testing.T, name string, data []byte) [][]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var header []string
	for _, c := range wantTables[name] {
		header = append(header, c.name)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(header, ",") {
		t.Fatalf("%s: header %v, want %v", name, recs[:min(1, len(recs))], header)
	}
	// As the other forms say it: CSV writes a null time as 0 (no empty
	// integer cells) and a whole decimal with ".0".
	for _, r := range recs[1:] {
		for c, v := range r {
			switch typ, _ := strings.CutSuffix(wantTables[name][c].typ, "?"); typ {
			case "timestamp":
				if v == "0" {
					r[c] = ""
				}
			case "price", "size", "money":
				if d, ok := strings.CutSuffix(v, ".0"); ok && !strings.Contains(d, ".") {
					r[c] = d
				}
			}
		}
	}
	return recs[1:]
}

func sameRows(t *testing.T, what string, got, want [][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		if strings.Join(got[i], "\x00") != strings.Join(want[i], "\x00") {
			t.Fatalf("%s row %d:\n got %q\nwant %q", what, i, got[i], want[i])
		}
	}
}

func writeAll(t *testing.T, r *Result, dir string, opts columnar.Options) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, f := range []columnar.Format{columnar.Parquet, columnar.CSV, columnar.Arrow} {
		if err := r.WriteTables(dir, f, opts); err != nil {
			t.Fatal(err)
		}
		for _, name := range Tables {
			b, err := os.ReadFile(filepath.Join(dir, name+Extension(f)))
			if err != nil {
				t.Fatal(err)
			}
			files[name+Extension(f)] = b
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(files) {
		t.Fatalf("%d files in %s, want %d (a .tmp left behind?)", len(ents), dir, len(files))
	}
	return files
}

// The tables hold the Result's orders, fills, positions, equity and
// markouts to the last decimal, with the documented types, in Parquet (read
// back with pqarrow), Arrow IPC and CSV alike, and every row group of a
// small --batch-rows holds its share.
func TestTablesHoldTheResult(t *testing.T) {
	for _, c := range []struct {
		name, path, strat string
		p                 Params
		cash              int64
	}{
		{"pm-mm", pmSample, "mm", Params{"spread": "0.02"}, 1000e10},
		{"pm-complement", pmSample, "complement", Params{"edge": "-0.02"}, 10000e10},
		{"hl-mm", hlSample, "mm", Params{"spread": "0.001", "size": "0.01", "instrument": "BTC"}, 1e6 * 1e10},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := runBuiltin(t, c.path, c.strat, c.p, Config{Cash: c.cash})
			var pd, sd uint8
			for _, sc := range res.Scales {
				pd, sd = max(pd, sc.PriceDecimals), max(sd, sc.SizeDecimals)
			}
			want := expected(res, pd, sd)
			if len(want["fills"]) == 0 || len(want["positions"]) == 0 || len(want["equity"]) == 0 || len(want["markouts"]) == 0 {
				t.Fatalf("a table is empty: the case tests little (%d fills)", len(res.Fills))
			}
			// One equity row per sample time, increasing; positions only at
			// those times; the last sample is the end state.
			at := map[int64]bool{}
			for k, p := range res.Equity {
				if k > 0 && p.RecvNs <= res.Equity[k-1].RecvNs {
					t.Fatalf("equity sample %d at %d after %d", k, p.RecvNs, res.Equity[k-1].RecvNs)
				}
				at[p.RecvNs] = true
			}
			for _, p := range res.Positions {
				if !at[p.RecvNs] {
					t.Fatalf("position %+v at no equity sample", p)
				}
			}
			if last := res.Equity[len(res.Equity)-1]; cashF(last.Equity) != res.Summary.EndEquity {
				t.Fatalf("last equity sample %+v, summary's end equity %v", last, res.Summary.EndEquity)
			}
			files := writeAll(t, res, t.TempDir(), columnar.Options{BatchRows: 7})
			for _, name := range Tables {
				sameRows(t, name+".parquet", readParquet(t, name, files[name+".parquet"], pd, sd), want[name])
				sameRows(t, name+".arrow", readArrowIPC(t, name, files[name+".arrow"], pd, sd), want[name])
				sameRows(t, name+".csv", readCSV(t, name, files[name+".csv"]), want[name])
			}
		})
	}
}

// A run over two venues has one scale per column, the finest: the coarser
// venue's values are rescaled exactly; a value that would not fit is an
// error, not a wrong number.
func TestTablesMixedScales(t *testing.T) {
	pm, hl := book.Scale{PriceDecimals: 4, SizeDecimals: 6}, book.Scale{PriceDecimals: 8, SizeDecimals: 8}
	r := &Result{Scales: map[string]book.Scale{"tok": pm, "BTC": hl}, Summary: Summary{Digest: "xxh64:0"}}
	r.Orders = []*Order{
		{ID: 1, Venue: "polymarket", Instrument: "tok", Side: Buy, Price: 4567, Size: 1250, TIF: FOK, Amount: 25000,
			Filled: 1250, Status: StatusFilled, SubmitNs: 5, ActiveNs: 7, DoneNs: 7, Tag: "a,b"},
		{ID: 2, Venue: "hyperliquid", Instrument: "BTC", Side: Sell, Price: 9712345000000, Size: 1000000, TIF: ALO,
			Status: StatusRejected, Reason: `post-only "would cross"`, SubmitNs: 9},
	}
	r.Fills = []Fill{{Seq: 1, OrderID: 1, Venue: "polymarket", Instrument: "tok", Side: Buy, Price: 4567, Size: 1250,
		Liquidity: Taker, Fee: -31, RecvNs: 7}}
	r.Positions = []PositionPoint{{RecvNs: 8, Venue: "polymarket", Instrument: "tok", Position: -1250, Mark: 4600, Value: -5750000000}}
	r.Equity = []EquityPoint{{RecvNs: 8, Cash: 1, Equity: -2}}
	r.Markouts = []Markout{{Fill: 1, Horizon: 1e9, Mid: 4600, PnL: -33}}
	dir := t.TempDir()
	files := writeAll(t, r, dir, columnar.Options{})
	want := expected(r, 8, 8)
	if got := want["orders"][0][7]; got != "0.4567" {
		t.Fatalf("expected price %s", got)
	}
	for _, name := range Tables {
		sameRows(t, name+".parquet", readParquet(t, name, files[name+".parquet"], 8, 8), want[name])
		sameRows(t, name+".csv", readCSV(t, name, files[name+".csv"]), want[name])
	}
	r.Fills[0].Price = 1 << 60 // × 10^4 does not fit int64
	if err := r.WriteTables(dir, columnar.Parquet, columnar.Options{}); err == nil || !strings.Contains(err.Error(), "fills") {
		t.Fatalf("overflow: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fills.parquet.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed table left its temporary file: %v", err)
	}
	if err := r.WriteTables(dir, 4, columnar.Options{}); !errors.Is(err, columnar.ErrOption) {
		t.Fatalf("tardis format: %v", err)
	}
}
