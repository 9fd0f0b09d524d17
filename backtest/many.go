package backtest

import (
	"context"
	"errors"
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
	// same order); it pays where the engines' work dwarfs the hand-off.
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
	// fills (56 bytes each, hashed after every order's final state) go to
	// a temporary file past 16 KiB per run, removed at the end. The
	// summaries are those of full runs to the last bit (the full runs
	// compute their figures the same way). A strategy sees two
	// differences: Context.Order returns nil for an order once it has been
	// told the order is done and nothing about it is in flight, and
	// Context.Fills holds only the fills reported since the last event
	// (the built-in strategies read neither).
	SummaryOnly bool
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
