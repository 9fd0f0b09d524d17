package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// gateBench is the default scenario set of the gate: the decode, replay and
// storage paths, whose figures are stable from run to run. The latency tails
// of the concurrent scenario, the child-process scale runs and the slow
// exports are left to make bench.
const gateBench = "^Benchmark(Peer|Stream|Decode|Real|Replay|DatasetRead)$"

type baselineOptions struct {
	suiteFlags
	Count int

	Stdout, Stderr io.Writer
}

func newBaselineCmd(runF func(*baselineOptions) error) *cobra.Command {
	opts := &baselineOptions{}
	cmd := &cobra.Command{
		Use:   "baseline",
		Short: "Record this machine's baseline for the gate",
		Long: `Baseline builds the suite from the current tree into OUT/baseline.test and
records its report in OUT/baseline.json. The gate later runs that binary and a
build of the tree of its day in alternating rounds. Record the baseline on the
machine that runs the gate: the gate refuses a baseline from another
environment (CPU, cores, Go version, OS/arch) or another suite.`,
		Example: `  benchrun baseline
  benchrun baseline --bench 'Peer' --count 3`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			if opts.Count < 1 {
				return cli.FlagErrorf("--count %d: want at least 1", opts.Count)
			}
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if runF != nil {
				return runF(opts)
			}
			return runBaseline(opts)
		},
	}
	opts.register(cmd, gateBench)
	cmd.Flags().IntVar(&opts.Count, "count", 3, "runs per scenario")
	return cmd
}

func runBaseline(opts *baselineOptions) error {
	e, err := newEnv(opts.Stderr)
	if err != nil {
		return err
	}
	r, bin, err := e.measure(&opts.suiteFlags, opts.Count, "baseline", "baseline-raw.txt")
	if err != nil {
		return err
	}
	path := filepath.Join(e.abs(opts.OutDir), "baseline.json")
	if err := r.WriteFile(path); err != nil {
		return err
	}
	if err := printReport(opts.Stdout, r, cli.IsTerminal(opts.Stdout)); err != nil {
		return err
	}
	fmt.Fprintf(opts.Stderr, "baseline: %s and %s (commit %s)\n", path, bin, orUnknown(r.Commit))
	return nil
}
