package serve

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// A client that subscribes without end is closed with 1008 and a reason
// once over the subscription cap, and one that floods frames once over the
// byte cap; a well-behaved client on the same server is served in full.
func TestServeClientLimits(t *testing.T) {
	frames := hlServeFrames(t)
	ds := serveFramesDataset(t, venue.Hyperliquid, frames)
	s, url := serveStart(t, []string{ds}, WithSpeed(replayer.SpeedMax), WithSubscribeWindow(0), WithClientLimits(50, 64<<10))

	// Too many subscriptions: 51 distinct coins.
	subs := serveDial(t, url)
	for i := 0; i <= 50; i++ {
		if err := subs.WriteMessage(websocket.TextMessage, []byte(serveSubMsg(fmt.Sprintf(`{"type":"trades","coin":"C%d"}`, i)))); err != nil {
			break // closed under us: fine
		}
	}
	if _, ce := serveReadAll(t, subs); ce == nil || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "over 50 subscriptions") {
		t.Fatalf("subscription flood: close %v", ce)
	}

	// Too many bytes: pings of 1 KiB each (unknown methods are answered with
	// an error frame; what counts is what the client sends).
	flood := serveDial(t, url)
	big := `{"method":"ping","pad":"` + strings.Repeat("x", 1000) + `"}`
	go func() {
		for i := 0; i < 200; i++ {
			if flood.WriteMessage(websocket.TextMessage, []byte(big)) != nil {
				return
			}
		}
	}()
	if _, ce := serveReadAll(t, flood); ce == nil || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "over 65536 bytes") {
		t.Fatalf("byte flood: close %v", ce)
	}

	// A client within the limits gets every BTC book.
	good := serveDial(t, url)
	serveSend(t, good, serveSubMsg(`{"type":"l2Book","coin":"BTC"}`))
	want := serveSelect(frames, func(f string) bool {
		return strings.Contains(f, `"channel":"l2Book"`) && strings.Contains(f, `"coin":"BTC"`)
	})
	var got []string
	for len(got) < len(want)+1 {
		got = append(got, serveReadOne(t, good))
	}
	if !slices.Equal(got[1:], want) {
		t.Fatalf("the good client got %d frames, want %d", len(got)-1, len(want))
	}
	if st := s.Stats(); st.OverLimit != 2 {
		t.Errorf("stats %+v, want 2 clients over a limit", st)
	}
}

// A paced replay of a recording with a loss followed by a month of silence
// and a 2-hour quiet stretch: the loss is not waited out at all, the quiet
// stretch only up to the max gap, and every frame is still sent.
func TestServeSkipsLossesAndCapsGaps(t *testing.T) {
	book := serveFixture(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1]
	sec := int64(time.Second)
	month := int64(30 * 24 * time.Hour)
	at := []int64{serveBaseNs, serveBaseNs + sec, serveBaseNs + sec + month, serveBaseNs + 2*sec + month + int64(2*time.Hour)}
	recs := []serveRec{
		{datasets.KindFrame, at[0], book},
		{datasets.KindFrame, at[1], book},
		{datasets.KindDisconnect, at[1], datasets.EncodeControl(datasets.Control{Code: 1006})},
		{datasets.KindFrame, at[2], book},
		{datasets.KindFrame, at[3], book},
	}
	ds := serveDataset(t, venue.Hyperliquid, recs)
	fs := &serveSleeper{}
	s, url := serveStart(t, []string{ds}, WithSpeed(1), WithSleeper(fs), WithCloseAtEnd(), WithSubscribeWindow(0), WithMaxGap(10*time.Second))
	c := serveDial(t, url)
	serveSend(t, c, serveSubMsg(`{"type":"l2Book","coin":"BTC"}`))
	got, _ := serveReadAll(t, c)
	if len(got) != 1+4 {
		t.Fatalf("%d messages, want the ack and 4 frames", len(got))
	}
	fs.mu.Lock()
	slept := slices.Clone(fs.slept)
	fs.mu.Unlock()
	if want := []int64{sec, 10 * sec}; !slices.Equal(slept, want) {
		t.Errorf("slept %v, want %v (a second, nothing across the loss, the 10 s max gap)", slept, want)
	}
	k := s.Stats().Skipped
	if k.Losses != 1 || k.LossNs != month || k.Capped != 1 || k.CappedNs != sec+int64(2*time.Hour)-10*sec {
		t.Errorf("skipped %+v", k)
	}
	if _, err := New([]string{ds}, WithSpeed(1e-7)); err == nil {
		t.Error("a speed of 1e-7x accepted")
	}
}

// TestServeMaxSpeedReleasesClientsThatLeave is issue 30 item 14: at --speed
// max the replay waits for its client, and one that left without reading
// (its socket closed with the send queue full) kept its replay waiting
// forever, with a segment file open and its buffers (150 such clients: 150
// open files, 427 MB). Every such client is now released: the server's
// active count returns to zero.
func TestServeMaxSpeedReleasesClientsThatLeave(t *testing.T) {
	book := serveFixture(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1]
	frames := make([][]byte, 4000) // more than the read-ahead and the socket buffers hold
	for i := range frames {
		frames[i] = book
	}
	ds := serveFramesDataset(t, venue.Hyperliquid, frames)
	s, url := serveStart(t, []string{ds}, WithSpeed(replayer.SpeedMax), WithSubscribeWindow(0))
	const clients = 20
	for range clients {
		c := serveDial(t, url)
		serveSend(t, c, serveSubMsg(`{"type":"l2Book","coin":"BTC"}`))
		// Read the ack only: the replay has started and fills the queue.
		serveReadOne(t, c)
		c.Close()
	}
	deadline := time.Now().Add(time.Minute)
	for s.Stats().Active != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d clients that left are still held a minute later", s.Stats().Active, clients)
		}
		time.Sleep(10 * time.Millisecond) // polling a count, not ordering events
	}
}
