package replayer

import (
	"context"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// WithWarmupREST: the REST bodies read before the window go to the hook,
// in order, with their venue and receive times; those inside the window
// are delivered as events, not to the hook; WarmupNone reads none before.
func TestWarmupREST(t *testing.T) {
	dir := writeDataset(t, venue.Polymarket, []rec{
		{datasets.KindRESTResponse, 0, 1000, `[{"conditionId":"0x1"}]`},
		{datasets.KindRESTResponse, 0, 2000, `[{"conditionId":"0x2"}]`},
		frame(1, 3000, "PONG"),
		{datasets.KindRESTResponse, 0, 4000, `[{"conditionId":"0x3"}]`},
		frame(1, 5000, "PONG"),
	})
	for _, c := range []struct {
		warmup Warmup
		want   []int64
	}{{WarmupFull, []int64{1000, 2000}}, {WarmupNone, nil}} {
		var got []int64
		var bodies []string
		r, err := New([]string{dir}, WithWindow(3500, 0), WithWarmup(c.warmup), WithWarmupREST(func(v string, rec *datasets.Record) {
			if v != venue.Polymarket || rec.Kind != datasets.KindRESTResponse {
				t.Errorf("hook got %s %s", v, rec.Kind)
			}
			got = append(got, rec.WallNs)
			bodies = append(bodies, string(rec.Payload))
		}))
		if err != nil {
			t.Fatal(err)
		}
		var delivered []int64
		r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
			if e.Kind == datasets.KindRESTResponse && (len(delivered) == 0 || delivered[len(delivered)-1] != e.RecvNs) {
				delivered = append(delivered, e.RecvNs) // its control event and its decoded events, if any
			}
			return nil
		}))
		if _, err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.want) || (len(got) > 0 && (got[0] != c.want[0] || got[1] != c.want[1] || bodies[1] != `[{"conditionId":"0x2"}]`)) {
			t.Fatalf("warmup %v: hook saw %v %q, want %v", c.warmup, got, bodies, c.want)
		}
		if len(delivered) != 1 || delivered[0] != 4000 {
			t.Fatalf("warmup %v: delivered REST bodies at %v, want [4000]", c.warmup, delivered)
		}
	}
}
