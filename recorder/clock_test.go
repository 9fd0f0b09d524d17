package recorder_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// stepClock moves step (default 1 µs) per reading, and by advance; its
// tickers tick when the test says. Time on it passes with the recorder's
// own work, not the host's: a recorder starved of CPU for a second has aged
// nothing, so a watchdog on it finds only the silences the test makes.
type stepClock struct {
	base  time.Time
	step  time.Duration
	n     atomic.Int64 // ns since base
	mu    sync.Mutex
	ticks []chan time.Time
}

func (c *stepClock) Now() time.Time {
	return c.base.Add(time.Duration(c.n.Add(int64(max(c.step, time.Microsecond)))))
}

func (c *stepClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	c.ticks = append(c.ticks, ch)
	c.mu.Unlock()
	return ch, func() {}
}

// advance moves the clock on by d.
func (c *stepClock) advance(d time.Duration) { c.n.Add(int64(d)) }

// tick ticks the newest ticker (the live connection's heartbeat).
func (c *stepClock) tick() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ticks) == 0 {
		return false
	}
	c.ticks[len(c.ticks)-1] <- c.Now()
	return true
}

// TestWithClock records from the test exchange on an injected clock that
// moves 1 µs per reading: every record and the manifest's start are on that
// clock, the record an acknowledgement causes (KindSubscribed) carries the
// receive time of the acknowledging frame, not a later reading, and the
// heartbeat goes out when the clock's ticker ticks (never on the real
// clock: the ping interval of the loopback tests is 50 ms).
func TestWithClock(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	clock := &stepClock{base: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	c := startCapture(t, hlSpec(s, []string{"l2Book", "trades"}, "BTC", "ETH"), nil, recorder.WithClock(clock))
	waitFor(t, "100 frames", func() bool { return sentTotal(s) >= 100 })
	time.Sleep(150 * time.Millisecond) // three real ping intervals
	pings := func() int {
		n := 0
		for _, f := range s.Conns()[0].Received() {
			if string(f) == `{"method":"ping"}` {
				n++
			}
		}
		return n
	}
	if n := pings(); n != 0 {
		t.Fatalf("%d pings on the real clock", n)
	}
	for i := 1; i <= 2; i++ {
		if !clock.tick() {
			t.Fatal("the recorder made no ticker on its clock")
		}
		waitFor(t, "a ping per tick", func() bool { return pings() == i })
	}
	recs := c.stop()
	end := clock.Now().UnixNano()

	m, err := datasets.ReadManifest(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.MonoBaseWallNs <= clock.base.UnixNano() || m.StartNs < m.MonoBaseWallNs || m.StartNs >= end {
		t.Fatalf("manifest start %d, mono base %d: not on the clock (%d..%d)", m.StartNs, m.MonoBaseWallNs, clock.base.UnixNano(), end)
	}
	acks := 0
	for i, r := range recs {
		if r.WallNs < m.StartNs || r.WallNs >= end || r.MonoNs != r.WallNs-m.MonoBaseWallNs {
			t.Fatalf("record %d (%s) at wall %d mono %d: not on the clock (%d..%d)", r.Seq, r.Kind, r.WallNs, r.MonoNs, m.StartNs, end)
		}
		if r.Kind != datasets.KindSubscribed || r.control(t).Reason != "" || r.control(t).Text == "" {
			continue
		}
		acks++
		j := i - 1
		for j >= 0 && (recs[j].Kind != datasets.KindFrame || recs[j].Conn != r.Conn) {
			j--
		}
		if j < 0 || recs[j].WallNs != r.WallNs {
			t.Errorf("subscribed record %d (%s) at %d, its acknowledgement frame at %d", r.Seq, r.control(t).Text, r.WallNs, recs[max(j, 0)].WallNs)
		}
	}
	sent := 0
	for _, r := range ofKind(recs, datasets.KindSent) {
		if string(r.Payload) == `{"method":"ping"}` {
			sent++
		}
	}
	if sent != 2 {
		t.Errorf("%d ping records, want 2", sent)
	}
	if acks != 4 {
		t.Errorf("%d acknowledgement records, want one per subscription (4)\n%s", acks, describe(recs))
	}
}
