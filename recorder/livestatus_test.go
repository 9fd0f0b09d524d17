package recorder_test

import (
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// TestLiveStatusInstrumentStall: one Hyperliquid coin goes silent while the
// other flows; LiveStatus counts the instrument stall (and its gap and
// resubscribe) on that coin only, not on its connection or the other coin,
// and lists the stall among its events.
func TestLiveStatusInstrumentStall(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	// The watchdog's ages on a clock that moves 1 ms per reading: the
	// muted coin goes 300 of them without a frame while the other's frames
	// come a few readings apart, however long a loaded host leaves the
	// recorder waiting (on the real clock a 300 ms wait stalled both).
	c := startCapture(t, hlSpec(s, []string{"l2Book"}, "BTC", "ETH"), nil,
		recorder.WithStallTimeout(time.Hour), recorder.WithInstrumentStallTimeout(300*time.Millisecond),
		recorder.WithClock(&stepClock{base: time.Now(), step: time.Millisecond}))
	waitFor(t, "both books", func() bool {
		st := c.rec.LiveStatus()
		return len(st.Instruments) == 2 && st.Instruments[0].HasBook && st.Instruments[1].HasBook
	})
	s.Mute("ETH", true)
	var st *recorder.LiveStatus
	waitFor(t, "the stall on the status", func() bool {
		st = c.rec.LiveStatus()
		return len(st.Instruments) == 2 && st.Instruments[1].Stalls > 0 && st.Instruments[1].Resubscribes > 0
	})
	s.Mute("ETH", false)
	c.stop()
	btc, eth := st.Instruments[0], st.Instruments[1]
	if btc.Instrument != "BTC" || eth.Instrument != "ETH" {
		t.Fatalf("instruments %+v", st.Instruments)
	}
	if btc.Stalls != 0 || btc.Gaps != 0 || eth.Gaps < eth.Stalls {
		t.Errorf("BTC %+v\nETH %+v", btc, eth)
	}
	if len(st.Conns) != 1 || st.Conns[0].Stalls == 0 || st.Conns[0].Losses != 0 || st.Conns[0].State != "connected" {
		t.Errorf("connection %+v", st.Conns)
	}
	found := false
	for _, e := range st.Events {
		found = found || (e.Kind == "stall" && e.Loss && len(e.Instruments) == 1 && e.Instruments[0] == "l2Book@ETH")
	}
	if !found {
		t.Errorf("no ETH stall among the events %+v", st.Events)
	}
	after := c.rec.LiveStatus()
	if after.Conns[0].State != "closed" {
		t.Errorf("after the stop the connection is %q", after.Conns[0].State)
	}
}

// TestLiveStatusWithoutLiveEngine: with the live engine off the status still
// lists the planned instruments (without books) and the connection's
// frames, and says the engine is off.
func TestLiveStatusWithoutLiveEngine(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	c := startCapture(t, hlSpec(s, []string{"l2Book"}, "BTC", "ETH"), nil, recorder.WithLive(false))
	var st *recorder.LiveStatus
	waitFor(t, "frames", func() bool {
		st = c.rec.LiveStatus()
		return len(st.Conns) == 1 && st.Conns[0].Frames > 10
	})
	c.stop()
	if st.Live.On || len(st.Instruments) != 2 || st.Instruments[0].Instrument != "BTC" || st.Instruments[0].HasBook || st.Instruments[1].Conn != 1 {
		t.Errorf("live %+v instruments %+v", st.Live, st.Instruments)
	}
	if st.Conns[0].State != "connected" || st.Conns[0].Instruments != 2 || st.Stats.Frames < st.Conns[0].Frames {
		t.Errorf("connection %+v, stats %+v", st.Conns[0], st.Stats)
	}
}
