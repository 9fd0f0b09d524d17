package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/bench"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// resultsCommand is the command line RESULTS.md names as its generator.
const resultsCommand = "make bench-results"

type resultsOptions struct {
	suiteFlags
	Count  int
	Report string // an existing report to publish instead of running the suite
	Output string
	NoJS   bool

	Stdout, Stderr io.Writer
}

func newResultsCmd(runF func(*resultsOptions) error) *cobra.Command {
	opts := &resultsOptions{}
	cmd := &cobra.Command{
		Use:   "results",
		Short: "Run the suite and the SDK harness; regenerate bench/RESULTS.md",
		Long: `Results runs the whole suite (as benchrun run does, writing OUT/report.json)
and the Hyperliquid TypeScript SDK harness (bench/js/hl_sdk_bench.mjs, when node
and tests/js/node_modules are present) on the same frames, then writes
bench/RESULTS.md: our medians beside the peers' published figures and their
conditions, the SDK ratio, the tardis-dev section (from make bench-peers'
committed bench/RESULTS-peers.json, not run here), and every scenario. --report publishes an existing
report instead of running the suite.`,
		Example: `  benchrun results
  benchrun results --report bench/out/report.json`,
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
			return runResults(opts)
		},
	}
	opts.register(cmd, ".")
	cmd.Flags().IntVar(&opts.Count, "count", 5, "runs per scenario")
	cmd.Flags().StringVar(&opts.Report, "report", "", "publish this report instead of running the suite")
	cmd.Flags().StringVar(&opts.Output, "output", "bench/RESULTS.md", "file to write")
	cmd.Flags().BoolVar(&opts.NoJS, "no-js", false, "skip the Hyperliquid SDK harness")
	return cmd
}

func runResults(opts *resultsOptions) error {
	e, err := newEnv(opts.Stderr)
	if err != nil {
		return err
	}
	var r *bench.Report
	if opts.Report != "" {
		if r, err = bench.ReadReport(opts.Report); err != nil {
			return err
		}
	} else {
		ro := &runOptions{suiteFlags: opts.suiteFlags, Count: opts.Count, Stdout: io.Discard, Stderr: opts.Stderr}
		if err := runRun(ro); err != nil {
			return err
		}
		if r, err = bench.ReadReport(filepath.Join(e.abs(opts.OutDir), "report.json")); err != nil {
			return err
		}
	}
	var sdk *bench.SDKResult
	if !opts.NoJS {
		sdk, err = runSDK(e)
		if err != nil {
			fmt.Fprintf(opts.Stderr, "Hyperliquid SDK harness not run: %v\n", err)
		}
	}
	var buf bytes.Buffer
	if err := bench.WriteResults(&buf, r, sdk, resultsCommand); err != nil {
		return err
	}
	doc := buf.Bytes()
	// The tardis-dev section comes from make bench-peers' committed result.
	if p, err := bench.ReadPeersResult(filepath.Join(e.root, bench.PeersFile)); err == nil {
		if doc, err = bench.ReplaceBlock(doc, bench.PeersMarker, bench.PeersResultsSection(p, bench.PeersFile)); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out := e.abs(opts.Output)
	if err := os.WriteFile(out, doc, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(opts.Stderr, "wrote %s\n", out)
	return nil
}

// runSDK runs the Hyperliquid SDK harness on the l2Book peer frame.
func runSDK(e *env) (*bench.SDKResult, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(e.root, "tests/js/node_modules/@nktkas/hyperliquid")); err != nil {
		return nil, fmt.Errorf("SDK not installed (cd tests/js && npm ci): %w", err)
	}
	cmd := exec.Command(node, "bench/js/hl_sdk_bench.mjs", "bench/testdata/peers/hl_l2book/l2book_btc_20x2.json", "5")
	cmd.Dir = e.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, stderr.Bytes())
	}
	var r bench.SDKResult
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		return nil, fmt.Errorf("harness output: %w", err)
	}
	return &r, nil
}
