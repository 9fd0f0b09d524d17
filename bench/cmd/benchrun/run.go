package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/internal/cli"
)

type runOptions struct {
	suiteFlags
	Count  int
	Report string // JSON report path; "" = OUT/report.json

	Stdout, Stderr io.Writer
}

func newRunCmd(runF func(*runOptions) error) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the suite; print the table and write the JSON report",
		Long: `Run builds the suite (go test -c ./bench), runs every scenario --count times
and prints, per scenario, the median and 95th percentile of its per-unit figures
(ns/frame, MB/s, allocs, …). The JSON report (scenario, unit, median, p95, runs,
samples, machine facts, commit, environment and suite fingerprints) goes to
--report, by default bench/out/report.json; the raw go test output beside it.`,
		Example: `  benchrun run
  benchrun run --bench 'Peer|Stream' --count 10
  benchrun run --frames 1000000 --bench 'Replay|Scale'`,
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
			return runRun(opts)
		},
	}
	opts.register(cmd, ".")
	cmd.Flags().IntVar(&opts.Count, "count", 5, "runs per scenario")
	cmd.Flags().StringVar(&opts.Report, "report", "", "JSON report path (default OUT/report.json)")
	return cmd
}

func runRun(opts *runOptions) error {
	e, err := newEnv(opts.Stderr)
	if err != nil {
		return err
	}
	r, _, err := e.measure(&opts.suiteFlags, opts.Count, "current", "raw.txt")
	if err != nil {
		return err
	}
	path := opts.Report
	if path == "" {
		path = filepath.Join(e.abs(opts.OutDir), "report.json")
	}
	if err := r.WriteFile(path); err != nil {
		return err
	}
	if err := printReport(opts.Stdout, r, cli.IsTerminal(opts.Stdout)); err != nil {
		return err
	}
	fmt.Fprintf(opts.Stderr, "report: %s (%d scenarios × units, %s, %d cores, %s, commit %s)\n",
		path, len(r.Scenarios), r.Env.CPU, r.Env.Cores, r.Env.GoVersion, orUnknown(r.Commit))
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
