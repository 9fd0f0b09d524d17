package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/bench"
	"github.com/tapedeck/tapedeck/internal/cli"
)

func execute(t *testing.T, cmd *cobra.Command, args ...string) (int, string) {
	t.Helper()
	root := &cobra.Command{Use: "benchrun"}
	root.AddCommand(cmd)
	var errb bytes.Buffer
	root.SetOut(&errb)
	root.SetErr(&errb)
	return cli.Main(root, append([]string{cmd.Name()}, args...), &errb), errb.String()
}

func TestFlags(t *testing.T) {
	var gate *gateOptions
	gateCmd := func() *cobra.Command { return newGateCmd(func(o *gateOptions) error { gate = o; return nil }) }
	tests := []struct {
		name    string
		cmd     func() *cobra.Command
		args    []string
		code    int
		wantErr string
	}{
		{"run defaults", func() *cobra.Command { return newRunCmd(func(*runOptions) error { return nil }) }, nil, 0, ""},
		{"run count 0", func() *cobra.Command { return newRunCmd(func(*runOptions) error { return nil }) }, []string{"--count", "0"}, cli.ExitUsage, "--count 0"},
		{"run frames too small", func() *cobra.Command { return newRunCmd(func(*runOptions) error { return nil }) }, []string{"--frames", "10"}, cli.ExitUsage, "--frames 10"},
		{"gate defaults", gateCmd, nil, 0, ""},
		{"gate rounds 5", gateCmd, []string{"--rounds", "5"}, cli.ExitUsage, "--rounds 5"},
		{"gate threshold 0", gateCmd, []string{"--threshold", "0"}, cli.ExitUsage, "--threshold 0"},
		{"gate confidence 1", gateCmd, []string{"--confidence", "1"}, cli.ExitUsage, "--confidence 1"},
		{"compare needs two reports", func() *cobra.Command { return newCompareCmd(func(*compareOptions) error { return nil }) }, []string{"a.json"}, cli.ExitUsage, "needs BASELINE.json and CURRENT.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(bench.EnvFrames, "")
			code, out := execute(t, tt.cmd(), tt.args...)
			if code != tt.code || !strings.Contains(out, tt.wantErr) {
				t.Fatalf("exit %d, want %d; output %q, want %q", code, tt.code, out, tt.wantErr)
			}
		})
	}
	if gate == nil || gate.Rounds != 10 || gate.PerRound != 3 || gate.Threshold != bench.DefaultThreshold || gate.Bench != gateBench {
		t.Fatalf("gate defaults = %+v", gate)
	}
}

func TestCompareRecorded(t *testing.T) {
	dir := "../../testdata/reports/"
	code, out := execute(t, newCompareCmd(nil), dir+"aa-baseline.json", dir+"aa-current.json")
	if code != cli.ExitOK {
		t.Fatalf("A/A: exit %d\n%s", code, out)
	}
	code, out = execute(t, newCompareCmd(nil), dir+"slowed-baseline.json", dir+"slowed-current.json")
	if code != cli.ExitProblem || !strings.Contains(out, "REGRESSION") {
		t.Fatalf("slowed: exit %d, want %d\n%s", code, cli.ExitProblem, out)
	}
	code, out = execute(t, newCompareCmd(nil), dir+"aa-baseline.json", dir+"otherenv-current.json")
	if code != cli.ExitError || !strings.Contains(out, "different environments") {
		t.Fatalf("other env: exit %d, want %d\n%s", code, cli.ExitError, out)
	}
	code, _ = execute(t, newCompareCmd(nil), "--force-env", dir+"aa-baseline.json", dir+"otherenv-current.json")
	if code != cli.ExitOK {
		t.Fatalf("other env forced: exit %d", code)
	}
}

func TestScenarioPattern(t *testing.T) {
	p := scenarioPattern("Peer/polyfill/levels=1")
	if p != `^BenchmarkPeer$/^polyfill$/^levels=1$` {
		t.Fatalf("pattern %q", p)
	}
	// Each level must match its own name only.
	for i, part := range strings.Split(p, "/") {
		re := regexp.MustCompile(part)
		name := []string{"BenchmarkPeer", "polyfill", "levels=1"}[i]
		if !re.MatchString(name) || re.MatchString(name+"6") {
			t.Fatalf("level %d pattern %q", i, part)
		}
	}
}

func TestBest(t *testing.T) {
	got := best(map[string]map[string][]float64{"X": {
		"ns/frame": {30, 10, 20}, "MB/s": {1, 3, 2}, "allocs/op": {0, 4, 1},
	}})
	x := got["X"]
	if x["ns/frame"][0] != 10 || x["MB/s"][0] != 3 || x["allocs/op"][0] != 1 {
		t.Fatalf("best = %v", x)
	}
}
