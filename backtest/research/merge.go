package research

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/columnar"
)

// Bounds of what Merge reads: the bytes of each table (a sweep table has a
// few hundred bytes a row) and the rows of all (a row per point and
// strategy, at most MaxPoints points).
const (
	MaxTableBytes = 256 << 20
	MaxMergeRows  = 100 * MaxPoints
)

// MergeOptions are how Merge writes the merged table; the zero value
// writes it as the unsharded sweep would have with the parts' flags.
type MergeOptions struct {
	// Format of the merged table; 0 is the parts' format.
	Format columnar.Format
	// BatchRows of a Parquet or Arrow merged table; 0 is the parts' (a
	// part of more than one row group or record batch shows the sweep's
	// --batch-rows; parts of one batch each do not, and the writer's
	// default is used).
	BatchRows int
	// Names label the parts in errors (their file names); "table K"
	// when missing.
	Names []string
}

// Merge joins the sweep tables of a sharded sweep's jobs (WriteTable with
// a shard) into the table the unsharded sweep writes, byte for byte: rows
// ordered by point (and within a point as each part had them), every point
// once. The parts are CSV, Parquet or Arrow IPC, told by their content,
// all of one format; the merged table is in that format unless o.Format
// says otherwise, with the parts' compression (Parquet: the column chunks'
// codec; Arrow: Zstd or none), batch size (see MergeOptions.BatchRows) and
// source datasets, and without the parts' MetaShard. Parts must sweep the
// same names; their markout columns may differ (a shard whose runs never
// filled has none) and are joined as the unsharded sweep has them. A part
// that is not a sweep table, a point in two parts, points in none (before
// the last point present, or, for Parquet and Arrow, whose MetaShard says
// K/N, a shard K missing) are errors, and nothing is written.
func Merge(w io.Writer, o MergeOptions, parts ...io.Reader) error {
	if len(parts) == 0 {
		return errors.New("merge: no tables")
	}
	name := func(i int) string {
		if i < len(o.Names) && o.Names[i] != "" {
			return o.Names[i]
		}
		return fmt.Sprintf("table %d", i+1)
	}
	tabs := make([]*sweepPart, len(parts))
	total := 0
	for i, p := range parts {
		data, err := io.ReadAll(io.LimitReader(p, MaxTableBytes+1))
		if err != nil {
			return fmt.Errorf("merge: %s: %w", name(i), err)
		}
		if len(data) > MaxTableBytes {
			return fmt.Errorf("merge: %s is larger than %d MiB: not a sweep table", name(i), MaxTableBytes>>20)
		}
		sp := &sweepPart{}
		if sp.Contents, err = columnar.ReadTyped(data, sp.columns, MaxMergeRows-total); err != nil {
			return fmt.Errorf("merge: %s: %w", name(i), err)
		}
		tabs[i] = sp
		total += len(sp.Rows)
		t0 := tabs[0]
		switch {
		case sp.Format != t0.Format:
			return fmt.Errorf("merge: %s is %s, %s is %s: shards of one sweep have one format", name(i), sp.Format, name(0), t0.Format)
		case !slices.Equal(sp.axes, t0.axes):
			return fmt.Errorf("merge: %s sweeps %q, %s %q: not shards of one sweep", name(i), sp.axes, name(0), t0.axes)
		case sp.Options.Compression != 0 && t0.Options.Compression != 0 && sp.Options.Compression != t0.Options.Compression:
			return fmt.Errorf("merge: %s and %s are compressed differently: not shards of one sweep", name(0), name(i))
		case sp.Options.BatchRows != 0 && t0.Options.BatchRows != 0 && sp.Options.BatchRows != t0.Options.BatchRows:
			return fmt.Errorf("merge: %s and %s have batches of %d and %d rows: not shards of one sweep", name(0), name(i), t0.Options.BatchRows, sp.Options.BatchRows)
		}
	}
	if err := checkShards(tabs, name); err != nil {
		return err
	}
	rows, err := joinRows(tabs, name)
	if err != nil {
		return err
	}
	return writeMerged(w, o, tabs, rows)
}

// sweepPart is one part read: its contents and what its columns are.
type sweepPart struct {
	*columnar.Contents
	axes, horizons []string
	shard          string // its MetaShard
}

// columns is the ColumnsFunc of a sweep table: the swept names are the
// columns between strategy and pnl (and MetaAxes, in Parquet and Arrow),
// the horizons the markout_ columns.
func (sp *sweepPart) columns(names []string, md map[string]string) ([]columnar.Column, error) {
	pnl := slices.Index(names, "pnl")
	if len(names) < 2 || names[0] != "point" || names[1] != "strategy" || pnl < 0 {
		return nil, fmt.Errorf("not a sweep table (its columns start %q)", strings.Join(names[:min(3, len(names))], ","))
	}
	sp.axes = slices.Clone(names[2:pnl])
	for _, n := range names[pnl:] {
		if h, ok := strings.CutPrefix(n, "markout_"); ok {
			sp.horizons = append(sp.horizons, h)
		}
	}
	if md != nil {
		if md[columnar.MetaTable] != tableName {
			return nil, fmt.Errorf("not a sweep table (table %q)", md[columnar.MetaTable])
		}
		if ax, ok := md[MetaAxes]; !ok || ax != strings.Join(sp.axes, ",") {
			return nil, fmt.Errorf("its %s %q does not name its columns %q", MetaAxes, ax, sp.axes)
		}
		sp.shard = md[MetaShard]
	}
	cols := Columns(sp.axes, sp.horizons)
	for i, c := range cols {
		if i >= len(names) || names[i] != c.Name || len(names) != len(cols) {
			return nil, fmt.Errorf("not a sweep table (columns %q, a sweep of %q has %q)", names, sp.axes, columnNames(cols))
		}
	}
	return cols, nil
}

func columnNames(cols []columnar.Column) []string {
	n := make([]string, len(cols))
	for i, c := range cols {
		n[i] = c.Name
	}
	return n
}

// mergedRow is a row of part part, its n-th.
type mergedRow struct {
	point   int64
	part, n int
}

// joinRows orders the parts' rows by point, each (point, strategy) once and
// no point missing before the last.
func joinRows(tabs []*sweepPart, name func(int) string) ([]mergedRow, error) {
	var rows []mergedRow
	seen := map[string]int{} // point,strategy → part
	for pi, sp := range tabs {
		for n, cells := range sp.Rows {
			pt := cells[0].I
			k := strconv.FormatInt(pt, 10) + "," + cells[1].S
			if prev, dup := seen[k]; dup {
				return nil, fmt.Errorf("merge: point %d of %s is in %s and %s (the same shard twice?)", pt, cells[1].S, name(prev), name(pi))
			}
			seen[k] = pi
			rows = append(rows, mergedRow{point: pt, part: pi, n: n})
		}
	}
	slices.SortStableFunc(rows, func(a, b mergedRow) int {
		switch {
		case a.point != b.point:
			if a.point < b.point {
				return -1
			}
			return 1
		case a.part != b.part:
			return a.part - b.part
		}
		return a.n - b.n
	})
	if len(rows) > 0 && rows[0].point != 0 {
		return nil, fmt.Errorf("merge: points 0 to %d are in none of the tables (a shard missing?)", rows[0].point-1)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].point > rows[i-1].point+1 {
			return nil, fmt.Errorf("merge: points %d to %d are in none of the tables (a shard missing?)", rows[i-1].point+1, rows[i].point-1)
		}
	}
	return rows, nil
}

// checkShards checks, when every part says which shard it is, that they
// are the N shards of one split: this finds a missing last shard, whose
// points leave no gap.
func checkShards(tabs []*sweepPart, name func(int) string) error {
	n := 0
	have := map[int]int{}
	for pi, sp := range tabs {
		if sp.shard == "" {
			return nil
		}
		ks, ns, _ := strings.Cut(sp.shard, "/")
		k, err1 := strconv.Atoi(ks)
		sn, err2 := strconv.Atoi(ns)
		switch {
		case err1 != nil || err2 != nil || k < 1 || k > sn:
			return fmt.Errorf("merge: %s: %s %q is not K/N", name(pi), MetaShard, sp.shard)
		case n != 0 && sn != n:
			return fmt.Errorf("merge: %s is shard %s, %s of %d shards: not one split", name(pi), sp.shard, name(0), n)
		}
		if prev, dup := have[k]; dup {
			return fmt.Errorf("merge: %s and %s are both shard %s", name(prev), name(pi), sp.shard)
		}
		n, have[k] = sn, pi
	}
	for k := 1; k <= n; k++ {
		if _, ok := have[k]; !ok {
			return fmt.Errorf("merge: shard %d/%d is in none of the tables", k, n)
		}
	}
	return nil
}

// writeMerged writes rows through the sweep table's writer, the markout
// columns those of every part, shortest horizon first, as Horizons orders
// them.
func writeMerged(w io.Writer, o MergeOptions, tabs []*sweepPart, rows []mergedRow) error {
	t0 := tabs[0]
	opts := columnar.Options{Datasets: t0.Options.Datasets, BatchRows: o.BatchRows}
	f := o.Format
	if f == 0 {
		f = t0.Format
	}
	for _, sp := range tabs {
		if f == sp.Format && sp.Options.Compression != 0 {
			opts.Compression = sp.Options.Compression
		}
		if o.BatchRows == 0 && f == sp.Format && sp.Options.BatchRows != 0 {
			opts.BatchRows = sp.Options.BatchRows
		}
	}
	var hs []string
	for _, sp := range tabs {
		for _, h := range sp.horizons {
			if !slices.Contains(hs, h) {
				hs = append(hs, h)
			}
		}
	}
	sortHorizons(hs)
	t, err := newTable(w, t0.axes, hs, "", f, opts)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	lead := len(Columns(t0.axes, nil)) - 3 // point, strategy, the axes, the figures before the markouts
	for _, r := range rows {
		sp := tabs[r.part]
		cells := sp.Rows[r.n]
		for i := range lead {
			t.Set(i, cells[i])
		}
		for j, h := range hs {
			if k := slices.Index(sp.horizons, h); k >= 0 {
				t.Set(lead+j, cells[lead+k])
			} else {
				t.Null(lead + j)
			}
		}
		for i := range 3 { // orders, fills, digest
			t.Set(lead+len(hs)+i, cells[lead+len(sp.horizons)+i])
		}
		if err := t.EndRow(); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
	}
	return t.Close()
}
