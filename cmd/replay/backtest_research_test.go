package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tapedeck/tapedeck/internal/browsertest"
)

// replay backtest --sweep on the shipped sample: the table, each run's
// tables, the tearsheet; a point's run directory equals a plain backtest of
// its parameters; shards merge to the whole sweep's table.
func TestBacktestSweepVerb(t *testing.T) {
	sample := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	out := t.TempDir()
	sheet := filepath.Join(out, "sheet.html")
	code, stdout, stderr := execReplay(t, "backtest", sample, "--strategy", "mm", "--sweep", "spread=0.01:0.03:0.01",
		"--sweep", "size=5,10", "--out", filepath.Join(out, "sweep"), "--report", sheet, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []struct {
		Point   int               `json:"point"`
		Values  map[string]string `json:"values"`
		Summary struct {
			Digest string `json:"digest"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 6 {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rows[3].Values["spread"] != "0.02" || rows[3].Values["size"] != "10" {
		t.Fatalf("point 3: %+v", rows[3])
	}
	single := filepath.Join(out, "single")
	code, stdout, stderr = execReplay(t, "backtest", sample, "--strategy", "mm", "--param", "spread=0.02", "--param", "size=10", "--out", single, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, rows[3].Summary.Digest) {
		t.Fatalf("point 3's digest %s is not the single run's:\n%s", rows[3].Summary.Digest, stdout)
	}
	for _, n := range []string{"orders.csv", "fills.csv", "equity.csv", "positions.csv", "markouts.csv"} {
		a, _ := os.ReadFile(filepath.Join(single, n))
		b, err := os.ReadFile(filepath.Join(out, "sweep", "runs", "0003-mm", n))
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s of point 3 differs from the single run's (%v)", n, err)
		}
	}
	if b, err := os.ReadFile(sheet); err != nil || !strings.Contains(string(b), rows[0].Summary.Digest) {
		t.Fatalf("tearsheet: %v", err)
	}
	whole, _ := os.ReadFile(filepath.Join(out, "sweep", "sweep.csv"))
	var parts []string
	for _, k := range []string{"1/2", "2/2"} {
		dir := filepath.Join(out, "part"+k[:1])
		if code, _, stderr := execReplay(t, "backtest", sample, "--strategy", "mm", "--sweep", "spread=0.01:0.03:0.01",
			"--sweep", "size=5,10", "--shard", k, "--out", dir); code != 0 {
			t.Fatalf("shard %s: exit %d: %s", k, code, stderr)
		}
		parts = append(parts, filepath.Join(dir, "sweep.csv"))
	}
	merged := filepath.Join(out, "merged.csv")
	if code, _, stderr := execReplay(t, append([]string{"backtest", "merge", "--out", merged}, parts...)...); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	if m, _ := os.ReadFile(merged); !bytes.Equal(m, whole) || len(whole) == 0 {
		t.Fatalf("merged:\n%s\nwhole:\n%s", m, whole)
	}
	if code, _, _ := execReplay(t, "backtest", "merge", parts[0]); code == 0 {
		t.Fatal("merging one shard of two exited 0")
	}
}

// replay backtest merge of Parquet and Arrow shards: the unsharded sweep's
// table byte for byte, its axes metadata kept and the shards' K/N dropped;
// a mix of formats, a missing shard and a truncated table are refused.
func TestBacktestMergeParquetArrow(t *testing.T) {
	sample := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	out := t.TempDir()
	sweep := func(format, dir string, shard ...string) string {
		args := []string{"backtest", sample, "--strategy", "mm", "--sweep", "spread=0.01:0.03:0.01", "--format", format, "--out", dir}
		if len(shard) > 0 {
			args = append(args, "--shard", shard[0])
		}
		if code, _, stderr := execReplay(t, args...); code != 0 {
			t.Fatalf("%s %v: exit %d: %s", format, shard, code, stderr)
		}
		return filepath.Join(dir, "sweep."+format)
	}
	parts := map[string][]string{}
	for _, format := range []string{"parquet", "arrow"} {
		whole, _ := os.ReadFile(sweep(format, filepath.Join(out, format, "whole")))
		for _, k := range []string{"2/2", "1/2"} {
			parts[format] = append(parts[format], sweep(format, filepath.Join(out, format, "part"+k[:1]), k))
		}
		merged := filepath.Join(out, format, "merged."+format)
		if code, _, stderr := execReplay(t, append([]string{"backtest", "merge", "--out", merged}, parts[format]...)...); code != 0 {
			t.Fatalf("%s merge: exit %d: %s", format, code, stderr)
		}
		m, _ := os.ReadFile(merged)
		if !bytes.Equal(m, whole) || len(whole) == 0 {
			t.Fatalf("%s: merged %d bytes, the unsharded sweep's %d", format, len(m), len(whole))
		}
		p, _ := os.ReadFile(parts[format][0])
		if !bytes.Contains(p, []byte("tapedeck.sweep.shard")) || bytes.Contains(m, []byte("tapedeck.sweep.shard")) || !bytes.Contains(m, []byte("tapedeck.sweep.axes")) {
			t.Fatalf("%s: the shard's metadata is not in the part, or is in the merged table, or the axes are not", format)
		}
		code, stdout, stderr := execReplay(t, append([]string{"backtest", "merge"}, parts[format]...)...)
		if code != 0 || stdout != string(whole) {
			t.Fatalf("%s merge to standard output: exit %d, %d bytes: %s", format, code, len(stdout), stderr)
		}
		// A damaged table: cut in two.
		cut := filepath.Join(out, format, "cut."+format)
		os.WriteFile(cut, p[:len(p)/2], 0o644)
		if code, _, stderr := execReplay(t, "backtest", "merge", parts[format][1], cut); code == 0 || !strings.Contains(stderr, cut) {
			t.Fatalf("%s: a truncated table: exit %d: %s", format, code, stderr)
		}
	}
	if code, _, stderr := execReplay(t, "backtest", "merge", "--batch-rows", "-1", parts["arrow"][0]); code != 2 {
		t.Errorf("--batch-rows -1: exit %d, want 2: %s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{parts["parquet"][0], parts["arrow"][1]}, "one format"},
		{[]string{parts["parquet"][1]}, "shard 2/2 is in none of the tables"},
	} {
		dst := filepath.Join(out, "refused.parquet")
		code, _, stderr := execReplay(t, append([]string{"backtest", "merge", "--out", dst}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want an error with %q: %s", tc.args, code, tc.want, stderr)
		}
		if _, err := os.Stat(dst); err == nil {
			t.Errorf("%v: refused, yet %s was written", tc.args, dst)
		}
	}
}

func TestBacktestResearchRefusesBadFlags(t *testing.T) {
	sample := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	for _, args := range [][]string{
		{"--sweep", "nonsense=1,2"},
		{"--sweep", "spread=0.05:0.01:0.01"},
		{"--sweep", "spread=1,2", "--sweep-file", "x.csv"},
		{"--strategy", "mm,nope"},
		{"--sweep", "spread=0.01,0.02", "--objective", "luck"},
		{"--walk", "1d"},
		{"--walk", "1h/1h", "--from", "+1s"},
		{"--sweep", "spread=0.01,0.02", "--report", filepath.Join(sample, "x.html")},
	} {
		code, _, stderr := execReplay(t, append([]string{"backtest", sample}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("%v: exit %d, want 2 with a one-line error: %s", args, code, stderr)
		}
	}
}

// The tearsheet in headless Chromium: no console error, every summary
// figure on the page equals the --json summary, the sweep's table has a
// row per point and the heatmap a cell per point.
func TestBacktestTearsheetInBrowser(t *testing.T) {
	sample := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	sheet := filepath.Join(t.TempDir(), "sheet.html")
	code, stdout, stderr := execReplay(t, "backtest", sample, "--strategy", "mm", "--sweep", "spread=0.02,0.04",
		"--sweep", "size=5,10", "--report", sheet, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []struct {
		Summary map[string]any `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 4 {
		t.Fatalf("%v: %s", err, stdout)
	}
	b := browsertest.New(t)
	b.Do(chromedp.Navigate("file://" + sheet))
	b.WaitJS("the tearsheet", `document.querySelectorAll('#points tr').length === 5`, 10*time.Second)
	type page struct {
		Figures map[string]string `json:"figures"`
		Cells   int               `json:"cells"`
		Charts  int               `json:"charts"`
	}
	v := browsertest.Eval[page](b, `(() => {
  const figures = {};
  document.querySelectorAll('[data-key]').forEach(e => { figures[e.dataset.key] = e.dataset.value; });
  return {figures, cells: document.querySelectorAll('svg rect[fill^="rgb"]').length, charts: document.querySelectorAll('svg').length};
})()`)
	// The run shown in detail is the best by the objective (pnl).
	best := rows[0].Summary
	for _, r := range rows[1:] {
		if r.Summary["pnl"].(float64) > best["pnl"].(float64) {
			best = r.Summary
		}
	}
	for _, k := range []string{"pnl", "fees", "turnover", "fill_ratio", "max_drawdown", "sharpe", "sortino", "orders", "fills"} {
		got, err := strconv.ParseFloat(v.Figures[k], 64)
		if want, ok := best[k].(float64); err != nil || !ok || got != want {
			t.Errorf("%s: page %q, summary %v", k, v.Figures[k], best[k])
		}
	}
	if v.Cells != 4 || v.Charts < 7 {
		t.Errorf("%d heatmap cells, %d charts", v.Cells, v.Charts)
	}
	b.NoProblems()
}
