package recorder_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// TestWithClock records from the test exchange on an injected clock that
// moves 1 µs per reading: every record and the manifest's start are on that
// clock, and the record an acknowledgement causes (KindSubscribed) carries
// the receive time of the acknowledging frame, not a later reading.
func TestWithClock(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var n atomic.Int64
	clock := func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Microsecond) }
	c := startCapture(t, hlSpec(s, []string{"l2Book", "trades"}, "BTC", "ETH"), nil, recorder.WithClock(clock))
	waitFor(t, "100 frames", func() bool { return sentTotal(s) >= 100 })
	recs := c.stop()
	end := clock().UnixNano()

	m, err := datasets.ReadManifest(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.MonoBaseWallNs <= base.UnixNano() || m.StartNs < m.MonoBaseWallNs || m.StartNs >= end {
		t.Fatalf("manifest start %d, mono base %d: not on the clock (%d..%d)", m.StartNs, m.MonoBaseWallNs, base.UnixNano(), end)
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
	if acks != 4 {
		t.Errorf("%d acknowledgement records, want one per subscription (4)\n%s", acks, describe(recs))
	}
}
