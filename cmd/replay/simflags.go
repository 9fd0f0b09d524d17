package main

import (
	"io"
	"math"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/internal/cli"
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
	return cfg, nil
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
