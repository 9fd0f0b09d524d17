package recorder

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// nopSink accepts everything and keeps nothing.
type nopSink struct{ seq uint64 }

func (s *nopSink) Append(*datasets.Record) (uint64, error) { s.seq++; return s.seq, nil }
func (s *nopSink) Flush() error                            { return nil }

func fixtureLines(t testing.TB, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("fakeexchange", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// TestHotPathAllocs asserts that handing a data frame from the socket
// reader to the dataset writer allocates nothing in steady state: the
// routing scan, the queue, the counters, the append and the latency
// bookkeeping. (gorilla's NextReader allocates one small reader per message;
// that is outside this path.)
func TestHotPathAllocs(t *testing.T) {
	for _, tc := range []struct {
		venue, file string
		items       []string
	}{
		{"polymarket", "polypy_semisynthetic_stream_single_asset.ndjson", []string{"72936048731589292555781174533757608024096898681344338816447372274344589246891"}},
		{"hyperliquid", "arbitrage_observatory_probe_2026-09_core.ndjson", []string{"l2Book@BTC", "bbo@BTC", "trades@BTC"}},
	} {
		t.Run(tc.venue, func(t *testing.T) {
			r, err := New(Spec{Venue: tc.venue, Instruments: []string{"x"}})
			if err != nil {
				t.Fatal(err)
			}
			r.q = newQueue(16, 1<<20, time.Now())
			r.wctx, r.runCtx = context.Background(), context.Background()
			sink := &nopSink{}
			r.w = newWriter(r, sink, r.q)
			r.assigned = map[string]*slot{}
			s := &slot{r: r, id: 1, cm: r.m.conn(1), items: tc.items, pending: map[string]pendingSub{}}
			s.touchFn = s.touch
			s.buildWatch()
			// Data frames only: acks and pongs are rare and produce
			// control records.
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
			}
			for range 2 * len(frames) { // warm the pools
				step()
			}
			if n := testing.AllocsPerRun(1000, step); n != 0 {
				t.Errorf("%v allocations per frame, want 0", n)
			}
			want := r.stats.frames.Load()
			if tc.venue == "polymarket" {
				want++ // the subscribed record after the first data frame
			}
			if sink.seq == 0 || sink.seq != want {
				t.Errorf("%d frames handled, %d appended", r.stats.frames.Load(), sink.seq)
			}
		})
	}
}

func TestScanRoutesRealFrames(t *testing.T) {
	type hit struct{ ch, inst string }
	scan := func(p venue.ClientProtocol, f []byte) (venue.FrameClass, int64, []hit) {
		var hits []hit
		c, ex := p.Scan(f, func(ch, inst []byte) { hits = append(hits, hit{string(ch), string(inst)}) })
		return c, ex, hits
	}
	pm := fixtureLines(t, "polypy_semisynthetic_stream_single_asset.ndjson")
	const asset = "72936048731589292555781174533757608024096898681344338816447372274344589246891"
	for i, f := range pm {
		c, ex, hits := scan(pmClient, f)
		if c != venue.FrameData || len(hits) == 0 || hits[0].inst != asset || ex < 1733411269309e6 {
			t.Errorf("polymarket line %d: class %d, ts %d, hits %v", i+1, c, ex, hits)
		}
	}
	if c, _, _ := scan(pmClient, []byte("PONG")); c != venue.FramePong {
		t.Error("PONG is not a pong")
	}
	if c, _, _ := scan(pmClient, []byte("garbage")); c != venue.FrameOther {
		t.Error("garbage is not other")
	}
	hl := fixtureLines(t, "arbitrage_observatory_probe_2026-09_core.ndjson")
	want := []struct {
		c   venue.FrameClass
		ch  string
		ins string
	}{{venue.FrameAck, "", ""}, {venue.FrameData, "l2Book", "BTC"}, {venue.FrameData, "bbo", "BTC"}, {venue.FrameData, "activeAssetCtx", "BTC"},
		{venue.FrameData, "trades", "BTC"}, {venue.FrameData, "candle", "BTC"}, {venue.FramePong, "", ""}}
	for i, f := range hl {
		c, _, hits := scan(hlClient, f)
		if c != want[i].c || (c == venue.FrameData && !slices.Equal(hits, []hit{{want[i].ch, want[i].ins}})) {
			t.Errorf("hyperliquid line %d: class %d hits %v, want %+v", i+1, c, hits, want[i])
		}
	}
	if item, ok := newProtocol(hlClient).AckItem(hl[0]); !ok || item != "l2Book+fast@BTC" {
		t.Errorf("ack names %q", item)
	}
}

// FuzzScan feeds arbitrary frames to both routing scans: no panic, and every
// instrument reported is bytes of the frame.
func FuzzScan(f *testing.F) {
	for _, name := range []string{"polypy_semisynthetic_stream_single_asset.ndjson", "nautilus_ws_misc_events.ndjson",
		"arbitrage_observatory_probe_2026-09_core.ndjson", "order_book_server_ack_l2book_trades_2025-07.ndjson"} {
		for _, l := range fixtureLines(f, name) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"asset_id":"`))
	f.Add([]byte(`{"channel":"subscriptionResponse","data":{"subscription":`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 1<<20 {
			return
		}
		for _, p := range []venue.ClientProtocol{pmClient, hlClient} {
			p.Scan(frame, func(ch, inst []byte) {
				if !bytes.Contains(frame, inst) || !bytes.Contains(frame, ch) {
					t.Fatalf("%T: instrument %q / channel %q not in the frame", p, inst, ch)
				}
			})
			newProtocol(p).AckItem(frame)
		}
	})
}

func TestLagHistQuantiles(t *testing.T) {
	var h lagHist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	st := h.stats()
	within := func(got, want time.Duration) bool { return got >= want && float64(got) <= float64(want)*1.13 }
	if st.Count != 1000 || !within(st.P50, 500*time.Millisecond) || !within(st.P99, 990*time.Millisecond) || st.Max != time.Second {
		t.Errorf("stats %+v", st)
	}
	for _, d := range []time.Duration{0, 1, 7, 8, 9, 1000, 123456789, 1 << 40} {
		if b := lagBucket(d); lagBucketUpper(b) < d || (b > 0 && lagBucketUpper(b-1) >= d) {
			t.Errorf("bucket %d of %d: upper %d", b, d, lagBucketUpper(b))
		}
	}
}

func TestPacerPlanDuration(t *testing.T) {
	c := &pacerConfig{burst: 20, window: 100 * time.Millisecond, perMinute: 2000}
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, 0}, {20, 0}, {21, 100 * time.Millisecond}, {1000, 4900 * time.Millisecond}, {2000, time.Minute}} {
		if got := c.planDuration(tc.n); got != tc.want {
			t.Errorf("%d frames: %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestDeriveREST(t *testing.T) {
	for _, tc := range []struct {
		spec       Spec
		rest, clob string
	}{
		{Spec{Venue: "hyperliquid", Endpoint: "wss://gw.example:9443/hl/ws"}, "https://gw.example:9443/hl/info", ""},
		{Spec{Venue: "hyperliquid", Endpoint: "ws://127.0.0.1:8765/ws"}, "http://127.0.0.1:8765/info", ""},
		{Spec{Venue: "hyperliquid"}, "https://api.hyperliquid.xyz/info", ""},
		{Spec{Venue: "hyperliquid", Endpoint: "wss://api.hyperliquid.xyz/ws"}, "https://api.hyperliquid.xyz/info", ""},
		{Spec{Venue: "polymarket", Endpoint: "ws://10.1.2.3:8765/ws/market"}, "http://10.1.2.3:8765", "http://10.1.2.3:8765"},
		{Spec{Venue: "polymarket", Endpoint: "ws://10.1.2.3:8765/ws/market", DisableRESTBooks: true}, "http://10.1.2.3:8765", ""},
		{Spec{Venue: "polymarket", Endpoint: "ws://10.1.2.3:8765/ws/market", CLOBEndpoint: "http://10.1.2.4"}, "http://10.1.2.3:8765", "http://10.1.2.4"},
		{Spec{Venue: "polymarket"}, "https://gamma-api.polymarket.com", "https://clob.polymarket.com"},
	} {
		tc.spec.Instruments = []string{"BTC"}
		r, err := New(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if r.restURL != tc.rest || r.clobURL != tc.clob {
			t.Errorf("%+v: rest %q clob %q, want %q %q", tc.spec, r.restURL, r.clobURL, tc.rest, tc.clob)
		}
	}
}

var (
	pmClient = polymarket.Driver.Client()
	hlClient = hyperliquid.Driver.Client()
)
