package bench

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scaled returns a copy of r with every gated sample slowed by factor
// (times multiplied, throughputs divided).
func scaled(r *Report, factor float64) *Report {
	out := *r
	out.Scenarios = make([]Scenario, len(r.Scenarios))
	for i, s := range r.Scenarios {
		s.Samples = append([]float64(nil), s.Samples...)
		for k := range s.Samples {
			switch Direction(s.Unit) {
			case +1:
				s.Samples[k] *= factor
			case -1:
				s.Samples[k] /= factor
			}
		}
		s.Median, s.P95 = Median(s.Samples), Percentile(s.Samples, 0.95)
		out.Scenarios[i] = s
	}
	return &out
}

func readRecorded(t *testing.T, name string) *Report {
	t.Helper()
	r, err := ReadReport(filepath.Join("testdata", "reports", name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGateRecorded runs the gate on reports recorded by benchrun gate on the
// team's loaded 2-core machine (see testdata/reports/README.md): an A/A run
// (the baseline binary against itself: only noise, which must pass), and the
// baseline against a deliberately slowed build (-tags benchslow, which must
// fail), and a report from another environment (a hard error).
func TestGateRecorded(t *testing.T) {
	tests := []struct {
		name        string
		base, cur   string
		regressions bool
	}{
		{"unchanged build passes", "aa-baseline.json", "aa-current.json", false},
		{"slowed build fails", "slowed-baseline.json", "slowed-current.json", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, cur := readRecorded(t, tt.base), readRecorded(t, tt.cur)
			if !base.Paired || !cur.Paired || base.Count < 6 {
				t.Fatalf("recorded reports are not paired gate rounds: %v %v %d", base.Paired, cur.Paired, base.Count)
			}
			res, err := Gate(base, cur, GateConfig{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range res.Comparisons {
				t.Logf("%s %s: ratio %.3f band [%.3f, %.3f] %v", c.Scenario, c.Unit, c.Ratio, c.Lo, c.Hi, c.Verdict)
			}
			if got := res.Regressions > 0; got != tt.regressions {
				t.Fatalf("regressions = %d, want any: %v", res.Regressions, tt.regressions)
			}
			if len(res.Comparisons) != 10 {
				t.Fatalf("%d comparisons, want one per scenario (10)", len(res.Comparisons))
			}
		})
	}
	t.Run("other environment is an error", func(t *testing.T) {
		base, other := readRecorded(t, "aa-baseline.json"), readRecorded(t, "otherenv-current.json")
		if _, err := Gate(base, other, GateConfig{}); !errors.Is(err, ErrEnvMismatch) {
			t.Fatalf("Gate error = %v, want ErrEnvMismatch", err)
		}
		if _, err := Gate(base, other, GateConfig{ForceEnv: true}); err != nil {
			t.Fatalf("forced Gate error = %v", err)
		}
	})
}

func TestGateSynthetic(t *testing.T) {
	base := &Report{Version: ReportVersion, Suite: "s", Env: Env{Fingerprint: "e"}}
	// Noisy samples: ±8% around 100 ns/frame and 500 MB/s, ten runs.
	noise := []float64{1.00, 1.08, 0.95, 1.02, 0.92, 1.05, 0.99, 1.07, 0.94, 1.01}
	var ns, mbs []float64
	for _, f := range noise {
		ns = append(ns, 100*f)
		mbs = append(mbs, 500/f)
	}
	base.Scenarios = []Scenario{
		{Name: "Decode", Unit: "ns/frame", Samples: ns},
		{Name: "Decode", Unit: "MB/s", Samples: mbs},
		{Name: "Decode", Unit: "allocs/op", Samples: []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	// A second scenario reports only a throughput.
	base.Scenarios = append(base.Scenarios, Scenario{Name: "Replay", Unit: "frames/s", Samples: mbs})
	tests := []struct {
		name     string
		cur      *Report
		verdicts []Verdict // for Decode ns/frame and Replay frames/s
	}{
		{"identical", scaled(base, 1), []Verdict{Unchanged, Unchanged}},
		{"5% slower is under the threshold", scaled(base, 1.05), []Verdict{Unchanged, Unchanged}},
		{"30% slower", scaled(base, 1.30), []Verdict{Regression, Regression}},
		{"30% faster", scaled(base, 1/1.30), []Verdict{Improvement, Improvement}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Gate(base, tt.cur, GateConfig{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Verdict{}
			for _, c := range res.Comparisons {
				got[c.Scenario+" "+c.Unit] = c.Verdict
			}
			if len(got) != 2 {
				t.Fatalf("judged %v, want Decode ns/frame and Replay frames/s only", got)
			}
			if got["Decode ns/frame"] != tt.verdicts[0] || got["Replay frames/s"] != tt.verdicts[1] {
				t.Fatalf("verdicts %v, want %v", got, tt.verdicts)
			}
		})
	}

	t.Run("a noisy slowdown whose band straddles the threshold passes", func(t *testing.T) {
		cur := scaled(base, 1)
		// Median ratio 1.2, but two rounds show no slowdown at all.
		f := []float64{1.2, 1.2, 1.0, 1.3, 1.2, 1.0, 1.25, 1.2, 1.3, 1.15}
		for k := range cur.Scenarios[0].Samples {
			cur.Scenarios[0].Samples[k] = base.Scenarios[0].Samples[k] * f[k]
		}
		res, _ := Gate(base, cur, GateConfig{})
		c := res.Comparisons[0]
		if c.Unit != "ns/frame" || c.Verdict != Unchanged || math.Abs(c.Ratio-1.2) > 1e-9 {
			t.Fatalf("got %+v, want unchanged with ratio 1.2", c)
		}
	})
	t.Run("too few runs never fail", func(t *testing.T) {
		// Five rounds all 9× slower: a band of five cannot reach 95%.
		b := &Report{Env: base.Env, Suite: base.Suite, Scenarios: []Scenario{{Name: "X", Unit: "ns/op", Samples: []float64{1, 1, 1, 1, 1}}}}
		c := &Report{Env: base.Env, Suite: base.Suite, Scenarios: []Scenario{{Name: "X", Unit: "ns/op", Samples: []float64{9, 9, 9, 9, 9}}}}
		res, _ := Gate(b, c, GateConfig{})
		if res.Regressions != 0 || res.Comparisons[0].Verdict != TooFewRuns {
			t.Fatalf("got %+v", res.Comparisons[0])
		}
	})
	t.Run("suite mismatch", func(t *testing.T) {
		cur := scaled(base, 1)
		cur.Suite = "other"
		if _, err := Gate(base, cur, GateConfig{}); !errors.Is(err, ErrSuiteMismatch) {
			t.Fatalf("error = %v, want ErrSuiteMismatch", err)
		}
		if _, err := Gate(base, cur, GateConfig{ForceSuite: true}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing scenario is listed", func(t *testing.T) {
		cur := scaled(base, 1)
		cur.Scenarios = cur.Scenarios[:3]
		res, _ := Gate(base, cur, GateConfig{})
		if len(res.Missing) != 1 || res.Missing[0] != "Replay frames/s" {
			t.Fatalf("Missing = %v", res.Missing)
		}
	})
	t.Run("gated unit", func(t *testing.T) {
		for _, c := range []struct {
			units []string
			want  string
		}{
			{[]string{"ns/op", "MB/s", "ns/frame", "ns/level", "allocs/op"}, "ns/frame"},
			{[]string{"ns/op", "ns/level"}, "ns/level"},
			{[]string{"ns/op", "read-p99-ns", "write-ns/frame"}, "ns/op"},
			{[]string{"frames/s", "MB/s"}, "MB/s"},
			{[]string{"B/op", "peak-rss-MB"}, ""},
		} {
			if got := GatedUnit(c.units); got != c.want {
				t.Errorf("GatedUnit(%v) = %q, want %q", c.units, got, c.want)
			}
		}
	})
}

func TestMedianBand(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6}
	// n=6: the full range covers 1 − 2/64 ≈ 96.9%.
	if lo, hi, ok := medianBand(xs, 0.95); lo != 1 || hi != 6 || !ok {
		t.Fatalf("n=6 band = [%v, %v] %v, want the full range [1, 6]", lo, hi, ok)
	}
	// n=5: the full range covers only 1 − 2/32 ≈ 93.8%.
	if _, _, ok := medianBand(xs[:5], 0.95); ok {
		t.Fatal("n=5 band accepted at 95%")
	}
	if _, _, ok := medianBand(xs[:5], 0.90); !ok {
		t.Fatal("n=5 band refused at 90%")
	}
	ys := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	// n=10: cutting one each end covers 1 − 2·11/1024 ≈ 97.9%; two, 89%.
	if lo, hi, ok := medianBand(ys, 0.95); lo != 2 || hi != 9 || !ok {
		t.Fatalf("n=10 band = [%v, %v], want [2, 9]", lo, hi)
	}
	if m := Median(ys); m != 5.5 {
		t.Fatalf("Median = %v", m)
	}
	if p := Percentile(ys, 0.95); p != 10 {
		t.Fatalf("p95 = %v", p)
	}
	if !math.IsNaN(Median(nil)) {
		t.Fatal("Median(nil) is not NaN")
	}
}

func TestParseOutput(t *testing.T) {
	const out = `goos: linux
goarch: amd64
pkg: github.com/tapedeck/tapedeck/bench
cpu: AMD EPYC
BenchmarkDecode/venue=polymarket/event=book-2   	   10000	      1234 ns/op	 850.50 MB/s	      1234 ns/frame	       0 B/op	       0 allocs/op
BenchmarkDecode/venue=polymarket/event=book-2   	   10000	      1200 ns/op	 870.00 MB/s	      1200 ns/frame	       0 B/op	       0 allocs/op
BenchmarkTop-2
BenchmarkTop-2	 5000000	        18.5 ns/op
--- BENCH: BenchmarkX
PASS
ok  	github.com/tapedeck/tapedeck/bench	3.2s
`
	got, err := ParseOutput(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	d := got["Decode/venue=polymarket/event=book"]
	if len(d["ns/frame"]) != 2 || d["ns/frame"][1] != 1200 || d["MB/s"][0] != 850.5 || len(d["allocs/op"]) != 2 {
		t.Fatalf("Decode = %v", d)
	}
	if v := got["Top"]["ns/op"]; len(v) != 1 || v[0] != 18.5 {
		t.Fatalf("Top = %v", got["Top"])
	}
	if len(got) != 2 {
		t.Fatalf("parsed %d scenarios, want 2: %v", len(got), got)
	}
	if _, err := ParseOutput(strings.NewReader("BenchmarkBad-2 10 5 ns/op 7\n")); err == nil {
		t.Fatal("odd pairs: no error")
	}
	r := NewReport(got)
	if r.Scenarios[0].Name != "Decode/venue=polymarket/event=book" || r.Lookup("Top", "ns/op").Median != 18.5 {
		t.Fatalf("report = %+v", r.Scenarios)
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil || len(back.Scenarios) != len(r.Scenarios) {
		t.Fatalf("ReadReport = %v, %v", back, err)
	}
	if err := os.WriteFile(path, []byte(`{"version":99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReport(path); !errors.Is(err, ErrReport) {
		t.Fatalf("ReadReport of version 99: %v", err)
	}
}

func TestEnv(t *testing.T) {
	e := CurrentEnv()
	if e.Cores < 1 || e.GOOS == "" || e.GoVersion == "" || len(e.Fingerprint) != 64 {
		t.Fatalf("CurrentEnv = %+v", e)
	}
	f := e
	f.GoVersion = "go0"
	if f.fingerprint() == e.Fingerprint {
		t.Fatal("Go version is not part of the environment fingerprint")
	}
	f = e
	f.GOMAXPROCS++
	if f.fingerprint() != e.Fingerprint {
		t.Fatal("GOMAXPROCS changed the environment fingerprint")
	}
}

func TestWriteResults(t *testing.T) {
	r := &Report{Version: ReportVersion, Count: 5, Benchtime: "200ms", Env: CurrentEnv(), Suite: "abc",
		Scenarios: []Scenario{
			{Name: "Peer/cpp/book_100_levels", Unit: "ns/frame", Median: 5740, P95: 6000, Runs: 5},
			{Name: "Peer/hl/l2book_20x2", Unit: "ns/frame", Median: 1625, P95: 1700, Runs: 5},
			{Name: "Replay/venue=polymarket", Unit: "frames/s", Median: 1_400_000, P95: 1_500_000, Runs: 5},
			{Name: "Replay/venue=polymarket", Unit: "ns/op", Median: 9e7, Runs: 5},
			{Name: "Replay/venue=polymarket", Unit: "ns/frame", Median: 714, P95: 750, Runs: 5},
		}}
	var b strings.Builder
	sdk := &SDKResult{SDK: "@nktkas/hyperliquid", SDKVersion: "0.33.3", Node: "v20", Dispatch: 14700, Levels: 21900}
	if err := WriteResults(&b, r, sdk, "make bench-results"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| `Peer/cpp/book_100_levels` | 5.74 µs | 6.00 µs | polymarket-cpp-client | 28.70 µs |",
		"| 5.0× faster |",
		"| `Peer/polyfill/levels=1` | not run |",
		"| SDK dispatch | 14.70 µs | 9.0× faster |",
		"2.0× faster", // 1.4 M vs Tardis Machine's 700 k frames/s
		"| `Replay/venue=polymarket` | 714 ns/frame | 750 ns | - | - | frames/s 1400000 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
	}
	if strings.Contains(out, "ns/op") {
		t.Error("ns/op shown for a scenario with a per-frame time")
	}
}
