// Package research runs strategies many times over one replay: parameter
// sweeps (a grid or an explicit list of points), several strategies side by
// side, walk-forward validation, and the tables and tearsheet that compare
// them.
//
// A sweep decodes the market once: backtest.RunMany drives one simulated
// exchange per (point, strategy) from a single replay, so N points cost one
// decode plus N strategy and matching passes, and each run's fills and
// digest are exactly those of a separate `replay backtest` with the same
// parameters. The runs never trade with each other: each has its own
// account, orders, queue estimates and latencies, and meets the recorded
// market only, as if it were alone (NautilusTrader's BacktestNode runs its
// configurations the same way, one full replay each). Job.Workers steps the
// runs on more goroutines in lockstep; on 2 cores that does not reliably
// pay (backtest.DefaultWorkers).
//
// A sweep split over jobs (Job.Shard, K/N: the points whose index is K−1
// modulo N) writes one sweep table a job (WriteTable: CSV, Parquet or Arrow
// IPC, the Parquet and Arrow tables labelled with MetaShard); Merge reads
// the jobs' tables back, in any of the three formats (one per merge), and
// writes through the same writer the table the unsharded sweep writes,
// byte for byte, without MetaShard.
package research

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
)

// Job is one research run over the same datasets.
type Job struct {
	Paths []string
	// Strategies are built-in strategy names (backtest.Builtins); each
	// point runs every one of them, each with its own account.
	Strategies []string
	// Params are the fixed parameters: NAME=value for every strategy that
	// has NAME, STRATEGY.NAME=value for one.
	Params backtest.Params
	// Axes name the swept parameters, in the results' column order; Points
	// their values (Grid or ReadGrid). No points: one run of each strategy.
	Axes   []string
	Points []Point
	// Config is every run's account and models (each run gets a copy).
	Config backtest.Config
	// Replay are the replay's options (window, hash checks).
	Replay []replayer.Option
	// Shard keeps the points whose Index % N == K−1 (the whole sweep when
	// not set): N jobs given 1/N … N/N run every point once between them.
	Shard replayer.Shard
	// Workers steps the runs on this many goroutines (backtest.ManyOptions;
	// 0 is 1). backtest.DefaultWorkers is what to use when not told.
	Workers int
	// Started, when set, receives the replayer before it runs.
	Started func(rp *replayer.Replayer)
	// Also are further subscribers of the replay (a tearsheet's sampler).
	Also []feed.Subscriber
	// SummaryOnly runs every point without its series, orders and fills
	// (backtest.ManyOptions.SummaryOnly): the Metrics and the Summary are
	// the same, and what the sweep holds per point, while it runs and
	// after, does not grow with the recording's length. For a sweep with
	// no tables to write and no tearsheet.
	SummaryOnly bool
}

// Run is one (point, strategy) of a job and its outcome.
type Run struct {
	Point    Point
	Strategy string
	Params   backtest.Params // every parameter the strategy ran with
	Result   *backtest.Result
	Metrics  Metrics
}

// Plan resolves the job into the runs of its shard, in order (points, then
// strategies in the order given), each with its strategy built: unknown
// strategies, parameters no strategy has and bad values are refused before
// any data is read.
func (j *Job) Plan() ([]*Run, []backtest.Spec, error) {
	if len(j.Strategies) == 0 {
		return nil, nil, fmt.Errorf("research: no strategy")
	}
	seen := map[string]bool{}
	for _, s := range j.Strategies {
		if backtest.Builtins[s] == nil {
			_, _, err := backtest.NewBuiltin(s, nil)
			return nil, nil, err
		}
		if seen[s] {
			return nil, nil, fmt.Errorf("research: strategy %s given twice", s)
		}
		seen[s] = true
	}
	if err := j.checkNames(); err != nil {
		return nil, nil, err
	}
	pts := j.Points
	if len(pts) == 0 {
		pts = []Point{{Index: 0, Values: map[string]string{}}}
	}
	var runs []*Run
	var specs []backtest.Spec
	for _, p := range pts {
		if !j.Shard.Whole() && p.Index%j.Shard.N != j.Shard.K-1 {
			continue
		}
		for _, s := range j.Strategies {
			given := backtest.Params{}
			apply := func(vals map[string]string) {
				for k, v := range vals {
					if name, ok := paramFor(s, k); ok {
						given[name] = v
					}
				}
			}
			apply(j.Params)
			apply(p.Values)
			strat, ps, err := backtest.NewBuiltin(s, given)
			if err != nil {
				return nil, nil, fmt.Errorf("point %d: %w", p.Index, err)
			}
			runs = append(runs, &Run{Point: p, Strategy: s, Params: ps})
			specs = append(specs, backtest.Spec{Strategy: strat, Config: j.Config, Name: s, Params: ps})
		}
	}
	return runs, specs, nil
}

// paramFor maps a given name to strategy s's parameter: NAME when s has
// it, STRATEGY.NAME when STRATEGY is s.
func paramFor(s, name string) (string, bool) {
	if st, n, ok := strings.Cut(name, "."); ok {
		return n, st == s
	}
	_, has := backtest.Builtins[s].Params[name]
	return name, has
}

// checkNames refuses a parameter no strategy of the job takes.
func (j *Job) checkNames() error {
	names := slices.Collect(maps.Keys(j.Params))
	names = append(names, j.Axes...)
	for _, n := range names {
		ok := false
		for _, s := range j.Strategies {
			if p, mine := paramFor(s, n); mine {
				_, has := backtest.Builtins[s].Params[p]
				ok = ok || has
			}
		}
		if !ok {
			return fmt.Errorf("research: no strategy of this run (%s) has a parameter %q", strings.Join(j.Strategies, ", "), n)
		}
	}
	return nil
}

// Execute runs the job: one replay, every run of its shard on it.
func (j *Job) Execute(ctx context.Context) ([]*Run, *replayer.Summary, error) {
	runs, specs, err := j.Plan()
	if err != nil {
		return nil, nil, err
	}
	if len(runs) == 0 {
		return nil, nil, fmt.Errorf("research: shard %d/%d has no points (the sweep has %d)", j.Shard.K, j.Shard.N, max(1, len(j.Points)))
	}
	res, sum, err := backtest.RunMany(ctx, j.Paths, specs, backtest.ManyOptions{Replay: j.Replay, Workers: j.Workers, Started: j.Started, Also: j.Also,
		SummaryOnly: j.SummaryOnly})
	if err != nil {
		return nil, sum, err
	}
	for i, r := range runs {
		r.Result = res[i]
		r.Metrics = Measure(res[i])
	}
	return runs, sum, nil
}
