package research

import (
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/columnar"
)

// Table metadata keys of a sweep table (Parquet and Arrow; a CSV table
// carries its columns only).
const (
	MetaAxes  = "tapedeck.sweep.axes"  // the swept names, comma-separated
	MetaShard = "tapedeck.sweep.shard" // K/N of a shard's table
)

const tableName = "sweep" // its MetaTable

const ratioDecimals = 8 // ratios, Sharpe, Sortino and markouts in the table

// Columns are the sweep table's columns for the swept names axes and the
// markout horizons: point, strategy, one string column per swept name,
// then the figures and the run's digest.
func Columns(axes, horizons []string) []columnar.Column {
	i64 := func(n string) columnar.Column { return columnar.Column{Name: n, Type: columnar.Int64} }
	str := func(n string) columnar.Column { return columnar.Column{Name: n, Type: columnar.String} }
	money := func(n string) columnar.Column { return columnar.Column{Name: n, Type: columnar.Decimal, Scale: 10} }
	ratio := func(n string, null bool) columnar.Column {
		return columnar.Column{Name: n, Type: columnar.Decimal, Scale: ratioDecimals, Nullable: null}
	}
	cols := []columnar.Column{i64("point"), str("strategy")}
	for _, a := range axes {
		cols = append(cols, str(a))
	}
	cols = append(cols, money("pnl"), money("fees"), money("rebates"), money("funding"), money("turnover"),
		ratio("fill_ratio", false), money("max_drawdown"), money("peak_margin"), ratio("sharpe", false), ratio("sortino", false))
	for _, h := range horizons {
		cols = append(cols, ratio("markout_"+h, true))
	}
	return append(cols, i64("orders"), i64("fills"), str("digest"))
}

// Horizons are the markout horizons the runs report, shortest first.
func Horizons(runs []*Run) []string {
	var hs []string
	for _, r := range runs {
		for h := range r.Metrics.Markouts {
			if !slices.Contains(hs, h) {
				hs = append(hs, h)
			}
		}
	}
	sortHorizons(hs)
	return hs
}

// sortHorizons sorts horizons shortest first.
func sortHorizons(hs []string) {
	slices.SortFunc(hs, func(a, b string) int { return horizonNs(a) - horizonNs(b) })
}

func horizonNs(h string) int {
	d, err := time.ParseDuration(h)
	if err != nil {
		return math.MaxInt
	}
	return int(d)
}

// newTable starts a sweep table of these axes and horizons, the one
// writer of WriteTable and Merge.
func newTable(w io.Writer, axes, horizons []string, shard string, f columnar.Format, o columnar.Options) (*columnar.TypedTable, error) {
	md := map[string]string{MetaAxes: strings.Join(axes, ",")}
	if shard != "" {
		md[MetaShard] = shard
	}
	return columnar.NewTypedTable(w, columnar.TypedSchema{Name: tableName, Columns: Columns(axes, horizons), Metadata: md}, f, o)
}

// fixed rounds v to dec decimals as a fixed-point integer.
func fixed(v float64, dec int) int64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return int64(math.Round(v * math.Pow10(dec)))
}

// WriteTable writes one row per run in f (csv, parquet or arrow), the
// runs' order kept. shard labels a shard's table in its metadata.
func WriteTable(w io.Writer, runs []*Run, axes []string, shard string, f columnar.Format, o columnar.Options) error {
	hs := Horizons(runs)
	t, err := newTable(w, axes, hs, shard, f, o)
	if err != nil {
		return err
	}
	for _, r := range runs {
		m := &r.Metrics
		c := 0
		next := func() int { c++; return c - 1 }
		t.Int64(next(), int64(r.Point.Index))
		t.String(next(), r.Strategy)
		for _, a := range axes {
			t.String(next(), r.Point.Values[a])
		}
		for _, v := range []float64{m.PnL, m.Fees, m.Rebates, m.Funding, m.Turnover} {
			t.Decimal(next(), fixed(v, 10))
		}
		t.Decimal(next(), fixed(m.FillRatio, ratioDecimals))
		t.Decimal(next(), fixed(m.MaxDrawdown, 10))
		t.Decimal(next(), fixed(m.PeakMargin, 10))
		t.Decimal(next(), fixed(m.Sharpe, ratioDecimals))
		t.Decimal(next(), fixed(m.Sortino, ratioDecimals))
		for _, h := range hs {
			if v, ok := m.Markouts[h]; ok {
				t.Decimal(next(), fixed(v, ratioDecimals))
			} else {
				t.Null(next())
			}
		}
		t.Int64(next(), int64(m.Orders))
		t.Int64(next(), int64(m.Fills))
		t.String(next(), m.Digest)
		if err := t.EndRow(); err != nil {
			return err
		}
	}
	return t.Close()
}
