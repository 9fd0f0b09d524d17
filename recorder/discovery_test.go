package recorder_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

func TestPolymarketAllMarketsFollowsLifecycle(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	spec := pmSpec(s)
	spec.AllMarkets = true
	// The fake stream's books do not match the REST summary's hash fields,
	// so healing would add resubscribe frames to the ones this test counts.
	c := startCapture(t, spec, nil, recorder.WithHeal(false))
	waitFor(t, "data", func() bool { return len(s.Live()) == 1 && len(s.Live()[0].Sent()) > 10 })
	// The closed market's tokens are not subscribed; both open markets' are.
	subs := s.Live()[0].Subscriptions()
	if len(subs) != 4 || !slices.Contains(subs, fakeexchange.PolymarketStreamAsset) ||
		slices.Contains(subs, "21742633143463906290569050155826241533067272736897614950488156847949938836455") {
		t.Fatalf("subscribed %v", subs)
	}

	// A new_market event from the venue subscribes its tokens on the open
	// connection, a market_resolved unsubscribes them.
	frame, ids := fakeexchange.PolymarketNewMarket()
	s.SendAll(frame)
	waitFor(t, "dynamic subscribe", func() bool { return len(s.Live()[0].Subscriptions()) == 6 })
	s.SendAll(fakeexchange.PolymarketResolved())
	waitFor(t, "dynamic unsubscribe", func() bool { return len(s.Live()[0].Subscriptions()) == 4 })
	recs := c.stop()
	checkByteIdentical(t, s, recs, 0)

	var dyn []string
	for _, r := range ofKind(recs, datasets.KindSent) {
		if bytes.Contains(r.Payload, []byte(`"operation"`)) {
			dyn = append(dyn, string(r.Payload))
		}
	}
	want := []string{
		string(polymarket.AppendDynamicSubscribe(nil, ids)),
		string(polymarket.AppendUnsubscribe(nil, ids)),
	}
	if !slices.Equal(dyn, want) {
		t.Errorf("dynamic frames\n got %q\nwant %q", dyn, want)
	}
	// The market list the session relied on is in the dataset, on conn 0
	// (the connection's REST book summaries are on conn 1).
	var rest []rec
	for _, r := range ofKind(recs, datasets.KindRESTResponse) {
		if r.Conn == 0 {
			rest = append(rest, r)
		}
	}
	if len(rest) != 1 || !bytes.Contains(rest[0].Payload, []byte("polypy-stream-market")) {
		t.Errorf("rest records:\n%s", describe(rest))
	}
	notes := ofKind(recs, datasets.KindNote)
	if len(notes) == 0 || !strings.Contains(notes[0].control(t).Text, "GET "+s.RESTURL()+"/markets?active=true&closed=false") {
		t.Errorf("rest note:\n%s", describe(notes))
	}
}

func TestPolymarketSlugAndConditionResolve(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	for _, tc := range []struct {
		name, inst string
		want       []string
		err        string
	}{
		{"slug", fakeexchange.PolymarketSlug, []string{fakeexchange.PolymarketStreamAsset, fakeexchange.PolymarketOtherAsset}, ""},
		{"condition id", "0x0005c0d312de0be897668695bae9f32b624b4a1ae8b140c49f08447fcc74f442",
			[]string{"85354956062430465315924116860125388538595433819574542752031640332592237464430",
				"115474063863764126958837769719736461272619491980773624567012766320777398670353"}, ""},
		{"unknown slug", "no-such-market", nil, `no market with slug "no-such-market"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := recorder.New(pmSpec(s, tc.inst))
			if err != nil {
				t.Fatal(err)
			}
			p, err := r.Plan(context.Background())
			if tc.err != "" {
				if !errors.Is(err, recorder.ErrDiscovery) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Plan: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Conns) != 1 || !slices.Equal(p.Conns[0].Instruments, tc.want) || !p.Checked {
				t.Errorf("plan %+v", p)
			}
			if got := r.Manifest().Instruments; len(got) != 2 {
				t.Errorf("manifest instruments %v", got)
			}
		})
	}
	if len(s.Conns()) != 0 {
		t.Error("planning opened a WebSocket")
	}
}

func TestPlanShardsWithoutNetwork(t *testing.T) {
	var ids []string
	for i := range 450 {
		ids = append(ids, strings.Repeat("1", 70)+strings.Repeat("0", 5-len(itoa(i)))+itoa(i))
	}
	r, err := recorder.New(recorder.Spec{Venue: "polymarket", Endpoint: "ws://127.0.0.1:1/ws", RESTEndpoint: "http://127.0.0.1:1",
		CLOBEndpoint: "http://127.0.0.1:1",
		Instruments:  ids})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conns) != 3 {
		t.Fatalf("%d connections for 450 assets at 200 each, want 3", len(p.Conns))
	}
	total := 0
	for _, c := range p.Conns {
		total += len(c.Instruments)
		if len(c.Instruments) > polymarket.DefaultConnAssets {
			t.Errorf("conn %d carries %d", c.Conn, len(c.Instruments))
		}
		for _, f := range c.Frames {
			if n := len(jsonHas(t, []byte(f), "assets_ids").([]any)); n > polymarket.MaxSubscribeIDs {
				t.Errorf("frame with %d ids", n)
			}
		}
	}
	if total != 450 || p.Checked {
		t.Errorf("%d assets planned, checked=%v", total, p.Checked)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestHyperliquidAllMarketsRefresh(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	spec := hlSpec(s, []string{"l2Book"})
	spec.AllMarkets = true
	c := startCapture(t, spec, nil, recorder.WithRefreshInterval(50*time.Millisecond))
	// Every listed coin but the delisted FTM, perps and spot.
	waitFor(t, "all coins subscribed", func() bool { return len(s.Live()) == 1 && len(s.Live()[0].Subscriptions()) == 6 })
	if slices.Contains(s.Live()[0].Subscriptions(), "l2Book@FTM") {
		t.Error("delisted coin subscribed")
	}
	// A listing change: DOGE appears, SOL goes.
	s.SetListing(nil, []byte(`{"universe":[{"name":"BTC","szDecimals":5},{"name":"ETH","szDecimals":4},{"name":"HYPE","szDecimals":2},{"name":"DOGE","szDecimals":0}]}`), nil)
	waitFor(t, "listing followed", func() bool {
		subs := s.Live()[0].Subscriptions()
		return slices.Contains(subs, "l2Book@DOGE") && !slices.Contains(subs, "l2Book@SOL")
	})
	recs := c.stop()
	checkByteIdentical(t, s, recs, 0)
	var unsub bool
	for _, r := range ofKind(recs, datasets.KindSent) {
		if string(r.Payload) == `{"method":"unsubscribe","subscription":{"type":"l2Book","coin":"SOL"}}` {
			unsub = true
		}
	}
	if !unsub {
		t.Error("no unsubscribe of SOL recorded")
	}
	// The changed meta was stored again.
	if n := len(ofKind(recs, datasets.KindRESTResponse)); n < 4 {
		t.Errorf("%d rest responses, want the first listing and the changed one", n)
	}
}
