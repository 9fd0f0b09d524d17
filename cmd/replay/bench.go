package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/bench"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/units"
	"github.com/tapedeck/tapedeck/replayer"
)

// benchOptions are the parsed flags of `replay bench`.
type benchOptions struct {
	Paths []string
	Runs  int
	JSON  bool
	// SkipDamaged tolerates damaged datasets (replayer.WithSkipDamaged).
	SkipDamaged bool

	Out, ErrOut io.Writer
	TTY         bool // human table on Out, progress on ErrOut
}

func newBenchCmd(runF func(context.Context, *benchOptions) error) *cobra.Command {
	opts := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench DATASET...",
		Short: "Measure end-to-end replay throughput on your own recordings",
		Long: `Replay the datasets flat out --runs times through the same decoders and books
as every replay, into a subscriber that does nothing, and report the medians:
frames/s, MB/s of frame bytes, ns/frame, heap allocations per frame, CPU
seconds per recorded hour, and the process's peak RSS. It is the number to
quote for your data; make bench measures the shipped scenarios.

A table on a terminal, tab-separated values when piped, JSON with --json.
The replay digest is printed too: every run must produce the same one.`,
		Example: `  # Throughput of the shipped sample
  $ replay bench datasets/samples/polymarket

  # Two venues merged, five runs, as JSON
  $ replay bench --runs 5 --json datasets/samples/polymarket datasets/samples/hyperliquid`,
		Args: cli.AtLeastOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Runs < 1 {
				return cli.FlagErrorf("--runs %d: want at least 1", opts.Runs)
			}
			opts.Paths = args
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			opts.TTY = cli.IsTerminal(opts.Out)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runBench(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Runs, "runs", 3, "replays to measure (the medians are reported)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVar(&opts.SkipDamaged, "skip-damaged", false, skipDamagedUsage)
	return cmd
}

func runBench(ctx context.Context, opts *benchOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var progress func(int, bench.ReplayRun)
	if cli.IsTerminal(opts.ErrOut) {
		progress = func(i int, r bench.ReplayRun) {
			fmt.Fprintf(opts.ErrOut, "run %d/%d: %d frames in %v\n", i, opts.Runs, r.Frames, time.Duration(r.WallNs).Round(time.Millisecond))
		}
	}
	res, err := bench.MeasureReplay(ctx, opts.Paths, opts.Runs, progress, replayer.WithSkipDamaged(opts.SkipDamaged))
	if errors.Is(err, replayer.ErrDamaged) {
		return damagedError("bench", nil, err)
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	last := res.Runs[len(res.Runs)-1]
	rows := [][2]string{
		{"frames", strconv.FormatUint(last.Frames, 10)},
		{"bytes", strconv.FormatUint(last.Bytes, 10)},
		{"runs", strconv.Itoa(len(res.Runs))},
		{"frames_per_sec", strconv.FormatFloat(res.FramesPerSec, 'f', 0, 64)},
		{"mb_per_sec", strconv.FormatFloat(res.MBPerSec, 'f', 1, 64)},
		{"ns_per_frame", strconv.FormatFloat(res.NsPerFrame, 'f', 0, 64)},
		{"allocs_per_frame", strconv.FormatFloat(res.AllocsPerFrame, 'f', 3, 64)},
		{"cpu_s_per_recorded_hour", strconv.FormatFloat(res.CPUPerRecordedHour, 'f', 3, 64)},
		{"peak_rss_bytes", strconv.FormatInt(res.PeakRSS, 10)},
		{"digest", res.Digest},
	}
	if !opts.TTY {
		for i, r := range rows {
			sep := "\t"
			if i == len(rows)-1 {
				sep = "\n"
			}
			fmt.Fprint(opts.Out, r[0], sep)
		}
		for i, r := range rows {
			sep := "\t"
			if i == len(rows)-1 {
				sep = "\n"
			}
			fmt.Fprint(opts.Out, r[1], sep)
		}
		return nil
	}
	tw := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "frames\t%d (%s), %d runs\n", last.Frames, units.DecimalBytes(last.Bytes), len(res.Runs))
	fmt.Fprintf(tw, "throughput\t%.0f frames/s, %.1f MB/s\n", res.FramesPerSec, res.MBPerSec)
	fmt.Fprintf(tw, "per frame\t%.0f ns, %.3f allocations\n", res.NsPerFrame, res.AllocsPerFrame)
	if res.CPUPerRecordedHour > 0 {
		fmt.Fprintf(tw, "CPU\t%.3f s per recorded hour (%v recorded)\n", res.CPUPerRecordedHour, time.Duration(res.RecordedNs).Round(time.Second))
	}
	if res.PeakRSS > 0 {
		fmt.Fprintf(tw, "peak RSS\t%s\n", units.DecimalBytes(uint64(res.PeakRSS)))
	}
	fmt.Fprintf(tw, "digest\t%s\n", res.Digest)
	return tw.Flush()
}
