package research

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
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
	slices.SortFunc(hs, func(a, b string) int { return horizonNs(a) - horizonNs(b) })
	return hs
}

func horizonNs(h string) int {
	d, err := time.ParseDuration(h)
	if err != nil {
		return math.MaxInt
	}
	return int(d)
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
	md := map[string]string{MetaAxes: strings.Join(axes, ",")}
	if shard != "" {
		md[MetaShard] = shard
	}
	t, err := columnar.NewTypedTable(w, columnar.TypedSchema{Name: "sweep", Columns: Columns(axes, hs), Metadata: md}, f, o)
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

// Merge joins the CSV sweep tables of a sharded sweep's jobs into the table
// the unsharded sweep writes: the same header in every part, rows ordered
// by point (and within a point as each part had them), every point once.
func Merge(w io.Writer, parts ...io.Reader) error {
	if len(parts) == 0 {
		return errors.New("merge: no tables")
	}
	type row struct {
		point int64
		part  int
		n     int
		cells []string
	}
	var head []string
	var rows []row
	seen := map[string]int{} // point,strategy → part
	for pi, p := range parts {
		cr := csv.NewReader(p)
		h, err := cr.Read()
		if err != nil {
			return fmt.Errorf("merge: table %d: no header: %w", pi+1, err)
		}
		if head == nil {
			head = h
			if len(h) < 2 || h[0] != "point" || h[1] != "strategy" {
				return fmt.Errorf("merge: table %d is not a sweep table (its columns start %q)", pi+1, strings.Join(h[:min(2, len(h))], ","))
			}
		} else if !slices.Equal(h, head) {
			return fmt.Errorf("merge: table %d has other columns than table 1 (not shards of one sweep)", pi+1)
		}
		for n := 0; ; n++ {
			cells, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("merge: table %d: %w", pi+1, err)
			}
			pt, err := strconv.ParseInt(cells[0], 10, 64)
			if err != nil {
				return fmt.Errorf("merge: table %d: point %q is not a number", pi+1, cells[0])
			}
			k := cells[0] + "," + cells[1]
			if prev, dup := seen[k]; dup {
				return fmt.Errorf("merge: point %s of %s is in tables %d and %d (the same shard twice?)", cells[0], cells[1], prev+1, pi+1)
			}
			seen[k] = pi
			rows = append(rows, row{point: pt, part: pi, n: n, cells: cells})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		if a.point != b.point {
			return int(a.point - b.point)
		}
		if a.part != b.part {
			return a.part - b.part
		}
		return a.n - b.n
	})
	for i := 1; i < len(rows); i++ {
		if rows[i].point > rows[i-1].point+1 {
			return fmt.Errorf("merge: points %d to %d are in none of the tables (a shard missing?)", rows[i-1].point+1, rows[i].point-1)
		}
	}
	if len(rows) > 0 && rows[0].point != 0 {
		return fmt.Errorf("merge: points 0 to %d are in none of the tables (a shard missing?)", rows[0].point-1)
	}
	// Written as the export's CSV writer writes (a field quoted only when
	// it holds a comma, a quote or a line break), so that the merged table
	// is byte for byte the unsharded one.
	var line []byte
	put := func(cells []string) error {
		line = line[:0]
		for i, c := range cells {
			if i > 0 {
				line = append(line, ',')
			}
			if strings.ContainsAny(c, ",\"\r\n") {
				line = append(line, '"')
				line = append(line, strings.ReplaceAll(c, `"`, `""`)...)
				line = append(line, '"')
			} else {
				line = append(line, c...)
			}
		}
		line = append(line, '\n')
		_, err := w.Write(line)
		return err
	}
	if err := put(head); err != nil {
		return err
	}
	for _, r := range rows {
		if err := put(r.cells); err != nil {
			return err
		}
	}
	return nil
}
