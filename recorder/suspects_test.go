package recorder_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	dto "github.com/prometheus/client_model/go"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// ackDroppingProxy forwards WebSocket frames both ways between its clients
// and upstream, except the subscription acknowledgements, which it swallows
// (a proxy or a venue that does not answer subscribe frames). When upstream
// drops a connection, the proxy drops its client's too.
type ackDroppingProxy struct {
	srv *httptest.Server
	mu  sync.Mutex
	fwd map[string]int // data frames forwarded per channel@coin, on the latest connection
}

func newAckDroppingProxy(upstream string) *ackDroppingProxy {
	p := &ackDroppingProxy{fwd: map[string]int{}}
	var up websocket.Upgrader
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		u, _, err := websocket.DefaultDialer.Dial(upstream, nil)
		if err != nil {
			return
		}
		defer u.Close()
		p.mu.Lock()
		clear(p.fwd)
		p.mu.Unlock()
		go func() {
			for {
				typ, b, err := c.ReadMessage()
				if err != nil || u.WriteMessage(typ, b) != nil {
					u.Close()
					return
				}
			}
		}()
		for {
			typ, b, err := u.ReadMessage()
			if err != nil {
				return
			}
			if bytes.Contains(b, []byte(`"subscriptionResponse"`)) {
				continue
			}
			p.count(b)
			if c.WriteMessage(typ, b) != nil {
				return
			}
		}
	}))
	return p
}

func (p *ackDroppingProxy) count(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ch := range []string{"l2Book", "trades"} {
		if !bytes.Contains(b, []byte(`"channel":"`+ch+`"`)) {
			continue
		}
		for _, coin := range []string{"BTC", "ETH"} {
			if bytes.Contains(b, []byte(`"coin":"`+coin+`"`)) {
				p.fwd[ch+"@"+coin]++
			}
		}
	}
}

// flowed reports whether data for every item went through on the latest
// connection.
func (p *ackDroppingProxy) flowed(items ...string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range items {
		if p.fwd[it] == 0 {
			return false
		}
	}
	return true
}

// Behind a proxy that swallows every acknowledgement, the socket dies three
// times while data flows for every subscription: no subscription is blamed
// or removed (data is an acknowledgement, and the deaths come long after the
// subscribe frames), the data is recorded byte-identical, and every item is
// still subscribed on the last connection.
func TestHyperliquidUnacknowledgedButFlowingIsKept(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	p := newAckDroppingProxy(s.WSURL())
	defer p.srv.Close()
	spec := hlSpec(s, []string{"l2Book", "trades"}, "BTC", "ETH")
	spec.Endpoint = "ws" + strings.TrimPrefix(p.srv.URL, "http") + "/ws"
	window := 50 * time.Millisecond
	c := startCapture(t, spec, nil, recorder.WithSuspectWindow(window))
	items := []string{"l2Book@BTC", "l2Book@ETH", "trades@BTC", "trades@ETH"}
	for i := 1; i <= 3; i++ {
		waitFor(t, "data for every subscription", func() bool { return len(s.Live()) == 1 && p.flowed(items...) })
		time.Sleep(2 * window) // the deaths come well after the subscribes, as on a live session
		s.KillAll()
		waitFor(t, "reconnect", func() bool { return len(s.Conns()) > i })
	}
	waitFor(t, "data after the last reconnect", func() bool { return len(s.Live()) == 1 && p.flowed(items...) })
	recs := c.stop()
	// The frames the proxy passed on are recorded, byte-identical.
	segs, conns := segments(recs), s.Conns()
	if len(segs) != len(conns) {
		t.Fatalf("%d connection segments, %d server connections", len(segs), len(conns))
	}
	for i, seg := range segs {
		var want [][]byte
		for _, f := range conns[i].Sent() {
			if !bytes.Contains(f, []byte(`"subscriptionResponse"`)) {
				want = append(want, f)
			}
		}
		if len(seg) > len(want) {
			t.Fatalf("connection %d: %d frames recorded, %d passed on", i, len(seg), len(want))
		}
		for j := range seg { // a prefix: the frames in flight when it was closed are not read
			if !bytes.Equal(seg[j], want[j]) {
				t.Fatalf("connection %d frame %d differs from what the proxy passed on", i, j)
			}
		}
	}
	for _, r := range ofKind(recs, datasets.KindGap) {
		t.Errorf("a subscription was removed: %s", r.Payload)
	}
	for _, r := range ofKind(recs, datasets.KindDisconnect) {
		if cc := r.control(t); len(cc.Instruments) > 0 {
			t.Errorf("a disconnect blames %v: %s", cc.Instruments, cc.Text)
		}
	}
	byData := map[string]int{}
	for _, r := range ofKind(recs, datasets.KindSubscribed) {
		if cc := r.control(t); cc.Reason == "data before its acknowledgement" {
			byData[cc.Text]++
		}
	}
	for _, it := range items {
		// (The last connection's data may still be in flight at the stop.)
		if byData[it] == 0 {
			t.Errorf("%s never acknowledged by its data: %v", it, byData)
		}
	}
	last := s.Conns()[len(s.Conns())-1]
	if subs := last.Subscriptions(); len(subs) != len(items) {
		t.Errorf("last connection subscribes %v, want %v", subs, items)
	}
}

// A subscription that kills its connection every time is removed after two
// deaths in a row, loudly (a gap record naming it, a metric), and tried
// again after a backoff that doubles with each removal: never dropped for
// the session. The other subscription is recorded throughout.
func TestHyperliquidRemovedSubscriptionIsRetried(t *testing.T) {
	cfg := fakeexchange.HyperliquidConfig()
	cfg.BadCoins = []string{"SOL"}
	s := fakeexchange.New(cfg)
	defer s.Close()
	min := 20 * time.Millisecond
	c := startCapture(t, hlSpec(s, []string{"l2Book"}, "BTC", "SOL"), nil, recorder.WithSuspectRetry(min, 8*min))
	solConns := func() int {
		n := 0
		for _, cn := range s.Conns() {
			for _, f := range cn.Received() {
				if bytes.Contains(f, []byte(`"coin":"SOL"`)) {
					n++
					break
				}
			}
		}
		return n
	}
	waitFor(t, "three removals and a retry", func() bool { return solConns() >= 7 })
	recs := c.stop()
	checkByteIdentical(t, s, recs, 0)
	var removals []datasets.Control
	for _, r := range ofKind(recs, datasets.KindGap) {
		cc := r.control(t)
		if !slices.Equal(cc.Instruments, []string{"l2Book@SOL"}) || !strings.Contains(cc.Text, "removed") {
			t.Fatalf("gap record %+v", cc)
		}
		removals = append(removals, cc)
	}
	if len(removals) < 3 {
		t.Fatalf("%d removals:\n%s", len(removals), describe(recs))
	}
	for i, cc := range removals {
		want := min << i
		if want > 8*min {
			want = 8 * min
		}
		if cc.Attempt != i+1 || time.Duration(cc.ToNs-cc.FromNs) != want {
			t.Errorf("removal %d: attempt %d, retry after %v, want %d and %v", i+1, cc.Attempt, time.Duration(cc.ToNs-cc.FromNs), i+1, want)
		}
	}
	retries := 0
	for _, r := range ofKind(recs, datasets.KindNote) {
		if strings.Contains(r.control(t).Text, "subscribing l2Book@SOL again") {
			retries++
		}
	}
	if retries < len(removals)-1 {
		t.Errorf("%d retries for %d removals", retries, len(removals))
	}
	mfs, err := c.rec.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var removed float64
	for _, mf := range mfs {
		if mf.GetName() == "tapedeck_capture_subscriptions_removed_total" {
			for _, m := range mf.GetMetric() {
				removed += counterValue(m)
			}
		}
	}
	if int(removed) != len(removals) {
		t.Errorf("metric says %v removals, the dataset %d", removed, len(removals))
	}
}

func counterValue(m *dto.Metric) float64 { return m.GetCounter().GetValue() }
