package research

import (
	"context"
	"runtime"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
)

// retainedPerPoint runs a points-point mm sweep over the first frac of the
// shipped Polymarket sample and returns the heap the finished sweep's runs
// hold, per point (live heap after a collection with the runs kept, less
// the live heap before), and the heap the sweep holds late in the run (at
// nine tenths of it), per point, likewise.
func retainedPerPoint(tb testing.TB, points int, frac float64, summaryOnly bool) (after, during float64) {
	tb.Helper()
	m, err := datasets.ReadManifest(pmSample)
	if err != nil {
		tb.Fatal(err)
	}
	to := m.StartNs + int64(float64(m.EndNs-m.StartNs)*frac)
	vals := make([]string, points)
	for i := range vals {
		vals[i] = ftoa(0.01 + 0.002*float64(i))
	}
	pts, err := Grid([]Axis{{"spread", vals}})
	if err != nil {
		tb.Fatal(err)
	}
	var before, end runtime.MemStats
	gc()
	runtime.ReadMemStats(&before)
	late := &lateHeap{atNs: m.StartNs + (to-m.StartNs)*9/10}
	// No blocks decompressed ahead: what the reader holds is then the same
	// at any point of the recording.
	j := &Job{Paths: []string{pmSample}, Strategies: []string{"mm"}, Axes: []string{"spread"}, Points: pts, Config: cfg(),
		Replay: []replayer.Option{replayer.WithWindow(m.StartNs, to), replayer.WithReadAhead(0)}, SummaryOnly: summaryOnly,
		Also: []feed.Subscriber{late}}
	runs, _, err := j.Execute(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	gc()
	runtime.ReadMemStats(&end)
	if runs[0].Metrics.Orders == 0 || late.heap == 0 {
		tb.Fatal("no orders: the comparison proves little")
	}
	runtime.KeepAlive(runs)
	return (float64(end.HeapAlloc) - float64(before.HeapAlloc)) / float64(points),
		(float64(late.heap) - float64(before.HeapAlloc)) / float64(points)
}

// lateHeap reads the live heap, after a collection, at the first event
// received at or after atNs.
type lateHeap struct {
	atNs int64
	heap uint64
}

func (p *lateHeap) OnEvent(ev *feed.Event) error {
	if p.heap == 0 && ev.RecvNs >= p.atNs {
		gc()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		p.heap = m.HeapAlloc
	}
	return nil
}

// gc collects twice: what sync.Pools hold survives one collection.
func gc() {
	runtime.GC()
	runtime.GC()
}

// TestSummaryOnlySweepMemoryPerPoint: what a finished summary-only sweep
// keeps per point does not grow with the recording's length (a third of
// the sample, then all of it: three times the orders, fills and equity
// samples), while full runs keep theirs (issue 28).
func TestSummaryOnlySweepMemoryPerPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four 8-point sweeps")
	}
	short, runShort := retainedPerPoint(t, 8, 1.0/3, true)
	long, runLong := retainedPerPoint(t, 8, 1, true)
	fullShort, fullRunShort := retainedPerPoint(t, 8, 1.0/3, false)
	fullLong, fullRunLong := retainedPerPoint(t, 8, 1, false)
	t.Logf("retained per point: summary only %.0f B (⅓ of the sample) → %.0f B (all of it); full %.0f → %.0f B", short, long, fullShort, fullLong)
	t.Logf("held per point late in the run: summary only %.0f B (⅓ of the sample) → %.0f B (all of it); full %.0f → %.0f B",
		runShort, runLong, fullRunShort, fullRunLong)
	// Full runs show the measure sees what runs keep: their orders, fills
	// and series grow with the length.
	if fullLong < 2*fullShort || fullLong < 100<<10 {
		t.Fatalf("full runs keep %.0f B per point over the sample, %.0f over a third of it: the measure is blind", fullLong, fullShort)
	}
	// A summary-only run keeps its summary (a few maps by instrument): a
	// few kB, whatever the length (a margin for the collector's noise).
	if long > short+8<<10 || long > 32<<10 {
		t.Fatalf("summary-only runs keep %.0f B per point over the sample, %.0f over a third of it", long, short)
	}
	// While they run, too: open orders, reports in flight and the fills'
	// digest records up to the 16 KiB they spill at, whatever the length.
	if fullRunLong < runShort+100<<10 || runLong > runShort+32<<10 {
		t.Fatalf("late in the run, per point: summary only %.0f B over the sample, %.0f over a third of it (full %.0f)", runLong, runShort, fullRunLong)
	}
}

// BenchmarkSweepMemory reports the heap a finished 20-point mm sweep keeps
// per point over a third of the shipped Polymarket sample and over all of
// it, summary-only and full, and the heap it holds per point late in the
// run:
//
//	go test -run X -bench SweepMemory -benchtime 1x ./backtest/research/
func BenchmarkSweepMemory(b *testing.B) {
	for _, c := range []struct {
		name        string
		summaryOnly bool
	}{{"summary-only", true}, {"full", false}} {
		b.Run(c.name, func(b *testing.B) {
			var short, long, runShort, runLong float64
			for range b.N {
				s, rs := retainedPerPoint(b, 20, 1.0/3, c.summaryOnly)
				l, rl := retainedPerPoint(b, 20, 1, c.summaryOnly)
				short, long, runShort, runLong = short+s, long+l, runShort+rs, runLong+rl
			}
			b.ReportMetric(short/float64(b.N), "B/point-third")
			b.ReportMetric(long/float64(b.N), "B/point-whole")
			b.ReportMetric(runShort/float64(b.N), "B/point-running-third")
			b.ReportMetric(runLong/float64(b.N), "B/point-running-whole")
		})
	}
}
