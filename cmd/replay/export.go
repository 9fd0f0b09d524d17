package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/datasets/interchange"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/export"
)

// exportOptions is what `replay export` was asked to do: the library's
// job (export.Job, validated), and where the verb reports.
type exportOptions struct {
	export.Job
	Stderr   io.Writer
	progress bool // stderr is a terminal
}

func newExportCmd(runF func(*exportOptions) error) *cobra.Command {
	opts := &exportOptions{}
	var (
		interval, from, to, compression string
		snapshots, bucketTime, compress string
		partitionBy, shard, shardBy     string
		nautPrec                        string
		levels                          int
	)
	cmd := &cobra.Command{
		Use:   "export DATASET... --table TABLE --out PATH",
		Short: "Export replayed books, trades, quotes, control events or instruments as Parquet, Arrow, CSV or Tardis CSV",
		Long: `Export replays the datasets through the books and writes one table:

  depth         wide top-N book per instrument: exchange_ts_ns, local_ts_ns, venue,
                instrument, bid_price_i, bid_size_i, ask_price_i, ask_size_i (i = 0 is
                the best; bid_count_i/ask_count_i where the venue counts orders per
                level), and the flags book_valid, after_gap, crossed, hash_checked,
                hash_ok, hash_mismatch, hash_unverifiable (the hash_* flags only where
                the venue's books carry hashes), estimated.
                A row on every book change (--every-event, the default) or the book at
                the end of every --interval bucket in which it changed.
  book_changes  one row per level change, a snapshot giving all its levels with
                is_snapshot=true (Tardis incremental_book_L2); size 0 deletes.
                --snapshots full (the default, as Tardis writes venue books) makes
                every venue snapshot a block and adds size-0 rows for the levels it
                no longer has; diff writes later snapshots as changes.
  trades        one row per trade: the venue's trade id, side (the taker's), price,
                size, backfill.
  quotes        one row per change of best bid/ask or book validity.
  events        connects, disconnects, reconnects, stalls, gaps, overloads, write
                errors and other control records, with their details.
  instruments   what the recording says about each instrument: one row per
                instrument and per change (tick size changes, with their time),
                from the REST bodies it stored (Polymarket Gamma /markets and book
                summaries, Hyperliquid meta/spotMeta) and the messages that carry
                instrument facts (tick_size_change, new_market): type, market
                (condition id), slug, name, outcome, outcome_index,
                paired_instrument, base, quote, tick_size, price_decimals,
                min_order_size, size_increment, sz_decimals, max_leverage,
                neg_risk, active, fees_enabled, fee_type, taker_fee_rate,
                fee_exponent, maker_rebate_share (Gamma feesEnabled, feeType,
                feeSchedule), source; valid_until_ns ends a row. Null where the
                recording does not say. Join it as of local_ts_ns. Instruments of
                the recording only, not the venue's whole listing; --from/--to keep
                the rows in effect in the window. No Tardis layout, no --split-by.
  raw           the recorded frames as NDJSON, Tardis raw or hftbacktest lines
                (--format ndjson|tardis|hftbacktest; one dataset).

--format hftbacktest without --table writes hftbacktest's own data: under --out
DIR, INSTRUMENT_YYYYMMDD.npz per instrument and UTC day (receive time), each an
array "data" of its event_dtype (ev, exch_ts, local_ts in ns, px, qty, ...)
ordered and flagged for its exchange and local processors: a venue snapshot
is a depth-clear event and snapshot events, level changes depth events, a loss
a depth-clear (the book is empty until the next snapshot), trades trade events
(the taker's side; backfill left out); each file after an instrument's first
opens with the book at 00:00 UTC, so a backtest can start on any day, and with
--from its first file with the book as it stood at the window start. Load it
with np.load(path)['data'] or hftbacktest's BacktestAsset().data([...]).

--format nautilus without --table writes NautilusTrader's own data catalog
(ParquetDataCatalog, as of NautilusTrader ` + export.NautilusVersion + `) under --out DIR:
data/order_book_deltas, quote_tick and trade_tick, a file per instrument
(data/KIND/ID/FIRST_LAST.parquet, its ts_init range), and each instrument's
definition (binary_option for Polymarket tokens, crypto_perpetual and
currency_pair for Hyperliquid perpetuals and spot pairs), in Nautilus's
schemas and metadata, prices and sizes as its fixed-point integers
(--nautilus-precision high, the 128-bit mode of its Linux and macOS wheels, or
standard, 64-bit). Ids are its adapters': CONDITION-TOKEN.POLYMARKET,
COIN-USD-PERP.HYPERLIQUID, BASE-QUOTE-SPOT.HYPERLIQUID. A venue snapshot is a
CLEAR and ADDs flagged F_SNAPSHOT, a level change an ADD, UPDATE or DELETE, a
loss a CLEAR (the book is empty until the next snapshot); the last delta of
each recorded message carries F_LAST. A quote is the top of the book after
each message that changed it; trades keep the venue's id, or where it is longer
than Nautilus takes (Polymarket's transaction hashes) the id Nautilus's
Polymarket adapter derives. Open it with ParquetDataCatalog(DIR); use an
L2_MBP book. Exports of other windows add to one catalog; a file overlapping
an existing one is refused.

Times are timestamp[ns, UTC] (Parquet TIMESTAMP(NANOS, UTC)). Prices and sizes
are float64 (the nearest double of the exact decimal) unless --exact asks for
decimal128 at the venue's scale; the scale and the source datasets are in the
schema metadata. --format csv has the very columns of the Parquet table (times
as integer ns, exact decimal text, instrument ids quoted; readers that guess
types still take a Polymarket token id for a number, so name it:
DuckDB read_csv('x.csv', types={'instrument': 'VARCHAR'}), Polars
read_csv('x.csv', schema_overrides={'instrument': pl.String}), symbol for
--format tardis). --format tardis
writes Tardis' layouts (book_snapshot_N, incremental_book_L2, trades, quotes)
with µs timestamps, which hftbacktest's and NautilusTrader's Tardis loaders read;
exchange_ts_ns is timestamp, local_ts_ns local_timestamp, venue exchange,
instrument symbol, size amount, bid_price_i bids[i].price. --tardis-exchange
writes another of Tardis' exchange ids (it refuses others). Tardis has no
Polymarket: hftbacktest's converter reads Polymarket book_changes as they are
(with --snapshots diff on Hyperliquid, whose every l2Book is a snapshot: its
converter loses back-to-back snapshots), but NautilusTrader's Tardis loader
rejects Polymarket's exchange and 66-character trade ids: for Nautilus use
--format nautilus; --format hftbacktest needs no converter at all.

--instrument (repeatable) keeps one instrument: a Polymarket token id or
condition id (both outcomes), a Hyperliquid coin. --split-by instrument writes
one file per instrument, named by --out with {instrument} (and {venue}) in it.
The whole file is compressed when --out ends in .gz or .zst, or as --compress
says, whatever the format. The same datasets and flags always give
byte-identical files.`,
		Example: `  # every book change of a Polymarket market, top 25 levels, as Parquet
  replay export datasets/samples/polymarket --table depth --out depth.parquet

  # the book every 100ms, 5 levels, as a Tardis book_snapshot_5 CSV
  replay export datasets/samples/polymarket --table depth --levels 5 --interval 100ms --format tardis --out snap.csv.gz

  # level changes as Tardis incremental_book_L2, one file per instrument, for hftbacktest
  replay export datasets/samples/hyperliquid --table book_changes --format tardis --split-by instrument --out 'changes-{instrument}.csv.gz'

  # Polymarket trades of one market (both outcomes) in Tardis' trades layout
  replay export datasets/samples/polymarket --table trades --format tardis --instrument 0xdd22472e552920b8438158ea7238bfadfa4f736aa4cee91a6b86c39ead110917 --out trades.csv

  # exact decimals into an Arrow IPC file, within a time window
  replay export datasets/samples/hyperliquid --table trades --exact --format arrow --from +1s --out trades.arrow

  # where the data is not to be trusted
  replay export datasets/samples/polymarket --table events --format csv --out events.csv

  # hftbacktest's own .npz event arrays, one per instrument and day
  replay export datasets/samples/hyperliquid --format hftbacktest --out hbt

  # NautilusTrader's catalog: deltas, quotes, trades and instruments
  replay export datasets/samples/polymarket --format nautilus --out catalog

  # tick sizes (and their changes), minimum sizes, outcome pairs, neg-risk
  replay export datasets/samples/polymarket --table instruments --out instruments.parquet`,
		Args: cli.AtLeastOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Datasets = args
			opts.Stderr = cmd.ErrOrStderr()
			opts.Stdout = cmd.OutOrStdout()
			opts.progress = cli.IsTerminal(opts.Stderr)
			f := cmd.Flags()
			if f.Changed("levels") {
				if levels == 0 { // the job's default
					return cli.FlagErrorf("export: --levels 0 not in 1..%d", export.MaxLevels)
				}
				opts.Levels = levels
			}
			if nautPrec != "" {
				p, err := export.ParseNautilusPrecision(nautPrec)
				if err != nil {
					return cli.FlagErrorf("--nautilus-precision: %v", err)
				}
				opts.NautilusPrecision = p
			}
			if err := opts.parse(f.Changed("interval"), interval, from, to, compression, snapshots, bucketTime, compress, partitionBy, shard, shardBy); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runExport(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Table, "table", "", "table to write: depth, book_changes, trades, quotes, events, instruments, raw (required but with --format hftbacktest or nautilus)")
	f.StringVar(&opts.Format, "format", "", "parquet, arrow, csv or tardis (raw: ndjson, tardis, hftbacktest); hftbacktest without --table: its .npz event arrays under --out DIR; nautilus without --table: NautilusTrader's catalog under --out DIR; default from the --out extension (.csv is csv)")
	f.StringVar(&nautPrec, "nautilus-precision", "", "--format nautilus: high (128-bit integers, NautilusTrader's Linux and macOS wheels; the default) or standard (64-bit: its Windows wheels)")
	f.IntVar(&levels, "levels", 25, "depth: levels per side")
	f.StringVar(&interval, "interval", "", "depth: sample the book at the end of every bucket of this duration (e.g. 100ms, 1s)")
	f.BoolVar(&opts.EveryEvent, "every-event", false, "depth: a row on every book change (the default)")
	f.StringVar(&from, "from", "", "start of the window, inclusive (`T`: "+cli.TimeSyntax+")")
	f.StringVar(&to, "to", "", "end of the window, exclusive (`T`, as --from)")
	f.BoolVar(&opts.Exact, "exact", false, "prices and sizes as decimal128 at the venue's scale instead of float64")
	f.StringVar(&compression, "compression", "", "zstd, snappy (Parquet only) or none; default snappy for Parquet (zstd: smaller, slower), none for Arrow (Arrow JS lacks zstd)")
	f.BoolVar(&opts.Quality, "quality-columns", false, "tardis depth/quotes/trades: append the quality flags (trades: backfill; quotes: also the venue's own quote rows) after the Tardis columns")
	f.StringVar(&snapshots, "snapshots", "", "book_changes: full (every venue snapshot a block, size-0 rows for levels it dropped; the default) or diff (what hftbacktest's Tardis converter needs on Hyperliquid)")
	f.StringVar(&bucketTime, "bucket-time", "", "depth --interval: bucket by exchange or local time (default: exchange for --format tardis, as Tardis does; local otherwise)")
	f.StringVar(&opts.TardisExch, "tardis-exchange", "", "tardis: write this Tardis exchange id in the exchange column instead of the venue")
	f.StringArrayVar(&opts.Instruments, "instrument", nil, "only this instrument: token id or condition id (Polymarket), coin (Hyperliquid); repeatable")
	f.StringVar(&opts.SplitBy, "split-by", "", "instrument: one file per instrument, --out a template with {instrument} (and {venue})")
	f.StringVar(&compress, "compress", "", "compress the whole file: gzip, zstd or none (default from --out: .gz, .zst)")
	f.StringVarP(&opts.Out, "out", "o", "", "output file, - for stdout (required)")
	f.BoolVarP(&opts.Force, "force", "f", false, "overwrite --out if it exists (--partition-by: replace the earlier export's files of this shard, or of all when unsharded)")
	f.BoolVar(&opts.SkipDamaged, "skip-damaged", false, skipDamagedUsage)
	f.StringVar(&partitionBy, "partition-by", "", "write a Hive-partitioned tree under --out (a directory or s3://bucket/prefix): `FIELDS` of venue, date, hour, instrument, e.g. venue,date,instrument; _SUCCESS marks it complete")
	f.StringVar(&shardBy, "shard-by", "instrument", "how --shard splits: instrument (the union of the shards is the unsharded table) or time (shard K reads only the K-th of N equal time slices; its books start empty and are exact from each instrument's first snapshot in it)")
	f.StringVar(&shard, "shard", "", "export only shard `K/N` of the instruments (1/4 … 4/4 together are the whole table); --out needs {shard} unless --partition-by or --split-by")
	addReadAheadFlag(cmd, &opts.ReadAhead)
	f.IntVar(&opts.Encoders, "encoders", 0, "goroutines encoding and writing the table (`N`, 0 to 256; 0: one per core; 1: all on the replay's goroutine); the file is the same")
	return cmd
}

// parse turns the flags' text into the job's values and validates the job
// (export.Job.Validate), every error a usage error naming the flags.
func (o *exportOptions) parse(intervalSet bool, interval, from, to, compression, snapshots, bucketTime, compress, partitionBy, shard, shardBy string) error {
	j := &o.Job
	if (j.Table == "" && !j.Native()) || j.Out == "" {
		return usage(j.Validate())
	}
	if intervalSet {
		d, err := time.ParseDuration(interval)
		if err != nil || d <= 0 {
			return cli.FlagErrorf("export: --interval %q is not a positive duration (e.g. 100ms, 1s)", interval)
		}
		j.Interval = d
	}
	var err error
	if compression != "" {
		if j.Compression, err = columnar.ParseCompression(compression); err != nil {
			return cli.FlagErrorf("--compression: %v", err)
		}
	}
	if snapshots != "" {
		if j.Snapshots, err = export.ParseSnapshots(snapshots); err != nil {
			return cli.FlagErrorf("--snapshots: %v", err)
		}
	}
	if bucketTime != "" {
		if j.BucketTime, err = export.ParseBucketTime(bucketTime); err != nil {
			return cli.FlagErrorf("--bucket-time: %v", err)
		}
	}
	if compress != "" {
		if j.Compress.UnmarshalText([]byte(compress)) != nil {
			return cli.FlagErrorf("--compress %q: want gzip, zstd or none", compress)
		}
		if p := interchange.CompressionFromPath(j.Out); p != interchange.None && j.Compress != p {
			return cli.FlagErrorf("export: --compress %s contradicts --out %q", compress, j.Out)
		}
	}
	switch shardBy {
	case "", "instrument":
	case "time":
		j.ShardByTime = true
	default:
		return cli.FlagErrorf("--shard-by %q: want instrument or time", shardBy)
	}
	if j.Shard, err = replayer.ParseShard(shard); err != nil {
		return cli.FlagErrorf("--shard: %v", err)
	}
	if partitionBy != "" {
		if j.PartitionBy, err = export.ParsePartitionBy(partitionBy); err != nil {
			return cli.FlagErrorf("--partition-by: %v", err)
		}
	}
	// The T grammar of every command (cli.ParseTime).
	if j.FromNs, j.ToNs, err = parseWindow(j.Datasets, from, to); err != nil {
		return err
	}
	if err := outsideInputs("export", j.Out, j.Datasets); err != nil {
		return err
	}
	return usage(j.Validate())
}

// usage makes an invalid job's error a usage error (exit 2).
func usage(err error) error {
	if errors.Is(err, export.ErrOption) {
		return &cli.FlagError{Err: err}
	}
	return err
}

// runExport runs the job (export.Run), reporting on stderr, and maps its
// errors to exit codes: damage and nothing to write are problems (3).
func runExport(ctx context.Context, o *exportOptions) error {
	o.Log = o.Stderr
	o.Job.Progress = func(start, end int64, pos func() int64) func() {
		return cli.FollowTime(o.progress, o.Stderr, "export", start, end, pos)
	}
	res, err := export.Run(ctx, &o.Job)
	var sum *replayer.Summary
	if res != nil {
		sum = res.Summary
	}
	switch {
	case errors.Is(err, replayer.ErrDamaged):
		return damagedError("export: nothing written", sum, err)
	case errors.Is(err, export.ErrNothingWritten):
		return &cli.ProblemError{Err: err}
	case err != nil:
		return usage(err)
	}
	if o.progress && o.Table != "raw" {
		if o.PartitionBy != nil {
			fmt.Fprintf(o.Stderr, "%s: %d files\n", res.Out, len(res.Files))
		}
		fmt.Fprintf(o.Stderr, "%s: %d rows from %d frames\n", res.Out, res.Rows, sum.Frames)
	}
	return nil
}
