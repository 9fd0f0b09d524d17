package export

import (
	"context"
	"errors"
	"fmt"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/venue"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/interchange"
	"github.com/tapedeck/tapedeck/replayer"
)

// Job is one export of datasets to files, as `replay export` runs it: the
// table, its layout (one file; one file per instrument with SplitBy; a
// Hive-partitioned tree under Out with PartitionBy, locally or on S3),
// shards, the _SUCCESS and shard markers, and the raw frames. Its fields
// are the verb's flags, and its errors name them as the CLI spells them.
// The zero value of a field is the flag's default.
type Job struct {
	Datasets []string
	// Table is a Table's name, or "raw" for the recorded frames.
	Table string
	// Format is a Format's name, or for raw an interchange format (ndjson,
	// tardis, hftbacktest); "" takes it from Out's extension.
	Format      string
	Levels      int           // depth: levels per side; 0: 25
	Interval    time.Duration // depth: 0 = every event
	EveryEvent  bool          // depth: every event, said explicitly
	FromNs      int64         // window start, inclusive; 0: the start
	ToNs        int64         // window end, exclusive; 0: the end
	Exact       bool
	Compression columnar.Compression // 0: the format's default
	Quality     bool
	Snapshots   Snapshots  // 0: the default
	BucketTime  BucketTime // 0: the format's default
	TardisExch  string
	Instruments []string
	SplitBy     string                  // "" or "instrument": Out is a template with {instrument} (and {venue})
	Compress    interchange.Compression // whole-file compression (CompressionFromPath of Out unless said)
	// Out is the output file, "-" for Stdout, a directory or s3://bucket/prefix
	// with PartitionBy; {shard} in it is replaced by K-of-N.
	Out         string
	Force       bool
	SkipDamaged bool
	PartitionBy []PartitionField // a Hive tree under Out
	Shard       replayer.Shard   // zero: the whole table
	ShardByTime bool             // shard K is the K-th of N equal time slices
	ReadAhead   int              // blocks decompressed ahead per dataset (0: sequential)
	Encoders    int              // WithEncoders; 0: one per core
	// NautilusPrecision is --format nautilus's integer width (0: NautilusHigh).
	NautilusPrecision NautilusPrecision

	Stdout io.Writer // for Out "-"
	Log    io.Writer // notes and warnings, one line each; nil: none
	// Progress, when not nil, is started once the replay's span [start,
	// end) ns is known and polls pos; the function it returns stops it.
	Progress func(start, end int64, pos func() int64) (stop func())

	files *openFiles // of a split or partitioned export
}

// Result is what a Run wrote.
type Result struct {
	Out     string // Out as written: {shard} filled in
	Summary *replayer.Summary
	Rows    uint64
	Files   []string // with PartitionBy: the files of the tree, relative to Out
}

// ErrNothingWritten means the export found nothing to write where the
// caller asked (a window past the data, an empty time shard).
var ErrNothingWritten = errors.New("export: nothing written")

// jobError is an error whose message is its own and which Is one sentinel
// (ErrOption, ErrNothingWritten).
type jobError struct {
	msg string
	is  error
}

func (e *jobError) Error() string        { return e.msg }
func (e *jobError) Is(target error) bool { return target == e.is }

func optionf(format string, a ...any) error {
	return &jobError{msg: fmt.Sprintf(format, a...), is: ErrOption}
}

func nothingf(format string, a ...any) error {
	return &jobError{msg: fmt.Sprintf(format, a...), is: ErrNothingWritten}
}

// Validate checks every field and combination before any work and fills in
// the defaults that follow from Out (Format, Compress). Its errors are
// ErrOption.
func (j *Job) Validate() error {
	if j.Table == "" && !j.Native() {
		return optionf("export: --table is required (%s), or --format hftbacktest or nautilus", strings.Join(tableAndRawNames(), ", "))
	}
	if j.Out == "" {
		return optionf("export: --out is required")
	}
	if j.Native() {
		return j.validateNative()
	}
	if j.PartitionBy != nil && j.Format == "" {
		j.Format = "parquet" // Out is a directory
	}
	if err := j.validateTable(); err != nil {
		return err
	}
	if err := j.validateMore(); err != nil {
		return err
	}
	if err := j.validatePartition(); err != nil {
		return err
	}
	if j.Out != "-" && !j.Force && j.SplitBy == "" && j.PartitionBy == nil {
		if _, err := os.Stat(j.out()); err == nil {
			return optionf("export: %s exists (use -f/--force to overwrite)", j.out())
		}
	}
	return nil
}

func (j *Job) validateTable() error {
	if j.Encoders < 0 || j.Encoders > columnar.MaxEncoders {
		return optionf("export: --encoders %d: want 0 to %d", j.Encoders, columnar.MaxEncoders)
	}
	raw := j.Table == "raw"
	var table Table
	if !raw {
		t, err := ParseTable(j.Table)
		if err != nil {
			return optionf("export: unknown --table %q (want %s)", j.Table, strings.Join(tableAndRawNames(), ", "))
		}
		table = t
	}
	if j.Format == "" {
		j.Format = formatFromPath(j.Out, raw)
		if j.Format == "" {
			return optionf("export: --format is required when --out %q has no known extension", j.Out)
		}
	}
	if raw {
		if _, err := interchange.ParseFormat(j.Format); err != nil {
			return optionf("--format: with --table raw: %v", err)
		}
		if len(j.Datasets) != 1 {
			return optionf("export: --table raw takes one DATASET, got %d", len(j.Datasets))
		}
		for name, set := range map[string]bool{"--levels": j.Levels != 0, "--interval": j.Interval != 0,
			"--every-event": j.EveryEvent, "--exact": j.Exact, "--quality-columns": j.Quality, "--compression": j.Compression != 0,
			"--instrument": len(j.Instruments) > 0, "--split-by": j.SplitBy != "", "--tardis-exchange": j.TardisExch != ""} {
			if set {
				return optionf("export: %s does not apply to --table raw", name)
			}
		}
		return nil
	}
	ft, err := ParseFormat(j.Format)
	if err != nil {
		return optionf("--format: %v", err)
	}
	if ft == FormatNautilus {
		return optionf("export: --format nautilus writes NautilusTrader's catalog (deltas, quotes, trades and instruments together) under --out DIR: no --table")
	}
	if j.NautilusPrecision != 0 {
		return optionf("export: --nautilus-precision applies to --format nautilus only")
	}
	if ft == FormatHftBacktest {
		return optionf("export: --format hftbacktest writes depth and trades together, one .npz per instrument and day: no --table (--table raw --format hftbacktest writes the recorded lines hftbacktest's Hyperliquid converter reads)")
	}
	if table != TableDepth {
		for name, set := range map[string]bool{"--levels": j.Levels != 0, "--interval": j.Interval != 0, "--every-event": j.EveryEvent} {
			if set {
				return optionf("export: %s applies to --table depth only, not %s", name, table)
			}
		}
	}
	if j.Interval != 0 && j.EveryEvent {
		return optionf("export: --interval and --every-event are exclusive")
	}
	if j.Levels != 0 && (j.Levels < 1 || j.Levels > MaxLevels) {
		return optionf("export: --levels %d not in 1..%d", j.Levels, MaxLevels)
	}
	if j.Interval < 0 {
		return optionf("export: --interval %s is not a positive duration (e.g. 100ms, 1s)", j.Interval)
	}
	switch ft {
	case FormatCSV, FormatTardis:
		if j.Exact {
			return optionf("export: --exact does not apply to --format %s (CSV is always exact decimal text)", ft)
		}
		if j.Compression != 0 {
			return optionf("export: --compression does not apply to --format %s (--compress or an --out ending in .gz or .zst compresses the file)", ft)
		}
		if j.Quality && ft == FormatCSV {
			return optionf("export: --quality-columns applies to --format tardis only (csv always carries the flags)")
		}
		if j.Quality && table != TableDepth && table != TableQuotes && table != TableTrades {
			return optionf("export: --quality-columns applies to --table depth, quotes or trades only")
		}
		if ft == FormatTardis && (table == TableEvents || table == TableInstruments) {
			return optionf("export: --table %s has no Tardis layout (use --format csv)", table)
		}
	case FormatArrow:
		if j.Compression == columnar.Snappy {
			return optionf("export: --compression snappy is not available for --format arrow (zstd or none)")
		}
		fallthrough
	default:
		if j.Quality {
			return optionf("export: --quality-columns applies to --format tardis only (Parquet and Arrow always carry the flags)")
		}
	}
	if j.TardisExch != "" && ft != FormatTardis {
		return optionf("export: --tardis-exchange applies to --format tardis only")
	}
	if j.TardisExch != "" {
		if _, ok := slices.BinarySearch(tardisExchanges, j.TardisExch); !ok {
			return optionf("export: --tardis-exchange %q is not an exchange id of Tardis' layout (%s)", j.TardisExch, strings.Join(tardisExchanges, ", "))
		}
	}
	if j.SplitBy != "" {
		if j.SplitBy != "instrument" {
			return optionf("export: --split-by %q: want instrument", j.SplitBy)
		}
		if table == TableEvents {
			return optionf("export: --table events has no instrument to --split-by")
		}
		if table == TableInstruments {
			return optionf("export: --table instruments is one small file: no --split-by (--instrument selects)")
		}
		if !strings.Contains(j.Out, "{instrument}") {
			return optionf("export: --split-by instrument needs {instrument} in --out, e.g. 'depth-{instrument}.parquet'")
		}
	} else if strings.Contains(j.Out, "{instrument}") {
		return optionf("export: --out %q names {instrument}: add --split-by instrument", j.Out)
	}
	return nil
}

// tableAndRawNames are the Table values: every export table and raw.
func tableAndRawNames() []string {
	var names []string
	for t := TableDepth; t <= TableInstruments; t++ {
		names = append(names, t.String())
	}
	return append(names, "raw")
}

// validateMore checks snapshots, buckets, whole-file compression and
// per-instrument output.
func (j *Job) validateMore() error {
	table, _ := ParseTable(j.Table)
	if j.Snapshots != 0 && table != TableBookChanges {
		return optionf("export: --snapshots applies to --table book_changes only")
	}
	if j.BucketTime != 0 && (table != TableDepth || j.Interval == 0) {
		return optionf("export: --bucket-time applies to --table depth with --interval only")
	}
	fromPath := interchange.CompressionFromPath(j.Out)
	if j.Compress == interchange.None {
		j.Compress = fromPath
	} else if fromPath != interchange.None && j.Compress != fromPath {
		return optionf("export: --compress %s contradicts --out %q", j.Compress, j.Out)
	}
	if j.SplitBy != "" && j.Out == "-" {
		return optionf("export: --split-by writes files, not standard output")
	}
	return nil
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

// Run validates the job and runs it. Each output is written to a temporary
// file beside its path and renamed into place only when the whole export
// succeeded, so a failed run never leaves a half-written file where a good
// one is expected. A replay that stepped over damage without SkipDamaged
// writes nothing and returns an error wrapping replayer.ErrDamaged (with
// the Summary that says where).
func Run(ctx context.Context, j *Job) (res *Result, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	j.files = nil
	var outs []*outFile
	defer func() {
		if err != nil {
			for _, f := range outs {
				f.abort()
			}
		}
	}()
	open := func(path string) (io.Writer, error) {
		f, err := j.createOut(path, j.SplitBy != "" || j.Native())
		if err != nil {
			return nil, err
		}
		outs = append(outs, f)
		return f.w, nil
	}
	res = &Result{Out: j.out()}
	if j.Table == "raw" {
		w, err := open(j.out())
		if err != nil {
			return nil, err
		}
		if err := j.exportRaw(w); err != nil {
			return nil, err
		}
	} else if err := j.exportTable(ctx, open, res); err != nil {
		return res, err
	}
	for _, f := range outs {
		if err := f.commit(); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (j *Job) logf(format string, a ...any) {
	if j.Log != nil {
		fmt.Fprintf(j.Log, format, a...)
	}
}

func fmtNs(ns int64) string {
	if ns == 0 {
		return "?"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

// sinkOptions are the Sink options the job asks for.
func (j *Job) sinkOptions(table Table, drv venue.Driver, ms []datasets.Manifest) []Option {
	var sopts []Option
	if j.Encoders > 0 {
		sopts = append(sopts, WithEncoders(j.Encoders))
	}
	if j.Compression != 0 {
		sopts = append(sopts, WithCompression(j.Compression))
	}
	if drv != nil {
		sopts = append(sopts, WithSource(drv))
	}
	sopts = append(sopts, WithDatasets(j.Datasets...))
	if table == TableDepth {
		if j.Levels != 0 {
			sopts = append(sopts, WithLevels(j.Levels))
		}
		if j.Interval > 0 {
			sopts = append(sopts, WithInterval(j.Interval))
		}
	}
	if j.Exact {
		sopts = append(sopts, WithExact())
	}
	if j.Quality {
		sopts = append(sopts, WithQualityColumns())
	}
	if j.Snapshots != 0 {
		sopts = append(sopts, WithSnapshots(j.Snapshots))
	}
	if j.BucketTime != 0 {
		sopts = append(sopts, WithBucketTime(j.BucketTime))
	}
	if j.TardisExch != "" {
		sopts = append(sopts, WithTardisExchange(j.TardisExch))
	}
	if len(j.Instruments) > 0 {
		sopts = append(sopts, WithInstruments(j.Instruments...))
	}
	if table == TableInstruments {
		var recorded []string
		for _, m := range ms {
			recorded = append(recorded, m.Instruments...)
		}
		sopts = append(sopts, WithRecordedInstruments(recorded...), WithWindow(j.FromNs, j.ToNs))
	}
	if !j.Shard.Whole() && !j.ShardByTime {
		sopts = append(sopts, WithShard(j.Shard))
	}
	return sopts
}

// tableSink is what exportTable drives: a Sink, a Split or a Partitioned.
type tableSink interface {
	replayer.Subscriber
	Close() error
	Rows() uint64
}

func (j *Job) exportTable(ctx context.Context, open func(path string) (io.Writer, error), res *Result) error {
	table, _ := ParseTable(j.Table)
	format, _ := ParseFormat(j.Format)
	if j.Native() {
		table = 0 // the format's own layout
	}
	var ropts []replayer.Option
	// The instruments table needs the REST bodies stored at the start of a
	// recording: it reads it all and keeps the rows in effect in the window.
	if j.ShardByTime {
		from, to, err := j.timeShard()
		if err != nil {
			return err
		}
		j.logf("export: shard %s by time covers [%s, %s): its books start empty there, each instrument's rows are exact from its first snapshot in the shard\n",
			j.Shard, fmtNs(from), fmtNs(to))
		ropts = append(ropts, replayer.WithWindow(from, to), replayer.WithWarmup(replayer.WarmupNone))
	} else if (j.FromNs != 0 || j.ToNs != 0) && table != TableInstruments && format != FormatNautilus {
		ropts = append(ropts, replayer.WithWindow(j.FromNs, j.ToNs))
	}
	// The sink is the only subscriber: once it cannot write (a full disk),
	// the rest of the replay would be wasted, so its error ends the run.
	ropts = append(ropts, replayer.WithSkipDamaged(j.SkipDamaged), replayer.WithStopOnSubscriberError(),
		replayer.WithReadAhead(j.ReadAhead))
	if !j.Shard.Whole() && !j.ShardByTime {
		ropts = append(ropts, replayer.WithShard(j.Shard)) // other shards' instruments are not even routed
	}
	r, err := replayer.New(j.Datasets, ropts...)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	ms := r.Manifests()
	venueName := ms[0].Venue
	for i, m := range ms[1:] {
		if m.Venue != venueName {
			return optionf("export: DATASET %s is %s but %s is %s; export one venue at a time",
				j.Datasets[i+1], m.Venue, j.Datasets[0], venueName)
		}
	}
	sopts := j.sinkOptions(table, r.Drivers()[0], ms)
	var sink tableSink
	var parts *partOut
	if format == FormatHftBacktest {
		if sink, err = j.hftBacktest(open); err != nil {
			return err
		}
	} else if format == FormatNautilus {
		if sink, err = j.nautilus(open); err != nil {
			return err
		}
	} else if j.PartitionBy != nil {
		if parts, err = j.newPartOut(); err != nil {
			return err
		}
		defer parts.abort()
		part := 0
		if !j.Shard.Whole() {
			part = j.Shard.K - 1
		}
		p, err := NewPartitioned(parts.create, parts.done, table, format, j.PartitionBy, part, sopts...)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		sink = p
	} else if j.SplitBy == "instrument" {
		files := j.instrumentFiles(open)
		split, err := NewSplit(func(v, inst string) (io.Writer, error) {
			return files(j.out(), v, inst)
		}, table, format, sopts...)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		sink = split
	} else {
		w, err := open(j.out())
		if err != nil {
			return err
		}
		s, err := New(w, table, format, sopts...)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		sink = s
	}
	r.Subscribe(replayer.Key{}, sink)
	var probe *filterProbe
	if len(j.Instruments) > 0 && j.Shard.Whole() { // other shards' instruments are not routed
		probe = newFilterProbe(j.Instruments)
		r.Subscribe(replayer.Key{}, probe)
	}

	stop := func() {}
	if j.Progress != nil {
		stop = j.Progress(r.StartNs(), r.EndNs(), r.Position)
	}
	sum, err := r.Run(ctx)
	stop()
	res.Summary = sum
	if errors.Is(err, replayer.ErrDamaged) {
		return err
	}
	var sf *replayer.SubscriberFailure
	if errors.As(err, &sf) {
		// The sink's own error (a *WriteError), typed, with where the
		// replay stopped.
		return fmt.Errorf("export: stopped at dataset %d seq %d, %s not written: %w", sf.Dataset, sf.Seq, j.out(), sf.Cause)
	}
	if err != nil {
		return fmt.Errorf("export: replay: %w", err)
	}
	if sum.Damaged != nil {
		j.logf("warning: damaged data skipped (--skip-damaged): %s\n", sum.Damaged)
	}
	if table == TableInstruments && j.FromNs != 0 && sum.Frames > 0 && j.FromNs > r.EndNs() {
		return nothingf("export: --from %s is past the last record (%s), nothing written", fmtNs(j.FromNs), fmtNs(r.EndNs()))
	}
	if j.FromNs != 0 && sum.Frames > 0 && sum.WarmupFrames == sum.Frames {
		return nothingf("export: --from %s is past the last record: all %d frames were warm-up, nothing written",
			fmtNs(j.FromNs), sum.Frames)
	}
	if probe != nil && probe.left > 0 {
		return nothingf("export: no instrument of the datasets matches --instrument %s: nothing written", strings.Join(probe.missing(j.Instruments), ", "))
	}
	if err := sink.Close(); err != nil {
		return err
	}
	res.Rows = sink.Rows()
	if n, ok := sink.(*Nautilus); ok {
		for _, line := range n.Problems() {
			j.logf("warning: nautilus: %s\n", line)
		}
	} else if p, ok := sink.(interface{ Problems() []string }); ok {
		for _, line := range p.Problems() {
			j.logf("warning: instruments: facts left out: %s\n", line)
		}
	}
	if parts != nil {
		if err := parts.finish(); err != nil {
			return err
		}
		res.Files = parts.written
	}
	return nil
}

func (j *Job) exportRaw(w io.Writer) error {
	f, _ := interchange.ParseFormat(j.Format)
	rd, err := datasets.Open(j.Datasets[0])
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer rd.Close()
	if j.FromNs != 0 {
		if err := rd.SeekTime(j.FromNs); err != nil {
			return fmt.Errorf("export: seek --from: %w", err)
		}
	}
	var src interchange.Source = rd
	if j.ToNs != 0 {
		src = &untilSource{Source: rd, toNs: j.ToNs}
	}
	// .gz and .zst compress as the path says (interchange's own compressor).
	if _, err := interchange.ExportRaw(w, src, f, interchange.WithCompression(interchange.CompressionFromPath(j.Out))); err != nil {
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
