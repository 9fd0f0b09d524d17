package backtest

import (
	"context"
	"syscall"
	"testing"

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
			cpu0 := cpuNs()
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
			b.ReportMetric(float64(cpuNs()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuNs is the process's user + system CPU time so far.
func cpuNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
