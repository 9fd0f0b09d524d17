package notebooks

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/samplegen"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/export"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sample is the shipped sample of a venue, or the same session generated
// with samplegen's seed 1 until it ships.
func sample(t *testing.T, v string) string {
	t.Helper()
	shipped := filepath.Join("..", "datasets", "samples", v)
	if _, err := os.Stat(filepath.Join(shipped, datasets.ManifestName)); err == nil {
		return shipped
	}
	opts := samplegen.Options{Seed: 1}
	m, err := samplegen.Manifest(v, opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), v)
	w, err := datasets.Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := samplegen.Generate(v, opts, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// csvExport is one `replay export … --format tardis` (events: csv) the notebooks read.
type csvExport struct {
	venue string
	table export.Table
	name  string
	opts  []export.Option
}

// The exports the notebooks' markdown cells name, file for file.
var exports = []csvExport{
	{venue.Polymarket, export.TableDepth, "pm_depth.csv", []export.Option{export.WithLevels(5), export.WithInterval(time.Second), export.WithQualityColumns()}},
	{venue.Polymarket, export.TableDepth, "pm_quality.csv", []export.Option{export.WithLevels(1), export.WithQualityColumns()}},
	{venue.Polymarket, export.TableEvents, "pm_events.csv", nil},
	{venue.Hyperliquid, export.TableDepth, "hl_depth.csv", []export.Option{export.WithLevels(20), export.WithInterval(time.Second)}},
	{venue.Hyperliquid, export.TableTrades, "hl_trades.csv", nil},
	{venue.Hyperliquid, export.TableDepth, "hl_quality.csv", []export.Option{export.WithLevels(1), export.WithQualityColumns()}},
	{venue.Hyperliquid, export.TableEvents, "hl_events.csv", nil},
}

// The figures each notebook must save.
var notebooks = map[string][]string{
	"polymarket_spread_mid_depth.ipynb": {"pm_spread_mid_depth.png", "pm_yes_no_complement.png"},
	"hyperliquid_depth_heatmap.ipynb":   {"hl_depth_heatmap.png"},
	"data_quality_timeline.ipynb":       {"quality_timeline.png", "quality_disconnect_zoom.png"},
	"backtest_equity_fills.ipynb":       {"bt_equity_inventory_fills.png"},
}

// writeExports replays each sample once into every CSV sink of its venue.
func writeExports(t *testing.T, dir string) {
	t.Helper()
	drivers := map[string]venue.Driver{venue.Polymarket: polymarket.Driver, venue.Hyperliquid: hyperliquid.Driver}
	for _, v := range []string{venue.Polymarket, venue.Hyperliquid} {
		path := sample(t, v)
		r, err := replayer.New([]string{path})
		if err != nil {
			t.Fatal(err)
		}
		var sinks []*export.Sink
		var files []*os.File
		for _, e := range exports {
			if e.venue != v {
				continue
			}
			f, err := os.Create(filepath.Join(dir, e.name))
			if err != nil {
				t.Fatal(err)
			}
			opts := append([]export.Option{export.WithSource(drivers[v]), export.WithDatasets(path)}, e.opts...)
			format := export.FormatTardis // the notebooks read Tardis' layouts
			if e.table == export.TableEvents {
				format = export.FormatCSV // which has no events layout
			}
			s, err := export.New(f, e.table, format, opts...)
			if err != nil {
				t.Fatal(err)
			}
			r.Subscribe(replayer.Key{}, s)
			sinks = append(sinks, s)
			files = append(files, f)
		}
		sum, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.SubscriberFailures) > 0 {
			t.Fatalf("%s: %+v", v, sum.SubscriberFailures)
		}
		for i, s := range sinks {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := files[i].Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestNotebooksExecute runs every notebook with jupyter nbconvert --execute
// against fresh CSV exports of the samples. A cell that raises fails the
// test, and so does a figure that is missing or nearly one colour.
func TestNotebooksExecute(t *testing.T) {
	if testing.Short() {
		t.Skip("notebooks take tens of seconds; skipped in -short")
	}
	jupyter, err := exec.LookPath("jupyter")
	if err != nil {
		t.Skip("jupyter not installed: run `make test-deps` (Debian jupyter-nbconvert, python3-ipykernel, python3-pandas, python3-matplotlib)")
	}
	exportsDir, figures, executed := t.TempDir(), t.TempDir(), t.TempDir()
	writeExports(t, exportsDir)
	writeBacktest(t, exportsDir)
	names := make([]string, 0, len(notebooks))
	for nb := range notebooks {
		names = append(names, nb)
	}
	for _, nb := range names {
		t.Run(strings.TrimSuffix(nb, ".ipynb"), func(t *testing.T) {
			cmd := exec.Command(jupyter, "nbconvert", "--to", "notebook", "--execute",
				"--ExecutePreprocessor.timeout=300", "--output-dir", executed, nb)
			cmd.Env = append(os.Environ(), "TAPEDECK_EXPORTS="+exportsDir, "TAPEDECK_FIGURES="+figures,
				"MPLBACKEND=Agg", "PYDEVD_DISABLE_FILE_VALIDATION=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("nbconvert %s: %v\n%s", nb, err, tail(stderr.String(), 4000))
			}
			checkNoErrorOutputs(t, filepath.Join(executed, nb))
			for _, fig := range notebooks[nb] {
				checkFigure(t, filepath.Join(figures, fig))
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// checkNoErrorOutputs fails on any error output left in the executed notebook
// (nbconvert already stops on one; this also catches allow-errors configs).
func checkNoErrorOutputs(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []struct {
			CellType string `json:"cell_type"`
			Outputs  []struct {
				OutputType string `json:"output_type"`
				Ename      string `json:"ename"`
				Evalue     string `json:"evalue"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	code := 0
	for i, c := range doc.Cells {
		if c.CellType == "code" {
			code++
		}
		for _, o := range c.Outputs {
			if o.OutputType == "error" {
				t.Fatalf("%s cell %d: %s: %s", filepath.Base(path), i, o.Ename, o.Evalue)
			}
		}
	}
	if code == 0 {
		t.Fatalf("%s: no code cells", path)
	}
}

// checkFigure decodes a PNG and rejects an empty or nearly uniform image: at
// least 2% of its pixels must differ from the most common colour, it must use
// more than a handful of colours, and at least 0.1% of its pixels must be
// coloured (not grey): empty matplotlib axes are black, white and grey only,
// so this is what tells drawn data from a frame with tick labels.
func checkFigure(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("figure missing: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() < 200 || b.Dy() < 150 {
		t.Fatalf("%s: %dx%d is too small for a figure", path, b.Dx(), b.Dy())
	}
	counts := map[[4]uint32]int{}
	colored := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			r, g, bl, a = r>>8, g>>8, bl>>8, a>>8
			counts[[4]uint32{r, g, bl, a}]++
			if max(r, g, bl)-min(r, g, bl) > 40 {
				colored++
			}
		}
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	total := b.Dx() * b.Dy()
	other, col := float64(total-most)/float64(total), float64(colored)/float64(total)
	if other < 0.02 || len(counts) < 16 || col < 0.001 {
		t.Fatalf("%s looks empty: %d colours, %.1f%% of pixels off the background, %.2f%% coloured",
			path, len(counts), 100*other, 100*col)
	}
	t.Logf("%s: %dx%d, %d colours, %.1f%% drawn, %.1f%% coloured", filepath.Base(path), b.Dx(), b.Dy(),
		len(counts), 100*other, 100*col)
}

// writeBacktest runs the example market maker on the Polymarket sample as
// `replay backtest --strategy mm --param spread=0.02 --out bt/` does.
func writeBacktest(t *testing.T, dir string) {
	t.Helper()
	s, ps, err := backtest.NewBuiltin("mm", backtest.Params{"spread": "0.02"})
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := backtest.Run(context.Background(), []string{sample(t, venue.Polymarket)}, s,
		backtest.Config{Cash: 1000e10}, backtest.RunOptions{Name: "mm", Params: ps})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WriteTables(filepath.Join(dir, "bt"), columnar.CSV, columnar.Options{}); err != nil {
		t.Fatal(err)
	}
}
