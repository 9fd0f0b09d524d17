package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// replay backtest on the shipped sample, offline: the command line
// runs, writes the four tables, and a second run is byte-identical.
func TestBacktestVerb(t *testing.T) {
	sample := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	run := func() (string, map[string][]byte) {
		out := t.TempDir()
		code, stdout, stderr := execReplay(t, "backtest", sample, "--strategy", "mm", "--param", "spread=0.02",
			"--entry-latency", "2ms", "--queue", "log", "--fee-rate", "0.02", "--out", out, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		files := map[string][]byte{}
		for _, n := range []string{"orders.csv", "fills.csv", "positions.csv", "equity.csv", "markouts.csv"} {
			b, err := os.ReadFile(filepath.Join(out, n))
			if err != nil {
				t.Fatal(err)
			}
			files[n] = b
		}
		return stdout, files
	}
	s1, f1 := run()
	s2, f2 := run()
	if s1 != s2 {
		t.Fatalf("two runs printed different summaries:\n%s\n%s", s1, s2)
	}
	for n := range f1 {
		if !bytes.Equal(f1[n], f2[n]) {
			t.Fatalf("%s differs between runs", n)
		}
	}
	var sum struct {
		Strategy string            `json:"strategy"`
		Fills    int               `json:"fills"`
		Digest   string            `json:"digest"`
		Params   map[string]string `json:"params"`
	}
	if err := json.Unmarshal([]byte(s1), &sum); err != nil {
		t.Fatalf("--json: %v\n%s", err, s1)
	}
	if sum.Strategy != "mm" || sum.Fills == 0 || !strings.HasPrefix(sum.Digest, "xxh64:") || sum.Params["spread"] != "0.02" {
		t.Fatalf("summary %+v", sum)
	}
	if n := bytes.Count(f1["fills.csv"], []byte("\n")) - 1; n != sum.Fills {
		t.Fatalf("fills.csv has %d rows, summary says %d", n, sum.Fills)
	}
}

// Bad parameters are refused before the run, as usage errors (exit 2).
func TestBacktestBadFlags(t *testing.T) {
	sample := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	for _, args := range [][]string{
		{"--strategy", "nope"},
		{"--param", "spread"},
		{"--param", "bogus=1"},
		{"--queue", "power:-2"},
		{"--fee-rate", "2"},
		{"--fee-tier", "42"},
		{"--fee", "x=abc"},
		{"--resolve", "123=yes"},
		{"--entry-latency", "-1ms"},
		{"--latency-csv", "/nonexistent/rtt.csv"},
		{"--format", "xlsx"},
		{"--format", "tardis"},
		{"--format", "csv", "--compression", "zstd"},
		{"--format", "arrow", "--compression", "snappy"},
		{"--format", "parquet", "--compression", "lz77"},
		{"--format", "parquet", "--batch-rows", "-1"},
	} {
		code, _, stderr := execReplay(t, append([]string{"backtest", sample}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}
}

// --format parquet and arrow write the five tables through the export
// writers, with --compression and --batch-rows as replay export takes them.
func TestBacktestParquet(t *testing.T) {
	sample := filepath.Join("..", "..", "datasets", "samples", "hyperliquid")
	for _, c := range []struct {
		format, magic string
		flags         []string
	}{
		{"parquet", "PAR1", nil},
		{"parquet", "PAR1", []string{"--compression", "zstd", "--batch-rows", "100"}},
		{"arrow", "ARROW1", nil},
	} {
		out := t.TempDir()
		args := append([]string{"backtest", sample, "--strategy", "mm", "--param", "size=0.01", "--param", "instrument=BTC",
			"--format", c.format, "--out", out}, c.flags...)
		code, _, stderr := execReplay(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.flags, code, stderr)
		}
		for _, n := range []string{"orders", "fills", "positions", "equity", "markouts"} {
			b, err := os.ReadFile(filepath.Join(out, n+"."+c.format))
			if err != nil || len(b) < 8 || string(b[:len(c.magic)]) != c.magic {
				t.Fatalf("%s.%s: %v (%d bytes)", n, c.format, err, len(b))
			}
			if c.format == "parquet" && !bytes.Contains(b, []byte(`"`+sample+`"`)) {
				t.Fatalf("%s.parquet does not name its dataset in tapedeck.datasets", n)
			}
			if c.flags != nil && !bytes.Contains(b, []byte("tapedeck.backtest.digest")) {
				t.Fatalf("%s.parquet footer has no digest", n)
			}
		}
	}
}

// --instrument restricts what the strategy sees; one that the data never
// mentions is said, not skipped silently.
func TestBacktestInstrument(t *testing.T) {
	sample := filepath.Join("..", "..", "datasets", "samples", "hyperliquid")
	code, stdout, stderr := execReplay(t, "backtest", sample, "--strategy", "mm", "--param", "size=0.01", "--instrument", "BTC", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Orders    int                `json:"orders"`
		Positions map[string]float64 `json:"positions"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	for id := range sum.Positions {
		if id != "BTC" {
			t.Fatalf("position in %s with --instrument BTC", id)
		}
	}
	if sum.Orders == 0 {
		t.Fatal("no orders on BTC")
	}
	code, _, stderr = execReplay(t, "backtest", sample, "--strategy", "mm", "--instrument", "NOPE")
	if code != 0 || !strings.Contains(stderr, "--instrument NOPE: no such instrument") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
