package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

// pandasScript reads each NAME=FILE CSV with pandas.read_csv and no option
// but the instrument ids as text (dtype={"instrument": str}, as the README
// says), and prints per NAME the columns, their dtypes and every cell as
// text: integers as their digits, floats as repr (the shortest text of the
// double), missing as "".
const pandasScript = `
import json, sys
import pandas as pd
out = {}
for arg in sys.argv[1:]:
    name, path = arg.split("=", 1)
    df = pd.read_csv(path, dtype={"instrument": str})
    def cell(v):
        if pd.isna(v):
            return ""
        if isinstance(v, float):
            return repr(v)
        return str(v)
    out[name] = {"columns": list(df.columns), "types": [str(t) for t in df.dtypes],
                 "rows": [[cell(v) for v in r] for r in df.itertuples(index=False)]}
print(json.dumps(out))
`

// TestCSVReadersInferTypes: the CSV tables read right by DuckDB, Polars and
// pandas with no type options (but text for the instrument ids): every
// integer column (times in ns, counts) an integer type holding the exact
// value, no empty integer cell turning pandas' column into float64, and
// every price and size column a float type, also for Hyperliquid depth,
// whose first rows hold whole-number prices (BTC) and whose later ones do
// not (HYPE 35.032), which Polars used to guess as integers and fail on,
// and BTC's own file, every price of which is a whole number.
func TestCSVReadersInferTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("exports samples and runs node and python; skipped in -short")
	}
	py := pandasPython()
	if py == "" {
		t.Skip("python3 with pandas missing: run `make test-deps` (Debian python3-pandas)")
	}
	dir := t.TempDir()
	var files []string
	for _, c := range []struct{ venue, table string }{
		{venue.Hyperliquid, "depth"}, {venue.Polymarket, "depth"}, {venue.Hyperliquid, "events"}, {venue.Polymarket, "trades"},
	} {
		name := c.venue + "_" + c.table
		out := filepath.Join(dir, name+".csv")
		args := []string{"export", expSample(t, c.venue), "--table", c.table, "--out", out}
		if c.table == "depth" {
			args = append(args, "--levels", "5")
		}
		expMust(t, args...)
		files = append(files, name+"="+out)
	}
	// BTC's own depth file: every price a whole number, which without a
	// decimal point every reader would take for an integer column.
	expMust(t, "export", expSample(t, venue.Hyperliquid), "--table", "depth", "--levels", "5", "--split-by", "instrument",
		"--out", filepath.Join(dir, "split-{instrument}.csv"))
	files = append(files, "hyperliquid_btc_depth="+filepath.Join(dir, "split-BTC.csv"))
	var duck, polars struct {
		Tables map[string]jsTable `json:"tables"`
	}
	var dargs, pargs []string
	for _, f := range files {
		if !strings.Contains(f, "events") { // the events table has no instrument column
			dargs = append(dargs, "--text", "instrument")
			pargs = append(pargs, "--text", "instrument")
		}
		dargs, pargs = append(dargs, f), append(pargs, f)
	}
	if err := json.Unmarshal(nodeScript(t, "duckdb_check.mjs", dargs...), &duck); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(nodeScript(t, "polars_check.mjs", pargs...), &polars); err != nil {
		t.Fatal(err)
	}
	pyOut, err := exec.Command(py, append([]string{"-c", pandasScript}, files...)...).Output()
	if err != nil {
		t.Fatalf("pandas: %v", err)
	}
	var pandas map[string]jsTable
	if err := json.Unmarshal(pyOut, &pandas); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name, path, _ := strings.Cut(f, "=")
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(fh).ReadAll()
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		head, rows := recs[0], recs[1:]
		if len(rows) == 0 {
			t.Fatalf("%s: no rows", name)
		}
		for _, rd := range []struct {
			reader     string
			tb         jsTable
			intT, fltT func(string) bool
		}{
			{"DuckDB", duck.Tables[name], func(s string) bool { return s == "BIGINT" || s == "INTEGER" }, func(s string) bool { return s == "DOUBLE" }},
			{"Polars", polars.Tables[name], func(s string) bool { return strings.Contains(s, "Int64") }, func(s string) bool { return strings.Contains(s, "Float64") }},
			{"pandas", pandas[name], func(s string) bool { return s == "int64" }, func(s string) bool { return s == "float64" }},
		} {
			tb := rd.tb
			if !equalStrings(tb.Columns, head) || len(tb.Rows) != len(rows) {
				t.Fatalf("%s %s: %v, %d rows; CSV %v, %d rows", rd.reader, name, tb.Columns, len(tb.Rows), head, len(rows))
			}
			for c, col := range head {
				integer := strings.HasSuffix(col, "_ns") || strings.Contains(col, "count") ||
					col == "conn" || col == "seq" || col == "dataset" || col == "code" || col == "attempt" || col == "dropped"
				decimal := strings.Contains(col, "price") || strings.Contains(col, "size")
				switch {
				case integer && !rd.intT(tb.Types[c]):
					t.Errorf("%s %s: %s is %s, want an integer type", rd.reader, name, col, tb.Types[c])
					continue
				case decimal && !rd.fltT(tb.Types[c]):
					t.Errorf("%s %s: %s is %s, want a float type", rd.reader, name, col, tb.Types[c])
					continue
				case !integer && !decimal:
					continue
				}
				for i, r := range rows {
					got, want := jsCell(tb.Rows[i][c]), r[c]
					if decimal && want != "" {
						want, got = floatOf(t, want), floatOf(t, got)
					}
					if got != want {
						t.Fatalf("%s %s row %d %s: %q, CSV %q", rd.reader, name, i, col, got, want)
					}
				}
			}
		}
	}
}

// pandasPython is a python3 that imports pandas: the one on PATH, else
// Debian's (python3-pandas installs for /usr/bin/python3, which a version
// manager on PATH may hide); "" if none.
func pandasPython() string {
	var cands []string
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, p := range append(cands, "/usr/bin/python3") {
		if exec.Command(p, "-c", "import pandas").Run() == nil {
			return p
		}
	}
	return ""
}
