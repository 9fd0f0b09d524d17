package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/s3store"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/s3test"
)

// monthOfDatasets writes days datasets, day d holding the first n records
// of the Polymarket sample received d days later: a month of partitions.
func monthOfDatasets(t *testing.T, days, n int) []string {
	t.Helper()
	src := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	m, err := datasets.ReadManifest(src)
	if err != nil {
		t.Fatal(err)
	}
	var recs []datasets.Record
	rd, err := datasets.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	for rd.Next() && len(recs) < n {
		r := *rd.Record()
		r.Payload = bytes.Clone(r.Payload)
		recs = append(recs, r)
	}
	rd.Close()
	root := t.TempDir()
	var dirs []string
	for d := 0; d < days; d++ {
		shift := int64(d) * int64(24*time.Hour)
		dm := m
		dm.StartNs, dm.EndNs, dm.Clean = m.StartNs+shift, 0, false
		dm.MonoBaseWallNs += shift
		dir := filepath.Join(root, fmt.Sprintf("day%02d", d+1))
		w, err := datasets.Create(dir, dm, datasets.WithFlushInterval(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			r.WallNs += shift
			if _, err := w.Append(&r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

type hiveOut struct {
	Schema     [][2]string `json:"schema"`
	Partitions [][]any     `json:"partitions"`
	Count      int         `json:"count"`
	RefCount   int         `json:"ref_count"`
	OnlyInRef  int         `json:"only_in_ref"`
	OnlyInTree int         `json:"only_in_tree"`
	Filtered   int         `json:"filtered"`
	Error      string      `json:"error"`
}

func duckHive(t *testing.T, args ...string) hiveOut {
	t.Helper()
	var h hiveOut
	if err := json.Unmarshal(nodeScript(t, "duckdb_hive.mjs", args...), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// treeFiles lists the files under root (slash paths), sorted.
func treeFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func TestPartitionedExport(t *testing.T) {
	days := monthOfDatasets(t, 30, 1200)
	out := t.TempDir()
	ref := filepath.Join(out, "all.parquet")
	args := append([]string{"export", "--table", "depth", "--levels", "3"}, days...)
	if code, _, errs := execReplay(t, append(args, "--out", ref)...); code != cli.ExitOK {
		t.Fatalf("unpartitioned: exit %d %s", code, errs)
	}
	tree := filepath.Join(out, "tree")
	if code, _, errs := execReplay(t, append(args, "--partition-by", "venue,date,instrument", "--out", tree)...); code != cli.ExitOK {
		t.Fatalf("partitioned: exit %d %s", code, errs)
	}
	files := treeFiles(t, tree)
	if files[len(files)-1] != "venue=polymarket/date=2025-11-21/instrument=94022367472047775158269173293876979533288470167463650966689320774843018181757/part-0.parquet" && !strings.HasPrefix(files[0], "_SUCCESS") {
		t.Logf("files: %v", files[:3])
	}
	if files[0] != "_SUCCESS" {
		t.Fatalf("no _SUCCESS: %v", files[:2])
	}
	for _, f := range files[1:] {
		parts := strings.Split(f, "/")
		if len(parts) != 4 || parts[0] != "venue=polymarket" || !strings.HasPrefix(parts[1], "date=2025-") || !strings.HasPrefix(parts[2], "instrument=") || parts[3] != "part-0.parquet" {
			t.Fatalf("file %s is not venue=…/date=…/instrument=…/part-0.parquet", f)
		}
	}
	// Again: byte-identical.
	tree2 := filepath.Join(out, "tree2")
	if code, _, errs := execReplay(t, append(args, "--partition-by", "venue,date,instrument", "--out", tree2)...); code != cli.ExitOK {
		t.Fatalf("partitioned again: exit %d %s", code, errs)
	}
	for _, f := range files {
		a, _ := os.ReadFile(filepath.Join(tree, f))
		b, err := os.ReadFile(filepath.Join(tree2, f))
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s differs between two runs (%v)", f, err)
		}
	}
	if code, _, errs := execReplay(t, append(args, "--partition-by", "venue,date,instrument", "--out", tree)...); code != cli.ExitUsage || !strings.Contains(errs, "_SUCCESS exists") {
		t.Errorf("export over a complete tree: exit %d %s", code, errs)
	}

	h := duckHive(t, tree, "--ref", ref)
	if h.Error != "" || h.Count == 0 || h.Count != h.RefCount || h.OnlyInRef != 0 || h.OnlyInTree != 0 {
		t.Fatalf("DuckDB over the tree: %+v", h)
	}
	if len(h.Partitions) != 30 {
		t.Errorf("DuckDB sees %d dates, want 30: %v", len(h.Partitions), h.Partitions)
	}
	types := map[string]string{}
	for _, c := range h.Schema {
		types[c[0]] = c[1]
	}
	if types["date"] != "DATE" || types["local_ts_ns"] != "TIMESTAMP_NS" || types["instrument"] != "VARCHAR" {
		t.Errorf("schema %v", h.Schema)
	}
	day := h.Partitions[9]
	want := 0
	fmt.Sscan(fmt.Sprint(day[len(day)-1]), &want)
	// Pruning: every file outside the day becomes garbage (but the first,
	// from which DuckDB takes the schema); a query on the day still works
	// only if DuckDB never opens them.
	for _, f := range files[2:] {
		if !strings.Contains(f, "date="+fmt.Sprint(day[1])+"/") {
			if err := os.WriteFile(filepath.Join(tree, f), []byte("not parquet"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := duckHive(t, tree, "--where", fmt.Sprintf("date = DATE '%s'", day[1]))
	if p.Error != "" || p.Filtered != want || want == 0 {
		t.Fatalf("pruned query on %s: %+v (want %d rows)", day[1], p, want)
	}
	if all := duckHive(t, tree, "--where", "true"); all.Error == "" {
		t.Fatalf("the unfiltered query read no corrupt file: %+v", all)
	}
}

// TestShardedExport: 4 shards run in parallel into one tree; their union is
// the unsharded table row for row, and _SUCCESS appears with the last.
func TestShardedExport(t *testing.T) {
	days := monthOfDatasets(t, 3, 1500)
	out := t.TempDir()
	ref := filepath.Join(out, "all.parquet")
	args := append([]string{"export", "--table", "book_changes"}, days...)
	if code, _, errs := execReplay(t, append(args, "--out", ref)...); code != cli.ExitOK {
		t.Fatalf("unsharded: exit %d %s", code, errs)
	}
	tree := filepath.Join(out, "tree")
	var wg sync.WaitGroup
	errs := make([]string, 4)
	for k := 1; k <= 4; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _, e := execReplay(t, append(args, "--partition-by", "venue,date,hour,instrument", "--shard", fmt.Sprintf("%d/4", k), "--out", tree)...); code != cli.ExitOK {
				errs[k-1] = fmt.Sprintf("shard %d: exit %d %s", k, code, e)
			}
		}()
	}
	wg.Wait()
	if s := strings.Join(errs, ""); s != "" {
		t.Fatal(s)
	}
	files := treeFiles(t, tree)
	if strings.Join(files[:5], " ") != "_SHARD-1-of-4 _SHARD-2-of-4 _SHARD-3-of-4 _SHARD-4-of-4 _SUCCESS" {
		t.Fatalf("markers: %v", files[:5])
	}
	parts := map[string]bool{}
	for _, f := range files[5:] {
		parts[f[strings.LastIndex(f, "/")+1:]] = true
	}
	if len(parts) < 2 {
		t.Errorf("the instruments all fell in one shard: %v", parts)
	}
	h := duckHive(t, tree, "--ref", ref)
	if h.Error != "" || h.Count == 0 || h.Count != h.RefCount || h.OnlyInRef != 0 || h.OnlyInTree != 0 {
		t.Fatalf("DuckDB: union of the shards vs the unsharded table: %+v", h)
	}

	// Sharded single files need {shard}; together they are the table.
	if code, _, e := execReplay(t, append(args, "--shard", "1/2", "--out", filepath.Join(out, "x.parquet"))...); code != cli.ExitUsage {
		t.Errorf("--shard without {shard}: exit %d %s", code, e)
	}
	total := 0
	for k := 1; k <= 2; k++ {
		p := filepath.Join(out, "s-{shard}.parquet")
		if code, _, e := execReplay(t, append(args, "--shard", fmt.Sprintf("%d/2", k), "--out", p)...); code != cli.ExitOK {
			t.Fatalf("shard %d/2: exit %d %s", k, code, e)
		}
	}
	for k := 1; k <= 2; k++ {
		var d struct {
			Tables map[string]jsTable `json:"tables"`
		}
		if err := json.Unmarshal(nodeScript(t, "duckdb_check.mjs", fmt.Sprintf("s=%s", filepath.Join(out, fmt.Sprintf("s-%d-of-2.parquet", k)))), &d); err != nil {
			t.Fatal(err)
		}
		total += d.Tables["s"].Count
	}
	if total != h.RefCount {
		t.Errorf("2 sharded files hold %d rows, the table %d", total, h.RefCount)
	}
}

// TestPartitionedExportToS3 writes the tree to an S3 server: the same
// objects, byte for byte, as the local tree, _SUCCESS written last.
func TestPartitionedExportToS3(t *testing.T) {
	s3test.Start(t, "tapes")
	days := monthOfDatasets(t, 2, 2000)
	for _, d := range days {
		if _, err := s3store.UploadDataset(t.Context(), d, "s3://tapes/in/"+filepath.Base(d)); err != nil {
			t.Fatal(err)
		}
	}
	// The same inputs (their paths are in the files' metadata) to a local
	// tree and to the store.
	local := filepath.Join(t.TempDir(), "tree")
	args := []string{"export", "--table", "trades", "--partition-by", "venue,date,instrument", "s3://tapes/in/day01", "s3://tapes/in/day02"}
	if code, _, errs := execReplay(t, append(args, "--out", local)...); code != cli.ExitOK {
		t.Fatalf("local: exit %d %s", code, errs)
	}
	if code, _, errs := execReplay(t, append(args, "--out", "s3://tapes/out/trades")...); code != cli.ExitOK {
		t.Fatalf("s3: exit %d %s", code, errs)
	}
	st, err := s3store.Open("s3://tapes/out/trades")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := st.Objects()
	if err != nil {
		t.Fatal(err)
	}
	files := treeFiles(t, local)
	if len(objs) != len(files) {
		t.Fatalf("%d objects, %d local files", len(objs), len(files))
	}
	for i, o := range objs {
		if o.Key != files[i] {
			t.Fatalf("object %s, local file %s", o.Key, files[i])
		}
		b, err := st.ReadFile(o.Key)
		want, _ := os.ReadFile(filepath.Join(local, files[i]))
		if err != nil || !bytes.Equal(b, want) {
			t.Fatalf("%s differs from the local export (%v)", o.Key, err)
		}
	}
	if code, _, errs := execReplay(t, append(args, "--out", "s3://tapes/out/trades")...); code != cli.ExitUsage || !strings.Contains(errs, "s3://tapes/out/trades/_SUCCESS exists") {
		t.Errorf("export over a complete remote tree: exit %d %s", code, errs)
	}
}

// TestTimeShards: --shard-by time gives shard K the K-th of N equal slices
// of the recording; its rows lie in its slice, and from each instrument's
// first snapshot in the slice they are the unsharded table's rows.
func TestTimeShards(t *testing.T) {
	// Hyperliquid books are snapshots: every slice has some.
	out := t.TempDir()
	args := []string{"export", "--table", "book_changes", "--instrument", "BTC", "--instrument", "HYPE", filepath.Join("..", "..", "datasets", "samples", "hyperliquid")}
	ref := filepath.Join(out, "all.parquet")
	if code, _, errs := execReplay(t, append(args, "--out", ref)...); code != cli.ExitOK {
		t.Fatalf("unsharded: exit %d %s", code, errs)
	}
	if code, _, _ := execReplay(t, append(args, "--shard-by", "time", "--out", filepath.Join(out, "x.parquet"))...); code != cli.ExitUsage {
		t.Errorf("--shard-by time without --shard: exit %d", code)
	}
	pq := []string{"all=" + ref}
	var notes []string
	for k := 1; k <= 4; k++ {
		code, _, errs := execReplay(t, append(args, "--shard", fmt.Sprintf("%d/4", k), "--shard-by", "time", "--out", filepath.Join(out, "t-{shard}.parquet"))...)
		if code != cli.ExitOK || !strings.Contains(errs, "by time covers") {
			t.Fatalf("shard %d/4: exit %d %s", k, code, errs)
		}
		notes = append(notes, errs)
		pq = append(pq, fmt.Sprintf("s%d=%s", k, filepath.Join(out, fmt.Sprintf("t-%d-of-4.parquet", k))))
	}
	var duck struct {
		Tables map[string]jsTable `json:"tables"`
	}
	if err := json.Unmarshal(nodeScript(t, "duckdb_check.mjs", pq...), &duck); err != nil {
		t.Fatal(err)
	}
	all := duck.Tables["all"]
	ts, inst, snap := all.col(t, "local_ts_ns"), all.col(t, "instrument"), all.col(t, "is_snapshot")
	ns := func(v any) int64 {
		var n int64
		fmt.Sscan(fmt.Sprint(v), &n)
		return n
	}
	prevTo := int64(0)
	total := 0
	for k := 1; k <= 4; k++ {
		s := duck.Tables[fmt.Sprintf("s%d", k)]
		total += s.Count
		if s.Count == 0 {
			t.Fatalf("shard %d/4 is empty (%s)", k, notes[k-1])
		}
		lo, hi := ns(s.Rows[0][ts]), ns(s.Rows[len(s.Rows)-1][ts])
		if lo < prevTo {
			t.Errorf("shard %d/4 starts at %d, before the previous shard's last row %d", k, lo, prevTo)
		}
		prevTo = hi
		checked := 0
		for id := range map[string]bool{fmt.Sprint(s.Rows[0][inst]): true, fmt.Sprint(s.Rows[len(s.Rows)-1][inst]): true} {
			// The shard's rows of id from its first snapshot on...
			var mine [][]any
			for _, r := range s.Rows {
				if fmt.Sprint(r[inst]) == id && (len(mine) > 0 || r[snap] == true) {
					mine = append(mine, r)
				}
			}
			if len(mine) == 0 {
				continue
			}
			// ... after that snapshot's own block (the unsharded one also
			// deletes the levels the book had before it) are the unsharded
			// rows of id up to the shard's end.
			from := ns(mine[0][ts])
			for len(mine) > 0 && ns(mine[0][ts]) == from {
				mine = mine[1:]
			}
			var want [][]any
			for _, r := range all.Rows {
				if fmt.Sprint(r[inst]) == id && ns(r[ts]) > from && ns(r[ts]) <= hi {
					want = append(want, r)
				}
			}
			if fmt.Sprint(mine) != fmt.Sprint(want) {
				t.Fatalf("shard %d/4, %s: %d rows from its first snapshot, the unsharded table has %d", k, id, len(mine), len(want))
			}
			checked++
		}
		if checked == 0 {
			t.Errorf("shard %d/4: no snapshot to compare from", k)
		}
	}
	if total == 0 || total > all.Count+all.Count/2 {
		t.Errorf("time shards hold %d rows, the table %d", total, all.Count)
	}
}
