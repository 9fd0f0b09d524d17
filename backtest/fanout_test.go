package backtest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
)

// panicAt is a market maker whose strategy panics at its n-th book event:
// the engine isolates it, and the other runs of the same fan-out go on.
type panicAt struct {
	Strategy
	n, seen int
}

func (p *panicAt) OnEvent(ctx *Context, e *feed.Event) {
	if e.Channel == feed.ChannelBook {
		if p.seen++; p.seen == p.n {
			panic("boom")
		}
	}
	p.Strategy.OnEvent(ctx, e)
}

// TestRunManyWorkersAgree steps the same runs on 1 to 5 goroutines over the
// first third of the Polymarket sample: every run's digest, fills and
// errors are the same whatever the split, a strategy panicking on a worker
// goroutine stops its run only. Run it with -race -cpu 1,2,4: the hand-off between
// the replay's goroutine and the workers is what it checks.
func TestRunManyWorkersAgree(t *testing.T) {
	m, err := datasets.ReadManifest(pmSample)
	if err != nil {
		t.Fatal(err)
	}
	window := replayer.WithWindow(m.StartNs, m.StartNs+(m.EndNs-m.StartNs)/3)
	specs := func() []Spec {
		var out []Spec
		for i, spread := range []string{"0.01", "0.02", "0.03", "0.04", "0.05"} {
			s, ps, err := NewBuiltin("mm", Params{"spread": spread})
			if err != nil {
				t.Fatal(err)
			}
			if i == 3 {
				s = &panicAt{Strategy: s, n: 500}
			}
			out = append(out, Spec{Strategy: s, Config: Config{Cash: 1000e10, Latency: ConstantLatency{EntryNs: 5e6, AckNs: 5e6, CancelNs: 5e6}},
				Name: "mm", Params: ps})
		}
		return out
	}
	summary := func(r *Result) string {
		return fmt.Sprintf("%s %d fills %d orders %d errors", r.Summary.Digest, len(r.Fills), len(r.Orders), len(r.Errors))
	}
	var want []string
	for workers := 1; workers <= 5; workers++ {
		res, _, err := RunMany(context.Background(), []string{pmSample}, specs(), ManyOptions{Replay: []replayer.Option{window}, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			got := summary(r)
			if workers == 1 {
				want = append(want, got)
				var se *StrategyError
				if i == 3 && (len(r.Errors) == 0 || !errors.As(r.Errors[0], &se)) {
					t.Fatalf("run 3 did not stop at its panic: %s", got)
				}
				if i != 3 && len(r.Fills) == 0 {
					t.Fatalf("run %d made no fill: the comparison proves little", i)
				}
				continue
			}
			if got != want[i] {
				t.Fatalf("workers %d, run %d: %s; on one goroutine %s", workers, i, got, want[i])
			}
		}
	}
}

// TestDefaultWorkers: a second worker only from 8 runs up and with a third
// core for the replay's own goroutines; on 2 cores it costs more than it
// saves, so the default never asks for it there.
func TestDefaultWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ procs, runs, want int }{
		{1, 20, 1}, {2, 20, 1}, {2, 1000, 1}, {3, 7, 1}, {3, 8, 2}, {8, 20, 2},
	} {
		runtime.GOMAXPROCS(c.procs)
		if got := DefaultWorkers(c.runs); got != c.want {
			t.Errorf("GOMAXPROCS %d, %d runs: %d workers, want %d", c.procs, c.runs, got, c.want)
		}
	}
}
