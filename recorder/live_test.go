package recorder_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
	"github.com/tapedeck/tapedeck/replayer"
)

// eventLog is a subscriber writing one line per event: everything a strategy
// can see of it, the top of the book and its validity included.
type eventLog struct{ lines []string }

func (l *eventLog) OnEvent(e *feed.Event) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d %s %s conn=%d ns=%d %q", e.Dataset, e.Seq, e.Kind, e.Channel, e.Conn, e.RecvNs, e.Instrument)
	if v := e.Decoded; v != nil {
		fmt.Fprintf(&b, " %s side=%d %d/%d n=%d bid=%d/%d ask=%d/%d", v.Type, v.Side, v.Price, v.Size, v.Count,
			v.BidPrice, v.BidSize, v.AskPrice, v.AskSize)
	}
	if c := e.Control; c != nil {
		fmt.Fprintf(&b, " control=%+v", *c)
	}
	fmt.Fprintf(&b, " payload=%d", len(e.Payload))
	if bk := e.Book; bk != nil {
		bid, _ := bk.Best(book.Bid)
		ask, _ := bk.Best(book.Ask)
		fmt.Fprintf(&b, " book=%v %d/%d %d/%d levels=%d/%d", bk.Valid(), bid.Price, bid.Size, ask.Price, ask.Size,
			bk.Len(book.Bid), bk.Len(book.Ask))
	}
	fmt.Fprintf(&b, " q=%+v", e.Quality)
	l.lines = append(l.lines, b.String())
	return nil
}

// TestLiveSubscriberSeesWhatReplayDelivers records a Polymarket fake market
// (its books fail their hash checks, so the live engine writes integrity
// records and resubscribes while recording) with a live subscriber on
// everything, then replays the dataset: the subscriber sees the same
// events, books and quality in the same order, and the live digest is the
// replay's.
func TestLiveSubscriberSeesWhatReplayDelivers(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	r, err := recorder.New(pmSpec(s, fakeexchange.PolymarketStreamAsset, fakeexchange.PolymarketOtherAsset),
		append(fastOpts(), recorder.WithHealBackoff(20*time.Millisecond, time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	live := &eventLog{}
	r.Subscribe(feed.Key{}, live)
	c := runCapture(t, r)
	waitFor(t, "frames and a heal", func() bool {
		return sentTotal(s) >= 300 && r.LiveStats().Resubscribes >= 2
	})
	// One subscriber added while recording, on one instrument's book.
	late := &eventLog{}
	r.Subscribe(feed.Key{Instrument: fakeexchange.PolymarketOtherAsset, Channel: feed.ChannelBook}, late)
	waitFor(t, "more frames", func() bool { return sentTotal(s) >= 400 })
	recs := c.stop()

	st := r.LiveStats()
	t.Logf("live: %+v", st)
	if !st.On || st.Skipped != 0 || st.Frames != uint64(len(ofKind(recs, datasets.KindFrame))) || st.Records != uint64(len(recs)) {
		t.Fatalf("live stats %+v for %d records, %d frames", st, len(recs), len(ofKind(recs, datasets.KindFrame)))
	}
	if st.HashMismatches == 0 || len(ofKind(recs, datasets.KindIntegrity)) == 0 || len(ofKind(recs, datasets.KindResubscribe)) == 0 {
		t.Fatalf("no integrity or resubscribe records: %+v", st)
	}

	rp, err := replayer.New([]string{c.dir}, replayer.WithHashCheck(true))
	if err != nil {
		t.Fatal(err)
	}
	replayed := &eventLog{}
	rp.Subscribe(replayer.Key{}, replayed)
	sum, err := rp.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(live.lines) < 300 {
		t.Fatalf("only %d live events", len(live.lines))
	}
	if i := firstDiff(live.lines, replayed.lines); i >= 0 {
		t.Fatalf("%d live events, %d replayed; first difference at %d:\n live %s\n replay %s", len(live.lines), len(replayed.lines), i,
			at(live.lines, i), at(replayed.lines, i))
	}
	if st.Digest == "" || st.Digest != sum.Digest {
		t.Errorf("live digest %q, replay digest %q", st.Digest, sum.Digest)
	}
	// The late subscriber saw a tail of what a replay gives the same key.
	if len(late.lines) == 0 {
		t.Fatal("the subscriber added while recording saw nothing")
	}
	var want []string
	for _, l := range replayed.lines {
		if strings.Contains(l, " book conn=") && strings.Contains(l, fakeexchange.PolymarketOtherAsset) {
			want = append(want, l)
		}
	}
	if len(late.lines) > len(want) || !slices.Equal(late.lines, want[len(want)-len(late.lines):]) {
		t.Errorf("late subscriber: %d events, not the last of the %d replayed for its key", len(late.lines), len(want))
	}
}

func firstDiff(a, b []string) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func at(l []string, i int) string {
	if i < len(l) {
		return l[i]
	}
	return "(end)"
}

// runCapture runs r into a fresh dataset, as startCapture does for a spec.
func runCapture(t *testing.T, r *recorder.Recorder) *capture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := r.Prepare(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	dir := t.TempDir() + "/ds"
	w, err := datasets.Create(dir, r.Manifest(), datasets.WithFlushInterval(20*time.Millisecond))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c := &capture{t: t, dir: dir, rec: r, w: w, cancel: cancel, done: make(chan error, 1), sink: w}
	go func() { c.done <- r.Run(ctx, w) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.done:
		default:
		}
	})
	return c
}

// TestLiveHealsHashMismatch records the fake market whose book hashes can be
// checked: the venue then sends one book whose hash does not match. The live
// engine records the mismatch naming the instrument, resubscribes it (the
// record and both frames are in the dataset, in that order), and the fresh
// snapshot the venue answers with is valid and passes its hash check, live
// and in a replay of the recording.
func TestLiveHealsHashMismatch(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketHashConfig())
	defer s.Close()
	asset := fakeexchange.PolymarketHashAsset
	c := startCapture(t, pmSpec(s, asset), nil)
	checked := func(n uint64) func() bool {
		return func() bool { b, ok := c.rec.LiveBook(asset); return ok && b.Quality.HashChecked >= n }
	}
	// The REST summary's hash, then the WebSocket book's.
	waitFor(t, "the first hash-checked book", checked(2))
	if b, _ := c.rec.LiveBook(asset); !b.Valid || b.Quality.HashOK != 2 {
		t.Fatalf("first book %+v", b)
	}
	good := s.Conns()[0].Sent()[0]
	i := strings.Index(string(good), `"hash":"`) + len(`"hash":"`)
	bad := slices.Clone(good)
	bad[i] = "01"[min(int(bad[i]-'0'), 1)^1] // another hex digit
	s.SendAll(bad)
	waitFor(t, "the healed book", checked(4))
	recs := c.stop()

	b, _ := c.rec.LiveBook(asset)
	if !b.Valid || b.Quality.HashChecked != 4 || b.Quality.HashOK != 3 {
		t.Errorf("live book after the heal %+v", b)
	}
	st := c.rec.LiveStats()
	if st.HashMismatches != 1 || st.Resubscribes != 1 {
		t.Errorf("live stats %+v", st)
	}
	mfs, err := c.rec.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	metrics := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "check" {
					metrics[mf.GetName()+"/"+l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	if metrics["tapedeck_capture_integrity_total/hash_mismatch"] != 1 || metrics["tapedeck_capture_resubscribes_total/hash_mismatch"] != 1 {
		t.Errorf("metrics %v", metrics)
	}
	// In the dataset: the bad frame, the integrity record naming the asset,
	// the resubscribe record, unsubscribe and subscribe sent, the snapshot.
	var seq []string
	for _, r := range recs {
		switch {
		case r.Kind == datasets.KindFrame && string(r.Payload) == string(bad):
			seq = append(seq, "bad book")
		case r.Kind == datasets.KindFrame && string(r.Payload) == string(good):
			seq = append(seq, "good book")
		case r.Kind == datasets.KindIntegrity:
			ctl := r.control(t)
			if ctl.Reason != datasets.CheckHashMismatch || !slices.Equal(ctl.Instruments, []string{asset}) ||
				!strings.Contains(ctl.Text, "hash mismatch") {
				t.Errorf("integrity record %+v", ctl)
			}
			seq = append(seq, "integrity")
		case r.Kind == datasets.KindResubscribe:
			ctl := r.control(t)
			if ctl.Reason != datasets.CheckHashMismatch || !slices.Equal(ctl.Instruments, []string{asset}) || ctl.Attempt != 1 {
				t.Errorf("resubscribe record %+v", ctl)
			}
			seq = append(seq, "resubscribe")
		case r.Kind == datasets.KindSent && strings.Contains(string(r.Payload), `"operation":"unsubscribe"`):
			seq = append(seq, "unsubscribe")
		case r.Kind == datasets.KindSent && strings.Contains(string(r.Payload), `"operation":"subscribe"`):
			seq = append(seq, "subscribe")
		}
	}
	want := []string{"good book", "bad book", "integrity", "resubscribe", "unsubscribe", "subscribe", "good book"}
	if !slices.Equal(seq, want) {
		t.Errorf("records %v, want %v\n%s", seq, want, describe(recs))
	}
	if got := s.Conns()[0].Received(); len(got) < 3 {
		t.Errorf("the exchange received %q", got)
	}

	// A replay of the recording checks the same four hashes.
	rp, err := replayer.New([]string{c.dir}, replayer.WithHashCheck(true))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := rp.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.HashChecked != 4 || sum.HashOK != 3 {
		t.Errorf("replay checked %d hashes, %d ok", sum.HashChecked, sum.HashOK)
	}
	for _, bs := range rp.Books() {
		if bs.Instrument == asset && (!bs.Book.Valid() || bs.Quality.HashOK != 3) {
			t.Errorf("replayed book at the end: valid %v, %+v", bs.Book.Valid(), bs.Quality)
		}
	}
}

// slowSub takes its time on every event, as a heavy strategy would.
type slowSub struct{ d time.Duration }

func (s slowSub) OnEvent(*feed.Event) error { time.Sleep(s.d); return nil }

// TestLiveFallsBehindRecordingDoesNot: a live subscriber far slower than the
// feed makes the live engine skip records (KindLiveLag says how many; its
// books restart from the next snapshot), while the recording keeps every
// frame the exchange sent.
func TestLiveFallsBehindRecordingDoesNot(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	r, err := recorder.New(pmSpec(s, fakeexchange.PolymarketStreamAsset),
		append(fastOpts(), recorder.WithLiveQueue(8, 1<<20), recorder.WithHeal(false))...)
	if err != nil {
		t.Fatal(err)
	}
	r.Subscribe(feed.Key{}, slowSub{2 * time.Millisecond})
	c := runCapture(t, r)
	waitFor(t, "skips", func() bool { return r.LiveStats().Skipped > 100 && sentTotal(s) > 1000 })
	recs := c.stop()
	checkByteIdentical(t, s, recs, 0)
	st, ls := r.Stats(), r.LiveStats()
	if st.Dropped != 0 || st.Frames != uint64(len(ofKind(recs, datasets.KindFrame))) {
		t.Errorf("recorder stats %+v for %d frames", st, len(ofKind(recs, datasets.KindFrame)))
	}
	var skipped uint64
	for _, l := range ofKind(recs, datasets.KindLiveLag) {
		ctl := l.control(t)
		if !strings.Contains(ctl.Text, "fell behind") || ctl.Dropped == 0 || ctl.ToNs < ctl.FromNs {
			t.Errorf("live_lag record %+v", ctl)
		}
		skipped += ctl.Dropped
	}
	// The last episode may end after the queue closed (no record then).
	if skipped == 0 || skipped > ls.Skipped || ls.SkipEpisodes == 0 {
		t.Errorf("live_lag records account for %d skipped records; live stats %+v", skipped, ls)
	}
	if ls.Records+ls.Skipped != uint64(len(recs)) {
		t.Errorf("live engine: %d processed + %d skipped, dataset %d records", ls.Records, ls.Skipped, len(recs))
	}
}

// TestLiveHealsInstrumentStall: one coin goes silent while the other flows.
// The instrument watchdog records the stall naming it, and instead of
// replacing the connection the recorder resubscribes that coin (the
// resubscribe record, then unsubscribe and subscribe frames); the venue
// answers with its book again, on the same connection.
func TestLiveHealsInstrumentStall(t *testing.T) {
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
		_, a := c.rec.LiveBook("BTC")
		_, b := c.rec.LiveBook("ETH")
		return a && b
	})
	s.Mute("ETH", true)
	waitFor(t, "the resubscribe", func() bool { return c.rec.LiveStats().Resubscribes > 0 })
	s.Mute("ETH", false)
	healed := c.rec.LiveStats().LastSeq
	waitFor(t, "ETH's book again", func() bool { b, _ := c.rec.LiveBook("ETH"); return b.Seq > healed && b.Valid })
	recs := c.stop()
	if n := len(s.Conns()); n != 1 {
		t.Errorf("%d connections: the stall replaced the connection\n%s", n, describe(recs))
	}
	var seq []string
	for _, r := range recs {
		switch r.Kind {
		case datasets.KindStall:
			if ctl := r.control(t); !slices.Equal(ctl.Instruments, []string{"l2Book@ETH"}) {
				t.Errorf("stall record %+v", ctl)
			}
			seq = append(seq, "stall")
		case datasets.KindResubscribe:
			if ctl := r.control(t); ctl.Reason != datasets.CheckStall || !slices.Equal(ctl.Instruments, []string{"l2Book@ETH"}) {
				t.Errorf("resubscribe record %+v", ctl)
			}
			seq = append(seq, "resubscribe")
		case datasets.KindSent:
			if strings.Contains(string(r.Payload), `"unsubscribe"`) && strings.Contains(string(r.Payload), `"ETH"`) {
				seq = append(seq, "unsubscribe")
			} else if len(seq) > 0 && strings.Contains(string(r.Payload), `"subscribe"`) && strings.Contains(string(r.Payload), `"ETH"`) {
				seq = append(seq, "subscribe")
			}
		}
	}
	if len(seq) < 4 || !slices.Equal(seq[:4], []string{"stall", "resubscribe", "unsubscribe", "subscribe"}) {
		t.Errorf("records %v\n%s", seq, describe(recs))
	}
	if st := c.rec.LiveStats(); st.Stalls == 0 {
		t.Errorf("live stats %+v", st)
	}
}

// TestLiveTopMismatchAndCrossed: after a valid book, the venue sends a
// price change whose best_bid/best_ask disagree with the rebuilt book, then
// one that leaves the book crossed after its batch: an integrity record
// each, naming the instrument and the check.
func TestLiveTopMismatchAndCrossed(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketHashConfig())
	defer s.Close()
	asset := fakeexchange.PolymarketHashAsset
	c := startCapture(t, pmSpec(s, asset), nil)
	// The REST summary makes the book valid before the WebSocket connection
	// is up; the frames below go to the connection, so wait for its book
	// (the second hash checked).
	waitFor(t, "the WebSocket book", func() bool {
		b, ok := c.rec.LiveBook(asset)
		return ok && b.Valid && b.Quality.HashChecked >= 2 && len(s.Live()) > 0
	})
	pc := func(ts int64, price, size, side, bb, ba string) []byte {
		return fmt.Appendf(nil, `{"event_type":"price_change","market":"0x2f1ab0ffaf465c4acd76b9a4a1f8980db26bfae7d248a6bb289350586028307e",`+
			`"price_changes":[{"asset_id":%q,"price":%q,"size":%q,"side":%q,"best_bid":%q,"best_ask":%q}],"timestamp":%d}`,
			asset, price, size, side, bb, ba, ts)
	}
	const ts = 1761179960000
	s.SendAll(pc(ts, "0.06", "5", "BUY", "0.5", "0.6"))    // top is 0.33/0.34: the venue's disagrees
	s.SendAll(pc(ts+1, "0.4", "10", "BUY", "0.4", "0.34")) // closes the first batch; crosses the book
	s.SendAll(pc(ts+2, "0.4", "0", "BUY", "0.33", "0.34")) // closes the crossed batch
	waitFor(t, "both findings", func() bool {
		st := c.rec.LiveStats()
		return st.TopMismatches >= 1 && st.CrossedBooks >= 1
	})
	recs := c.stop()
	got := map[string]datasets.Control{}
	for _, r := range ofKind(recs, datasets.KindIntegrity) {
		ctl := r.control(t)
		got[ctl.Reason] = ctl
	}
	for _, check := range []string{datasets.CheckTopMismatch, datasets.CheckCrossed} {
		ctl, ok := got[check]
		if !ok || !slices.Equal(ctl.Instruments, []string{asset}) || !strings.Contains(ctl.Text, "rebuilt top") {
			t.Errorf("%s record %+v (all: %v)", check, ctl, got)
		}
	}
	if _, ok := got[datasets.CheckHashMismatch]; ok {
		t.Errorf("hash mismatch reported for frames without a hash: %v", got)
	}
	if len(ofKind(recs, datasets.KindResubscribe)) == 0 {
		t.Error("no resubscribe")
	}
}

// TestLiveHealOffRecordsWithoutResubscribing: with WithHeal(false) (capture
// run --heal=false) a hash mismatch is still an integrity record naming the
// instrument and a metric, but nothing is resubscribed: no resubscribe
// record, no unsubscribe or second subscribe sent, the exchange hears only
// the first subscription. The venue's next snapshot, unasked, checks out.
func TestLiveHealOffRecordsWithoutResubscribing(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketHashConfig())
	defer s.Close()
	asset := fakeexchange.PolymarketHashAsset
	c := startCapture(t, pmSpec(s, asset), nil, recorder.WithHeal(false))
	checked := func(n uint64) func() bool {
		return func() bool { b, ok := c.rec.LiveBook(asset); return ok && b.Quality.HashChecked >= n }
	}
	waitFor(t, "the first hash-checked book", checked(2))
	good := s.Conns()[0].Sent()[0]
	i := strings.Index(string(good), `"hash":"`) + len(`"hash":"`)
	bad := slices.Clone(good)
	bad[i] = "01"[min(int(bad[i]-'0'), 1)^1]
	s.SendAll(bad)
	waitFor(t, "the mismatch", checked(3))
	if b, _ := c.rec.LiveBook(asset); b.Quality.HashOK != 2 {
		t.Errorf("book after the mismatch %+v: want 2 of 3 hashes ok", b)
	}
	// The venue's own next snapshot (no resubscribe asked for it) checks out.
	s.SendAll(good)
	waitFor(t, "the next snapshot", checked(4))
	recs := c.stop()

	if b, _ := c.rec.LiveBook(asset); !b.Valid || b.Quality.HashOK != 3 {
		t.Errorf("book after the venue's next snapshot %+v", b)
	}
	if st := c.rec.LiveStats(); st.HashMismatches != 1 || st.Resubscribes != 0 {
		t.Errorf("live stats %+v: want 1 mismatch, 0 resubscribes", st)
	}
	integ := ofKind(recs, datasets.KindIntegrity)
	if len(integ) != 1 {
		t.Fatalf("%d integrity records, want 1\n%s", len(integ), describe(recs))
	}
	if ctl := integ[0].control(t); ctl.Reason != datasets.CheckHashMismatch || !slices.Equal(ctl.Instruments, []string{asset}) {
		t.Errorf("integrity record %+v", ctl)
	}
	if n := len(ofKind(recs, datasets.KindResubscribe)); n != 0 {
		t.Errorf("%d resubscribe records with healing off", n)
	}
	subs := 0
	for _, r := range ofKind(recs, datasets.KindSent) {
		p := string(r.Payload)
		if strings.Contains(p, `"operation":"unsubscribe"`) {
			t.Errorf("unsubscribe sent with healing off: %s", p)
		}
		if strings.Contains(p, asset) {
			subs++
		}
	}
	if subs != 1 {
		t.Errorf("%d sent frames name the asset, want the one subscription", subs)
	}
	mfs, err := c.rec.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var integrity, resub float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "tapedeck_capture_integrity_total":
				integrity += m.GetCounter().GetValue()
			case "tapedeck_capture_resubscribes_total":
				resub += m.GetCounter().GetValue()
			}
		}
	}
	if integrity != 1 || resub != 0 {
		t.Errorf("metrics: integrity %v, resubscribes %v; want 1, 0", integrity, resub)
	}
}
