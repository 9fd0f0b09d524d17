package recorder_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

func hlSpec(s *fakeexchange.Server, channels []string, coins ...string) recorder.Spec {
	return recorder.Spec{Venue: "hyperliquid", Endpoint: s.WSURL(), RESTEndpoint: s.RESTURL(),
		Instruments: coins, Channels: channels}
}

func TestHyperliquidByteIdenticalAndAcks(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	c := startCapture(t, hlSpec(s, []string{"l2Book", "l2Book+fast", "bbo", "trades", "allMids"}, "BTC", "ETH", "@107"), nil)
	waitFor(t, "300 frames", func() bool { return sentTotal(s) >= 300 })
	recs := c.stop()
	checkOrder(t, recs)
	checkByteIdentical(t, s, recs, 0)

	// A default and a fast l2Book of one coin never share a socket.
	if n := len(s.Conns()); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	for _, sc := range s.Conns() {
		var books []string
		for _, f := range sc.Received() {
			if strings.Contains(string(f), `"type":"l2Book"`) {
				books = append(books, string(f))
			}
		}
		if len(books) != 3 {
			t.Errorf("connection %d carries %d l2Book subscriptions, want one per coin: %v", sc.ID, len(books), books)
		}
	}
	// Every subscription was acknowledged and recorded as such; the meta
	// bodies the session relied on are stored.
	var acked []string
	for _, r := range ofKind(recs, datasets.KindSubscribed) {
		acked = append(acked, r.control(t).Text)
	}
	slices.Sort(acked)
	for _, want := range []string{"l2Book@BTC", "l2Book+fast@BTC", "bbo@@107", "trades@ETH", "allMids"} {
		if !slices.Contains(acked, want) {
			t.Errorf("no subscribed record for %s; have %v", want, acked)
		}
	}
	if n := len(acked); n != 13 {
		t.Errorf("%d subscribed records, want 13", n)
	}
	rest := ofKind(recs, datasets.KindRESTResponse)
	if len(rest) != 2 || !strings.Contains(string(rest[0].Payload), `"szDecimals":5`) {
		t.Errorf("rest responses: %s", describe(rest))
	}
	// Subscribe frames are one subscription each, in the documented form.
	var subs []string
	for _, r := range ofKind(recs, datasets.KindSent) {
		if strings.Contains(string(r.Payload), `"subscribe"`) {
			subs = append(subs, string(r.Payload))
		}
	}
	if !slices.Contains(subs, `{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC","fast":true}}`) {
		t.Errorf("subscribe frames: %v", subs)
	}
}

func TestHyperliquidBadSubscriptionIsNamedAndDropped(t *testing.T) {
	cfg := fakeexchange.HyperliquidConfig()
	cfg.BadCoins = []string{"SOL"} // listed in meta, yet the socket dies on it
	s := fakeexchange.New(cfg)
	defer s.Close()
	c := startCapture(t, hlSpec(s, []string{"l2Book"}, "BTC", "SOL"), nil)
	// After two deaths right after subscribing SOL, it is dropped and the
	// connection stays up with BTC.
	waitFor(t, "stable connection without SOL", func() bool {
		live := s.Live()
		return len(s.Conns()) >= 3 && len(live) == 1 && len(live[0].Sent()) > 20
	})
	recs := c.stop()
	checkByteIdentical(t, s, recs, 0)
	var suspects int
	for _, d := range ofKind(recs, datasets.KindDisconnect) {
		cc := d.control(t)
		if cc.Code == 1006 {
			if !slices.Equal(cc.Instruments, []string{"l2Book@SOL"}) || !strings.Contains(cc.Text, "unacknowledged; suspect subscription: l2Book@SOL") {
				t.Errorf("disconnect does not name the suspect: %+v", cc)
			}
			suspects++
		}
	}
	if suspects != 2 {
		t.Errorf("%d 1006 disconnects naming the suspect, want 2\n%s", suspects, describe(recs))
	}
	dropped := false
	for _, n := range ofKind(recs, datasets.KindGap) {
		if cc := n.control(t); strings.Contains(cc.Text, "subscription l2Book@SOL removed") && slices.Equal(cc.Instruments, []string{"l2Book@SOL"}) {
			dropped = true
		}
	}
	if !dropped {
		t.Errorf("no gap record for removing SOL:\n%s", describe(recs))
	}
	last := s.Conns()[len(s.Conns())-1]
	for _, f := range last.Received() {
		if strings.Contains(string(f), "SOL") {
			t.Errorf("last connection still subscribes SOL: %s", f)
		}
	}
}

func TestHyperliquidUnknownCoin(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	for _, tc := range []struct {
		name, coin, want string
	}{
		{"unknown", "NOPE", "NOPE"},
		{"miscased", "btc", "did you mean BTC?"},
		{"delisted is listed", "FTM", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := recorder.New(hlSpec(s, nil, tc.coin))
			if err != nil {
				t.Fatal(err)
			}
			err = r.Discover(context.Background())
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, recorder.ErrDiscovery) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Discover: %v, want ErrDiscovery naming %q", err, tc.want)
			}
		})
	}
	if len(s.Conns()) != 0 {
		t.Error("discovery opened a WebSocket")
	}
}

func TestHyperliquidInstrumentStall(t *testing.T) {
	// With the connection watchdog out of the way (1 h), a coin the venue
	// stopped serving while another flows must be caught by the
	// per-instrument watchdog, for the steady l2Book only. (A feed silent
	// on every coin is the connection watchdog's: nothing then shows one
	// coin silent while others flow.) Ages on a clock that moves 1 ms per
	// reading, however long a loaded host leaves the recorder waiting.
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	c := startCapture(t, hlSpec(s, []string{"l2Book", "trades"}, "BTC", "ETH"), nil,
		recorder.WithStallTimeout(time.Hour), recorder.WithInstrumentStallTimeout(200*time.Millisecond),
		recorder.WithClock(&stepClock{base: time.Now(), step: time.Millisecond}))
	waitFor(t, "data", func() bool { return sentTotal(s) > 10 })
	s.Mute("ETH", true)
	waitFor(t, "instrument stall", func() bool {
		n := 0
		for _, cs := range c.rec.LiveStatus().Conns {
			n += int(cs.Stalls)
		}
		return n > 0
	})
	s.Mute("ETH", false)
	recs := c.stop()
	st := ofKind(recs, datasets.KindStall)
	if len(st) == 0 {
		t.Fatalf("no stall record:\n%s", describe(recs))
	}
	cc := st[0].control(t)
	// Only l2Book is steady; trades may be quiet for hours.
	if !slices.Equal(cc.Instruments, []string{"l2Book@ETH"}) {
		t.Errorf("stalled instruments %v, want [l2Book@ETH]", cc.Instruments)
	}
}

// TestHyperliquidBadCoinUnderRealPacing subscribes many coins at the real
// pace (20 per 100 ms): the socket dies mid-burst with later subscriptions
// already sent, and the first unacknowledged one is still named and dropped.
func TestHyperliquidBadCoinUnderRealPacing(t *testing.T) {
	cfg := fakeexchange.HyperliquidConfig()
	cfg.BadCoins = []string{"SOL"}
	s := fakeexchange.New(cfg)
	defer s.Close()
	c := startCapture(t, hlSpec(s, []string{"l2Book", "bbo", "trades", "activeAssetCtx", "candle+interval=1m"}, "BTC", "ETH", "SOL", "HYPE", "@107"), nil,
		recorder.WithSubscribePacing(20, 100*time.Millisecond, 2000))
	waitFor(t, "stable connection without SOL", func() bool {
		live := s.Live()
		return len(s.Conns()) >= 11 && len(live) == 1 && len(live[0].Subscriptions()) == 20 && len(live[0].Sent()) > 40
	})
	if n := len(s.Conns()); n != 11 {
		t.Errorf("%d connections, want 11: two deaths for each of the five SOL subscriptions, then one that lives", n)
	}
	recs := c.stop()
	checkByteIdentical(t, s, recs, 0)
	for _, d := range ofKind(recs, datasets.KindDisconnect) {
		if cc := d.control(t); cc.Code == 1006 && (len(cc.Instruments) != 1 || !strings.HasSuffix(cc.Instruments[0], "@SOL")) {
			t.Errorf("suspect %v, want one SOL subscription: %s", cc.Instruments, cc.Text)
		}
	}
	conns := s.Conns()
	for _, f := range conns[len(conns)-1].Received() {
		if strings.Contains(string(f), `"SOL"`) {
			t.Errorf("still subscribes %s", f)
		}
	}
}
