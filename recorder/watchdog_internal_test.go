package recorder

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/venue"
)

// handClock is a clock that moves only when the test says.
type handClock struct {
	base time.Time
	n    atomic.Int64
}

func (c *handClock) Now() time.Time                                     { return c.base.Add(time.Duration(c.n.Load())) }
func (c *handClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }
func (c *handClock) advance(d time.Duration)                            { c.n.Add(int64(d)) }

// TestInstrumentStallNeedsOthersData: the instrument watchdog judges an
// instrument's silence against frames the reader processed for others, not
// the clock alone. A stretch in which no frame at all is processed (a
// silent venue, or a recorder starved of CPU whose frames wait unread) is
// no evidence against any instrument — nor is the first of the backlog read
// after it — while an instrument silent as others keep flowing is still
// declared stalled, alone.
func TestInstrumentStallNeedsOthersData(t *testing.T) {
	const inst = 300 * time.Millisecond
	clock := &handClock{base: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	r, err := New(Spec{Venue: "hyperliquid", Instruments: []string{"l2Book@BTC", "l2Book@ETH"}},
		WithClock(clock), WithStallTimeout(time.Hour), WithInstrumentStallTimeout(inst))
	if err != nil {
		t.Fatal(err)
	}
	r.q = newQueue(16, 1<<20, clock.Now())
	r.wctx, r.runCtx = context.Background(), context.Background()
	r.w = newWriter(r, &nopSink{}, r.q)
	r.assigned = map[string]*slot{}
	s := &slot{r: r, id: 1, cm: r.m.conn(1), items: []string{"l2Book@BTC", "l2Book@ETH"}, pending: map[string]pendingSub{}}
	s.touchFn = s.touch
	s.buildWatch()
	now := s.mono()
	s.lastData.Store(now)
	s.flowSince.Store(now)
	s.lastFrame = now

	var btc []byte
	for _, f := range fixtureLines(t, "arbitrage_observatory_probe_2026-09_core.ndjson") {
		if c, _ := r.p.Scan(f, func(_, _ []byte) {}); c == venue.FrameData && bytes.Contains(f, []byte(`"channel":"l2Book"`)) && bytes.Contains(f, []byte(`"coin":"BTC"`)) {
			btc = f
			break
		}
	}
	if btc == nil {
		t.Fatal("no BTC l2Book frame in the fixture")
	}
	eth := bytes.ReplaceAll(btc, []byte(`"coin":"BTC"`), []byte(`"coin":"ETH"`))
	feed := func(f []byte) {
		s.handle(append(r.q.getBuf(), f...), false, clock.Now())
		for len(r.q.ch) > 0 {
			if err := r.w.take(<-r.q.ch); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(when string, want ...string) {
		t.Helper()
		c, stalled := s.checkStall()
		if len(want) == 0 {
			if stalled {
				t.Errorf("%s: stall %q on %v, want none", when, c.Text, c.Instruments)
			}
			return
		}
		if !stalled || len(c.Instruments) != len(want) || c.Instruments[0] != want[0] {
			t.Errorf("%s: stall %v on %v, want one on %v", when, stalled, c.Instruments, want)
		}
	}

	// Both flow.
	for range 5 {
		feed(btc)
		feed(eth)
		clock.advance(50 * time.Millisecond)
	}
	check("both flowing")

	// Nothing processed for ten instrument stall timeouts.
	clock.advance(10 * inst)
	check("no frame processed")
	// The reader catches up: the backlog's first frame is BTC's, ETH's is
	// still unread. The starved stretch is no evidence against ETH.
	feed(btc)
	check("first frame after the starved stretch")
	feed(eth)
	check("backlog read")

	// Now ETH goes silent while BTC keeps flowing: a stall on ETH alone,
	// once BTC has flowed for the timeout after ETH's last frame.
	for elapsed := time.Duration(0); elapsed < inst; elapsed += 50 * time.Millisecond {
		clock.advance(50 * time.Millisecond)
		feed(btc)
		if elapsed+50*time.Millisecond < inst {
			check("ETH silent for less than the timeout")
		}
	}
	check("ETH silent while BTC flows", "l2Book@ETH")
}
