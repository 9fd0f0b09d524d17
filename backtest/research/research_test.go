package research

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/replayer"
)

const (
	pmSample = "../../datasets/samples/polymarket"
	hlSample = "../../datasets/samples/hyperliquid"
)

func TestParseAxis(t *testing.T) {
	for in, want := range map[string][]string{
		"spread=0.01:0.05:0.01":  {"0.01", "0.02", "0.03", "0.04", "0.05"},
		"x=1:2:0.25":             {"1.00", "1.25", "1.50", "1.75", "2.00"},
		"size=5,10,20":           {"5", "10", "20"},
		"n=3:3:1":                {"3"},
		"mm.spread=0.1:0.35:0.1": {"0.10", "0.20", "0.30"},
		"instrument=BTC, ETH":    {"BTC", "ETH"},
	} {
		a, err := ParseAxis(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !slices.Equal(a.Values, want) {
			t.Errorf("%s: %q, want %q", in, a.Values, want)
		}
	}
	for _, bad := range []string{"spread", "=1,2", "x=", "x=1:0:1", "x=0:1:0", "x=0:1:-1", "x=a:b:c", "x=1,,2", "x=1,1", "x=0:1:0.00001", "x=1e3:2e3:1"} {
		if _, err := ParseAxis(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestGridOrderAndBounds(t *testing.T) {
	pts, err := Grid([]Axis{{"a", []string{"1", "2"}}, {"b", []string{"x", "y", "z"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, p := range pts {
		if p.Index != i {
			t.Fatalf("point %d has index %d", i, p.Index)
		}
		got = append(got, p.Values["a"]+p.Values["b"])
	}
	if want := []string{"1x", "1y", "1z", "2x", "2y", "2z"}; !slices.Equal(got, want) {
		t.Fatalf("grid order %v, want %v", got, want)
	}
	big := Axis{"a", make([]string, 101)}
	if _, err := Grid([]Axis{big, {"b", big.Values}}); err == nil {
		t.Fatal("a grid of 10,201 points was accepted")
	}
	if _, err := Grid([]Axis{{"a", []string{"1"}}, {"a", []string{"2"}}}); err == nil {
		t.Fatal("an axis swept twice was accepted")
	}
}

func TestReadGrid(t *testing.T) {
	names, pts, err := ReadGrid(strings.NewReader("# points\nspread,size\n0.02,5\n0.03, 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"spread", "size"}) || len(pts) != 2 || pts[1].Values["size"] != "10" || pts[1].Index != 1 {
		t.Fatalf("%v %+v", names, pts)
	}
	for _, bad := range []string{"", "a,a\n1,2\n", "a,b\n1\n", "a,b\n1,\n", "a\n"} {
		if _, _, err := ReadGrid(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPlanRefusesUnknownNames(t *testing.T) {
	for _, j := range []Job{
		{Strategies: []string{"mm"}, Axes: []string{"nonsense"}},
		{Strategies: []string{"mm", "complement"}, Params: backtest.Params{"noop.size": "1"}},
		{Strategies: []string{"mm"}, Params: backtest.Params{"complement.edge": "0.1"}},
		{Strategies: []string{"nope"}},
		{Strategies: []string{"mm", "mm"}},
		{Strategies: []string{"mm"}, Axes: []string{"spread"}, Points: []Point{{Values: map[string]string{"spread": "abc"}}}},
	} {
		if _, _, err := j.Plan(); err == nil {
			t.Errorf("%+v: planned", j)
		}
	}
	// A bare name goes to every strategy that has it, a qualified one to one.
	j := Job{Strategies: []string{"mm", "complement"}, Params: backtest.Params{"size": "7", "mm.spread": "0.03"}}
	runs, _, err := j.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Params["size"] != "7" || runs[1].Params["size"] != "7" || runs[0].Params["spread"] != "0.03" {
		t.Fatalf("params %v %v", runs[0].Params, runs[1].Params)
	}
}

func cfg() backtest.Config {
	return backtest.Config{Cash: 1000 * 1e10, Latency: backtest.ConstantLatency{EntryNs: 5e6, AckNs: 5e6, CancelNs: 5e6}}
}

// TestSweepEqualsSeparateRuns: every point of a sweep on one replay gives
// what a run of its own gives: fills, orders, equity, digest; a
// summary-only sweep gives the same summaries and keeps nothing else.
func TestSweepEqualsSeparateRuns(t *testing.T) {
	for _, tc := range []struct {
		path   string
		strats []string
		axes   []Axis
		fixed  backtest.Params
	}{
		{pmSample, []string{"mm", "complement"}, []Axis{{"mm.spread", []string{"0.01", "0.03"}}, {"size", []string{"5", "20"}}}, nil},
		{hlSample, []string{"mm"}, []Axis{{"spread", []string{"0.0005", "0.002"}}, {"size", []string{"0.01", "0.05"}}}, backtest.Params{"instrument": "BTC"}},
	} {
		pts, err := Grid(tc.axes)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, a := range tc.axes {
			names = append(names, a.Name)
		}
		for _, mode := range []struct {
			workers     int
			summaryOnly bool
		}{{1, false}, {2, false}, {3, false}, {1, true}, {2, true}} {
			workers := mode.workers
			j := &Job{Paths: []string{tc.path}, Strategies: tc.strats, Axes: names, Points: pts, Params: tc.fixed, Config: cfg(),
				Replay: []replayer.Option{replayer.WithHashCheck(true)}, Workers: workers, SummaryOnly: mode.summaryOnly}
			runs, _, err := j.Execute(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != len(pts)*len(tc.strats) {
				t.Fatalf("%d runs", len(runs))
			}
			fills := 0
			for _, r := range runs {
				s, _, err := backtest.NewBuiltin(r.Strategy, r.Params)
				if err != nil {
					t.Fatal(err)
				}
				alone, _, err := backtest.Run(context.Background(), []string{tc.path}, s, cfg(), backtest.RunOptions{Name: r.Strategy, Params: r.Params,
					Replay: []replayer.Option{replayer.WithHashCheck(true)}})
				if err != nil {
					t.Fatal(err)
				}
				if mode.summaryOnly {
					// The summary to the last bit, and nothing else kept.
					if res := r.Result; !reflect.DeepEqual(alone.Summary, res.Summary) || res.Orders != nil || res.Fills != nil ||
						res.Equity != nil || res.Positions != nil || res.Markouts != nil {
						t.Fatalf("%s point %d %s (workers %d, summary only): sweep %+v (%d orders, %d fills, %d equity samples kept), alone %+v",
							tc.path, r.Point.Index, r.Strategy, workers, res.Summary, len(res.Orders), len(res.Fills), len(res.Equity), alone.Summary)
					}
				} else if alone.Summary.Digest != r.Result.Summary.Digest || !reflect.DeepEqual(alone.Fills, r.Result.Fills) ||
					!reflect.DeepEqual(alone.Equity, r.Result.Equity) || !reflect.DeepEqual(alone.Summary, r.Result.Summary) {
					t.Fatalf("%s point %d %s (workers %d): sweep %s, alone %s", tc.path, r.Point.Index, r.Strategy, workers,
						r.Result.Summary.Digest, alone.Summary.Digest)
				}
				fills += len(alone.Fills)
			}
			if fills == 0 {
				t.Fatalf("%s: no run filled anything: the comparison proves little", tc.path)
			}
		}
	}
}

// TestShardsMergeToTheSweep: 1/3, 2/3, 3/3 of a sweep merged are the
// unsharded sweep's table byte for byte, in CSV, Parquet (with each codec)
// and Arrow IPC; the merged Parquet and Arrow tables keep the sweep's
// MetaAxes and drop the shards' MetaShard.
func TestShardsMergeToTheSweep(t *testing.T) {
	pts, _ := Grid([]Axis{{"spread", []string{"0.01", "0.02", "0.04"}}, {"size", []string{"5", "10"}}})
	runsOf := func(sh replayer.Shard) []*Run {
		j := &Job{Paths: []string{pmSample}, Strategies: []string{"mm"}, Axes: []string{"spread", "size"}, Points: pts, Config: cfg(), Shard: sh}
		runs, _, err := j.Execute(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	whole := runsOf(replayer.Shard{})
	var shards [][]*Run
	for k := 3; k >= 1; k-- { // in any order
		shards = append(shards, runsOf(replayer.Shard{K: k, N: 3}))
	}
	for _, tc := range []struct {
		f columnar.Format
		o columnar.Options
	}{
		{columnar.CSV, columnar.Options{}},
		{columnar.Parquet, columnar.Options{}},
		{columnar.Parquet, columnar.Options{Compression: columnar.Zstd}},
		{columnar.Arrow, columnar.Options{}},
		{columnar.Arrow, columnar.Options{Compression: columnar.Zstd}},
	} {
		table := func(runs []*Run, shard string) []byte {
			var b bytes.Buffer
			if err := WriteTable(&b, runs, []string{"spread", "size"}, shard, tc.f, tc.o); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
		want := table(whole, "")
		parts := [][]byte{table(shards[0], "3/3"), table(shards[1], "2/3"), table(shards[2], "1/3")}
		merge := func(ps ...[]byte) ([]byte, error) {
			var rs []io.Reader
			for _, p := range ps {
				rs = append(rs, bytes.NewReader(p))
			}
			var merged bytes.Buffer
			err := Merge(&merged, MergeOptions{}, rs...)
			return merged.Bytes(), err
		}
		merged, err := merge(parts...)
		if err != nil {
			t.Fatalf("%s: %v", tc.f, err)
		}
		if !bytes.Equal(merged, want) {
			t.Fatalf("%s %+v: merged %d bytes, the whole sweep's %d:\n%q\n%q", tc.f, tc.o, len(merged), len(want), merged, want)
		}
		meta := func(b []byte) map[string]string {
			c, err := columnar.ReadTyped(b, new(sweepPart).columns, 100)
			if err != nil || len(c.Rows) != len(whole) && len(c.Rows) != len(shards[0]) {
				t.Fatalf("%s: %v", tc.f, err)
			}
			return c.Schema.Metadata
		}
		if tc.f == columnar.CSV {
			if strings.Count(string(want), "\n") != 7 {
				t.Fatalf("table:\n%s", want)
			}
		} else if pm, mm := meta(parts[0]), meta(merged); pm[MetaShard] != "3/3" || mm[MetaShard] != "" || len(mm) != 1 || mm[MetaAxes] != "spread,size" {
			t.Fatalf("%s: a part's metadata %v, the merged table's %v", tc.f, pm, mm)
		}
		if _, err := merge(parts[0], parts[2]); err == nil || !strings.Contains(err.Error(), "none of the tables") {
			t.Fatalf("%s: a missing shard: %v", tc.f, err)
		}
		if _, err := merge(parts[0], parts[0]); err == nil {
			t.Fatalf("%s: a shard given twice was merged", tc.f)
		}
		if tc.f != columnar.CSV { // 3/3 missing leaves no gap in the points: the metadata tells
			if _, err := merge(parts[1], parts[2]); err == nil || !strings.Contains(err.Error(), "shard 3/3 is in none") {
				t.Fatalf("%s: the last shard missing: %v", tc.f, err)
			}
		}
	}
}

// fakeRuns are n runs of a sweep of "spread" whose even points filled
// (they have markouts at 1s and 10s, point 2 at 100ms too) and odd ones
// did not, as Measure gives them.
func fakeRuns(n int) []*Run {
	var runs []*Run
	for i := range n {
		m := Metrics{PnL: float64(i) - 1.25, Fees: 0.1 * float64(i), Sharpe: -0.5, Orders: 3 * i, Digest: fmt.Sprintf("%016x", i*7919)}
		if i%2 == 0 {
			m.Fills = i + 1
			m.Markouts = map[string]float64{"10s": -0.03125, "1s": float64(i) / 8}
			if i == 2 {
				m.Markouts["100ms"] = 0.5
			}
		}
		runs = append(runs, &Run{Point: Point{Index: i, Values: map[string]string{"spread": fmt.Sprint(i)}}, Strategy: "mm", Metrics: m})
	}
	return runs
}

// A shard whose runs never filled has no markout columns; merged with the
// others, the table is still the whole sweep's, the markouts null where
// they were. And bad parts are refused, naming the part.
func TestMergeMarkoutsAndBadParts(t *testing.T) {
	runs := fakeRuns(6)
	write := func(runs []*Run, axes []string, shard string, f columnar.Format) []byte {
		var b bytes.Buffer
		if err := WriteTable(&b, runs, axes, shard, f, columnar.Options{}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	sweep := []string{"spread"}
	for _, f := range []columnar.Format{columnar.CSV, columnar.Parquet, columnar.Arrow} {
		odd := []*Run{runs[1], runs[3], runs[5]}
		even := []*Run{runs[0], runs[2], runs[4]}
		parts := [][]byte{write(odd, sweep, "2/2", f), write(even, sweep, "1/2", f)}
		var merged bytes.Buffer
		if err := Merge(&merged, MergeOptions{}, bytes.NewReader(parts[0]), bytes.NewReader(parts[1])); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if want := write(runs, sweep, "", f); !bytes.Equal(merged.Bytes(), want) {
			t.Fatalf("%s: merged:\n%q\nwant:\n%q", f, merged.Bytes(), want)
		}
		other := columnar.Parquet
		if f == columnar.Parquet {
			other = columnar.CSV
		}
		for name, tc := range map[string]struct {
			parts [][]byte
			want  string
		}{
			"mixed formats": {[][]byte{parts[0], write(even, sweep, "1/2", other)}, "one format"},
			"other axes":    {[][]byte{parts[0], write(even, []string{"size"}, "1/2", f)}, "not shards of one sweep"},
			"truncated":     {[][]byte{parts[0], parts[1][:len(parts[1])*2/3]}, "b.x"},
			"not a sweep":   {[][]byte{parts[0], []byte("a,b\n1,2\n")}, "not a sweep table"},
			"empty":         {[][]byte{parts[0], nil}, "b.x"},
			"a bad decimal": {[][]byte{bytes.Replace(parts[0], []byte(",-0.25,"), []byte(",-0.2.5,"), 1)}, "a.x"},
		} {
			if name == "a bad decimal" && f != columnar.CSV {
				continue
			}
			var rs []io.Reader
			for _, p := range tc.parts {
				rs = append(rs, bytes.NewReader(p))
			}
			err := Merge(io.Discard, MergeOptions{Names: []string{"a.x", "b.x"}}, rs...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s, %s: %v, want an error with %q", f, name, err, tc.want)
			}
		}
	}
	// The parts' codec and batch size are the merged table's.
	for _, f := range []columnar.Format{columnar.Parquet, columnar.Arrow} {
		o := columnar.Options{Compression: columnar.Zstd, BatchRows: 2}
		var tabs [3][]byte
		for i, rs := range [][]*Run{runs, {runs[1], runs[3], runs[5]}, {runs[0], runs[2], runs[4]}} {
			var b bytes.Buffer
			if err := WriteTable(&b, rs, sweep, []string{"", "2/2", "1/2"}[i], f, o); err != nil {
				t.Fatal(err)
			}
			tabs[i] = b.Bytes()
		}
		var merged bytes.Buffer
		if err := Merge(&merged, MergeOptions{}, bytes.NewReader(tabs[1]), bytes.NewReader(tabs[2])); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(merged.Bytes(), tabs[0]) {
			t.Fatalf("%s %+v: the merged table is not the whole sweep's", f, o)
		}
	}
	// Parquet parts merged into CSV: the CSV sweep's table.
	var merged bytes.Buffer
	pq := [][]byte{write(runs[:3], sweep, "", columnar.Parquet), write(runs[3:], sweep, "", columnar.Parquet)}
	if err := Merge(&merged, MergeOptions{Format: columnar.CSV}, bytes.NewReader(pq[1]), bytes.NewReader(pq[0])); err != nil {
		t.Fatal(err)
	}
	if want := write(runs, sweep, "", columnar.CSV); !bytes.Equal(merged.Bytes(), want) {
		t.Fatalf("parquet merged to csv:\n%s\nwant:\n%s", merged.Bytes(), want)
	}
}

// FuzzMerge: whatever the bytes of a part, Merge returns (an error or a
// table), bounded, without a panic.
func FuzzMerge(f *testing.F) {
	for _, fm := range []columnar.Format{columnar.CSV, columnar.Parquet, columnar.Arrow} {
		var b bytes.Buffer
		if err := WriteTable(&b, fakeRuns(3), []string{"spread"}, "1/1", fm, columnar.Options{}); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
		f.Add(b.Bytes()[:b.Len()/2])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = Merge(io.Discard, MergeOptions{}, bytes.NewReader(data))
	})
}

func TestWindows(t *testing.T) {
	ws := Windows(0, 100, 40, 25)
	want := [][4]int64{{0, 40, 40, 65}, {25, 65, 65, 90}, {50, 90, 90, 100}}
	if len(ws) != len(want) {
		t.Fatalf("%+v", ws)
	}
	for i, w := range ws {
		if got := [4]int64{w.TrainFromNs, w.TrainToNs, w.TestFromNs, w.TestToNs}; got != want[i] {
			t.Fatalf("window %d %v, want %v", i, got, want[i])
		}
	}
	for in, d := range map[string]time.Duration{"1d": 24 * time.Hour, "2w": 14 * 24 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := ParseSpan(in); err != nil || got != d {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"0d", "-1h", "1x", "d", "1.5d"} {
		if _, err := ParseSpan(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, _, err := ParseWalk("1d"); err == nil {
		t.Error("1d accepted as TRAIN/TEST")
	}
}

// TestWalkForwardReproducesSingleWindowRuns: each test window's run is what
// a backtest of that window alone with the chosen point gives, the chosen
// point is the train window's best, and the stitched equity continues
// from one window to the next.
func TestWalkForwardReproducesSingleWindowRuns(t *testing.T) {
	pts, _ := Grid([]Axis{{"spread", []string{"0.01", "0.03", "0.05"}}})
	j := &Job{Paths: []string{pmSample}, Strategies: []string{"mm"}, Axes: []string{"spread"}, Points: pts, Config: cfg()}
	wk, err := j.WalkForward(context.Background(), 3*time.Minute, 2*time.Minute, "pnl")
	if err != nil {
		t.Fatal(err)
	}
	if len(wk.Windows) < 3 {
		t.Fatalf("%d windows", len(wk.Windows))
	}
	carried := 1000.0
	for i, w := range wk.Windows {
		c := w.Chosen[0]
		// The train window's best.
		tj := *j
		tj.Replay = []replayer.Option{replayer.WithWindow(w.TrainFromNs, w.TrainToNs)}
		runs, _, err := tj.Execute(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Metrics.PnL > c.TrainObjective || r.Metrics.PnL == c.TrainObjective && r.Point.Index < c.Point.Index {
				t.Fatalf("window %d chose point %d (%v), point %d has %v", i, c.Point.Index, c.TrainObjective, r.Point.Index, r.Metrics.PnL)
			}
		}
		s, _, _ := backtest.NewBuiltin("mm", c.Test.Params)
		alone, _, err := backtest.Run(context.Background(), []string{pmSample}, s, cfg(), backtest.RunOptions{Name: "mm", Params: c.Test.Params,
			Replay: []replayer.Option{replayer.WithWindow(w.TestFromNs, w.TestToNs)}})
		if err != nil {
			t.Fatal(err)
		}
		if alone.Summary.Digest != c.Test.Result.Summary.Digest || !reflect.DeepEqual(alone.Fills, c.Test.Result.Fills) {
			t.Fatalf("window %d: test %s, alone %s", i, c.Test.Result.Summary.Digest, alone.Summary.Digest)
		}
		carried += alone.Summary.PnL
	}
	eq := wk.Equity["mm"]
	if got := float64(eq[len(eq)-1].Equity) / 1e10; abs(got-carried) > 1e-6 {
		t.Fatalf("stitched equity ends at %v, the windows' PnL sums to %v", got, carried)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestTearsheetDeterministicAndTrue: the same runs give the same bytes;
// every figure's exact value is the JSON summary's; nothing is loaded.
func TestTearsheetDeterministicAndTrue(t *testing.T) {
	sheet := func() ([]byte, *Run) {
		pts, _ := Grid([]Axis{{"spread", []string{"0.02", "0.04"}}, {"size", []string{"5", "10"}}})
		j := &Job{Paths: []string{pmSample}, Strategies: []string{"mm"}, Axes: []string{"spread", "size"}, Points: pts, Config: cfg()}
		books := NewBookSampler()
		j.Also = append(j.Also, books)
		runs, sum, err := j.Execute(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s := &Sheet{Title: "t <script>", Datasets: j.Paths, Main: runs[3], Runs: runs, Axes: j.Axes, Replay: sum, Books: books}
		var b bytes.Buffer
		if err := s.WriteHTML(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes(), runs[3]
	}
	a, main := sheet()
	b, _ := sheet()
	if !bytes.Equal(a, b) {
		t.Fatal("two tearsheets of the same runs differ")
	}
	html := string(a)
	for _, bad := range []string{"<script", "http://", "https://", "src="} {
		if strings.Contains(strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Fatalf("tearsheet holds %q", bad)
		}
	}
	js, _ := json.Marshal(&main.Result.Summary)
	var sum map[string]any
	json.Unmarshal(js, &sum)
	for _, key := range []string{"pnl", "fees", "turnover", "fill_ratio", "max_drawdown", "sharpe", "sortino", "peak_margin", "orders", "fills"} {
		got := attr(t, html, key)
		if want := jsonText(sum[key]); got != want {
			t.Errorf("%s: tearsheet %s, summary %s", key, got, want)
		}
	}
	for _, want := range []string{"Sweep: pnl over the points", "Fills over the market", "PnL by instrument", "Data coverage", main.Result.Summary.Digest} {
		if !strings.Contains(html, want) {
			t.Errorf("tearsheet lacks %q", want)
		}
	}
}

// attr returns the data-value of the figure data-key=key.
func attr(t *testing.T, html, key string) string {
	t.Helper()
	_, rest, ok := strings.Cut(html, `data-key="`+key+`" data-value="`)
	if !ok {
		t.Fatalf("no figure %s", key)
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
