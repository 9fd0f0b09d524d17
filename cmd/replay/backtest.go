package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
)

// backtestOptions are the flags of "replay backtest", as given.
type backtestOptions struct {
	simFlags
	Datasets                                     []string
	Strategy, LatencyCSV, From, To, Out, Resolve string
	Force                                        bool
	Shard, Compression, Rebate                   string
	Params, Fees, FeeCats, Instruments           []string
	BatchRows                                    int
	JSON, UseBackfill, NoExchTime, Hash          bool
	TradesAtPrice                                bool
	research                                     researchFlags
	Stdout, Stderr                               io.Writer
}

func newBacktestCmd() *cobra.Command {
	o := &backtestOptions{}
	cmd := &cobra.Command{
		Use:   "backtest DATASET...",
		Short: "Run a trading strategy against the replayed market with a simulated exchange",
		Long: `Replay datasets through the same decoders and books as "replay run" and run a
strategy against a simulated exchange with each venue's own rules (Polymarket
GTC/GTD/FOK/FAK, post-only, tick and minimum size, YES/NO as one mirrored book,
settlement at 1/0; Hyperliquid GTC/IOC/ALO, reduce-only, tick and lot rules,
funding), queue position on L2 data, latency and fees.

Built-in strategies: noop, mm (passive quoting with inventory skew) and
complement (Polymarket YES/NO complement taker); --param name=value sets their
parameters (unknown names and bad values are refused before the run).

Queue models (--queue): risk-averse (advances only on trades at the level),
power:N (hftbacktest's probabilistic model with f(x)=x^N) and log (f(x)=ln(1+x)).
Latency: --entry-latency, --ack-latency, --cancel-latency, or --latency-csv with
measured round trips. Fees: Polymarket's taker fee = shares × rate × p × (1−p),
with each market's rate, in this order: --fee TOKEN=rate, --fee CONDITION_ID=rate,
--fee-category CATEGORY=rate (the market's recorded Gamma feeType: crypto,
sports, politics…), the rate the recording states from the moment it is
received (the market's Gamma listing, feesEnabled and feeSchedule.rate; else
the fee_rate_bps of its trades, in basis points), then --fee-rate; the summary
says which rate each market's fills used and where it came from (fee rate
rows; "fee_rates" with --json). --maker-rebate SHARE gives makers that share
of the taker fee their fill made, --maker-rebate recorded the market's
recorded rebateRate (Gamma feeSchedule). --fee-tier N
(Hyperliquid's VIP tiers).

--out DIR writes orders, fills, positions (over time), equity and markouts
through the export writers of "replay export": --format csv (the default: exact
decimal text, times in ns), parquet or arrow (decimal128 and timestamp[ns] in UTC),
with --compression and --batch-rows as there. The summary ends with a digest:
the same data, strategy and parameters give the same digest and byte-identical
tables.

An --fee or --resolve id the data never names is refused (exit 2), as is an
--out inside an input dataset, or over an earlier run's tables without --force.
` + researchHelp,
		Example: `  # The passive market maker on the Polymarket sample
  $ replay backtest datasets/samples/polymarket --strategy mm --param spread=0.02 --out bt/

  # Complement taker, JSON summary; 2% taker fee on markets whose recording
  # (Gamma listing, trades' fee_rate_bps) states no rate, 7% on crypto ones
  $ replay backtest datasets/samples/polymarket --strategy complement --fee-rate 0.02 \
      --fee-category crypto=0.07 --json
` + researchExamples,
		Args: cli.AtLeastOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Datasets, o.Stdout, o.Stderr = args, cmd.OutOrStdout(), cmd.ErrOrStderr()
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer cancel()
			return runBacktest(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Strategy, "strategy", "mm", "built-in strategy: noop, mm, complement; several, comma-separated, run side by side on one replay, each with its own account")
	f.StringArrayVar(&o.Params, "param", nil, "strategy parameter `name=value` (repeatable; STRATEGY.name=value for one of several strategies)")
	f.StringArrayVar(&o.Instruments, "instrument", nil, "the strategy sees only this instrument: token id or condition id (Polymarket), coin (Hyperliquid); repeatable")
	f.StringVar(&o.Queue, "queue", "risk-averse", "queue position model: risk-averse, power:N, log")
	f.DurationVar(&o.Entry, "entry-latency", 0, "order entry latency (local submit → exchange)")
	f.DurationVar(&o.Ack, "ack-latency", 0, "acknowledgement latency (exchange → strategy)")
	f.DurationVar(&o.CancelLat, "cancel-latency", 0, "cancel latency (local → exchange)")
	f.StringVar(&o.LatencyCSV, "latency-csv", "", "measured round trips, one a line (ns or durations): entry = ack = cancel = half of each, in order")
	f.Float64Var(&o.Cash, "cash", 1000, "starting cash in dollars")
	f.Float64Var(&o.FeeRate, "fee-rate", 0, "default taker fee rate of outcome-token venues (Polymarket: fee = shares × rate × p × (1 − p)), for markets the flags below and the recording give none")
	f.StringArrayVar(&o.Fees, "fee", nil, "Polymarket fee rate of one market or token `ID=rate`, over the recorded rate (repeatable)")
	f.StringArrayVar(&o.FeeCats, "fee-category", nil, "Polymarket fee rate of a fee category `NAME=rate` (the market's recorded Gamma feeType, e.g. crypto or crypto_fees), over the recorded rate (repeatable)")
	f.StringVar(&o.Rebate, "maker-rebate", "0", "Polymarket maker rebate: share of the taker fee a maker fill receives (0..1), or `recorded`: the market's recorded listing's rebateRate (0 where none)")
	f.IntVar(&o.FeeTier, "fee-tier", 0, "tier of tiered fee schedules (Hyperliquid perps VIP 0..6)")
	f.StringVar(&o.Resolve, "resolve", "", "settle Polymarket tokens at the end: `TOKEN=1|0,…` (a recorded market_resolved wins)")
	f.BoolVar(&o.UseBackfill, "use-backfill", false, "let resting orders fill against backfilled trades (from before the subscription)")
	f.BoolVar(&o.AllowShort, "allow-short", false, "allow Polymarket SELLs beyond the shares held")
	f.BoolVar(&o.NoExchTime, "ignore-exchange-time", false, "order arrival by receive times only (default: also the events' exchange timestamps, i.e. the recorded feed latency)")
	f.BoolVar(&o.Hash, "hash-check", true, "verify venue book hashes where checkable")
	f.StringVar(&o.Shard, "shard", "", "trade only shard `K/N` of the markets (split by market id, or by instrument where a venue has no markets; 1/N … N/N together trade them all; every shard still follows every book); with --sweep or --sweep-file, run only shard K/N of the points instead")
	f.StringVar(&o.From, "from", "", "start of the window (`T`: "+cli.TimeSyntax+")")
	f.StringVar(&o.To, "to", "", "end of the window, exclusive (`T`, as --from)")
	f.StringVar(&o.Out, "out", "", "write orders, fills, positions, equity and markouts into `DIR` (see --format); a sweep writes its table there and each run's tables in a directory of its own; never inside an input dataset")
	f.BoolVarP(&o.Force, "force", "f", false, "overwrite the tables of an earlier run in --out")
	f.BoolVar(&o.TradesAtPrice, "trades-at-price", false, "a trade printed at a resting order's price fills it up to the trade's size, whatever the queue ahead (optimistic; default: the queue model, fills only beyond the queue ahead or when trades or the book go through the price)")
	f.StringVar(&o.Format, "format", "csv", "format of the --out tables: csv (exact decimals, ns), parquet or arrow (decimal128, timestamp[ns, UTC])")
	f.StringVar(&o.Compression, "compression", "", "--out parquet or arrow: zstd, snappy (Parquet only) or none; default snappy for Parquet, none for Arrow")
	f.IntVar(&o.BatchRows, "batch-rows", 0, "--out parquet or arrow: rows per row group or record batch (default: about 24 MiB of rows)")
	f.BoolVar(&o.JSON, "json", false, "print the summary as JSON")
	o.research.add(f)
	cmd.AddCommand(newBacktestMergeCmd())
	return cmd
}

// runBacktest runs "replay backtest": one strategy on one replay, or a
// research run (several strategies, a sweep, a walk-forward) on one replay.
func runBacktest(ctx context.Context, o *backtestOptions) error {
	cfg, given, err := backtestConfig(o)
	if err != nil {
		return err
	}
	outFormat, outOpts, err := backtestOutput(o.Format, o.Compression, o.BatchRows)
	if err != nil {
		return err
	}
	if err := outsideInputs("backtest", o.Out, o.Datasets); err != nil {
		return err
	}
	if err := backtestOutFree(o.Out, o.Force); err != nil {
		return err
	}
	fromNs, toNs, err := parseWindow(o.Datasets, o.From, o.To)
	if err != nil {
		return err
	}
	replay := []replayer.Option{replayer.WithWindow(fromNs, toNs), replayer.WithHashCheck(o.Hash)}
	if o.research.active(o.Strategy) {
		return runResearch(ctx, o, cfg, given, replay, outFormat, outOpts)
	}
	strat, ps, err := backtest.NewBuiltin(o.Strategy, given)
	if err != nil {
		return cli.FlagErrorf("%v", err)
	}
	sh, err := replayer.ParseShard(o.Shard)
	if err != nil {
		return cli.FlagErrorf("--shard: %v", err)
	}
	cfg.Shard = sh
	res, _, err := backtest.Run(ctx, o.Datasets, strat, cfg, backtest.RunOptions{Name: o.Strategy, Params: ps, Replay: replay})
	if err != nil {
		return backtestError(err)
	}
	if err := checkIDs(cfg, res); err != nil {
		return err
	}
	if _, _, missing := cfg.Unnamed(res); missing != nil {
		return noMatch("backtest", missing, "nothing written")
	}
	if o.Out != "" {
		if err := res.WriteTables(o.Out, outFormat, sourced(outOpts, o.Datasets)); err != nil {
			return err
		}
	}
	return printBacktest(o.Stdout, o.Stderr, res, o.JSON)
}

// backtestError makes damaged data a problem of the input (exit 3), as for
// every replaying verb, not a failure of the command.
func backtestError(err error) error {
	var ce *datasets.CorruptionError
	if errors.Is(err, replayer.ErrDamaged) || errors.As(err, &ce) {
		return damagedError("backtest", nil, err)
	}
	return err
}

func printBacktest(w, errw io.Writer, res *backtest.Result, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(&res.Summary); err != nil {
			return err
		}
	} else {
		res.Summary.WriteTable(w)
	}
	for _, r := range res.Rejections() {
		fmt.Fprintf(errw, "rejected %d× %s\n", r.Orders, r.Reason)
	}
	for _, e := range res.Errors {
		fmt.Fprintln(errw, e)
	}
	return nil
}

// checkIDs refuses --fee and --resolve ids that the data of none of the
// results named: they would silently change nothing.
func checkIDs(cfg backtest.Config, results ...*backtest.Result) error {
	fees, resolutions, _ := cfg.Unnamed(results...)
	if fees != nil {
		return cli.FlagErrorf("--fee %s: no such instrument or market in the data", fees[0])
	}
	if resolutions != nil {
		return cli.FlagErrorf("--resolve %s: no such instrument in the data", resolutions[0])
	}
	return nil
}

// backtestOutFree refuses, without force, an --out directory that already
// holds a table of an earlier run (or a sweep's or walk-forward's).
func backtestOutFree(out string, force bool) error {
	if out == "" || force {
		return nil
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		return nil // absent (or unreadable: writing will say)
	}
	for _, e := range ents {
		base, _, _ := strings.Cut(e.Name(), ".")
		if slices.Contains(backtest.Tables, base) || slices.Contains([]string{"sweep", "walk", "runs", "windows"}, base) {
			return cli.FlagErrorf("backtest: %s exists, from an earlier run (use -f/--force to overwrite it)", filepath.Join(out, e.Name()))
		}
	}
	return nil
}
