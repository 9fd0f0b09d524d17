package recorder_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// A server that answers every connection with one data frame and hangs up:
// the frame counts as data, but a connection that short is no recovery, so
// the reconnect attempts keep counting up (and the backoff keeps growing)
// instead of starting over at the shortest delay every time. Every frame is
// still recorded, each connection's end too.
func TestOneFrameServerBacksOff(t *testing.T) {
	frame := []byte(`[{"event_type":"book","asset_id":"` + fakeexchange.PolymarketStreamAsset + `","market":"0x1","bids":[],"asks":[],"timestamp":"1700000000000","hash":"0"}]`)
	var dials atomic.Int32
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := up.Upgrade(w, req, nil)
		if err != nil {
			return
		}
		dials.Add(1)
		c.ReadMessage() // the subscribe frame
		c.WriteMessage(websocket.TextMessage, frame)
		c.Close()
	}))
	defer srv.Close()
	spec := recorder.Spec{Venue: "polymarket", Endpoint: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws/market",
		Instruments: []string{fakeexchange.PolymarketStreamAsset}, DisableRESTBooks: true}
	c := startCapture(t, spec, nil, recorder.WithBackoff(2*time.Millisecond, time.Minute))
	waitFor(t, "seven connections", func() bool { return dials.Load() >= 7 })
	recs := c.stop()
	checkOrder(t, recs)
	var attempts []int
	for _, r := range ofKind(recs, datasets.KindReconnect) {
		attempts = append(attempts, r.control(t).Attempt)
	}
	if len(attempts) < 6 {
		t.Fatalf("%d reconnect records:\n%s", len(attempts), describe(recs))
	}
	for i, a := range attempts {
		if a != i+1 {
			t.Fatalf("reconnect attempts %v: the backoff started over after a one-frame connection", attempts)
		}
	}
	frames := ofKind(recs, datasets.KindFrame)
	if got := len(frames); got < len(attempts) || got > int(dials.Load()) {
		t.Errorf("%d frames for %d connections", got, dials.Load())
	}
	for _, f := range frames {
		if string(f.Payload) != string(frame) {
			t.Fatalf("frame %q", f.Payload)
		}
	}
	if d := len(ofKind(recs, datasets.KindDisconnect)); d < len(attempts) {
		t.Errorf("%d disconnect records for %d reconnects", d, len(attempts))
	}
}

// The reconnect after a stall says why the connection was replaced (the
// watchdog's finding), not how the torn-down socket's reader ended.
func TestReconnectAfterStallNamesTheStall(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	c := startCapture(t, pmSpec(s, fakeexchange.PolymarketStreamAsset), nil, recorder.WithStallTimeout(200*time.Millisecond))
	waitFor(t, "data", func() bool { return len(s.Live()) == 1 && len(s.Live()[0].Sent()) > 20 })
	s.Stall(true)
	waitFor(t, "reconnect after the stall", func() bool { return len(s.Conns()) >= 2 })
	s.Stall(false)
	waitFor(t, "data again", func() bool { return len(s.Live()) == 1 && len(s.Live()[0].Sent()) > 20 })
	recs := c.stop()
	stalled := false
	for _, r := range recs {
		switch r.Kind {
		case datasets.KindStall:
			stalled = true
		case datasets.KindReconnect:
			if !stalled {
				continue
			}
			cc := r.control(t)
			if !strings.Contains(cc.Err, "watchdog: no data for") || strings.Contains(cc.Err, "closed network connection") {
				t.Fatalf("reconnect after the stall: %+v", cc)
			}
			return
		}
	}
	t.Fatalf("no reconnect after a stall:\n%s", describe(recs))
}
