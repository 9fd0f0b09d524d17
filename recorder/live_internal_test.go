package recorder

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
	"github.com/tapedeck/tapedeck/venue"
)

// panicky is the real decoder, made to panic on one frame: the fault the
// live engine must survive without touching the recording.
type panicky struct {
	venue.Decoder
	n, at *atomic.Int64
}

func (p panicky) Decode(frame []byte, recvNs int64, out *venue.Frame) error {
	if p.n.Add(1) == p.at.Load() {
		panic("boom in the decoder")
	}
	return p.Decoder.Decode(frame, recvNs, out)
}

// TestLiveDecoderPanicLosesNothing: a decoder panic on the live engine is a
// KindLiveLag record naming it; the recording keeps every frame, and the
// live engine goes on with a fresh decoder for that connection.
func TestLiveDecoderPanicLosesNothing(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	r, err := New(Spec{Venue: venue.Polymarket, Endpoint: s.WSURL(), RESTEndpoint: s.RESTURL(), CLOBEndpoint: s.CLOBURL(),
		Instruments: []string{fakeexchange.PolymarketStreamAsset}},
		WithFlushInterval(20*time.Millisecond), WithPingInterval(50*time.Millisecond), WithHeal(false))
	if err != nil {
		t.Fatal(err)
	}
	var n, at atomic.Int64
	at.Store(50)
	r.o.live.newDecoder = func(name string, hashCheck bool) (venue.Decoder, error) {
		return panicky{r.drv.NewDecoder(venue.DecoderOptions{HashCheck: hashCheck}), &n, &at}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "ds")
	if _, err := r.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := datasets.Create(dir, r.Manifest(), datasets.WithFlushInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, w) }()
	deadline := time.Now().Add(20 * time.Second)
	for r.LiveStats().Frames < 200 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, c := range s.Conns() {
		sent += len(c.Sent())
	}
	rd, err := datasets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	frames, lags := 0, 0
	for rd.Next() {
		rec := rd.Record()
		switch rec.Kind {
		case datasets.KindFrame:
			frames++
		case datasets.KindLiveLag:
			lags++
			c, _ := datasets.DecodeControl(rec.Payload)
			if !strings.Contains(c.Err, "boom in the decoder") || !strings.Contains(c.Text, "panicked") {
				t.Errorf("live_lag record %+v", c)
			}
		}
	}
	st, ls := r.Stats(), r.LiveStats()
	if frames != sent || st.Dropped != 0 || lags != 1 || ls.Panics != 1 {
		t.Errorf("%d frames recorded of %d sent, %d dropped, %d live_lag records, live %+v", frames, sent, st.Dropped, lags, ls)
	}
	if ls.Frames < 200 {
		t.Errorf("the live engine stopped after the panic: %+v", ls)
	}
	if b, ok := r.LiveBook(fakeexchange.PolymarketStreamAsset); !ok || !b.Valid {
		t.Errorf("no valid live book after the panic: %+v", b)
	}
}

// TestLiveHotPathAllocs: with the live engine on, a data frame from the
// socket to the disk and through the live decoder, books, digest and
// published top of book (and a subscriber on everything) still allocates
// nothing in steady state.
func TestLiveHotPathAllocs(t *testing.T) {
	for _, tc := range []struct {
		venue, file string
		items       []string
	}{
		{"polymarket", "polypy_semisynthetic_stream_single_asset.ndjson", []string{"72936048731589292555781174533757608024096898681344338816447372274344589246891"}},
		{"hyperliquid", "arbitrage_observatory_probe_2026-09_core.ndjson", []string{"l2Book@BTC", "bbo@BTC", "trades@BTC"}},
	} {
		t.Run(tc.venue, func(t *testing.T) {
			r, err := New(Spec{Venue: tc.venue, Instruments: []string{"x"}}, WithHeal(false))
			if err != nil {
				t.Fatal(err)
			}
			r.q = newQueue(16, 1<<20, time.Now())
			r.wctx, r.runCtx = context.Background(), context.Background()
			sink := &nopSink{}
			r.w = newWriter(r, sink, r.q)
			r.assigned = map[string]*slot{}
			var events int
			r.Subscribe(feed.Key{}, feed.SubscriberFunc(func(*feed.Event) error { events++; return nil }))
			l := r.startLive()
			defer l.close()
			s := &slot{r: r, id: 1, cm: r.m.conn(1), items: tc.items, pending: map[string]pendingSub{}}
			s.touchFn = s.touch
			s.buildWatch()
			var frames [][]byte
			for _, f := range fixtureLines(t, tc.file) {
				if c, _ := r.p.Scan(f, func(_, _ []byte) {}); c == venue.FrameData {
					frames = append(frames, f)
				}
			}
			i := 0
			step := func() {
				f := frames[i%len(frames)]
				i++
				buf := append(r.q.getBuf(), f...)
				s.handle(buf, false, time.Now())
				for len(r.q.ch) > 0 {
					if err := r.w.take(<-r.q.ch); err != nil {
						t.Fatal(err)
					}
				}
				for r.LiveStats().Records+r.LiveStats().Skipped < sink.seq { // the engine is done with it
					runtime.Gosched()
				}
			}
			for range 4 * len(frames) { // warm the pools, the books and the routes
				step()
			}
			if n := testing.AllocsPerRun(1000, step); n != 0 {
				t.Errorf("%v allocations per frame, want 0", n)
			}
			if st := r.LiveStats(); st.Skipped != 0 || st.Frames == 0 || st.DecodeErrors != 0 || events == 0 {
				t.Errorf("live stats %+v, %d events", st, events)
			}
		})
	}
}

// TestLiveShutdownDoesNotWaitForASlowSubscriber: a subscriber far behind at
// shutdown delays it by at most the drain timeout; the rest of the backlog
// is skipped by the live engine, and the recording has every frame.
func TestLiveShutdownDoesNotWaitForASlowSubscriber(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	r, err := New(Spec{Venue: venue.Polymarket, Endpoint: s.WSURL(), RESTEndpoint: s.RESTURL(), CLOBEndpoint: s.CLOBURL(),
		Instruments: []string{fakeexchange.PolymarketStreamAsset}},
		WithFlushInterval(20*time.Millisecond), WithHeal(false), WithLiveQueue(1<<12, 1<<26))
	if err != nil {
		t.Fatal(err)
	}
	r.o.live.drainTimeout = 50 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	r.Subscribe(feed.Key{}, feed.SubscriberFunc(func(*feed.Event) error {
		select { // stuck until the test ends, or 10 ms
		case <-release:
		case <-time.After(10 * time.Millisecond):
		}
		return nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "ds")
	if _, err := r.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := datasets.Create(dir, r.Manifest(), datasets.WithFlushInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, w) }()
	deadline := time.Now().Add(20 * time.Second)
	for r.LiveStats().Backlog < 200 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil { // would take seconds with the backlog delivered
		t.Fatal(err)
	}
	w.Close()
	sent := 0
	for _, c := range s.Conns() {
		sent += len(c.Sent())
	}
	rd, err := datasets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	frames := 0
	for rd.Next() {
		if rd.Record().Kind == datasets.KindFrame {
			frames++
		}
	}
	if ls := r.LiveStats(); frames != sent || ls.Skipped < 100 || ls.Records+ls.Skipped != r.Stats().Records {
		t.Errorf("%d frames recorded of %d sent; live %+v; %d records", frames, sent, ls, r.Stats().Records)
	}
}
