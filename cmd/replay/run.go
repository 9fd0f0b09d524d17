package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
)

// warmupUsage is the help of --warmup.
const warmupUsage = "with --from: full (read from the start so the books are exact in the window), none (read from the block holding --from: books start empty and are valid from each instrument's next snapshot), auto (full for local datasets, none for s3://)"

// runOptions are the parsed flags of `replay run`.
type runOptions struct {
	Paths        []string
	FromNs, ToNs int64 // 0 = open
	Speed        replayer.Speed
	MaxGap       time.Duration
	JSON         bool
	Hash         hashFlags
	SkipDamaged  bool
	AllowRejects bool // exit 0 despite rejected frames
	Warmup       replayer.Warmup
	ReadAhead    int // blocks decompressed ahead per dataset (0: sequential)

	Out, ErrOut io.Writer
	Progress    bool // a progress bar on ErrOut
}

func newRunCmd(runF func(context.Context, *runOptions) error) *cobra.Command {
	opts := &runOptions{}
	var from, to, speed, warmup string
	cmd := &cobra.Command{
		Use:   "run DATASET...",
		Short: "Replay datasets through the books and print a summary",
		Long: `Replay one or more datasets in time order through the same venue decoders and
books as live capture, then print what happened: frames, events by type,
instruments, gaps and other losses, hash and top-of-book checks, crossed
batches, throughput and the replay digest. The same datasets and flags always
give the same digest, so two runs or two machines can be compared.

Times (--from, --to) are RFC 3339 ("2026-09-24T10:00:00Z"), unix milliseconds
(13 digits), unix nanoseconds (19 digits), or a duration after the start of
the recording ("+90s", "+5m"). The window is [from, to): records before
--from are applied to the books without being reported, so the books are
exact from the first reported event on.

A frame the decoder rejects (malformed, or a value outside the venue's
domain) changes no level; the books it would have changed are invalid until
their next snapshot. Independent messages of one frame (each book of an
initial dump, each summary of a REST /books body) stand alone. Rejected
frames and REST bodies are listed in the summary and make the command exit 3
unless --allow-rejects is given.`,
		Example: `  # Replay a recording flat out and print the summary
  $ replay run datasets/samples/polymarket

  # The same as JSON, for scripts
  $ replay run --json datasets/samples/polymarket

  # Ten seconds from one minute in, paced at ten times wire speed
  $ replay run --from +60s --to +70s --speed 10x datasets/samples/polymarket

  # Two venues merged in time order
  $ replay run datasets/samples/polymarket datasets/samples/hyperliquid`,
		Args: cli.AtLeastOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			opts.Progress = cli.IsTerminal(opts.ErrOut)
			var err error
			if opts.Speed, err = replayer.ParseSpeed(speed); err != nil {
				return cli.FlagErrorf("--speed: %v", err)
			}
			if opts.FromNs, opts.ToNs, err = parseWindow(args, from, to); err != nil {
				return err
			}
			if opts.Warmup, err = replayer.ParseWarmup(warmup); err != nil {
				return cli.FlagErrorf("--warmup: %v", err)
			}
			if opts.MaxGap < 0 {
				return cli.FlagErrorf("--max-gap %v is negative", opts.MaxGap)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "start of the window (`T`: "+cli.TimeSyntax+")")
	cmd.Flags().StringVar(&to, "to", "", "end of the window, exclusive (`T`, as --from)")
	cmd.Flags().StringVar(&warmup, "warmup", "auto", warmupUsage)
	cmd.Flags().StringVar(&speed, "speed", "max", "pacing: max, or 0.01x to 100000x: 1x (wire speed), 10x, 0.5x, …; the time around recorded losses is skipped at once")
	cmd.Flags().DurationVar(&opts.MaxGap, "max-gap", replayer.DefaultMaxGap, "paced replays: wait at most this much recorded time between two records (0: wait every stretch out)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the summary as JSON")
	cmd.Flags().BoolVar(&opts.SkipDamaged, "skip-damaged", false, skipDamagedUsage)
	cmd.Flags().BoolVar(&opts.AllowRejects, "allow-rejects", false, "exit 0 even if the decoder rejected frames or REST bodies (they are still listed)")
	opts.Hash.add(cmd.Flags())
	addReadAheadFlag(cmd, &opts.ReadAhead)
	return cmd
}

func runRun(ctx context.Context, opts *runOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	r, err := replayer.New(opts.Paths, append(opts.Hash.options(), replayer.WithWindow(opts.FromNs, opts.ToNs),
		replayer.WithSpeed(opts.Speed), replayer.WithMaxGap(opts.MaxGap), replayer.WithSkipDamaged(opts.SkipDamaged), replayer.WithWarmup(opts.Warmup),
		replayer.WithReadAhead(opts.ReadAhead))...)
	if err != nil {
		return err
	}
	// An interrupt (Ctrl-C on a paced replay) stops the replay and still
	// prints the summary so far.
	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt)
	defer cancel()
	stop := startProgress(r, opts.Progress, opts.ErrOut, opts.FromNs, opts.ToNs)
	s, err := r.Run(ctx)
	stop()
	damaged := errors.Is(err, replayer.ErrDamaged)
	if s == nil || (err != nil && !errors.Is(err, context.Canceled) && !damaged) {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		if perr := enc.Encode(s); perr != nil {
			return perr
		}
	} else if perr := printSummary(opts.Out, s); perr != nil {
		return perr
	}
	if damaged {
		return damagedError("replay", s, err)
	}
	if err != nil {
		return fmt.Errorf("the summary covers the replay so far: %w", err)
	}
	warnDamaged(opts.ErrOut, s)
	if opts.FromNs != 0 && s.Frames > 0 && s.WarmupFrames == s.Frames {
		// Every frame was before the window: nothing was replayed.
		return &cli.ProblemError{Err: fmt.Errorf("--from %s is past the last record: all %d frames were warm-up, nothing was replayed",
			fmtNs(opts.FromNs), s.Frames)}
	}
	return rejectProblem(s, opts.AllowRejects)
}

// rejectProblem is the exit policy for rejected data: the replay completes
// and the summary lists what was rejected, but a frame or REST body the
// decoder rejected is data the books do not reflect, so the command reports
// a problem (exit 3) unless --allow-rejects says the caller expects some.
func rejectProblem(s *replayer.Summary, allow bool) error {
	if allow || s.DecodeErrors == 0 && s.RESTUndecoded == 0 {
		return nil
	}
	return &cli.ProblemError{Err: fmt.Errorf("%d frames and %d REST bodies were rejected (%d messages, %d book invalidations); "+
		"see the summary, or pass --allow-rejects", s.DecodeErrors, s.RESTUndecoded, s.RejectedMessages, s.BooksInvalidated)}
}

// skipDamagedUsage is the help of every replaying verb's --skip-damaged.
const skipDamagedUsage = "tolerate damaged data (exit 0): the damage is always stepped over, reported and replayed as a gap (books invalid until the next snapshot); without this the exit status is 3"

// damagedError is the exit-3 error of a replay that stepped over damage
// without --skip-damaged.
func damagedError(what string, s *replayer.Summary, err error) error {
	if s != nil && s.Damaged != nil {
		err = fmt.Errorf("%s: damaged data: %s (\"replay verify\" lists it, \"replay repair\" makes the loss explicit on disk, --skip-damaged tolerates it)", what, s.Damaged)
	}
	return &cli.ProblemError{Err: err}
}

// warnDamaged tells stderr what a tolerated damage cost.
func warnDamaged(w io.Writer, s *replayer.Summary) {
	if s != nil && s.Damaged != nil && w != nil {
		fmt.Fprintf(w, "warning: damaged data skipped (--skip-damaged): %s\n", s.Damaged)
	}
}

// printSummary writes the human form of a Summary.
func printSummary(w io.Writer, s *replayer.Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var names []string
	for _, d := range s.Datasets {
		n := d.Path + " (" + d.Venue + ")"
		if d.Truncated != "" {
			n += " TRUNCATED: " + d.Truncated
		}
		names = append(names, n)
	}
	fmt.Fprintf(tw, "datasets\t%s\n", strings.Join(names, ", "))
	wall := time.Duration(s.WallNs)
	fmt.Fprintf(tw, "frames\t%d (%s) in %v: %.0f frames/s, %.1f MB/s\n",
		s.Frames, humanBytes(s.Bytes), wall.Round(time.Microsecond), s.FramesPerSec, s.MBPerSec)
	if s.WarmupFrames > 0 {
		fmt.Fprintf(tw, "warm-up\t%d frames before the window, applied silently\n", s.WarmupFrames)
	}
	if s.Warmup == "none" {
		fmt.Fprintf(tw, "warm-up\tnone: read from the block holding --from; books start empty there and each is valid from its next snapshot (%d updates before one)\n", s.Unsnapshotted)
	}
	fmt.Fprintf(tw, "fetched\t%s read from the datasets' files\n", humanBytes(uint64(s.BytesFetched)))
	fmt.Fprintf(tw, "events\t%s\n", countList(s.Events))
	fmt.Fprintf(tw, "instruments\t%d\n", s.Instruments)
	fmt.Fprintf(tw, "losses\t%s\n", countList(s.Losses))
	if s.Damaged != nil {
		fmt.Fprintf(tw, "DAMAGED\t%s\n", s.Damaged)
		for _, d := range s.Datasets {
			for _, dm := range d.Damage {
				fmt.Fprintf(tw, "\t%s\n", dm.String())
			}
		}
	}
	fmt.Fprintf(tw, "decode errors\t%d\n", s.DecodeErrors)
	printDecodeErrors(tw, s.FirstDecodeErrors)
	if s.RejectedMessages > 0 || s.BooksInvalidated > 0 {
		fmt.Fprintf(tw, "rejected\t%d messages; %d book invalidations (invalid until the next snapshot)\n",
			s.RejectedMessages, s.BooksInvalidated)
	}
	if s.RESTUndecoded > 0 {
		fmt.Fprintf(tw, "REST bodies rejected\t%d\n", s.RESTUndecoded)
		printDecodeErrors(tw, s.FirstRESTErrors)
	}
	switch s.HashMode {
	case "sampled":
		fmt.Fprintf(tw, "hash checks\t%d ok, %d mismatch, %d unverifiable of %d checked (sampled every %s of %d hashes)\n",
			s.HashOK, s.HashMismatch, s.HashUnverifiable, s.HashChecked, s.HashEvery, s.HashSeen)
	case "off":
		fmt.Fprintf(tw, "hash checks\toff\n")
	default:
		fmt.Fprintf(tw, "hash checks\t%d ok, %d mismatch, %d unverifiable of %d\n", s.HashOK, s.HashMismatch, s.HashUnverifiable, s.HashChecked)
	}
	fmt.Fprintf(tw, "top of book\t%d mismatches of %d checks\n", s.TopMismatch, s.TopChecked)
	fmt.Fprintf(tw, "crossed batches\t%d\n", s.CrossedBatches)
	if s.UnknownKinds > 0 || s.ControlErrors > 0 {
		fmt.Fprintf(tw, "skipped\t%d records of unknown kinds, %d bad control payloads\n", s.UnknownKinds, s.ControlErrors)
	}
	for _, f := range s.SubscriberFailures {
		fmt.Fprintf(tw, "subscriber failed\t#%d at dataset %d seq %d: %s\n", f.Subscriber, f.Dataset, f.Seq, f.Err)
	}
	if l := s.Lateness; l != nil {
		fmt.Fprintf(tw, "lateness (%s)\tp50 %v, p99 %v, max %v over %d dispatches\n", s.Speed,
			time.Duration(l.P50Ns), time.Duration(l.P99Ns), time.Duration(l.MaxNs), l.Count)
	}
	if k := s.Skipped; k != nil {
		fmt.Fprintf(tw, "not waited out\t%s\n", skippedText(k))
	}
	fmt.Fprintf(tw, "digest\t%s\n", s.Digest)
	return tw.Flush()
}

// skippedText says what recorded idle time a paced replay skipped.
func skippedText(k *replayer.Skipped) string {
	var parts []string
	if k.Losses > 0 {
		parts = append(parts, fmt.Sprintf("%d recorded losses skipped at once (%v of recorded time)", k.Losses, time.Duration(k.LossNs)))
	}
	if k.Capped > 0 {
		parts = append(parts, fmt.Sprintf("%d idle stretches cut to --max-gap (%v of recorded time)", k.Capped, time.Duration(k.CappedNs)))
	}
	return strings.Join(parts, "; ")
}

// printDecodeErrors lists errors one line each; an error of several
// rejected messages (one per line) is indented under its record.
func printDecodeErrors(tw io.Writer, errs []replayer.DecodeError) {
	for _, e := range errs {
		msg := strings.ReplaceAll(e.Err, "\n", "\n\t    ")
		fmt.Fprintf(tw, "\tdataset %d conn %d seq %d: %s\n", e.Dataset, e.Conn, e.Seq, msg)
	}
}

// countList formats counts as "a 1, b 2" in name order, or "none".
func countList(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// parseWindow resolves --from and --to against the datasets' start time.
func parseWindow(paths []string, from, to string) (fromNs, toNs int64, err error) {
	var start int64
	if strings.HasPrefix(from, "+") || strings.HasPrefix(to, "+") {
		if start, err = recordingStart(paths); err != nil {
			return 0, 0, err
		}
	}
	if from != "" {
		if fromNs, err = parseTime(from, start); err != nil {
			return 0, 0, cli.FlagErrorf("--from: %v", err)
		}
	}
	if to != "" {
		if toNs, err = parseTime(to, start); err != nil {
			return 0, 0, cli.FlagErrorf("--to: %v", err)
		}
	}
	if toNs != 0 && toNs <= fromNs {
		return 0, 0, cli.FlagErrorf("--to %s is not after --from %s", to, from)
	}
	return fromNs, toNs, nil
}

// recordingStart is the earliest manifest start of the datasets.
func recordingStart(paths []string) (int64, error) {
	var start int64
	for _, p := range paths {
		m, err := datasets.ReadManifest(p)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", p, err)
		}
		if m.StartNs != 0 && (start == 0 || m.StartNs < start) {
			start = m.StartNs
		}
	}
	return start, nil
}

// parseTime parses T in the grammar every command shares (cli.ParseTime),
// +DURATION after startNs.
func parseTime(s string, startNs int64) (int64, error) { return cli.ParseTime(s, startNs, true) }

// startProgress shows the replay's bar (cli.FollowTime) on a terminal,
// over the recorded span within [fromNs, toNs); stop ends it.
func startProgress(r *replayer.Replayer, on bool, w io.Writer, fromNs, toNs int64) (stop func()) {
	start, end := r.StartNs(), r.EndNs()
	if fromNs > start {
		start = fromNs
	}
	if toNs > 0 && (end == 0 || toNs < end) {
		end = toNs
	}
	return cli.FollowTime(on, w, "replay", start, end, r.Position)
}
