package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/columnar"
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

// The summary says per market which fee rate its fills used and where it
// came from: the sample's trades state fee_rate_bps "0", which apply from
// the first trade on over --fee-rate; --fee MARKET=rate ranks above them.
// (A negative edge: the sample has no settled complement edge, so the
// strategy would send nothing.)
func TestBacktestFeeRates(t *testing.T) {
	sample := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	const market = "0x2f1ab0ffaf465c4acd76b9a4a1f8980db26bfae7d248a6bb289350586028307e"
	type use struct {
		Market, Source string
		Rate           float64
		Fills          int
		Fees           float64
	}
	run := func(args ...string) []use {
		t.Helper()
		code, stdout, stderr := execReplay(t, append([]string{"backtest", sample, "--strategy", "complement", "--param", "fee_rate=0.02", "--param", "edge=-0.05", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var sum struct {
			FeeRates []use `json:"fee_rates"`
		}
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatal(err)
		}
		return sum.FeeRates
	}
	got := run("--fee-rate", "0.02")
	var fills int
	for _, u := range got {
		// Fills before the market's first trade pay --fee-rate; after it,
		// the trades' 0 bps.
		if u.Market == market && u.Source != "default" {
			fills += u.Fills
			if u.Fills > 0 && (u.Source != "recorded_trades" || u.Rate != 0 || u.Fees != 0) {
				t.Fatalf("fee rates %+v: want the trades' 0 bps", got)
			}
		}
	}
	if fills == 0 {
		t.Fatalf("fee rates %+v: no fills in %s", got, market)
	}
	got = run("--fee-rate", "0.5", "--fee", market+"=0.02")
	for _, u := range got {
		if u.Market == market && (u.Source != "config_market" || u.Rate != 0.02 || (u.Fills > 0 && u.Fees <= 0)) {
			t.Fatalf("fee rates %+v: want --fee %s=0.02", got, market)
		}
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
		{"--fee-category", "crypto=-0.1"},
		{"--fee-category", "=0.1"},
		{"--maker-rebate", "2"},
		{"--maker-rebate", "listing"},
		{"--fee-category", "crypto=0.1", "--fee-category", "Crypto_fees=0.2"},
		{"--resolve", "123=yes"},
		{"--entry-latency", "-1ms"},
		{"--latency-csv", "/nonexistent/rtt.csv"},
		{"--format", "xlsx"},
		{"--format", "tardis"},
		{"--format", "csv", "--compression", "zstd"},
		{"--format", "arrow", "--compression", "snappy"},
		{"--format", "parquet", "--compression", "lz77"},
		{"--format", "parquet", "--batch-rows", "-1"},
		// Ids the data never names (issue 31 item 14).
		{"--fee", "0xUNKNOWN=0.02"},
		{"--resolve", "12345=1"},
		// An output inside the input.
		{"--out", filepath.Join(sample, "bt")},
	} {
		code, _, stderr := execReplay(t, append([]string{"backtest", sample, "--strategy", "noop"}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("%v: exit %d (%s), want 2 and a one-line error", args, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(sample, "bt")); err == nil {
		t.Fatal("--out inside the input was written")
	}
	// --out over an earlier run's tables: refused without --force.
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
	}{{nil, 0}, {nil, 2}, {[]string{"--force"}, 0}} {
		code, _, stderr := execReplay(t, append([]string{"backtest", sample, "--strategy", "noop", "--out", out}, c.args...)...)
		if code != c.code {
			t.Fatalf("--out %v: exit %d (%s), want %d", c.args, code, stderr, c.code)
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
	if code != 3 || stderr != "replay: backtest: no instrument of the datasets matches --instrument NOPE: nothing written\n" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// DuckDB reads the Parquet tables with the documented types (DECIMAL(38,s),
// TIMESTAMP_NS, BIGINT, BOOLEAN, VARCHAR) and the very values of the CSV
// tables of the same run, null for null (a CSV time 0), to the last decimal
// and the last ns.
func TestBacktestTablesInDuckDB(t *testing.T) {
	sample := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	tables := []string{"orders", "fills", "positions", "equity", "markouts"}
	for _, strat := range []string{"mm", "complement"} {
		t.Run(strat, func(t *testing.T) {
			pq, csvDir := t.TempDir(), t.TempDir()
			// complement finds no edge on the sample's settled books (its
			// apparent edges were books crossed inside a batch): a negative
			// edge makes it trade, so the tables have rows to compare.
			extra := map[string][]string{"complement": {"--param", "edge=-0.02"}}[strat]
			for _, c := range []struct{ dir, format string }{{pq, "parquet"}, {csvDir, "csv"}} {
				code, _, stderr := execReplay(t, append([]string{"backtest", sample, "--strategy", strat, "--fee-rate", "0.02",
					"--format", c.format, "--out", c.dir}, extra...)...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
			}
			var args []string
			for _, n := range tables {
				args = append(args, n+"="+filepath.Join(pq, n+".parquet"))
			}
			var duck struct {
				Tables map[string]jsTable `json:"tables"`
			}
			if err := json.Unmarshal(nodeScript(t, "duckdb_check.mjs", args...), &duck); err != nil {
				t.Fatal(err)
			}
			for _, n := range tables {
				d := duck.Tables[n]
				if d.KV[columnar.MetaTable] != "backtest_"+n || !strings.HasPrefix(d.KV[backtest.MetaDigest], "xxh64:") ||
					d.KV[backtest.MetaStrategy] != strat || !strings.HasPrefix(d.KV[backtest.MetaParams], "{") {
					t.Fatalf("%s: metadata %v", n, d.KV)
				}
				head, rows := readCSVFile(t, filepath.Join(csvDir, n+".csv"))
				if strings.Join(head, ",") != strings.Join(d.Columns, ",") || len(rows) != len(d.Rows) {
					t.Fatalf("%s: csv %v, %d rows; DuckDB %v, %d rows", n, head, len(rows), d.Columns, len(d.Rows))
				}
				if len(rows) == 0 {
					t.Fatalf("%s: no rows, the case tests nothing", n)
				}
				for c, ty := range d.Types {
					switch {
					case strings.HasSuffix(head[c], "_ns") && head[c] != "horizon_ns":
						if ty != "TIMESTAMP_NS" {
							t.Errorf("%s.%s is %s", n, head[c], ty)
						}
					case ty == "BIGINT", ty == "VARCHAR", ty == "BOOLEAN", strings.HasPrefix(ty, "DECIMAL(38,"):
					default:
						t.Errorf("%s.%s is %s", n, head[c], ty)
					}
				}
				for i, r := range rows {
					for c, want := range r {
						var got string
						switch v := d.Rows[i][c].(type) {
						case nil:
						case string:
							got = v
							if strings.HasPrefix(d.Types[c], "DECIMAL") {
								got = trimDecimal(v)
							}
						case bool:
							got = strconv.FormatBool(v)
						default:
							got = fmt.Sprint(v)
						}
						switch {
						case d.Types[c] == "TIMESTAMP_NS" && want == "0":
							want = "" // CSV has no empty integer cells
						case strings.HasPrefix(d.Types[c], "DECIMAL"):
							want = trimDecimal(want) // CSV prints 10 as 10.0
						}
						if got != want || (d.Rows[i][c] == nil) != (want == "" && d.Types[c] != "VARCHAR") {
							t.Fatalf("%s row %d %s: DuckDB %v (%s), csv %q", n, i, head[c], d.Rows[i][c], d.Types[c], want)
						}
					}
				}
			}
		})
	}
}

// readCSVFile returns a CSV file's header and rows.
func readCSVFile(t *testing.T, path string) ([]string, [][]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("%s: %v (%d lines)", path, err, len(rows))
	}
	return rows[0], rows[1:]
}
