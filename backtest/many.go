package backtest

import (
	"context"
	"errors"
	"runtime"
	"slices"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
)

// Spec is one run of RunMany: a strategy instance with its own
// configuration (account, models, fees). Name and Params label its result
// as RunOptions does for Run.
type Spec struct {
	Strategy Strategy
	Config   Config
	Name     string
	Params   map[string]string
}

// ManyOptions configures RunMany.
type ManyOptions struct {
	// Replay options, as RunOptions.Replay (window, hash checks, …).
	Replay []replayer.Option
	// Workers is how many goroutines step the engines through each event:
	// 1 (the default) steps them all on the replay's goroutine; 2 or more
	// give each worker a fixed share of the engines and wait for all of them
	// before the next event, so the books they read never move under them.
	// Results do not depend on it (every engine sees the same events in the
	// same order). On 2 cores it does not reliably pay (DefaultWorkers).
	Workers int
	// Started, when set, is called with the replayer before it runs (to
	// follow its Position for progress, say).
	Started func(rp *replayer.Replayer)
	// Also are further subscribers of the same replay (a tearsheet's book
	// sampler, say), each given every event after the engines.
	Also []feed.Subscriber
	// SummaryOnly keeps, for each run, what its Summary needs and no more:
	// the equity curve, the positions, the markouts, the orders and the
	// fills are folded into the summary's figures and digest as the run
	// goes instead of kept, and each Result holds its Summary, Errors,
	// Scales and Markets only (no Orders, Fills, Equity, Positions or
	// Markouts: there are no tables to write). What a run holds, while it
	// runs and after, grows with its open orders and the reports in
	// flight, not with the recording's length; the digest's records of the
	// fills (56 bytes each, hashed after every order's final state; kept
	// as their differences from the previous fill's, a few bytes) go to a
	// temporary file past 16 KiB per run, removed at the end. The
	// summaries are those of full runs to the last bit (the full runs
	// compute their figures the same way). A strategy sees two
	// differences: Context.Order returns nil for an order once it has been
	// told the order is done and nothing about it is in flight, and
	// Context.Fills holds only the fills reported since the last event
	// (the built-in strategies read neither).
	SummaryOnly bool
}

// DefaultWorkers is the ManyOptions.Workers a caller that was told
// nothing (replay backtest without --workers) uses for runs engines: 2
// when there are 8 runs or more and GOMAXPROCS is 3 or more, 1 otherwise.
//
// A second worker steps its share of the engines of every event beside
// the replay's goroutine, and each waits for the other before the next
// event (the books move with it), some 17,000 times on the shipped
// Polymarket sample. With 2 cores the two goroutines share them with the
// replay's read-ahead goroutine (it decompresses and checks the next
// blocks), the collector's mark worker and whatever else the host runs, so
// at many hand-offs one side waits for a core. Measured on a 2-core host
// with a 20-point mm sweep of that sample: nearly idle, 2 workers took
// about twice the CPU and 1.8 times the wall time of 1; loaded by other
// processes, up to 30% more CPU and anywhere from half to more than the
// wall time of 1. Neither makes a default. A third core leaves the
// replay's own goroutines one of their own; that the second worker then
// pays is expected, not measured here.
func DefaultWorkers(runs int) int {
	if runs >= 8 && runtime.GOMAXPROCS(0) >= 3 {
		return 2
	}
	return 1
}

// RunMany replays paths once and runs every spec's strategy on its own
// simulated exchange: one decode, one set of books, len(specs) engines.
// Each engine sees exactly the events, books and clocks a Run of its spec
// alone sees, so results[i] equals Run(ctx, paths, specs[i]…) field for
// field (same fills, same digest). The engines never trade with each other:
// each meets the recorded market only. The replay summary is shared.
func RunMany(ctx context.Context, paths []string, specs []Spec, mo ManyOptions) ([]*Result, *replayer.Summary, error) {
	if len(specs) == 0 {
		return nil, nil, errors.New("backtest: RunMany with no runs")
	}
	engines := make([]*Engine, len(specs))
	for i, sp := range specs {
		if err := sp.Config.Validate(); err != nil {
			return nil, nil, err
		}
		engines[i] = NewEngine(sp.Strategy, sp.Config)
		engines[i].summaryOnly = mo.SummaryOnly
	}
	// What REST bodies before a window state holds in it for every engine,
	// as in Run.
	warm := func(ven string, rec *datasets.Record) {
		l := &listing{body: rec.Payload}
		for _, e := range engines {
			e.listing = l
			e.warmupREST(ven, rec)
		}
	}
	opts := append(slices.Clone(mo.Replay), replayer.WithWarmupREST(warm))
	rp, err := replayer.New(paths, opts...)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range engines {
		if err := e.useDrivers(rp.Drivers()); err != nil {
			return nil, nil, err
		}
	}
	fan := newFanout(engines, mo.Workers)
	defer fan.close()
	rp.Subscribe(replayer.Key{}, fan)
	for _, s := range mo.Also {
		rp.Subscribe(replayer.Key{}, s)
	}
	if mo.Started != nil {
		mo.Started(rp)
	}
	sum, err := rp.Run(ctx)
	if err != nil {
		for _, e := range engines {
			e.fillLog.close()
		}
		return nil, sum, err
	}
	res := make([]*Result, len(engines))
	for i, e := range engines {
		res[i] = e.Finish()
		res[i].Summary.Strategy, res[i].Summary.Params = specs[i].Name, specs[i].Params
	}
	return res, sum, nil
}
