package backtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
)

// TestRunManySharedBooksAsAlone runs market makers whose latencies differ
// (none, a few ms, tens of ms, receive times only) in one RunMany, on one
// goroutine and on two, over a part of each shipped sample: every run's
// digest and fills are those of a Run of it alone. The runs share the
// exchange-side books (shared.go), and their orders arrive between
// different events, so each must meet the book as it stood then, not as
// another run's step through the event left it.
func TestRunManySharedBooksAsAlone(t *testing.T) {
	lat := []Config{
		{},
		{Latency: ConstantLatency{EntryNs: 2e6, AckNs: 1e6, CancelNs: 2e6}},
		{Latency: ConstantLatency{EntryNs: 50e6, AckNs: 30e6, CancelNs: 40e6}},
		{IgnoreExchangeTime: true, Latency: ConstantLatency{EntryNs: 5e6, AckNs: 5e6, CancelNs: 5e6}},
	}
	for _, c := range []struct {
		path   string
		params Params
		cash   int64
	}{{pmSample, Params{"spread": "0.01"}, 1000e10}, {hlSample, Params{"spread": "0.001", "size": "0.01", "instrument": "BTC"}, 1e6 * 1e10}} {
		m, err := datasets.ReadManifest(c.path)
		if err != nil {
			t.Fatal(err)
		}
		window := []replayer.Option{replayer.WithWindow(m.StartNs, m.StartNs+(m.EndNs-m.StartNs)/4)}
		var specs []Spec
		var want []string
		fills := 0
		for _, cfg := range lat {
			cfg.Cash = c.cash
			s, ps, err := NewBuiltin("mm", c.params)
			if err != nil {
				t.Fatal(err)
			}
			alone, _, err := Run(context.Background(), []string{c.path}, s, cfg, RunOptions{Name: "mm", Params: ps, Replay: window})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, fmt.Sprintf("%s %d fills %d orders %v", alone.Summary.Digest, len(alone.Fills), len(alone.Orders), alone.Errors))
			fills += len(alone.Fills)
			s, _, _ = NewBuiltin("mm", c.params)
			specs = append(specs, Spec{Strategy: s, Config: cfg, Name: "mm", Params: ps})
		}
		if fills == 0 {
			t.Fatalf("%s: no fills: the comparison proves little", c.path)
		}
		for workers := 1; workers <= 2; workers++ {
			for i := range specs {
				specs[i].Strategy, _, _ = NewBuiltin("mm", c.params)
			}
			res, _, err := RunMany(context.Background(), []string{c.path}, specs, ManyOptions{Replay: window, Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				got := fmt.Sprintf("%s %d fills %d orders %v", r.Summary.Digest, len(r.Fills), len(r.Orders), r.Errors)
				if got != want[i] {
					t.Errorf("%s, workers %d, run %d: %s; alone %s", c.path, workers, i, got, want[i])
				}
			}
		}
	}
}
