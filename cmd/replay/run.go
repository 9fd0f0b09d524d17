package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
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
	} else if perr := s.WriteTable(opts.Out); perr != nil {
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
