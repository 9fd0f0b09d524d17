package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/interchange"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/export"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// exportOptions is what `replay export` was asked to do, validated.
type exportOptions struct {
	Datasets    []string
	Table       string // a export.Table name, or "raw"
	Format      string // parquet|arrow|csv|tardis, or for raw ndjson|tardis|hftbacktest
	Levels      int
	Interval    time.Duration // 0 = every event
	FromNs      int64
	ToNs        int64
	Exact       bool
	Compression export.Compression
	Quality     bool
	Snapshots   export.Snapshots  // 0: the default
	BucketTime  export.BucketTime // 0: the format's default
	TardisExch  string
	Instruments []string
	SplitBy     string                  // "" or "instrument"
	Compress    interchange.Compression // whole-file compression, from --compress or the extension
	Out         string
	Force       bool
	SkipDamaged bool
	PartitionBy []export.PartitionField // --partition-by: a Hive tree under Out
	Shard       replayer.Shard
	ShardByTime bool // --shard-by time: shard K is the K-th of N equal time slices
	ReadAhead   int  // blocks decompressed ahead per dataset (0: sequential)
	Encoders    int  // goroutines writing the table (export.WithEncoders); 0: one per core

	Stderr   io.Writer
	Stdout   io.Writer
	Progress bool // stderr is a terminal

	partitioned bool // --partition-by given: --out is a directory
}

func newExportCmd(runF func(*exportOptions) error) *cobra.Command {
	opts := &exportOptions{}
	var (
		interval, from, to, compression string
		snapshots, bucketTime, compress string
		partitionBy, shard, shardBy     string
		everyEvent                      bool
	)
	cmd := &cobra.Command{
		Use:   "export DATASET... --table TABLE --out PATH",
		Short: "Export replayed books, trades, quotes, control events or instruments as Parquet, Arrow, CSV or Tardis CSV",
		Long: `Export replays the datasets through the books and writes one table:

  depth         wide top-N book per instrument: exchange_ts_ns, local_ts_ns, venue,
                instrument, bid_price_i, bid_size_i, ask_price_i, ask_size_i (i = 0 is
                the best; bid_count_i/ask_count_i for Hyperliquid), and the flags
                book_valid, after_gap, crossed, hash_checked, hash_ok, estimated.
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
instrument symbol, size amount, bid_price_i bids[i].price. NautilusTrader knows
no "polymarket" exchange: --tardis-exchange names one it does.

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

  # Polymarket trades of one market (both outcomes) for NautilusTrader's Tardis loader
  replay export datasets/samples/polymarket --table trades --format tardis --tardis-exchange hyperliquid --instrument 0xdd22472e552920b8438158ea7238bfadfa4f736aa4cee91a6b86c39ead110917 --out trades.csv

  # exact decimals into an Arrow IPC file, within a time window
  replay export datasets/samples/hyperliquid --table trades --exact --format arrow --from +1s --out trades.arrow

  # where the data is not to be trusted
  replay export datasets/samples/polymarket --table events --format csv --out events.csv

  # tick sizes (and their changes), minimum sizes, outcome pairs, neg-risk
  replay export datasets/samples/polymarket --table instruments --out instruments.parquet`,
		Args: cli.AtLeastOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Datasets = args
			opts.Stderr = cmd.ErrOrStderr()
			opts.Stdout = cmd.OutOrStdout()
			opts.Progress = cli.IsTerminal(opts.Stderr)
			f := cmd.Flags()
			if partitionBy != "" && opts.Format == "" {
				opts.Format = "parquet" // --out is a directory
			}
			opts.partitioned = partitionBy != ""
			if err := opts.validate(f.Changed("levels"), f.Changed("interval"), everyEvent,
				interval, from, to, compression, f.Changed("compression")); err != nil {
				return err
			}
			if err := opts.validateMore(snapshots, bucketTime, compress); err != nil {
				return err
			}
			if err := opts.validateShardBy(shardBy); err != nil {
				return err
			}
			if err := opts.validatePartition(partitionBy, shard); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runExport(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Table, "table", "", "table to write: depth, book_changes, trades, quotes, events, instruments, raw (required)")
	f.StringVar(&opts.Format, "format", "", "parquet, arrow, csv or tardis (raw: ndjson, tardis, hftbacktest); default from the --out extension (.csv is csv)")
	f.IntVar(&opts.Levels, "levels", 25, "depth: levels per side")
	f.StringVar(&interval, "interval", "", "depth: sample the book at the end of every bucket of this duration (e.g. 100ms, 1s)")
	f.BoolVar(&everyEvent, "every-event", false, "depth: a row on every book change (the default)")
	f.StringVar(&from, "from", "", "start of the window, inclusive (`T`: "+cli.TimeSyntax+")")
	f.StringVar(&to, "to", "", "end of the window, exclusive (`T`, as --from)")
	f.BoolVar(&opts.Exact, "exact", false, "prices and sizes as decimal128 at the venue's scale instead of float64")
	f.StringVar(&compression, "compression", "", "zstd, snappy (Parquet only) or none; default snappy for Parquet (zstd: smaller, slower), none for Arrow (Arrow JS lacks zstd)")
	f.BoolVar(&opts.Quality, "quality-columns", false, "tardis depth/quotes/trades: append the quality flags (trades: backfill; quotes: also the venue's own quote rows) after the Tardis columns")
	f.StringVar(&snapshots, "snapshots", "", "book_changes: full (every venue snapshot a block, size-0 rows for levels it dropped; the default) or diff")
	f.StringVar(&bucketTime, "bucket-time", "", "depth --interval: bucket by exchange or local time (default: exchange for --format tardis, as Tardis does; local otherwise)")
	f.StringVar(&opts.TardisExch, "tardis-exchange", "", "tardis: write this Tardis exchange id in the exchange column instead of the venue")
	f.StringArrayVar(&opts.Instruments, "instrument", nil, "only this instrument: token id or condition id (Polymarket), coin (Hyperliquid); repeatable")
	f.StringVar(&opts.SplitBy, "split-by", "", "instrument: one file per instrument, --out a template with {instrument} (and {venue})")
	f.StringVar(&compress, "compress", "", "compress the whole file: gzip, zstd or none (default from --out: .gz, .zst)")
	f.StringVarP(&opts.Out, "out", "o", "", "output file, - for stdout (required)")
	f.BoolVarP(&opts.Force, "force", "f", false, "overwrite --out if it exists")
	f.BoolVar(&opts.SkipDamaged, "skip-damaged", false, skipDamagedUsage)
	f.StringVar(&partitionBy, "partition-by", "", "write a Hive-partitioned tree under --out (a directory or s3://bucket/prefix): `FIELDS` of venue, date, hour, instrument, e.g. venue,date,instrument; _SUCCESS marks it complete")
	f.StringVar(&shardBy, "shard-by", "instrument", "how --shard splits: instrument (the union of the shards is the unsharded table) or time (shard K reads only the K-th of N equal time slices; its books start empty and are exact from each instrument's first snapshot in it)")
	f.StringVar(&shard, "shard", "", "export only shard `K/N` of the instruments (1/4 … 4/4 together are the whole table); --out needs {shard} unless --partition-by or --split-by")
	addReadAheadFlag(cmd, &opts.ReadAhead)
	f.IntVar(&opts.Encoders, "encoders", 0, "goroutines encoding and writing the table (`N`, 0 to 256; 0: one per core; 1: all on the replay's goroutine); the file is the same")
	return cmd
}

// validate checks every flag and combination before any work, naming the flags.
func (o *exportOptions) validate(levelsSet, intervalSet, everyEvent bool, interval, from, to, compression string, compressionSet bool) error {
	if o.Table == "" {
		return cli.FlagErrorf("export: --table is required (%s)", strings.Join(tableNames(), ", "))
	}
	if o.Out == "" {
		return cli.FlagErrorf("export: --out is required")
	}
	if o.Encoders < 0 || o.Encoders > export.MaxEncoders {
		return cli.FlagErrorf("export: --encoders %d: want 0 to %d", o.Encoders, export.MaxEncoders)
	}
	raw := o.Table == "raw"
	var table export.Table
	if !raw {
		t, err := export.ParseTable(o.Table)
		if err != nil {
			return cli.FlagErrorf("export: unknown --table %q (want %s)", o.Table, strings.Join(tableNames(), ", "))
		}
		table = t
	}
	if o.Format == "" {
		o.Format = formatFromPath(o.Out, raw)
		if o.Format == "" {
			return cli.FlagErrorf("export: --format is required when --out %q has no known extension", o.Out)
		}
	}
	if raw {
		if _, err := interchange.ParseFormat(o.Format); err != nil {
			return cli.FlagErrorf("--format: with --table raw: %v", err)
		}
		if len(o.Datasets) != 1 {
			return cli.FlagErrorf("export: --table raw takes one DATASET, got %d", len(o.Datasets))
		}
		for name, set := range map[string]bool{"--levels": levelsSet, "--interval": intervalSet,
			"--every-event": everyEvent, "--exact": o.Exact, "--quality-columns": o.Quality, "--compression": compressionSet,
			"--instrument": len(o.Instruments) > 0, "--split-by": o.SplitBy != "", "--tardis-exchange": o.TardisExch != ""} {
			if set {
				return cli.FlagErrorf("export: %s does not apply to --table raw", name)
			}
		}
	} else {
		ft, err := export.ParseFormat(o.Format)
		if err != nil {
			return cli.FlagErrorf("--format: %v", err)
		}
		if table != export.TableDepth {
			for name, set := range map[string]bool{"--levels": levelsSet, "--interval": intervalSet, "--every-event": everyEvent} {
				if set {
					return cli.FlagErrorf("export: %s applies to --table depth only, not %s", name, table)
				}
			}
		}
		if intervalSet && everyEvent {
			return cli.FlagErrorf("export: --interval and --every-event are exclusive")
		}
		if levelsSet && (o.Levels < 1 || o.Levels > export.MaxLevels) {
			return cli.FlagErrorf("export: --levels %d not in 1..%d", o.Levels, export.MaxLevels)
		}
		if intervalSet {
			d, err := time.ParseDuration(interval)
			if err != nil || d <= 0 {
				return cli.FlagErrorf("export: --interval %q is not a positive duration (e.g. 100ms, 1s)", interval)
			}
			o.Interval = d
		}
		var c export.Compression
		if compressionSet {
			var err error
			if c, err = export.ParseCompression(compression); err != nil {
				return cli.FlagErrorf("--compression: %v", err)
			}
		}
		o.Compression = c
		switch ft {
		case export.FormatCSV, export.FormatTardis:
			if o.Exact {
				return cli.FlagErrorf("export: --exact does not apply to --format %s (CSV is always exact decimal text)", ft)
			}
			if compressionSet {
				return cli.FlagErrorf("export: --compression does not apply to --format %s (--compress or an --out ending in .gz or .zst compresses the file)", ft)
			}
			if o.Quality && ft == export.FormatCSV {
				return cli.FlagErrorf("export: --quality-columns applies to --format tardis only (csv always carries the flags)")
			}
			if o.Quality && table != export.TableDepth && table != export.TableQuotes && table != export.TableTrades {
				return cli.FlagErrorf("export: --quality-columns applies to --table depth, quotes or trades only")
			}
			if ft == export.FormatTardis && (table == export.TableEvents || table == export.TableInstruments) {
				return cli.FlagErrorf("export: --table %s has no Tardis layout (use --format csv)", table)
			}
		case export.FormatArrow:
			if c == export.Snappy {
				return cli.FlagErrorf("export: --compression snappy is not available for --format arrow (zstd or none)")
			}
			fallthrough
		default:
			if o.Quality {
				return cli.FlagErrorf("export: --quality-columns applies to --format tardis only (Parquet and Arrow always carry the flags)")
			}
		}
		if o.TardisExch != "" && ft != export.FormatTardis {
			return cli.FlagErrorf("export: --tardis-exchange applies to --format tardis only")
		}
		if o.SplitBy != "" {
			if o.SplitBy != "instrument" {
				return cli.FlagErrorf("export: --split-by %q: want instrument", o.SplitBy)
			}
			if table == export.TableEvents {
				return cli.FlagErrorf("export: --table events has no instrument to --split-by")
			}
			if table == export.TableInstruments {
				return cli.FlagErrorf("export: --table instruments is one small file: no --split-by (--instrument selects)")
			}
			if !strings.Contains(o.Out, "{instrument}") {
				return cli.FlagErrorf("export: --split-by instrument needs {instrument} in --out, e.g. 'depth-{instrument}.parquet'")
			}
		} else if strings.Contains(o.Out, "{instrument}") {
			return cli.FlagErrorf("export: --out %q names {instrument}: add --split-by instrument", o.Out)
		}
	}
	var err error
	// The T grammar of every command (cli.ParseTime).
	if o.FromNs, o.ToNs, err = parseWindow(o.Datasets, from, to); err != nil {
		return err
	}
	if err := outsideInputs("export", o.Out, o.Datasets); err != nil {
		return err
	}
	if o.Out != "-" && !o.Force && o.SplitBy == "" && !o.partitioned {
		if _, err := os.Stat(o.Out); err == nil {
			return cli.FlagErrorf("export: %s exists (use -f/--force to overwrite)", o.Out)
		}
	}
	return nil
}

// tableNames are the --table values: every export table and raw.
func tableNames() []string {
	var names []string
	for t := export.TableDepth; t <= export.TableInstruments; t++ {
		names = append(names, t.String())
	}
	return append(names, "raw")
}

// validateMore checks the flags of snapshots, buckets, whole-file
// compression and per-instrument output.
func (o *exportOptions) validateMore(snapshots, bucketTime, compress string) error {
	table, _ := export.ParseTable(o.Table)
	if snapshots != "" {
		if o.Table != export.TableBookChanges.String() {
			return cli.FlagErrorf("export: --snapshots applies to --table book_changes only")
		}
		m, err := export.ParseSnapshots(snapshots)
		if err != nil {
			return cli.FlagErrorf("--snapshots: %v", err)
		}
		o.Snapshots = m
	}
	if bucketTime != "" {
		if table != export.TableDepth || o.Interval == 0 {
			return cli.FlagErrorf("export: --bucket-time applies to --table depth with --interval only")
		}
		b, err := export.ParseBucketTime(bucketTime)
		if err != nil {
			return cli.FlagErrorf("--bucket-time: %v", err)
		}
		o.BucketTime = b
	}
	fromPath := interchange.CompressionFromPath(o.Out)
	o.Compress = fromPath
	if compress != "" {
		c, err := parseCompress(compress)
		if err != nil {
			return err
		}
		if fromPath != interchange.None && c != fromPath {
			return cli.FlagErrorf("export: --compress %s contradicts --out %q", compress, o.Out)
		}
		o.Compress = c
	}
	if o.SplitBy != "" && o.Out == "-" {
		return cli.FlagErrorf("export: --split-by writes files, not standard output")
	}
	return nil
}

func parseCompress(s string) (interchange.Compression, error) {
	switch s {
	case "gzip", "gz":
		return interchange.Gzip, nil
	case "zstd", "zst":
		return interchange.Zstd, nil
	case "none":
		return interchange.None, nil
	}
	return 0, cli.FlagErrorf("--compress %q: want gzip, zstd or none", s)
}

func formatFromPath(p string, raw bool) string {
	p = strings.TrimSuffix(strings.TrimSuffix(p, ".gz"), ".zst")
	switch ext := filepath.Ext(p); {
	case raw && (ext == ".ndjson" || ext == ".jsonl"):
		return "ndjson"
	case raw:
		return ""
	case ext == ".parquet":
		return "parquet"
	case ext == ".arrow" || ext == ".feather" || ext == ".ipc":
		return "arrow"
	case ext == ".csv":
		return "csv"
	}
	return ""
}

// runExport writes each output to a temporary file beside its path and
// renames it into place only when the whole export succeeded, so a failed
// run never leaves a half-written file where a good one is expected.
func runExport(ctx context.Context, o *exportOptions) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var outs []*outFile
	defer func() {
		if err != nil {
			for _, f := range outs {
				f.abort()
			}
		}
	}()
	open := func(path string) (io.Writer, error) {
		f, err := createOut(o, path)
		if err != nil {
			return nil, err
		}
		outs = append(outs, f)
		return f.w, nil
	}
	if o.Table == "raw" {
		w, err := open(o.Out)
		if err != nil {
			return err
		}
		if err := exportRaw(o, w); err != nil {
			return err
		}
	} else if err := exportTable(ctx, o, open); err != nil {
		return err
	}
	for _, f := range outs {
		if err := f.commit(); err != nil {
			return err
		}
	}
	return nil
}

// outFile is one output of an export: a temporary file beside its path (or
// stdout), buffered, compressed as the options say.
type outFile struct {
	path   string
	tmp    *os.File // nil: stdout
	bw     *bufio.Writer
	closer io.Closer // the compressor, nil when none
	w      io.Writer
}

func createOut(o *exportOptions, path string) (*outFile, error) {
	f := &outFile{path: path}
	var w io.Writer = o.Stdout
	if path != "-" {
		tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
		if err != nil {
			// The temporary file is ours; the path to name is the user's.
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("export: create %s: %w", path, err)
		}
		f.tmp, w = tmp, tmp
	}
	f.bw = bufio.NewWriterSize(w, 1<<20) // Parquet and IPC write many small pieces
	f.w = f.bw
	if o.Table == "raw" {
		return f, nil // interchange compresses raw exports itself
	}
	switch o.Compress {
	case interchange.Gzip:
		// Header fields stay zero (no name, no mtime): the bytes depend on the data only.
		gz := gzip.NewWriter(f.bw)
		f.w, f.closer = gz, gz
	case interchange.Zstd:
		zw, err := zstd.NewWriter(f.bw, zstd.WithEncoderConcurrency(1))
		if err != nil {
			f.abort()
			return nil, fmt.Errorf("export: zstd: %w", err)
		}
		f.w, f.closer = zw, zw
	}
	return f, nil
}

// commit finishes the stream and renames the file into place.
func (f *outFile) commit() error {
	if f.closer != nil {
		if err := f.closer.Close(); err != nil {
			return fmt.Errorf("export: compress %s: %w", f.path, err)
		}
	}
	if err := f.bw.Flush(); err != nil {
		return fmt.Errorf("export: write %s: %w", f.path, err)
	}
	if f.tmp == nil {
		return nil
	}
	// CreateTemp makes the file private; an export is an ordinary file.
	if err := f.tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := f.tmp.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(f.tmp.Name(), f.path); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	f.tmp = nil
	return nil
}

// abort removes the temporary file, if any is left.
func (f *outFile) abort() {
	if f.tmp != nil {
		f.tmp.Close()
		os.Remove(f.tmp.Name())
		f.tmp = nil
	}
}

// splitPath is --out with {venue} and {instrument} filled in; characters
// that do not belong in a file name (Hyperliquid's "@107", "PURR/USDC")
// become '_'.
func splitPath(tmpl, venueName, instrument string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' {
				return r
			}
			return '_'
		}, s)
	}
	return strings.NewReplacer("{instrument}", clean(instrument), "{venue}", clean(venueName)).Replace(tmpl)
}

func exportTable(ctx context.Context, o *exportOptions, open func(path string) (io.Writer, error)) error {
	table, _ := export.ParseTable(o.Table)
	format, _ := export.ParseFormat(o.Format)
	var ropts []replayer.Option
	// The instruments table needs the REST bodies stored at the start of a
	// recording: it reads it all and keeps the rows in effect in the window.
	if o.ShardByTime {
		from, to, err := timeShard(o)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Stderr, "export: shard %s by time covers [%s, %s): its books start empty there, each instrument's rows are exact from its first snapshot in the shard\n",
			o.Shard, fmtNs(from), fmtNs(to))
		ropts = append(ropts, replayer.WithWindow(from, to), replayer.WithWarmup(replayer.WarmupNone))
	} else if (o.FromNs != 0 || o.ToNs != 0) && table != export.TableInstruments {
		ropts = append(ropts, replayer.WithWindow(o.FromNs, o.ToNs))
	}
	// The sink is the only subscriber: once it cannot write (a full disk),
	// the rest of the replay would be wasted, so its error ends the run.
	ropts = append(ropts, replayer.WithSkipDamaged(o.SkipDamaged), replayer.WithStopOnSubscriberError(),
		replayer.WithReadAhead(o.ReadAhead))
	if !o.Shard.Whole() && !o.ShardByTime {
		ropts = append(ropts, replayer.WithShard(o.Shard)) // other shards' instruments are not even routed
	}
	r, err := replayer.New(o.Datasets, ropts...)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	ms := r.Manifests()
	venueName := ms[0].Venue
	for i, m := range ms[1:] {
		if m.Venue != venueName {
			return cli.FlagErrorf("export: DATASET %s is %s but %s is %s; export one venue at a time",
				o.Datasets[i+1], m.Venue, o.Datasets[0], venueName)
		}
	}
	var sopts []export.Option
	if o.Encoders > 0 {
		sopts = append(sopts, export.WithEncoders(o.Encoders))
	}
	if o.Compression != 0 {
		sopts = append(sopts, export.WithCompression(o.Compression))
	}
	if sc, ok := venueScale(venueName); ok {
		sopts = append(sopts, export.WithSource(venueName, sc))
	}
	sopts = append(sopts, export.WithDatasets(o.Datasets...))
	if table == export.TableDepth {
		sopts = append(sopts, export.WithLevels(o.Levels))
		if o.Interval > 0 {
			sopts = append(sopts, export.WithInterval(o.Interval))
		}
	}
	if o.Exact {
		sopts = append(sopts, export.WithExact())
	}
	if o.Quality {
		sopts = append(sopts, export.WithQualityColumns())
	}
	if o.Snapshots != 0 {
		sopts = append(sopts, export.WithSnapshots(o.Snapshots))
	}
	if o.BucketTime != 0 {
		sopts = append(sopts, export.WithBucketTime(o.BucketTime))
	}
	if o.TardisExch != "" {
		sopts = append(sopts, export.WithTardisExchange(o.TardisExch))
	}
	if len(o.Instruments) > 0 {
		sopts = append(sopts, export.WithInstruments(o.Instruments...))
	}
	if table == export.TableInstruments {
		var recorded []string
		for _, m := range ms {
			recorded = append(recorded, m.Instruments...)
		}
		sopts = append(sopts, export.WithRecordedInstruments(recorded...), export.WithWindow(o.FromNs, o.ToNs))
	}
	if !o.Shard.Whole() && !o.ShardByTime {
		sopts = append(sopts, export.WithShard(o.Shard))
	}
	var sink interface {
		replayer.Subscriber
		Close() error
		Rows() uint64
	}
	var parts *partOut
	if o.PartitionBy != nil {
		if parts, err = newPartOut(o); err != nil {
			return err
		}
		defer parts.abort()
		part := 0
		if !o.Shard.Whole() {
			part = o.Shard.K - 1
		}
		p, err := export.NewPartitioned(parts.create, parts.done, table, format, o.PartitionBy, part, sopts...)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		sink = p
	} else if o.SplitBy == "instrument" {
		paths := map[string]string{} // file → instrument, to refuse two instruments in one file
		split, err := export.NewSplit(func(v, inst string) (io.Writer, error) {
			p := splitPath(o.Out, v, inst)
			if other, ok := paths[p]; ok {
				return nil, fmt.Errorf("export: instruments %s and %s both map to %s", other, inst, p)
			}
			paths[p] = inst
			if !o.Force {
				if _, err := os.Stat(p); err == nil {
					return nil, fmt.Errorf("export: %s exists (use -f/--force to overwrite)", p)
				}
			}
			return open(p)
		}, table, format, sopts...)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		sink = split
	} else {
		w, err := open(o.Out)
		if err != nil {
			return err
		}
		s, err := export.New(w, table, format, sopts...)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		sink = s
	}
	r.Subscribe(replayer.Key{}, sink)

	stop := cli.FollowTime(o.Progress, o.Stderr, "export", r.StartNs(), r.EndNs(), r.Position)
	sum, err := r.Run(ctx)
	stop()
	if errors.Is(err, replayer.ErrDamaged) {
		return damagedError("export: nothing written", sum, err)
	}
	var sf *replayer.SubscriberFailure
	if errors.As(err, &sf) {
		// The sink's own error (a *export.WriteError), typed, with where
		// the replay stopped.
		return fmt.Errorf("export: stopped at dataset %d seq %d, %s not written: %w", sf.Dataset, sf.Seq, o.Out, sf.Cause)
	}
	if err != nil {
		return fmt.Errorf("export: replay: %w", err)
	}
	warnDamaged(o.Stderr, sum)
	if table == export.TableInstruments && o.FromNs != 0 && sum.Frames > 0 && o.FromNs > r.EndNs() {
		return &cli.ProblemError{Err: fmt.Errorf("export: --from %s is past the last record (%s), nothing written",
			fmtNs(o.FromNs), fmtNs(r.EndNs()))}
	}
	if o.FromNs != 0 && sum.Frames > 0 && sum.WarmupFrames == sum.Frames {
		return &cli.ProblemError{Err: fmt.Errorf("export: --from %s is past the last record: all %d frames were warm-up, nothing written",
			fmtNs(o.FromNs), sum.Frames)}
	}
	if err := sink.Close(); err != nil {
		return err
	}
	if p, ok := sink.(interface{ Problems() []string }); ok {
		for _, line := range p.Problems() {
			fmt.Fprintf(o.Stderr, "warning: instruments: facts left out: %s\n", line)
		}
	}
	if parts != nil {
		if err := parts.finish(); err != nil {
			return err
		}
		if o.Progress {
			fmt.Fprintf(o.Stderr, "%s: %d files\n", o.Out, len(parts.written))
		}
	}
	if o.Progress {
		fmt.Fprintf(o.Stderr, "%s: %d rows from %d frames\n", o.Out, sink.Rows(), sum.Frames)
	}
	return nil
}

func exportRaw(o *exportOptions, w io.Writer) error {
	f, _ := interchange.ParseFormat(o.Format)
	rd, err := datasets.Open(o.Datasets[0])
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer rd.Close()
	if o.FromNs != 0 {
		if err := rd.SeekTime(o.FromNs); err != nil {
			return fmt.Errorf("export: seek --from: %w", err)
		}
	}
	var src interchange.Source = rd
	if o.ToNs != 0 {
		src = &untilSource{Source: rd, toNs: o.ToNs}
	}
	// .gz and .zst compress as the path says (interchange's own compressor).
	if _, err := interchange.ExportRaw(w, src, f, interchange.WithCompression(interchange.CompressionFromPath(o.Out))); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// untilSource ends a record source at the first record at or after toNs.
type untilSource struct {
	interchange.Source
	toNs int64
	done bool
}

func (u *untilSource) Next() bool {
	if u.done || !u.Source.Next() {
		return false
	}
	if u.Source.Record().WallNs >= u.toNs {
		u.done = true
		return false
	}
	return true
}

// venueScale is the fixed-point scale of a venue's decoder, so that even an
// empty export carries the right scale in its metadata and decimal types.
func venueScale(name string) (book.Scale, bool) {
	d, err := registry.Lookup(name)
	if err != nil {
		return book.Scale{}, false
	}
	return d.Scale(), true
}
