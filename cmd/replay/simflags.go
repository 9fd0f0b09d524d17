package main

import (
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// simFlags are the simulated exchange's flags that "replay backtest" and
// "replay serve --trading" share, each verb registering them under its own
// help (serve's queue model is --queue-model, its latencies and fees apply
// to every account).
type simFlags struct {
	Queue, Format         string
	Entry, Ack, CancelLat time.Duration
	Cash, FeeRate         float64
	FeeTier               int
	AllowShort            bool
}

// config checks the flags and makes the simulator's configuration, every
// error a usage error naming the flag (queueFlag: the queue model's). more,
// if not nil, sets the verb's own fields before the cash is checked and the
// whole validated, in the order the verbs have always reported bad flags.
func (s *simFlags) config(queueFlag string, more func(*backtest.Config) error) (backtest.Config, error) {
	qm, err := backtest.ParseQueueModel(s.Queue)
	if err != nil {
		return backtest.Config{}, cli.FlagErrorf("%s: %v", queueFlag, err)
	}
	if s.Entry < 0 || s.Ack < 0 || s.CancelLat < 0 {
		return backtest.Config{}, cli.FlagErrorf("latencies must not be negative")
	}
	cfg := backtest.Config{Queue: qm, FeeRate: s.FeeRate, FeeTier: s.FeeTier, AllowShort: s.AllowShort,
		Latency: backtest.ConstantLatency{EntryNs: int64(s.Entry), AckNs: int64(s.Ack), CancelNs: int64(s.CancelLat)}}
	if more != nil {
		if err := more(&cfg); err != nil {
			return backtest.Config{}, err
		}
	}
	if math.IsNaN(s.Cash) || s.Cash < 0 || s.Cash > 1e8 {
		return backtest.Config{}, cli.FlagErrorf("--cash %v: want 0..1e8 dollars", s.Cash)
	}
	cfg.Cash = int64(math.Round(s.Cash * 1e10))
	if err := cfg.Validate(); err != nil {
		return backtest.Config{}, cli.FlagErrorf("%v", err)
	}
	if !feeTierListed(cfg.FeeTier) {
		return backtest.Config{}, cli.FlagErrorf("--fee-tier %d: no venue's schedule has it", cfg.FeeTier)
	}
	return cfg, nil
}

// backtestConfig checks the flags that make the simulated exchange's
// configuration and the strategies' parameters.
func backtestConfig(o *backtestOptions) (backtest.Config, backtest.Params, error) {
	given := backtest.Params{}
	for _, p := range o.Params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return backtest.Config{}, nil, cli.FlagErrorf("--param %q: want name=value", p)
		}
		given[k] = v
	}
	cfg, err := o.simFlags.config("--queue", o.fill)
	if err != nil {
		return backtest.Config{}, nil, err
	}
	return cfg, given, nil
}

// fill sets the simulator's fields that only "replay backtest" has.
func (o *backtestOptions) fill(cfg *backtest.Config) error {
	if o.LatencyCSV != "" {
		lat, err := backtest.ReadLatencyFile(o.LatencyCSV)
		if err != nil {
			return cli.FlagErrorf("--latency-csv: %v", err)
		}
		cfg.Latency = lat
	}
	cfg.FeeRates, cfg.FeeCategories = map[string]float64{}, map[string]float64{}
	for _, f := range o.Fees {
		k, v, ok := strings.Cut(f, "=")
		r, perr := strconv.ParseFloat(v, 64)
		if !ok || k == "" || perr != nil || !(r >= 0 && r <= 1) {
			return cli.FlagErrorf("--fee %q: want MARKET_OR_TOKEN=rate with rate in [0, 1]", f)
		}
		cfg.FeeRates[k] = r
	}
	for _, f := range o.FeeCats {
		k, v, ok := strings.Cut(f, "=")
		r, perr := strconv.ParseFloat(v, 64)
		if !ok || strings.TrimSpace(k) == "" || perr != nil || !(r >= 0 && r <= 1) {
			return cli.FlagErrorf("--fee-category %q: want CATEGORY=rate with rate in [0, 1]", f)
		}
		cfg.FeeCategories[k] = r
	}
	cfg.RecordedRebates = o.Rebate == "recorded"
	if !cfg.RecordedRebates {
		r, perr := strconv.ParseFloat(o.Rebate, 64)
		if perr != nil || !(r >= 0 && r <= 1) {
			return cli.FlagErrorf("--maker-rebate %q: want a share in [0, 1] or recorded", o.Rebate)
		}
		cfg.MakerRebateShare = r
	}
	cfg.UseBackfill, cfg.TradesAtPrice, cfg.IgnoreExchangeTime, cfg.Instruments = o.UseBackfill, o.TradesAtPrice, o.NoExchTime, o.Instruments
	if o.Resolve != "" {
		cfg.Resolutions = map[string]bool{}
		for _, r := range strings.Split(o.Resolve, ",") {
			k, v, ok := strings.Cut(r, "=")
			if !ok || (v != "1" && v != "0") {
				return cli.FlagErrorf("--resolve %q: want TOKEN=1 or TOKEN=0", r)
			}
			cfg.Resolutions[k] = v == "1"
		}
	}
	return nil
}

// feeTierListed reports whether some venue's fee schedule has tier n (0
// always: the lowest).
func feeTierListed(n int) bool {
	for _, d := range registry.All() {
		if t := d.Capabilities().Trading; t != nil && n < len(t.FeeTiers) {
			return true
		}
	}
	return n == 0
}

// backtestOutput checks the --out table flags: the format and the writer
// options, refused before the run.
func backtestOutput(format, compression string, batchRows int) (columnar.Format, columnar.Options, error) {
	var opts columnar.Options
	f, err := columnar.ParseFormat(format)
	if err != nil {
		return 0, opts, cli.FlagErrorf("--format %q: want csv, parquet or arrow", format)
	}
	if compression != "" {
		c, err := columnar.ParseCompression(compression)
		if err != nil {
			return 0, opts, cli.FlagErrorf("--compression: %v", err)
		}
		if f == columnar.CSV {
			return 0, opts, cli.FlagErrorf("--compression applies to --format parquet or arrow, not csv")
		}
		opts.Compression = c
	}
	if batchRows != 0 {
		if f == columnar.CSV {
			return 0, opts, cli.FlagErrorf("--batch-rows applies to --format parquet or arrow, not csv")
		}
		opts.BatchRows = batchRows
	}
	// Checked here, against an empty table, so that a bad combination
	// (Arrow with snappy, too many rows a batch) stops before the run.
	tt, err := columnar.NewTypedTable(io.Discard, columnar.TypedSchema{Name: "check",
		Columns: []columnar.Column{{Name: "x", Type: columnar.Int64}}}, f, opts)
	if err != nil {
		return 0, opts, cli.FlagErrorf("--format %s: %v", format, err)
	}
	return f, opts, tt.Close()
}

// sourced is opts recording the source datasets in the tables' metadata.
func sourced(opts columnar.Options, datasets []string) columnar.Options {
	opts.Datasets = datasets
	return opts
}
