package research

import (
	"context"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/bench"
	"github.com/tapedeck/tapedeck/replayer"
)

// BenchmarkSweepCPU alternates one mm run and a 20-point mm sweep (5
// spreads × 4 sizes, one replay) on the shipped Polymarket sample and
// reports the process CPU time of each and their ratio (cpu-ratio: the
// issue's target is at most 3). mm-summary is the same sweep keeping
// summaries only (Job.SummaryOnly, what replay backtest --sweep does with
// no --out and no --report): it lets go of its orders and fills as it
// runs, and the collector has that much less to mark. sweep20-wall-ms is
// the sweep's wall time: mm/workers=2 against mm/workers=1 shows what a
// second worker buys (on a 2-core host, not reliably anything: see
// backtest.DefaultWorkers). In process and warmed up, it leaves out what
// every replay backtest process pays once (start-up, the first decode's
// allocations); cmd/replay's BenchmarkSweepCLI measures the two commands
// as a user runs them.
//
//	go test -run X -bench SweepCPU -benchtime 10x ./backtest/research/
func BenchmarkSweepCPU(b *testing.B) {
	for _, bc := range []struct {
		name        string
		strategy    string
		workers     int
		summaryOnly bool
	}{{"mm/workers=1", "mm", 1, false}, {"mm/workers=2", "mm", 2, false}, {"noop/workers=1", "noop", 1, false},
		{"mm-summary/workers=1", "mm", 1, true}} {
		workers := bc.workers
		b.Run(bc.name, func(b *testing.B) {
			axes := []Axis{{"spread", []string{"0.01", "0.02", "0.03", "0.04", "0.05"}}, {"size", []string{"5", "10", "20", "40"}}}
			if bc.strategy == "noop" {
				axes = []Axis{{"p", make([]string, 20)}}
				for i := range axes[0].Values {
					axes[0].Values[i] = string(rune('a' + i))
				}
			}
			pts, _ := Grid(axes)
			var one, sweep, wall time.Duration
			for i := 0; i < b.N; i++ {
				c0 := time.Duration(bench.CPUTime())
				given := backtest.Params{"spread": "0.03", "size": "10"}
				if bc.strategy == "noop" {
					given = nil
				}
				s, ps, _ := backtest.NewBuiltin(bc.strategy, given)
				if _, _, err := backtest.Run(context.Background(), []string{pmSample}, s, cfg(), backtest.RunOptions{Name: bc.strategy, Params: ps,
					Replay: []replayer.Option{replayer.WithHashCheck(true)}}); err != nil {
					b.Fatal(err)
				}
				c1, w1 := time.Duration(bench.CPUTime()), time.Now()
				j := &Job{Paths: []string{pmSample}, Strategies: []string{bc.strategy}, Points: pts, Config: cfg(),
					Replay: []replayer.Option{replayer.WithHashCheck(true)}, Workers: workers, SummaryOnly: bc.summaryOnly}
				if _, _, err := j.Execute(context.Background()); err != nil {
					b.Fatal(err)
				}
				one, sweep, wall = one+c1-c0, sweep+time.Duration(bench.CPUTime())-c1, wall+time.Since(w1)
			}
			b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "one-cpu-ms")
			b.ReportMetric(float64(sweep.Milliseconds())/float64(b.N), "sweep20-cpu-ms")
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "sweep20-wall-ms")
			b.ReportMetric(float64(sweep)/float64(one), "cpu-ratio")
		})
	}
}
