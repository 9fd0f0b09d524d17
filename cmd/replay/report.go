package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/report"
)

// reportOptions are the parsed flags of `replay report`.
type reportOptions struct {
	Paths       []string
	Out         string
	Title       string
	Buckets     int
	Charted     int
	Hash        hashFlags
	SkipDamaged bool
	Stdout      io.Writer
	ctx         context.Context
}

func newReportCmd(runF func(*reportOptions) error) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report DATASET... --out report.html",
		Short: "Write one self-contained HTML report of datasets: coverage, rates, books, losses",
		Long: `Write one HTML file describing the datasets, to read before trusting a
backtest on them: per dataset the figures "replay inspect --json" gives
(records, frames, disk and frame bytes, state, damage); messages per second;
a coverage timeline per connection and per instrument with every gap,
disconnect, reconnect, stall, overload and write error marked, and the
stretches where a book was invalid (after a loss, until its next snapshot);
the hash-check and top-of-book outcomes overall and per instrument; the mid
and spread of the busiest instruments (--charted) over time; and a table of
every loss with its times.

The file is self-contained: charts are inline SVG, there is no script, and
nothing is loaded from the network. The same datasets and flags give the
same bytes.

The books are rebuilt by one replay with the decoders every verb uses
(--hash-check as in "replay run"). Damage is stepped over and shown; the
report is written and the exit status is 3, unless --skip-damaged.`,
		Example: `  $ replay report datasets/samples/polymarket --out pm.html
  $ replay report datasets/samples/polymarket datasets/samples/hyperliquid --hash-check=all --out samples.html`,
		Args: cli.AtLeastOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths, o.Stdout, o.ctx = args, cmd.OutOrStdout(), cmd.Context()
			if o.Out == "" {
				return cli.FlagErrorf("--out FILE is required")
			}
			if o.Buckets < 10 || o.Buckets > 5000 {
				return cli.FlagErrorf("--buckets %d: want 10..5000", o.Buckets)
			}
			if o.Charted < 0 {
				return cli.FlagErrorf("--charted %d must not be negative", o.Charted)
			}
			if err := outsideInputs("report", o.Out, args); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runReport(o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Out, "out", "", "HTML `FILE` to write (required; replaced if it exists)")
	fs.StringVar(&o.Title, "title", "", "heading of the report (default: the dataset paths)")
	fs.IntVar(&o.Buckets, "buckets", report.DefaultBuckets, "time buckets of every timeline and chart")
	fs.IntVar(&o.Charted, "charted", report.DefaultCharted, "how many instruments (the busiest) get mid/spread charts; 0 none")
	o.Hash.add(fs)
	fs.BoolVar(&o.SkipDamaged, "skip-damaged", false, skipDamagedUsage)
	return cmd
}

func runReport(o *reportOptions) error {
	ctx := o.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	charted := o.Charted
	if charted == 0 {
		charted = -1
	}
	rep, err := report.Build(ctx, o.Paths, report.Options{Buckets: o.Buckets, Charted: charted, Title: o.Title,
		Replay: append(o.Hash.options(), replayer.WithSkipDamaged(true))})
	if err != nil {
		return err
	}
	// Written next to its destination and renamed: a reader never sees half a report.
	tmp, err := os.CreateTemp(filepath.Dir(o.Out), ".report-*.html")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(tmp, 1<<16)
	err = rep.WriteHTML(bw)
	err = errors.Join(err, bw.Flush(), tmp.Close())
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), o.Out)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(o.Stdout, "%s\t%d datasets\t%d instruments\t%d losses\n", o.Out, len(rep.Datasets), len(rep.Instruments), rep.Losses())
	if rep.ReplayErr != "" {
		return &cli.ProblemError{Err: fmt.Errorf("report written to %s, but the replay stopped early: %s", o.Out, rep.ReplayErr)}
	}
	if !o.SkipDamaged {
		for _, d := range rep.Datasets {
			if err := infoProblem(d.Info); err != nil {
				return &cli.ProblemError{Err: fmt.Errorf("report written to %s; %w", o.Out, err)}
			}
		}
	}
	return nil
}
