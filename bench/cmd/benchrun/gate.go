package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/bench"
	"github.com/tapedeck/tapedeck/internal/cli"
)

type gateOptions struct {
	suiteFlags
	Rounds     int
	PerRound   int
	CurrentBin string // a prebuilt suite binary to gate instead of building the tree
	Threshold  float64
	Confidence float64
	ForceEnv   bool
	ForceSuite bool

	Stdout, Stderr io.Writer
}

func (o *gateOptions) registerGate(cmd *cobra.Command) {
	cmd.Flags().Float64Var(&o.Threshold, "threshold", bench.DefaultThreshold, "slowdown that fails the gate (0.10 = 10%)")
	cmd.Flags().Float64Var(&o.Confidence, "confidence", bench.DefaultConfidence, "confidence level of the noise band")
	cmd.Flags().BoolVar(&o.ForceEnv, "force-env", false, "compare reports from different environments")
	cmd.Flags().BoolVar(&o.ForceSuite, "force-suite", false, "compare reports from different suites")
}

func (o *gateOptions) validateGate() error {
	if o.Threshold <= 0 || o.Threshold >= 10 {
		return cli.FlagErrorf("--threshold %v: want a fraction above 0, e.g. 0.10", o.Threshold)
	}
	if o.Confidence <= 0.5 || o.Confidence >= 1 {
		return cli.FlagErrorf("--confidence %v: want a level in (0.5, 1)", o.Confidence)
	}
	return nil
}

func (o *gateOptions) config() bench.GateConfig {
	return bench.GateConfig{Threshold: o.Threshold, Confidence: o.Confidence, ForceEnv: o.ForceEnv, ForceSuite: o.ForceSuite}
}

func newGateCmd(runF func(*gateOptions) error) *cobra.Command {
	opts := &gateOptions{}
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Fail when this build is slower than the recorded baseline",
		Long: `Gate builds the current tree and runs it and the baseline binary (see
benchrun baseline) in --rounds rounds over the baseline's scenarios, the two
binaries back to back on each scenario, so both see the same machine state; a round's figure is the best of
--per-round runs, as interference from other processes only ever adds time.
Per scenario it takes the ratio of each round's pair, their median, and a
distribution-free confidence band for that median. It fails (exit 3) only when a scenario's whole band is slower than
1+--threshold: noise widens the band and cannot fail the gate by itself.

A baseline recorded on another environment (CPU model, cores, Go version,
OS/arch) or from other scenario sources or inputs is a hard error (exit 1)
unless --force-env / --force-suite. Timing never gates make test.`,
		Example: `  benchrun gate
  benchrun gate --rounds 10 --threshold 0.05`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			if err := opts.validateGate(); err != nil {
				return err
			}
			if opts.PerRound < 1 {
				return cli.FlagErrorf("--per-round %d: want at least 1", opts.PerRound)
			}
			if opts.Rounds < 6 {
				return cli.FlagErrorf("--rounds %d: want at least 6 (fewer pairs cannot bound the median at 95%%)", opts.Rounds)
			}
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if runF != nil {
				return runF(opts)
			}
			return runGate(opts)
		},
	}
	opts.register(cmd, gateBench)
	opts.registerGate(cmd)
	cmd.Flags().IntVar(&opts.Rounds, "rounds", 10, "paired rounds of baseline and current (10 gives a 95% band that drops the extreme pair at each end)")
	cmd.Flags().IntVar(&opts.PerRound, "per-round", 3, "runs per binary in a round; the round keeps the best")
	cmd.Flags().StringVar(&opts.CurrentBin, "current", "", "gate this prebuilt suite binary (go test -c ./bench) instead of building the tree")
	return cmd
}

// gateReport is what gate writes to OUT/gate.json.
type gateReport struct {
	Baseline *bench.Report     `json:"baseline"`
	Current  *bench.Report     `json:"current"`
	Result   *bench.GateResult `json:"result"`
	Config   bench.GateConfig  `json:"config"`
}

func runGate(opts *gateOptions) error {
	e, err := newEnv(opts.Stderr)
	if err != nil {
		return err
	}
	out := e.abs(opts.OutDir)
	stored, err := bench.ReadReport(filepath.Join(out, "baseline.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no baseline in %s: record one on this machine with make bench-baseline", out)
		}
		return err
	}
	baseBin := filepath.Join(out, "baseline.test")
	if _, err := os.Stat(baseBin); err != nil {
		return fmt.Errorf("baseline binary: %w (re-record with make bench-baseline)", err)
	}
	// Refuse an incomparable baseline before spending minutes on rounds.
	probe, err := e.newReport(nil, &opts.suiteFlags, 0)
	if err != nil {
		return err
	}
	if _, err := bench.Gate(stored, probe, opts.config()); err != nil {
		return err
	}
	curBin := filepath.Join(out, "current.test")
	if opts.CurrentBin != "" {
		if opts.Tags != "" {
			return cli.FlagErrorf("--tags applies to a build of the tree; --current names a prebuilt binary")
		}
		curBin = e.abs(opts.CurrentBin)
	} else if err := e.build(curBin, opts.Tags); err != nil {
		return err
	}
	raw, err := os.Create(filepath.Join(out, "gate-raw.txt"))
	if err != nil {
		return err
	}
	defer raw.Close()
	// Interleave per scenario, not per suite: the two runs of a pair are
	// then seconds apart, so a burst of load from other processes hits both.
	names := scenarioNames(stored)
	if len(names) == 0 {
		return fmt.Errorf("baseline %s has no scenarios", filepath.Join(out, "baseline.json"))
	}
	baseS := map[string]map[string][]float64{}
	curS := map[string]map[string][]float64{}
	for round := 0; round < opts.Rounds; round++ {
		if e.tty {
			fmt.Fprintf(opts.Stderr, "round %d/%d\n", round+1, opts.Rounds)
		}
		for k, name := range names {
			order := []string{"baseline", "current"}
			if (round+k)%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, which := range order {
				fmt.Fprintf(raw, "# round %d %s %s\n", round+1, which, name)
				bin, dst := baseBin, baseS
				if which == "current" {
					bin, dst = curBin, curS
				}
				f := opts.suiteFlags
				f.Bench = scenarioPattern(name)
				s, err := e.run(bin, &f, opts.PerRound, raw)
				if err != nil {
					return err
				}
				merge(dst, best(s))
			}
		}
	}
	base, err := e.newReport(baseS, &opts.suiteFlags, opts.Rounds)
	if err != nil {
		return err
	}
	// The baseline binary ran here and now, but it was built from the
	// baseline's tree: keep its identity.
	base.Env, base.Suite, base.Commit, base.Paired = stored.Env, stored.Suite, stored.Commit, true
	cur, err := e.newReport(curS, &opts.suiteFlags, opts.Rounds)
	if err != nil {
		return err
	}
	cur.Paired = true
	res, err := bench.Gate(base, cur, opts.config())
	if err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(out, "gate.json"), gateReport{base, cur, res, opts.config()}); err != nil {
		return err
	}
	return finishGate(opts.Stdout, opts.Stderr, res, opts.Threshold)
}

// best reduces each unit's runs of one round to the best: the least time,
// the most throughput (the median for units that are not speeds).
func best(s map[string]map[string][]float64) map[string]map[string][]float64 {
	out := map[string]map[string][]float64{}
	for name, units := range s {
		out[name] = map[string][]float64{}
		for u, xs := range units {
			v := bench.Median(xs)
			switch bench.Direction(u) {
			case +1:
				v = slices.Min(xs)
			case -1:
				v = slices.Max(xs)
			}
			out[name][u] = []float64{v}
		}
	}
	return out
}

// scenarioNames returns the distinct scenarios of a report, in order.
func scenarioNames(r *bench.Report) []string {
	var names []string
	for _, s := range r.Scenarios {
		if len(names) == 0 || names[len(names)-1] != s.Name {
			names = append(names, s.Name)
		}
	}
	return names
}

// scenarioPattern returns the -test.bench pattern that selects exactly one
// scenario: go test matches each /-separated level of a name separately.
func scenarioPattern(name string) string {
	parts := strings.Split("Benchmark"+name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// merge appends the samples of one round.
func merge(dst, src map[string]map[string][]float64) {
	for name, units := range src {
		if dst[name] == nil {
			dst[name] = map[string][]float64{}
		}
		for u, xs := range units {
			dst[name][u] = append(dst[name][u], xs...)
		}
	}
}

func finishGate(stdout, stderr io.Writer, res *bench.GateResult, threshold float64) error {
	if err := printGate(stdout, res, cli.IsTerminal(stdout)); err != nil {
		return err
	}
	if res.Regressions > 0 {
		return &cli.ProblemError{Err: fmt.Errorf("%d scenario(s) slower than the baseline by more than %.0f%% across the whole noise band",
			res.Regressions, threshold*100)}
	}
	fmt.Fprintf(stderr, "gate passed: %d comparisons, no regression beyond %.0f%%\n", len(res.Comparisons), threshold*100)
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

type compareOptions struct {
	gateOptions
	Base, Current string
}

func newCompareCmd(runF func(*compareOptions) error) *cobra.Command {
	opts := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare BASELINE.json CURRENT.json",
		Short: "Apply the gate's test to two recorded reports",
		Long: `Compare applies the gate's test to two reports written by run, baseline or
gate, pairing their samples by run index. Exit 3 when a scenario regressed.`,
		Example: `  benchrun compare bench/out/baseline.json bench/out/report.json`,
		Args:    twoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validateGate(); err != nil {
				return err
			}
			opts.Base, opts.Current = args[0], args[1]
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if runF != nil {
				return runF(opts)
			}
			return runCompare(opts)
		},
	}
	opts.registerGate(cmd)
	return cmd
}

func runCompare(opts *compareOptions) error {
	base, err := bench.ReadReport(opts.Base)
	if err != nil {
		return err
	}
	cur, err := bench.ReadReport(opts.Current)
	if err != nil {
		return err
	}
	res, err := bench.Gate(base, cur, opts.config())
	if err != nil {
		return err
	}
	return finishGate(opts.Stdout, opts.Stderr, res, opts.Threshold)
}
