package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/klauspost/compress/zstd"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/interchange"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/samplegen"
	"github.com/tapedeck/tapedeck/replayer/export"
	"github.com/tapedeck/tapedeck/venue"
	"go.uber.org/goleak"
)

// expSample returns the shipped sample of a venue (datasets/samples/VENUE),
// or, until it ships, the same session generated into a temp dir with
// samplegen's seed 1 (what the shipped samples are built from).
func expSample(t *testing.T, venueName string) string {
	t.Helper()
	shipped := filepath.Join("..", "..", "datasets", "samples", venueName)
	if _, err := os.Stat(filepath.Join(shipped, datasets.ManifestName)); err == nil {
		return shipped
	}
	opts := samplegen.Options{Seed: 1}
	m, err := samplegen.Manifest(venueName, opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), venueName)
	w, err := datasets.Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := samplegen.Generate(venueName, opts, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func expMust(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := execReplay(t, args...)
	if code != cli.ExitOK {
		t.Fatalf("replay %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

func TestExportFlags(t *testing.T) {
	defer goleak.VerifyNone(t)
	ds := expSample(t, venue.Polymarket)
	out := filepath.Join(t.TempDir(), "x.parquet")
	exists := filepath.Join(t.TempDir(), "exists.parquet")
	if err := os.WriteFile(exists, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string // "" = valid; else a substring of the usage error
		check   func(t *testing.T, o *exportOptions)
	}{
		{name: "defaults", args: []string{ds, "--table", "depth", "--out", out},
			check: func(t *testing.T, o *exportOptions) {
				if o.Format != "parquet" || o.Levels != 0 || o.Interval != 0 || o.Compression != 0 {
					t.Errorf("%+v", o)
				}
			}},
		{name: "csv.gz from extension", args: []string{ds, "--table", "book_changes", "--out", "/tmp/x/y.csv.gz"},
			check: func(t *testing.T, o *exportOptions) {
				if o.Format != "csv" {
					t.Errorf("format %q", o.Format)
				}
			}},
		{name: "interval", args: []string{ds, "--table", "depth", "--interval", "100ms", "--levels", "5", "--out", out},
			check: func(t *testing.T, o *exportOptions) {
				if o.Interval.Milliseconds() != 100 || o.Levels != 5 {
					t.Errorf("%+v", o)
				}
			}},
		{name: "window", args: []string{ds, "--table", "trades", "--from", "+1s", "--to", "+2s", "--out", out},
			check: func(t *testing.T, o *exportOptions) {
				if o.ToNs-o.FromNs != 1e9 {
					t.Errorf("window %d..%d", o.FromNs, o.ToNs)
				}
			}},
		{name: "raw", args: []string{ds, "--table", "raw", "--format", "tardis", "--out", out}},
		{name: "no dataset", args: []string{"--table", "depth", "--out", out}, wantErr: "DATASET"},
		{name: "no table", args: []string{ds, "--out", out}, wantErr: "--table is required"},
		{name: "no out", args: []string{ds, "--table", "depth"}, wantErr: "--out is required"},
		{name: "bad table", args: []string{ds, "--table", "book", "--out", out}, wantErr: "--table"},
		{name: "unknown extension", args: []string{ds, "--table", "depth", "--out", "x.dat"}, wantErr: "--format is required"},
		{name: "interval and every-event", args: []string{ds, "--table", "depth", "--interval", "1s", "--every-event", "--out", out}, wantErr: "--interval and --every-event"},
		{name: "interval off depth", args: []string{ds, "--table", "trades", "--interval", "1s", "--out", out}, wantErr: "--interval applies to --table depth"},
		{name: "levels off depth", args: []string{ds, "--table", "quotes", "--levels", "5", "--out", out}, wantErr: "--levels applies to --table depth"},
		{name: "levels 0", args: []string{ds, "--table", "depth", "--levels", "0", "--out", out}, wantErr: "--levels 0"},
		{name: "bad interval", args: []string{ds, "--table", "depth", "--interval", "-1s", "--out", out}, wantErr: "--interval"},
		{name: "exact csv", args: []string{ds, "--table", "depth", "--exact", "--out", "x.csv"}, wantErr: "--exact does not apply"},
		{name: "gz parquet", args: []string{ds, "--table", "depth", "--format", "parquet", "--out", "x.parquet.gz"},
			check: func(t *testing.T, o *exportOptions) {
				if o.Compress != interchange.Gzip {
					t.Errorf("compress %v", o.Compress)
				}
			}},
		{name: "compress contradicts", args: []string{ds, "--table", "depth", "--compress", "zstd", "--out", "x.parquet.gz"}, wantErr: "contradicts"},
		{name: "compress flag", args: []string{ds, "--table", "trades", "--compress", "zstd", "--out", "x.csv"},
			check: func(t *testing.T, o *exportOptions) {
				if o.Compress != interchange.Zstd || o.Format != "csv" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "bad compress", args: []string{ds, "--table", "trades", "--compress", "lz4", "--out", "x.csv"}, wantErr: "--compress"},
		{name: "tardis", args: []string{ds, "--table", "trades", "--format", "tardis", "--tardis-exchange", "hyperliquid", "--out", "x.csv"},
			check: func(t *testing.T, o *exportOptions) {
				if o.Format != "tardis" || o.TardisExch != "hyperliquid" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "tardis exchange off tardis", args: []string{ds, "--table", "trades", "--tardis-exchange", "hyperliquid", "--out", "x.csv"}, wantErr: "--tardis-exchange"},
		{name: "tardis exchange nonsense", args: []string{ds, "--table", "trades", "--format", "tardis", "--tardis-exchange", "nonsense", "--out", "x.csv"},
			wantErr: `--tardis-exchange "nonsense" is not an exchange id of Tardis' layout`},
		{name: "hftbacktest", args: []string{ds, "--format", "hftbacktest", "--out", "hbt"},
			check: func(t *testing.T, o *exportOptions) {
				if !o.Native() || o.Table != "" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "hftbacktest table", args: []string{ds, "--table", "trades", "--format", "hftbacktest", "--out", "hbt"}, wantErr: "no --table"},
		{name: "hftbacktest levels", args: []string{ds, "--format", "hftbacktest", "--levels", "5", "--out", "hbt"}, wantErr: "--levels does not apply to --format hftbacktest"},
		{name: "hftbacktest stdout", args: []string{ds, "--format", "hftbacktest", "--out", "-"}, wantErr: "--out DIR"},
		{name: "nautilus", args: []string{ds, "--format", "nautilus", "--nautilus-precision", "standard", "--out", "cat"},
			check: func(t *testing.T, o *exportOptions) {
				if !o.Native() || o.Table != "" || o.NautilusPrecision != export.NautilusStandard {
					t.Errorf("%+v", o)
				}
			}},
		{name: "nautilus table", args: []string{ds, "--table", "trades", "--format", "nautilus", "--out", "cat"}, wantErr: "no --table"},
		{name: "nautilus interval", args: []string{ds, "--format", "nautilus", "--interval", "1s", "--out", "cat"}, wantErr: "--interval does not apply to --format nautilus"},
		{name: "nautilus stdout", args: []string{ds, "--format", "nautilus", "--out", "-"}, wantErr: "--out DIR"},
		{name: "nautilus precision off nautilus", args: []string{ds, "--format", "hftbacktest", "--nautilus-precision", "high", "--out", "hbt"}, wantErr: "--nautilus-precision applies"},
		{name: "nautilus precision on a table", args: []string{ds, "--table", "trades", "--nautilus-precision", "high", "--out", out}, wantErr: "--nautilus-precision applies"},
		{name: "bad nautilus precision", args: []string{ds, "--format", "nautilus", "--nautilus-precision", "double", "--out", "cat"}, wantErr: "--nautilus-precision"},
		{name: "tardis events", args: []string{ds, "--table", "events", "--format", "tardis", "--out", "x.csv"}, wantErr: "no Tardis layout"},
		{name: "quality csv", args: []string{ds, "--table", "depth", "--quality-columns", "--out", "x.csv"}, wantErr: "--format tardis only"},
		{name: "snapshots", args: []string{ds, "--table", "book_changes", "--snapshots", "diff", "--out", out},
			check: func(t *testing.T, o *exportOptions) {
				if o.Snapshots != export.SnapshotsDiff {
					t.Errorf("%+v", o)
				}
			}},
		{name: "snapshots off book_changes", args: []string{ds, "--table", "depth", "--snapshots", "full", "--out", out}, wantErr: "--snapshots applies"},
		{name: "bad snapshots", args: []string{ds, "--table", "book_changes", "--snapshots", "some", "--out", out}, wantErr: "--snapshots"},
		{name: "bucket time", args: []string{ds, "--table", "depth", "--interval", "1s", "--bucket-time", "exchange", "--out", out},
			check: func(t *testing.T, o *exportOptions) {
				if o.BucketTime != export.BucketExchange {
					t.Errorf("%+v", o)
				}
			}},
		{name: "bucket time without interval", args: []string{ds, "--table", "depth", "--bucket-time", "exchange", "--out", out}, wantErr: "--bucket-time applies"},
		{name: "split", args: []string{ds, "--table", "depth", "--split-by", "instrument", "--instrument", "x", "--instrument", "y", "--out", "d-{instrument}.parquet"},
			check: func(t *testing.T, o *exportOptions) {
				if o.SplitBy != "instrument" || strings.Join(o.Instruments, ",") != "x,y" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "split without template", args: []string{ds, "--table", "depth", "--split-by", "instrument", "--out", out}, wantErr: "{instrument}"},
		{name: "template without split", args: []string{ds, "--table", "depth", "--out", "d-{instrument}.parquet"}, wantErr: "--split-by"},
		{name: "split events", args: []string{ds, "--table", "events", "--split-by", "instrument", "--out", "e-{instrument}.csv"}, wantErr: "no instrument"},
		{name: "split instruments", args: []string{ds, "--table", "instruments", "--split-by", "instrument", "--out", "i-{instrument}.csv"}, wantErr: "no --split-by"},
		{name: "tardis instruments", args: []string{ds, "--table", "instruments", "--format", "tardis", "--out", "i.csv"}, wantErr: "no Tardis layout"},
		{name: "split stdout", args: []string{ds, "--table", "depth", "--split-by", "instrument", "--format", "csv", "--out", "-"}, wantErr: "{instrument}"},
		{name: "raw instrument", args: []string{ds, "--table", "raw", "--format", "ndjson", "--instrument", "x", "--out", out}, wantErr: "--instrument does not apply"},
		{name: "snappy arrow", args: []string{ds, "--table", "depth", "--compression", "snappy", "--out", "x.arrow"}, wantErr: "snappy"},
		{name: "quality parquet", args: []string{ds, "--table", "depth", "--quality-columns", "--out", out}, wantErr: "--quality-columns"},
		{name: "quality events", args: []string{ds, "--table", "events", "--quality-columns", "--out", "x.csv"}, wantErr: "--quality-columns"},
		{name: "quality book_changes", args: []string{ds, "--table", "book_changes", "--format", "tardis", "--quality-columns", "--out", "x.csv"}, wantErr: "--quality-columns"},
		{name: "raw two datasets", args: []string{ds, ds, "--table", "raw", "--format", "ndjson", "--out", out}, wantErr: "one DATASET"},
		{name: "raw levels", args: []string{ds, "--table", "raw", "--format", "ndjson", "--levels", "3", "--out", out}, wantErr: "--levels does not apply"},
		{name: "raw parquet", args: []string{ds, "--table", "raw", "--format", "parquet", "--out", out}, wantErr: "--format"},
		{name: "to before from", args: []string{ds, "--table", "depth", "--from", "+2s", "--to", "+1s", "--out", out}, wantErr: "--to"},
		{name: "exists", args: []string{ds, "--table", "depth", "--out", exists}, wantErr: "--force"},
		{name: "exists forced", args: []string{ds, "--table", "depth", "--out", exists, "--force"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *exportOptions
			cmd := newExportCmd(func(o *exportOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tt.check != nil {
					tt.check(t, got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want one naming %q", err, tt.wantErr)
			}
			// Every rejection is a usage error (exit 2), found before any work.
			code, _, _ := execReplay(t, append([]string{"export"}, tt.args...)...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d", code, cli.ExitUsage)
			}
			if got != nil {
				t.Fatal("runF called despite the error")
			}
		})
	}
	if b, _ := os.ReadFile(exists); string(b) != "keep" {
		t.Fatal("a refused export touched the existing file")
	}
}

// TestExportExamples runs every Example line of the verb on the sample.
func TestExportExamples(t *testing.T) {
	defer goleak.VerifyNone(t)
	samples := map[string]string{
		"datasets/samples/polymarket":  expSample(t, venue.Polymarket),
		"datasets/samples/hyperliquid": expSample(t, venue.Hyperliquid),
	}
	dir := t.TempDir()
	n := 0
	for _, line := range strings.Split(newExportCmd(nil).Example, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "replay export ") {
			continue
		}
		args := strings.Fields(strings.ReplaceAll(line, "'", ""))[1:]
		var out string
		for i, a := range args {
			if p, ok := samples[a]; ok {
				args[i] = p
			}
			if i > 0 && args[i-1] == "--out" {
				args[i] = filepath.Join(dir, a)
				out = args[i]
			}
		}
		expMust(t, args...)
		outs := []string{out}
		if strings.Contains(out, "{instrument}") {
			outs, _ = filepath.Glob(strings.ReplaceAll(out, "{instrument}", "*"))
			if len(outs) < 2 {
				t.Fatalf("%s: %d files", line, len(outs))
			}
		}
		for _, out := range outs {
			st, err := os.Stat(out)
			if err != nil || st.Size() == 0 {
				t.Fatalf("%s: no output (%v)", line, err)
			}
		}
		n++
	}
	if n < 4 {
		t.Fatalf("only %d examples ran", n)
	}
}

// TestExportRefusesOverwriteAndForces: an existing --out is kept without
// --force and replaced with it; a failed export leaves no file behind.
func TestExportOverwrite(t *testing.T) {
	defer goleak.VerifyNone(t)
	ds := expSample(t, venue.Hyperliquid)
	out := filepath.Join(t.TempDir(), "t.csv")
	expMust(t, "export", ds, "--table", "trades", "--out", out)
	first, _ := os.ReadFile(out)
	if code, _, _ := execReplay(t, "export", ds, "--table", "trades", "--out", out); code != cli.ExitUsage {
		t.Fatalf("overwrite without --force: exit %d", code)
	}
	expMust(t, "export", ds, "--table", "trades", "--out", out, "--force")
	second, _ := os.ReadFile(out)
	if len(first) == 0 || !bytes.Equal(first, second) {
		t.Fatal("re-export with --force differs")
	}
	// A dataset that does not exist fails before anything is left in place.
	bad := filepath.Join(t.TempDir(), "none.parquet")
	if code, _, _ := execReplay(t, "export", filepath.Join(t.TempDir(), "missing"), "--table", "depth", "--out", bad); code != cli.ExitError {
		t.Fatalf("missing dataset: exit %d", code)
	}
	if ents, _ := os.ReadDir(filepath.Dir(bad)); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

// TestExportEncoders: --encoders 1 (everything on the replay's goroutine),
// the default (one per core) and more than the cores write the same file.
func TestExportEncoders(t *testing.T) {
	defer goleak.VerifyNone(t)
	ds := expSample(t, venue.Polymarket)
	dir := t.TempDir()
	for _, c := range []struct{ table, ext string }{{"depth", ".parquet"}, {"book_changes", ".parquet"}, {"depth", ".csv"}} {
		var outs [][]byte
		for _, n := range []string{"1", "", "5"} {
			out := filepath.Join(dir, c.table+n+c.ext)
			args := []string{"export", ds, "--table", c.table, "--out", out}
			if n != "" {
				args = append(args, "--encoders", n)
			}
			expMust(t, args...)
			b, err := os.ReadFile(out)
			if err != nil || len(b) == 0 {
				t.Fatalf("%s: %d bytes, %v", out, len(b), err)
			}
			outs = append(outs, b)
		}
		for i := 1; i < len(outs); i++ {
			if !bytes.Equal(outs[0], outs[i]) {
				t.Fatalf("%s%s: --encoders 1 wrote %d bytes, case %d %d bytes, and they differ", c.table, c.ext, len(outs[0]), i, len(outs[i]))
			}
		}
	}
	if code, _, stderr := execReplay(t, "export", ds, "--table", "depth", "--out", filepath.Join(dir, "x.parquet"), "--encoders", "257"); code != cli.ExitUsage || !strings.Contains(stderr, "--encoders") {
		t.Fatalf("--encoders 257: exit %d, %q", code, stderr)
	}
}

// TestExportCompression: for every format, .gz and .zst (or --compress)
// are gzip and zstd of the plain file, byte for byte.
func TestExportCompression(t *testing.T) {
	defer goleak.VerifyNone(t)
	ds := expSample(t, venue.Polymarket)
	dir := t.TempDir()
	for _, f := range []struct{ format, ext string }{{"csv", ".csv"}, {"tardis", ".csv"}, {"parquet", ".parquet"}, {"arrow", ".arrow"}} {
		plain := filepath.Join(dir, f.format+f.ext)
		args := []string{"export", ds, "--table", "depth", "--levels", "5", "--interval", "1s", "--format", f.format}
		expMust(t, append(args, "--out", plain)...)
		want, _ := os.ReadFile(plain)
		if len(want) == 0 {
			t.Fatalf("%s: empty", plain)
		}
		for _, c := range []struct {
			suffix string
			flags  []string
			read   func(io.Reader) (io.Reader, error)
		}{
			{".gz", nil, func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
			{".zst", nil, func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) }},
			{".z", []string{"--compress", "zstd"}, func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) }},
		} {
			out := plain + c.suffix
			expMust(t, append(append(args, c.flags...), "--out", out)...)
			fh, err := os.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			zr, err := c.read(fh)
			if err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			got, err := io.ReadAll(zr)
			fh.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: decompressed %d bytes (%v), plain %d", out, len(got), err, len(want))
			}
		}
		if f.format == "tardis" && !strings.HasPrefix(string(want), "exchange,symbol,timestamp,local_timestamp,asks[0].price,asks[0].amount,bids[0].price,bids[0].amount,") {
			t.Fatalf("tardis header %.120s", want)
		}
		if f.format == "csv" && !strings.HasPrefix(string(want), "exchange_ts_ns,local_ts_ns,venue,instrument,bid_price_0,bid_size_0,ask_price_0,ask_size_0,") {
			t.Fatalf("csv header %.120s", want)
		}
	}
}

// TestExportRaw delegates to interchange: the NDJSON lines carry the frames.
func TestExportRaw(t *testing.T) {
	defer goleak.VerifyNone(t)
	ds := expSample(t, venue.Hyperliquid)
	out := filepath.Join(t.TempDir(), "raw.ndjson")
	expMust(t, "export", ds, "--table", "raw", "--out", out, "--from", "+10s", "--to", "+20s")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 10 {
		t.Fatalf("%d lines", len(lines))
	}
	m, _ := datasets.ReadManifest(ds)
	for _, l := range lines {
		var w struct {
			RecvNs int64 `json:"recv_ns"`
		}
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatalf("%v: %.200s", err, l)
		}
		if w.RecvNs != 0 && (w.RecvNs < m.StartNs+10e9 || w.RecvNs >= m.StartNs+20e9) {
			t.Fatalf("record at %d outside the window", w.RecvNs)
		}
	}
}

// nodeScript runs a tests/js script and decodes its JSON output; the test is
// skipped when the npm packages are missing (make test installs them).
func nodeScript(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	js := filepath.Join("..", "..", "tests", "js")
	if _, err := os.Stat(filepath.Join(js, "node_modules", "@duckdb", "node-api")); err != nil {
		t.Skip("tests/js/node_modules missing: run `make test-deps` (npm ci in tests/js) to read the exports with DuckDB and Arrow JS")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = js
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	return out
}

type jsTable struct {
	Columns []string                     `json:"columns"`
	Types   []string                     `json:"types"`
	Rows    [][]any                      `json:"rows"`
	KV      map[string]string            `json:"kv"`
	Meta    map[string]string            `json:"metadata"`
	Count   int                          `json:"count"`
	Batches int                          `json:"batches"`
	AsOf    map[string]struct{ jsTable } `json:"asof"`
}

func (tb *jsTable) col(t *testing.T, name string) int {
	t.Helper()
	for i, c := range tb.Columns {
		if c == name {
			return i
		}
	}
	t.Fatalf("no column %q in %v", name, tb.Columns)
	return -1
}

// jsCell renders a JSON cell canonically: numbers as the shortest float text,
// strings as they are, null as "".
func jsCell(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

func floatOf(t *testing.T, dec string) string {
	t.Helper()
	f, err := strconv.ParseFloat(dec, 64)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

type booksDoc struct {
	Books []struct {
		Venue      string      `json:"venue"`
		Instrument string      `json:"instrument"`
		Valid      bool        `json:"valid"`
		Crossed    bool        `json:"crossed"`
		Estimated  bool        `json:"estimated"`
		Bids       [][2]string `json:"bids"`
		Asks       [][2]string `json:"asks"`
	} `json:"books"`
}

// TestExportReadByDuckDB exports every table of both samples to Parquet,
// reads them with DuckDB, and checks the depth rows DuckDB finds as of
// several moments against what `replay books --at` prints there, in float64
// and in --exact decimal form; the other tables must hold the same rows as
// the Arrow IPC export read by Apache Arrow JS.
func TestExportReadByDuckDB(t *testing.T) {
	if testing.Short() {
		t.Skip("exports both samples a dozen times and runs node; skipped in -short")
	}
	defer goleak.VerifyNone(t)
	const levels = 10
	for _, v := range []string{venue.Polymarket, venue.Hyperliquid} {
		t.Run(v, func(t *testing.T) {
			ds := expSample(t, v)
			m, err := datasets.ReadManifest(ds)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var pq, arrowArgs []string
			for _, tbl := range []string{"depth", "book_changes", "trades", "quotes", "events"} {
				p, a := filepath.Join(dir, tbl+".parquet"), filepath.Join(dir, tbl+".arrow")
				extra := []string{}
				if tbl == "depth" {
					extra = []string{"--levels", strconv.Itoa(levels)}
				}
				expMust(t, append([]string{"export", ds, "--table", tbl, "--out", p}, extra...)...)
				expMust(t, append([]string{"export", ds, "--table", tbl, "--out", a}, extra...)...)
				pq = append(pq, tbl+"="+p)
				arrowArgs = append(arrowArgs, tbl+"="+a)
			}
			exact := filepath.Join(dir, "depth_exact.parquet")
			expMust(t, "export", ds, "--table", "depth", "--levels", strconv.Itoa(levels), "--exact", "--out", exact)
			pq = append(pq, "depth_exact="+exact)

			// Moments: spread over the recording, plus its end.
			span := m.EndNs - m.StartNs
			var moments []string
			for _, f := range []int64{1, 5, 20, 50, 80, 100} {
				// Any ns: DuckDB reads the times as TIMESTAMP_NS, exactly.
				moments = append(moments, strconv.FormatInt(m.StartNs+span*f/100, 10))
			}
			list := strings.Join(moments, ",")
			var duck struct {
				Version string             `json:"duckdb_version"`
				Tables  map[string]jsTable `json:"tables"`
				Joins   map[string]jsTable `json:"joins"`
			}
			out := nodeScript(t, "duckdb_check.mjs", append(pq, "--asof", "depth="+list, "--asof", "depth_exact="+list, "--join", "trades=quotes")...)
			if err := json.Unmarshal(out, &duck); err != nil {
				t.Fatal(err)
			}
			t.Logf("DuckDB %s", duck.Version)
			var arrowJS struct {
				Tables map[string]jsTable `json:"tables"`
			}
			if err := json.Unmarshal(nodeScript(t, "arrow_check.mjs", arrowArgs...), &arrowJS); err != nil {
				t.Fatal(err)
			}

			depth := duck.Tables["depth"]
			if depth.Count < 100 || depth.KV[export.MetaVenue] != v || depth.KV[export.MetaTable] != "depth" {
				t.Fatalf("depth: %d rows, kv %v", depth.Count, depth.KV)
			}
			for _, c := range []string{"exchange_ts_ns", "local_ts_ns"} {
				// TIMESTAMP(NANOS) with no zone is what DuckDB reads to the ns
				// (it has no zoned ns type: TIMESTAMP(NANOS, UTC) became µs).
				if ty := depth.Types[depth.col(t, c)]; ty != "TIMESTAMP_NS" {
					t.Fatalf("%s is %s, want TIMESTAMP_NS", c, ty)
				}
			}
			if ty := depth.Types[depth.col(t, "bid_price_0")]; ty != "DOUBLE" {
				t.Fatalf("bid_price_0 is %s", ty)
			}
			ex := duck.Tables["depth_exact"]
			if ty := ex.Types[ex.col(t, "bid_price_0")]; !strings.HasPrefix(ty, "DECIMAL(38,") {
				t.Fatalf("exact bid_price_0 is %s", ty)
			}
			checked := 0
			for _, at := range moments {
				var books booksDoc
				if err := json.Unmarshal([]byte(expMust(t, "books", ds, "--at", at, "--depth", strconv.Itoa(levels), "--format", "json")), &books); err != nil {
					t.Fatal(err)
				}
				for _, form := range []struct {
					name  string
					conv  func(string) string
					table jsTable
				}{
					{"float64", func(s string) string { return floatOf(t, s) }, depth},
					{"exact", func(s string) string { return s }, ex},
				} {
					rows := form.table.AsOf[at]
					byInst := map[string][]any{}
					for _, r := range rows.Rows {
						byInst[jsCell(r[rows.col(t, "instrument")])] = r
					}
					for _, b := range books.Books {
						r, ok := byInst[b.Instrument]
						if !ok {
							t.Fatalf("%s at %s: DuckDB has no depth row for %s", form.name, at, b.Instrument)
						}
						get := func(c string) string { return trimDecimal(jsCell(r[rows.col(t, c)])) }
						if get("book_valid") != strconv.FormatBool(b.Valid) || get("crossed") != strconv.FormatBool(b.Crossed) {
							t.Errorf("%s at %s %s: valid %s crossed %s, books %v %v", form.name, at, b.Instrument,
								get("book_valid"), get("crossed"), b.Valid, b.Crossed)
						}
						for side, lv := range map[string][][2]string{"bid": b.Bids, "ask": b.Asks} {
							for k := 0; k < levels; k++ {
								wantP, wantS := "", ""
								if k < len(lv) {
									wantP, wantS = form.conv(lv[k][0]), form.conv(lv[k][1])
								}
								gotP, gotS := get(fmt.Sprintf("%s_price_%d", side, k)), get(fmt.Sprintf("%s_size_%d", side, k))
								if gotP != wantP || gotS != wantS {
									t.Fatalf("%s at %s %s %s[%d]: DuckDB %s@%s, replay books %s@%s", form.name, at,
										b.Instrument, side, k, gotS, gotP, wantS, wantP)
								}
								checked++
							}
						}
					}
				}
			}
			if checked == 0 {
				t.Fatal("no levels compared")
			}

			// The same rows through two formats and two readers.
			for _, tbl := range []string{"depth", "book_changes", "trades", "quotes", "events"} {
				d, a := duck.Tables[tbl], arrowJS.Tables[tbl]
				if len(d.Rows) != len(a.Rows) || !equalStrings(d.Columns, a.Columns) {
					t.Fatalf("%s: DuckDB %d rows %v, Arrow JS %d rows %v", tbl, len(d.Rows), d.Columns, len(a.Rows), a.Columns)
				}
				if tbl != "events" && tbl != "trades" && len(d.Rows) == 0 {
					t.Fatalf("%s: empty", tbl)
				}
				for i := range d.Rows {
					for c := range d.Columns {
						x, y := jsCell(d.Rows[i][c]), jsCell(a.Rows[i][c])
						if x != y { // times too, to the ns
							t.Fatalf("%s row %d %s: DuckDB %q, Arrow JS %q", tbl, i, d.Columns[c], x, y)
						}
					}
				}
				if a.Meta[export.MetaTable] != tbl || d.KV[export.MetaTable] != tbl {
					t.Fatalf("%s: metadata arrow %v parquet %v", tbl, a.Meta, d.KV)
				}
			}
			checkAsofJoin(t, duck.Joins["trades=quotes"], arrowJS.Tables["trades"], arrowJS.Tables["quotes"])
			t.Logf("%s: DuckDB read %d depth rows; %d level values matched replay books at %d moments",
				v, depth.Count, checked, len(moments))
		})
	}
}

// checkAsofJoin checks DuckDB's ASOF JOIN of trades with quotes against the
// rows Arrow JS read: every trade once, joined to the last quote of its
// instrument at or before it (to the ns), and that quote's prices (any of
// the quotes at that very ns, where several share it).
func checkAsofJoin(t *testing.T, join, trades, quotes jsTable) {
	t.Helper()
	if len(join.Rows) != len(trades.Rows) || len(trades.Rows) == 0 {
		t.Fatalf("ASOF JOIN: %d rows for %d trades", len(join.Rows), len(trades.Rows))
	}
	type quote struct {
		ns       int64
		bid, ask string
	}
	byInst := map[string][]quote{}
	for _, r := range quotes.Rows {
		ns, _ := strconv.ParseInt(jsCell(r[quotes.col(t, "local_ts_ns")]), 10, 64)
		inst := jsCell(r[quotes.col(t, "instrument")])
		byInst[inst] = append(byInst[inst], quote{ns, jsCell(r[quotes.col(t, "bid_price")]), jsCell(r[quotes.col(t, "ask_price")])})
	}
	matched := 0
	for _, r := range join.Rows {
		tradeNs, _ := strconv.ParseInt(jsCell(r[join.col(t, "trade_ns")]), 10, 64)
		inst := jsCell(r[join.col(t, "instrument")])
		var want []quote
		for _, q := range byInst[inst] {
			if q.ns > tradeNs {
				continue
			}
			if len(want) > 0 && q.ns > want[0].ns {
				want = want[:0]
			}
			if len(want) == 0 || q.ns == want[0].ns {
				want = append(want, q)
			}
		}
		gotNs := jsCell(r[join.col(t, "quote_ns")])
		if len(want) == 0 {
			if gotNs != "" {
				t.Fatalf("trade of %s at %d: DuckDB joined a quote at %s, there is none before", inst, tradeNs, gotNs)
			}
			continue
		}
		bid, ask := jsCell(r[join.col(t, "bid_price")]), jsCell(r[join.col(t, "ask_price")])
		ok := false
		for _, q := range want {
			ok = ok || (strconv.FormatInt(q.ns, 10) == gotNs && q.bid == bid && q.ask == ask)
		}
		if !ok {
			t.Fatalf("trade of %s at %d: DuckDB joined %s %s/%s, want %+v", inst, tradeNs, gotNs, bid, ask, want)
		}
		matched++
	}
	if matched == 0 {
		t.Fatal("ASOF JOIN matched no trade to a quote")
	}
}

// trimDecimal drops the trailing fraction zeros DuckDB prints for a DECIMAL
// ("1.480000" → "1.48", "106222.00000000" → "106222"), the form replay books uses.
func trimDecimal(s string) string {
	if strings.Contains(s, ".") && !strings.ContainsAny(s, "eE") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestExportCSVParsesBack: every Tardis CSV parses with encoding/csv, and its
// exact decimal text is, value for value, what the Parquet file holds as
// float64 (as DuckDB reads it).
func TestExportCSVParsesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node; skipped in -short")
	}
	defer goleak.VerifyNone(t)
	ds := expSample(t, venue.Polymarket)
	dir := t.TempDir()
	args := []string{}
	for _, tbl := range []string{"book_changes", "trades", "quotes"} {
		c, p := filepath.Join(dir, tbl+".csv"), filepath.Join(dir, tbl+".parquet")
		expMust(t, "export", ds, "--table", tbl, "--out", c)
		expMust(t, "export", ds, "--table", tbl, "--out", p)
		args = append(args, tbl+"="+p)
	}
	var duck struct {
		Tables map[string]jsTable `json:"tables"`
	}
	if err := json.Unmarshal(nodeScript(t, "duckdb_check.mjs", args...), &duck); err != nil {
		t.Fatal(err)
	}
	pairs := map[string]string{"price": "price", "amount": "size", "ask_price": "ask_price", "ask_amount": "ask_size",
		"bid_price": "bid_price", "bid_amount": "bid_size", "symbol": "instrument", "side": "side"}
	for tbl, d := range duck.Tables {
		head, rows := readCSVFile(t, filepath.Join(dir, tbl+".csv"))
		if len(rows) != len(d.Rows) {
			t.Fatalf("%s: csv %d rows, parquet %d", tbl, len(rows), len(d.Rows))
		}
		cols := make([]string, 0, len(head))
		for _, h := range head {
			if _, ok := pairs[h]; ok {
				cols = append(cols, h)
			}
		}
		sort.Strings(cols)
		for i, r := range rows {
			for _, h := range cols {
				ci := indexOf(head, h)
				got := r[ci]
				if strings.Contains(h, "price") || strings.Contains(h, "amount") {
					if got != "" {
						got = floatOf(t, got)
					}
				}
				if want := jsCell(d.Rows[i][d.col(t, pairs[h])]); got != want {
					t.Fatalf("%s row %d %s: csv %q, parquet %q", tbl, i, h, r[ci], want)
				}
			}
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// --format nautilus writes the catalog's tree; a second export of the same
// rows is refused (the files exist) unless forced; an export of a later
// window adds its own files beside the first's, and one overlapping them is
// refused even forced. --nautilus-precision standard writes 8-byte raw
// integers.
func TestExportNautilusCatalog(t *testing.T) {
	ds := expSample(t, venue.Hyperliquid)
	dir := filepath.Join(t.TempDir(), "catalog")
	run := func(args ...string) (int, string) {
		t.Helper()
		code, _, errs := execReplay(t, append([]string{"export", ds, "--format", "nautilus", "--out", dir}, args...)...)
		return code, errs
	}
	if code, errs := run("--to", "+5m"); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	files := func() []string {
		var out []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		return out
	}
	first := files()
	var deltas string
	for _, f := range first {
		if strings.HasPrefix(f, "data/order_book_deltas/BTC-USD-PERP.HYPERLIQUID/") {
			deltas = f
		}
	}
	if deltas == "" || !slices.Contains(first, "data/crypto_perpetual/BTC-USD-PERP.HYPERLIQUID/2025-10-23T00-38-00-000000000Z_2025-10-23T00-38-00-000000000Z.parquet") {
		t.Fatalf("files %q", first)
	}
	if code, errs := run("--to", "+5m"); code == cli.ExitOK || !strings.Contains(errs, "exists (use -f/--force") {
		t.Fatalf("again: exit %d: %s", code, errs)
	}
	contents := func() map[string]string {
		m := map[string]string{}
		for _, f := range files() {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
			if err != nil {
				t.Fatal(err)
			}
			m[f] = string(b)
		}
		return m
	}
	before := contents()
	if code, errs := run("--to", "+5m", "--force"); code != cli.ExitOK {
		t.Fatalf("forced: exit %d: %s", code, errs)
	}
	if !maps.Equal(before, contents()) {
		t.Fatal("the same export twice wrote different files")
	}
	if code, errs := run("--from", "+2m"); code == cli.ExitOK || !strings.Contains(errs, "overlaps") {
		t.Fatalf("overlapping: exit %d: %s", code, errs)
	}
	if code, errs := run("--from", "+5m"); code != cli.ExitOK {
		t.Fatalf("later window: exit %d: %s", code, errs)
	}
	if n := len(files()); n <= len(first) {
		t.Fatalf("%d files after the second window, %d before", n, len(first))
	}
	std := filepath.Join(t.TempDir(), "std")
	if code, _, errs := execReplay(t, "export", ds, "--format", "nautilus", "--nautilus-precision", "standard", "--out", std); code != cli.ExitOK {
		t.Fatalf("standard: exit %d: %s", code, errs)
	}
	ents, err := os.ReadDir(filepath.Join(std, "data", "order_book_deltas", "BTC-USD-PERP.HYPERLIQUID"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("%v %v", ents, err)
	}
	r, err := file.OpenParquetFile(filepath.Join(std, "data", "order_book_deltas", "BTC-USD-PERP.HYPERLIQUID", ents[0].Name()), false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if c := r.MetaData().Schema.Column(2); c.Name() != "price" || c.TypeLength() != 8 {
		t.Fatalf("column %s is %d bytes, want price in 8", c.Name(), c.TypeLength())
	}
}
