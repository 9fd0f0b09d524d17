package recorder_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

func pmSpec(s *fakeexchange.Server, ids ...string) recorder.Spec {
	return recorder.Spec{Venue: "polymarket", Endpoint: s.WSURL(), RESTEndpoint: s.RESTURL(), CLOBEndpoint: s.CLOBURL(),
		Instruments: ids}
}

func TestPolymarketByteIdentical(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	c := startCapture(t, pmSpec(s, fakeexchange.PolymarketStreamAsset, fakeexchange.PolymarketOtherAsset), nil)
	waitFor(t, "300 frames", func() bool { return sentTotal(s) >= 300 })
	recs := c.stop()
	checkOrder(t, recs)
	checkByteIdentical(t, s, recs, 0)

	// The subscribe frame is the documented one, recorded as sent before
	// the venue's answer.
	sent := ofKind(recs, datasets.KindSent)
	if len(sent) == 0 {
		t.Fatal("no sent records")
	}
	want := `{"assets_ids":["` + fakeexchange.PolymarketStreamAsset + `","` + fakeexchange.PolymarketOtherAsset +
		`"],"type":"market","custom_feature_enabled":true}`
	if string(sent[0].Payload) != want {
		t.Errorf("first sent frame\n got %s\nwant %s", sent[0].Payload, want)
	}
	if got := s.Conns()[0].Received()[0]; string(got) != want {
		t.Errorf("server received %s", got)
	}
	firstFrame := ofKind(recs, datasets.KindFrame)[0]
	if sent[0].Seq > firstFrame.Seq {
		t.Errorf("subscribe (seq %d) recorded after the first frame (seq %d)", sent[0].Seq, firstFrame.Seq)
	}
	if !bytes.HasPrefix(firstFrame.Payload, []byte(`[{"market"`)) {
		t.Errorf("first frame is not the initial dump: %.80s", firstFrame.Payload)
	}
	// Heartbeats went out as text PING and their PONGs are in the dataset.
	pings := 0
	for _, r := range sent {
		if string(r.Payload) == "PING" {
			pings++
		}
	}
	if pings == 0 {
		t.Error("no PING sent")
	}
	pongs := 0
	for _, r := range ofKind(recs, datasets.KindFrame) {
		if string(r.Payload) == "PONG" {
			pongs++
		}
	}
	if pongs == 0 {
		t.Error("no PONG recorded")
	}

	// Session records: connect, subscribed, graceful disconnect, clean close last.
	if n := len(ofKind(recs, datasets.KindConnect)); n != 1 {
		t.Errorf("%d connect records, want 1", n)
	}
	if u := ofKind(recs, datasets.KindConnect)[0].control(t).URL; u != s.WSURL() {
		t.Errorf("connect URL %q", u)
	}
	if n := len(ofKind(recs, datasets.KindSubscribed)); n != 1 {
		t.Errorf("%d subscribed records, want 1", n)
	}
	// The shutdown closes the connection cleanly, which is not a loss: no
	// disconnect, one clean close of the connection, then the recorder's.
	if dis := ofKind(recs, datasets.KindDisconnect); len(dis) != 0 {
		t.Errorf("disconnect records: %s", describe(dis))
	}
	cls := ofKind(recs, datasets.KindCleanClose)
	if len(cls) != 2 || cls[0].Conn != 1 || cls[0].control(t).Code != 1000 || cls[0].control(t).Reason != "shutdown" || cls[1].Conn != 0 {
		t.Errorf("clean close records: %s", describe(cls))
	}
	if last := recs[len(recs)-1]; last.Kind != datasets.KindCleanClose {
		t.Errorf("last record is %s, want clean_close", last.Kind)
	}
	st := c.rec.Stats()
	if st.Dropped != 0 || st.Frames != uint64(len(ofKind(recs, datasets.KindFrame))) {
		t.Errorf("stats %+v, %d frames in the dataset", st, len(ofKind(recs, datasets.KindFrame)))
	}
	m, err := datasets.ReadManifest(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Venue != "polymarket" || m.Endpoint != s.WSURL() || len(m.Instruments) != 2 || !m.Clean {
		t.Errorf("manifest %+v", m)
	}
}

func TestPolymarketFaults(t *testing.T) {
	// Books without hashes: the ones PolymarketConfig serves mismatch, and
	// the live engine's heals (an unsubscribe, a subscribe and the server's
	// fresh book) then came at times the test does not decide, one of them
	// during the stall below.
	s := fakeexchange.New(fakeexchange.WithoutHashes(fakeexchange.PolymarketConfig()))
	defer s.Close()
	// The watchdog judges ages on the recorder's clock, and this one moves
	// (1 µs a reading) only when the test says: on the real clock, 300 ms
	// pass on a loaded host while frames wait in the socket, and the
	// watchdog found a stall the server never made (and then a stall with
	// "no pong either", the pong unread).
	clock := &stepClock{base: time.Now()}
	c := startCapture(t, pmSpec(s, fakeexchange.PolymarketStreamAsset), nil,
		recorder.WithStallTimeout(300*time.Millisecond), recorder.WithMaxFrameBytes(64<<10), recorder.WithClock(clock))
	conns := func(n int) func() bool {
		return func() bool { return len(s.Conns()) >= n && len(s.Live()) == 1 && len(s.Live()[0].Sent()) > 20 }
	}
	waitFor(t, "first connection", conns(1))

	// A silent stall while PONGs still arrive: the data stops, two pings
	// are answered and every frame sent is read (the first pong then
	// handled), and then 300 ms pass.
	s.Stall(true)
	for i := range 2 {
		pongs := func() int {
			return len(slices.DeleteFunc(s.Live()[0].Sent(), func(f []byte) bool { return !isPong(f) }))
		}
		want := pongs() + 1
		if !clock.tick() {
			t.Fatal("the recorder made no ticker on its clock")
		}
		waitFor(t, fmt.Sprintf("pong %d read", i+1), func() bool {
			return pongs() == want && c.rec.Stats().Frames == uint64(sentTotal(s))
		})
	}
	clock.advance(300 * time.Millisecond)
	// The data resumes once the server has seen the stalled connection go:
	// resumed before, it wrote on a socket the recorder no longer read.
	replaced := func() bool { return len(s.Conns()) >= 2 && !slices.Contains(s.Live(), s.Conns()[0]) }
	waitFor(t, "reconnect after stall", replaced)
	s.Stall(false)
	waitFor(t, "data after stall", conns(2))

	// Abrupt close: 1006.
	s.KillAll()
	waitFor(t, "reconnect after kill", conns(3))

	// Close with a code and reason.
	s.CloseAll(1001, "going away")
	waitFor(t, "reconnect after close", conns(4))

	// Garbage is recorded as received; the connection stays up.
	garbage := []byte("\x00\x01not json {{{")
	s.SendAll(garbage)
	// Oversized frame: over the read limit ends the connection (1009).
	s.SendAll(bytes.Repeat([]byte("x"), 100<<10))
	waitFor(t, "reconnect after oversized frame", conns(5))

	// Refused connections are retried.
	s.Refuse(2)
	s.KillAll()
	waitFor(t, "reconnect after refusals", conns(6))

	recs := c.stop()
	checkOrder(t, recs)
	checkByteIdentical(t, s, recs, 64<<10)
	log := describe(recs)

	stalls := ofKind(recs, datasets.KindStall)
	if len(stalls) != 1 {
		t.Fatalf("%d stall records, want 1:\n%s", len(stalls), log)
	}
	sc := stalls[0].control(t)
	if !strings.Contains(sc.Text, "while pongs still arrive") || len(sc.Instruments) != 1 || sc.ToNs <= sc.FromNs {
		t.Errorf("stall record %+v", sc)
	}
	var codes []int
	var oversize datasets.Control
	for _, d := range ofKind(recs, datasets.KindDisconnect) {
		cc := d.control(t)
		codes = append(codes, cc.Code)
		if cc.Code == 1009 {
			oversize = cc
		}
		if cc.Code == 1001 && cc.Reason != "going away" {
			t.Errorf("close reason %q", cc.Reason)
		}
	}
	for _, want := range []int{1006, 1001, 1009} {
		if !slices.Contains(codes, want) {
			t.Errorf("no disconnect with code %d; got %v\n%s", want, codes, log)
		}
	}
	// The shutdown is a clean close of the connection (1000), not a loss.
	if cls := ofKind(recs, datasets.KindCleanClose); len(cls) != 2 || cls[0].control(t).Code != 1000 {
		t.Errorf("clean close records %s\n%s", describe(cls), log)
	}
	if !strings.Contains(oversize.Err, "read limit") {
		t.Errorf("oversized-frame disconnect says %q", oversize.Err)
	}
	found := false
	for _, r := range ofKind(recs, datasets.KindFrame) {
		if bytes.Equal(r.Payload, garbage) {
			found = true
		}
	}
	if !found {
		t.Error("garbage frame not recorded")
	}
	refused := 0
	for _, r := range ofKind(recs, datasets.KindReconnect) {
		if strings.Contains(r.control(t).Err, "HTTP 503") {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d reconnects name the refusal, want 2\n%s", refused, log)
	}
	// Every connection resubscribed.
	for _, sc := range s.Conns() {
		rcv := sc.Received()
		if len(rcv) == 0 || !bytes.Contains(rcv[0], []byte(fakeexchange.PolymarketStreamAsset)) {
			t.Errorf("server connection %d: first client frame %q is not the subscribe", sc.ID, rcv)
		}
	}
	if n := len(ofKind(recs, datasets.KindConnect)); n != len(s.Conns()) {
		t.Errorf("%d connect records for %d server connections", n, len(s.Conns()))
	}

	// Replayed through the venue decoder, the book is invalid from every
	// loss record until the snapshot that follows the reconnect, then valid.
	dec := polymarket.NewDecoder()
	var out venue.Frame
	invalid, losses, recovered := false, 0, 0
	for _, r := range recs {
		switch {
		case r.Kind.IsLoss() && r.Kind != datasets.KindReconnect:
			dec.Invalidate()
			if b := dec.Book(fakeexchange.PolymarketStreamAsset); b != nil && b.Valid() {
				t.Fatalf("book valid right after %s", r.Kind)
			}
			if !invalid {
				losses++
			}
			invalid = true
		case r.Kind == datasets.KindFrame:
			_ = dec.Decode(r.Payload, r.WallNs, &out) // the garbage frame is an error, the rest decodes
			if b := dec.Book(fakeexchange.PolymarketStreamAsset); invalid && b != nil && b.Valid() {
				invalid = false
				recovered++
			}
		}
	}
	t.Logf("%d loss episodes, %d recoveries", losses, recovered)

	// capture status sees the same faults.
	st, err := recorder.ReadStatus(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Frames != uint64(len(ofKind(recs, datasets.KindFrame))) || st.Stalls != 1 || st.Reconnects != uint64(len(ofKind(recs, datasets.KindReconnect))) ||
		len(st.Gaps) < 6 || !st.Stopped || !st.Clean || st.Lag.Count == 0 {
		t.Errorf("status %+v", st)
	}
	if losses < 5 || recovered != losses { // the shutdown is a clean close, not a loss
		t.Errorf("%d loss episodes, the book recovered after %d", losses, recovered)
	}
}
