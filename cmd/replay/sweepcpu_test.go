package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSweepCLI is the research speed target as a user meets it: the
// CPU time (user + system, from the process's rusage) of one `replay
// backtest --strategy mm` process against one process running a 20-point
// mm sweep (5 spreads × 4 sizes, default flags: summary only, the default
// workers) on the shipped Polymarket sample, alternated. cpu-ratio is the
// issue's figure (target: at most 3). Each process pays its start-up and
// its first decode as separate runs would; the in-process figure without
// them is backtest/research's BenchmarkSweepCPU.
//
//	go test -run X -bench SweepCLI -benchtime 10x ./cmd/replay/
func BenchmarkSweepCLI(b *testing.B) {
	sample := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	if _, err := os.Stat(sample); err != nil {
		b.Skip("no shipped sample")
	}
	cpu := func(args ...string) time.Duration {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "TAPEDECK_REPLAY_MAIN=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("replay %v: %v: %s", args, err, out)
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var one, sweep time.Duration
	for i := 0; i < b.N; i++ {
		one += cpu("backtest", sample, "--strategy", "mm", "--param", "spread=0.03", "--param", "size=10")
		sweep += cpu("backtest", sample, "--strategy", "mm", "--sweep", "spread=0.01:0.05:0.01", "--sweep", "size=5,10,20,40")
	}
	b.ReportMetric(float64(one.Microseconds())/1e3/float64(b.N), "one-cpu-ms")
	b.ReportMetric(float64(sweep.Microseconds())/1e3/float64(b.N), "sweep20-cpu-ms")
	b.ReportMetric(float64(sweep)/float64(one), "cpu-ratio")
}
