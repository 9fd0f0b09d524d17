package research

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
)

// ParseSpan parses a walk-forward length: a Go duration (90m, 12h) or a
// whole number of days or weeks (1d, 2w).
func ParseSpan(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		d      time.Duration
	}{{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.Atoi(n)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("%q: want a positive whole number of %s, or a duration", s, map[string]string{"d": "days", "w": "weeks"}[u.suffix])
			}
			return time.Duration(v) * u.d, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want a positive duration (90m, 12h) or days (1d)", s)
	}
	return d, nil
}

// ParseWalk parses TRAIN/TEST (1d/1d, 6h/2h).
func ParseWalk(s string) (train, test time.Duration, err error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("walk %q: want TRAIN/TEST, e.g. 1d/1d", s)
	}
	if train, err = ParseSpan(a); err == nil {
		test, err = ParseSpan(b)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("walk: %v", err)
	}
	return train, test, nil
}

// Window is one walk-forward step: every point runs on [TrainFrom,
// TrainTo), and each strategy's best point by the objective on [TestFrom,
// TestTo), the next stretch of the recording.
type Window struct {
	TrainFromNs, TrainToNs, TestFromNs, TestToNs int64
	// Chosen are the test runs, one per strategy: the point the train
	// window chose (ties go to the lowest point index), its train figure
	// and the test run's outcome.
	Chosen []*Choice
}

// Choice is one strategy's choice on a walk-forward window.
type Choice struct {
	Strategy       string
	Point          Point
	TrainObjective float64
	Test           *Run
}

// Walk is a walk-forward run's outcome.
type Walk struct {
	Objective string
	TrainNs   int64
	TestNs    int64
	Windows   []*Window
	// Equity is each strategy's out-of-sample equity, its test windows
	// stitched end to end: each window's changes from its own start, added
	// to where the previous window left off.
	Equity map[string][]backtest.EquityPoint
}

// Windows splits [startNs, endNs) into consecutive train/test windows: the
// first train window starts at startNs, each next one TEST later; a window
// whose test part would start at or after endNs is left out, and the last
// test part ends at endNs at the latest.
func Windows(startNs, endNs int64, train, test time.Duration) []Window {
	var ws []Window
	for s := startNs; s+int64(train) < endNs; s += int64(test) {
		w := Window{TrainFromNs: s, TrainToNs: s + int64(train), TestFromNs: s + int64(train)}
		w.TestToNs = min(w.TestFromNs+int64(test), endNs)
		ws = append(ws, w)
	}
	return ws
}

// Span is the recorded time range of the datasets (manifests' start and
// end, wall ns).
func Span(paths []string) (int64, int64, error) {
	var start, end int64
	for _, p := range paths {
		m, err := datasets.ReadManifest(p)
		if err != nil {
			return 0, 0, fmt.Errorf("read %s: %w", p, err)
		}
		if m.StartNs != 0 && (start == 0 || m.StartNs < start) {
			start = m.StartNs
		}
		end = max(end, m.EndNs)
	}
	if start == 0 || end <= start {
		return 0, 0, errors.New("walk: the datasets state no time range")
	}
	return start, end, nil
}

// WalkForward runs the job walk-forward: on each window every point of the
// job on the train part (one replay), then each strategy's best point by
// objective on the test part (one replay for all strategies). Books are
// exact at each part's start: the replay warms them up from the recording
// as --from does. The job's own Replay options must not set a window.
func (j *Job) WalkForward(ctx context.Context, train, test time.Duration, objective string) (*Walk, error) {
	if _, ok := (&Metrics{}).Objective(objective); !ok {
		return nil, fmt.Errorf("walk: unknown objective %q (want %s)", objective, strings.Join(Objectives, ", "))
	}
	start, end, err := Span(j.Paths)
	if err != nil {
		return nil, err
	}
	ws := Windows(start, end, train, test)
	if len(ws) == 0 {
		return nil, fmt.Errorf("walk: the recording (%s) is not longer than the train window (%s)", time.Duration(end-start), train)
	}
	if _, _, err := j.Plan(); err != nil {
		return nil, err
	}
	out := &Walk{Objective: objective, TrainNs: int64(train), TestNs: int64(test), Equity: map[string][]backtest.EquityPoint{}}
	carried := map[string]float64{}
	for i := range ws {
		w := &ws[i]
		tj := *j
		tj.Replay = append(append([]replayer.Option(nil), j.Replay...), replayer.WithWindow(w.TrainFromNs, w.TrainToNs))
		tj.SummaryOnly = true // a train window's runs are only compared
		runs, _, err := tj.Execute(ctx)
		if err != nil {
			return nil, fmt.Errorf("walk window %d train: %w", i+1, err)
		}
		best := map[string]*Run{}
		for _, r := range runs {
			v, _ := r.Metrics.Objective(objective)
			if b := best[r.Strategy]; b == nil || v > mustObjective(b, objective) {
				best[r.Strategy] = r
			}
		}
		var specs []backtest.Spec
		var chosen []*Choice
		for _, s := range j.Strategies {
			b := best[s]
			strat, ps, err := backtest.NewBuiltin(s, b.Params)
			if err != nil {
				return nil, err
			}
			specs = append(specs, backtest.Spec{Strategy: strat, Config: j.Config, Name: s, Params: ps})
			chosen = append(chosen, &Choice{Strategy: s, Point: b.Point, TrainObjective: mustObjective(b, objective),
				Test: &Run{Point: b.Point, Strategy: s, Params: ps}})
		}
		replay := append(append([]replayer.Option(nil), j.Replay...), replayer.WithWindow(w.TestFromNs, w.TestToNs))
		res, _, err := backtest.RunMany(ctx, j.Paths, specs, backtest.ManyOptions{Replay: replay, Workers: j.Workers})
		if err != nil {
			return nil, fmt.Errorf("walk window %d test: %w", i+1, err)
		}
		for k, c := range chosen {
			c.Test.Result, c.Test.Metrics = res[k], Measure(res[k])
			base := res[k].Summary.StartCash
			if _, ok := carried[c.Strategy]; !ok {
				carried[c.Strategy] = base
			}
			for _, p := range res[k].Equity {
				v := carried[c.Strategy] + float64(p.Equity)/1e10 - base
				out.Equity[c.Strategy] = append(out.Equity[c.Strategy], backtest.EquityPoint{RecvNs: p.RecvNs, Equity: fixed(v, 10), Cash: p.Cash})
			}
			carried[c.Strategy] += res[k].Summary.PnL
		}
		w.Chosen = chosen
		out.Windows = append(out.Windows, w)
	}
	return out, nil
}

func mustObjective(r *Run, name string) float64 {
	v, _ := r.Metrics.Objective(name)
	return v
}

// WindowReport is one walk-forward window and strategy as `replay backtest
// --walk --json` prints it.
type WindowReport struct {
	Window      int               `json:"window"`
	TrainFromNs int64             `json:"train_from_ns"`
	TrainToNs   int64             `json:"train_to_ns"`
	TestFromNs  int64             `json:"test_from_ns"`
	TestToNs    int64             `json:"test_to_ns"`
	Strategy    string            `json:"strategy"`
	Point       int               `json:"point"`
	Values      map[string]string `json:"values,omitempty"`
	TrainValue  float64           `json:"train_objective"`
	Test        *backtest.Summary `json:"test"`
}

// Report is the walk-forward run as `--json` prints it: its objective,
// every window's choice and test summary, each strategy's out-of-sample
// end equity.
func (wk *Walk) Report() any {
	var rows []WindowReport
	for i, w := range wk.Windows {
		for _, c := range w.Chosen {
			rows = append(rows, WindowReport{i + 1, w.TrainFromNs, w.TrainToNs, w.TestFromNs, w.TestToNs, c.Strategy,
				c.Point.Index, c.Point.Values, c.TrainObjective, &c.Test.Result.Summary})
		}
	}
	oos := map[string]float64{}
	for s, eq := range wk.Equity {
		if len(eq) > 0 {
			oos[s] = float64(eq[len(eq)-1].Equity) / 1e10
		}
	}
	return map[string]any{"objective": wk.Objective, "windows": rows, "out_of_sample_end_equity": oos}
}
