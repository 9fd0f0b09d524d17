package backtest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/tapedeck/tapedeck/columnar"
)

// Metadata keys of every table WriteTables writes (besides columnar's
// tapedeck.table, backtest_NAME, and tapedeck.datasets): the run's digest,
// its strategy's name and its parameters as a JSON object.
const (
	MetaDigest   = "tapedeck.backtest.digest"
	MetaStrategy = "tapedeck.backtest.strategy"
	MetaParams   = "tapedeck.backtest.params"
)

// Tables are the tables WriteTables writes, in order, each as NAME.EXT.
var Tables = []string{"orders", "fills", "positions", "equity", "markouts"}

// Extension returns the file extension WriteTables gives format f.
func Extension(f columnar.Format) string {
	switch f {
	case columnar.Parquet:
		return ".parquet"
	case columnar.Arrow:
		return ".arrow"
	}
	return ".csv"
}

// WriteTables writes the run's orders, fills, positions, equity and markouts
// into dir (created if missing) as orders.EXT … markouts.EXT, through
// columnar's typed tables: Parquet, Arrow IPC or CSV by the same writers,
// options (compression, batch rows, source datasets) and conventions as the
// replayed tables. Times are
// timestamp[ns] in UTC (null where there is none), prices, sizes and money
// exact decimals: prices and sizes at the finest scale of the run's
// instruments (one scale per column), money at CashDecimals; CSV prints the
// same values as exact text under the same column names. The columns are
// documented in the package doc (Outputs). Identical runs give
// byte-identical files. A file is written to NAME.EXT.tmp and renamed when
// complete, so a failed write leaves no partial table under its name.
func (r *Result) WriteTables(dir string, f columnar.Format, o columnar.Options) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tw := r.tableWriter()
	for _, name := range Tables {
		if err := tw.write(filepath.Join(dir, name+Extension(f)), name, f, o); err != nil {
			return fmt.Errorf("backtest: write %s: %w", name, err)
		}
	}
	return nil
}

// errOverflow: a value does not fit int64 at the column's scale.
var errOverflow = errors.New("value out of range at the column's scale")

type tableWriter struct {
	r      *Result
	pd, sd uint8 // the columns' price and size scales
	err    error // the first rescale overflow
}

func (r *Result) tableWriter() *tableWriter {
	tw := &tableWriter{r: r}
	for _, sc := range r.Scales {
		tw.pd, tw.sd = max(tw.pd, sc.PriceDecimals), max(tw.sd, sc.SizeDecimals)
	}
	return tw
}

func (tw *tableWriter) rescale(v int64, from, to uint8) int64 {
	m := pow10(to - from)
	if m == 1 {
		return v
	}
	if v > math.MaxInt64/m || v < math.MinInt64/m {
		if tw.err == nil {
			tw.err = errOverflow
		}
		return 0
	}
	return v * m
}

// px and sz put instrument id's fixed-point price and size at the columns' scale.
func (tw *tableWriter) px(id string, v int64) int64 {
	return tw.rescale(v, tw.r.Scales[id].PriceDecimals, tw.pd)
}

func (tw *tableWriter) sz(id string, v int64) int64 {
	return tw.rescale(v, tw.r.Scales[id].SizeDecimals, tw.sd)
}

// schema is table name's schema at the run's scales.
func (tw *tableWriter) schema(name string) columnar.TypedSchema {
	i64 := func(n string) columnar.Column { return columnar.Column{Name: n, Type: columnar.Int64} }
	str := func(n string) columnar.Column { return columnar.Column{Name: n, Type: columnar.String} }
	boolean := func(n string) columnar.Column { return columnar.Column{Name: n, Type: columnar.Bool} }
	ts := func(n string, null bool) columnar.Column {
		return columnar.Column{Name: n, Type: columnar.Timestamp, Nullable: null}
	}
	dec := func(n string, scale uint8, null bool) columnar.Column {
		return columnar.Column{Name: n, Type: columnar.Decimal, Scale: scale, Nullable: null}
	}
	price := func(n string, null bool) columnar.Column { return dec(n, tw.pd, null) }
	size := func(n string, null bool) columnar.Column { return dec(n, tw.sd, null) }
	money := func(n string) columnar.Column { return dec(n, CashDecimals, false) }
	var cols []columnar.Column
	switch name {
	case "orders":
		cols = []columnar.Column{i64("order_id"), str("venue"), str("instrument"), str("side"), str("tif"),
			boolean("post_only"), boolean("reduce_only"), price("price", false), size("size", false),
			price("amount", true), size("filled", false), str("status"), str("reason"),
			ts("submit_ns", true), ts("active_ns", true), ts("done_ns", true), ts("expire_ns", true), str("tag")}
	case "fills":
		cols = []columnar.Column{i64("fill_seq"), i64("order_id"), str("venue"), str("instrument"), str("side"),
			price("price", false), size("size", false), str("liquidity"), size("queue_ahead", true), money("fee"),
			ts("exchange_ts_ns", true), ts("local_ts_ns", false), str("tag")}
	case "positions":
		cols = []columnar.Column{ts("local_ts_ns", false), str("venue"), str("instrument"), size("position", false),
			price("mark", false), money("value")}
	case "equity":
		cols = []columnar.Column{ts("local_ts_ns", false), money("cash"), money("equity")}
	case "markouts":
		cols = []columnar.Column{i64("fill_seq"), str("venue"), str("instrument"), i64("horizon_ns"),
			price("mid", false), price("pnl_per_unit", false)}
	}
	md := map[string]string{MetaDigest: tw.r.Summary.Digest}
	if tw.r.Summary.Strategy != "" {
		md[MetaStrategy] = tw.r.Summary.Strategy
	}
	if len(tw.r.Summary.Params) > 0 {
		ps, _ := json.Marshal(tw.r.Summary.Params) // keys sorted: deterministic
		md[MetaParams] = string(ps)
	}
	return columnar.TypedSchema{Name: "backtest_" + name, Columns: cols, Metadata: md}
}

func (tw *tableWriter) write(path, name string, f columnar.Format, o columnar.Options) error {
	return WriteFile(path, func(w *bufio.Writer) error { return tw.rows(w, name, f, o) })
}

// WriteFile writes path through write, buffered, into a temporary file
// beside it renamed into place when all went well (removed otherwise): a
// reader never sees half a file.
func WriteFile(path string, write func(w *bufio.Writer) error) error {
	tmp := path + ".tmp"
	fh, err := os.Create(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(fh, 256<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// timeOrNull sets a nullable time column: 0 is no time.
func timeOrNull(t *columnar.TypedTable, col int, ns int64) {
	if ns == 0 {
		t.Null(col)
	} else {
		t.Time(col, ns)
	}
}

func (tw *tableWriter) rows(w *bufio.Writer, name string, f columnar.Format, o columnar.Options) error {
	t, err := columnar.NewTypedTable(w, tw.schema(name), f, o)
	if err != nil {
		return err
	}
	r := tw.r
	end := func() error {
		if tw.err != nil {
			return tw.err
		}
		return t.EndRow()
	}
	switch name {
	case "orders":
		for _, o := range r.Orders {
			id := o.Instrument
			t.Int64(0, int64(o.ID))
			t.String(1, o.Venue)
			t.String(2, id)
			t.String(3, o.Side.String())
			t.String(4, o.TIF.String())
			t.Bool(5, o.PostOnly)
			t.Bool(6, o.ReduceOnly)
			t.Decimal(7, tw.px(id, o.Price))
			t.Decimal(8, tw.sz(id, o.Size))
			if o.Amount != 0 {
				t.Decimal(9, tw.px(id, o.Amount))
			} else {
				t.Null(9)
			}
			t.Decimal(10, tw.sz(id, o.Filled))
			t.String(11, o.Status.String())
			t.String(12, o.Reason)
			timeOrNull(t, 13, o.SubmitNs)
			timeOrNull(t, 14, o.ActiveNs)
			timeOrNull(t, 15, o.DoneNs)
			timeOrNull(t, 16, o.ExpireNs)
			t.String(17, o.Tag)
			if err := end(); err != nil {
				return err
			}
		}
	case "fills":
		for i := range r.Fills {
			fl := &r.Fills[i]
			id := fl.Instrument
			t.Int64(0, int64(fl.Seq))
			t.Int64(1, int64(fl.OrderID))
			t.String(2, fl.Venue)
			t.String(3, id)
			t.String(4, fl.Side.String())
			t.Decimal(5, tw.px(id, fl.Price))
			t.Decimal(6, tw.sz(id, fl.Size))
			t.String(7, fl.Liquidity.String())
			if fl.Liquidity == Maker {
				t.Decimal(8, tw.sz(id, fl.Queue))
			} else {
				t.Null(8) // a taker fill had no place in a queue
			}
			t.Decimal(9, fl.Fee)
			timeOrNull(t, 10, fl.ExchangeNs)
			t.Time(11, fl.RecvNs)
			t.String(12, fl.Tag)
			if err := end(); err != nil {
				return err
			}
		}
	case "positions":
		for _, p := range r.Positions {
			t.Time(0, p.RecvNs)
			t.String(1, p.Venue)
			t.String(2, p.Instrument)
			t.Decimal(3, tw.sz(p.Instrument, p.Position))
			t.Decimal(4, tw.px(p.Instrument, p.Mark))
			t.Decimal(5, p.Value)
			if err := end(); err != nil {
				return err
			}
		}
	case "equity":
		for _, p := range r.Equity {
			t.Time(0, p.RecvNs)
			t.Decimal(1, p.Cash)
			t.Decimal(2, p.Equity)
			if err := end(); err != nil {
				return err
			}
		}
	case "markouts":
		for _, m := range r.Markouts {
			fl := &r.Fills[m.Fill-1]
			t.Int64(0, int64(m.Fill))
			t.String(1, fl.Venue)
			t.String(2, fl.Instrument)
			t.Int64(3, m.Horizon)
			t.Decimal(4, tw.px(fl.Instrument, m.Mid))
			t.Decimal(5, tw.px(fl.Instrument, m.PnL))
			if err := end(); err != nil {
				return err
			}
		}
	}
	return t.Close()
}
