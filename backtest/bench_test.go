package backtest

import (
	"context"
	"testing"

	"github.com/tapedeck/tapedeck/bench"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
)

// BenchmarkBacktest compares, on the shipped Polymarket sample, a replay
// with a subscriber that does nothing (what `replay run` costs), the
// engine with the no-op strategy and with the example market maker. The
// targets are same-run ratios of CPU per run (cpu-ns/op): noop ≥ 90 % and
// mm ≥ 70 % of the replay's throughput (issue 31; benchstat over -count 6).
func BenchmarkBacktest(b *testing.B) {
	for _, c := range []struct {
		name string
		sub  func() (feed.Subscriber, func())
	}{
		{"replay", func() (feed.Subscriber, func()) {
			return feed.SubscriberFunc(func(*feed.Event) error { return nil }), func() {}
		}},
		{"noop", func() (feed.Subscriber, func()) {
			e := NewEngine(Noop{}, Config{Cash: 1000e10})
			return e, func() { e.Finish() }
		}},
		{"mm", func() (feed.Subscriber, func()) {
			s, _, err := NewBuiltin("mm", Params{"spread": "0.02"})
			if err != nil {
				b.Fatal(err)
			}
			e := NewEngine(s, Config{Cash: 1000e10})
			return e, func() { e.Finish() }
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var events uint64
			cpu0 := bench.CPUTime()
			for range b.N {
				r, err := replayer.New([]string{pmSample}, replayer.WithHashCheck(true))
				if err != nil {
					b.Fatal(err)
				}
				sub, done := c.sub()
				r.Subscribe(replayer.Key{}, sub)
				sum, err := r.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				done()
				events = sum.Records
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			// CPU time of the process per run: on a shared machine wall time
			// mostly measures the neighbours.
			b.ReportMetric(float64(bench.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkBacktestShare runs the three cases of BenchmarkBacktest in
// turn within each round (replay, noop, mm, replay, …), so that the
// neighbours' load on a shared machine falls on all three alike, and
// reports each one's process CPU per run and the engine's share of the
// replay's throughput, CPU per frame (replay-cpu / case-cpu: the targets
// are noop ≥ 0.90, mm ≥ 0.70; issue 31):
//
//	go test -run X -bench BacktestShare -benchtime 10x ./backtest
func BenchmarkBacktestShare(b *testing.B) {
	subs := []func() (feed.Subscriber, func()){
		func() (feed.Subscriber, func()) {
			return feed.SubscriberFunc(func(*feed.Event) error { return nil }), func() {}
		},
		func() (feed.Subscriber, func()) {
			e := NewEngine(Noop{}, Config{Cash: 1000e10})
			return e, func() { e.Finish() }
		},
		func() (feed.Subscriber, func()) {
			s, _, err := NewBuiltin("mm", Params{"spread": "0.02"})
			if err != nil {
				b.Fatal(err)
			}
			e := NewEngine(s, Config{Cash: 1000e10})
			return e, func() { e.Finish() }
		},
	}
	var cpu [3]int64
	for range b.N {
		for i, sub := range subs {
			c0 := bench.CPUTime()
			r, err := replayer.New([]string{pmSample}, replayer.WithHashCheck(true))
			if err != nil {
				b.Fatal(err)
			}
			s, done := sub()
			r.Subscribe(replayer.Key{}, s)
			if _, err := r.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			done()
			cpu[i] += bench.CPUTime() - c0
		}
	}
	for i, name := range []string{"replay", "noop", "mm"} {
		b.ReportMetric(float64(cpu[i])/1e6/float64(b.N), name+"-cpu-ms")
	}
	b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "noop-share")
	b.ReportMetric(float64(cpu[0])/float64(cpu[2]), "mm-share")
}
