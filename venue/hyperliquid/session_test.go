package hyperliquid

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSubscriptionFramesAndSpecs(t *testing.T) {
	for _, tc := range []struct {
		spec, frame string
	}{
		{"l2Book@BTC", `{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC"}}`},
		{"l2Book+fast@BTC", `{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC","fast":true}}`},
		{"l2Book+nSigFigs=5+mantissa=2@ETH", `{"method":"subscribe","subscription":{"type":"l2Book","coin":"ETH","nSigFigs":5,"mantissa":2}}`},
		{"bbo@@107", `{"method":"subscribe","subscription":{"type":"bbo","coin":"@107"}}`},
		{"trades@xyz:SP500", `{"method":"subscribe","subscription":{"type":"trades","coin":"xyz:SP500"}}`},
		{"candle+interval=1m@PURR/USDC", `{"method":"subscribe","subscription":{"type":"candle","coin":"PURR/USDC","interval":"1m"}}`},
		{"allMids", `{"method":"subscribe","subscription":{"type":"allMids"}}`},
		{"allMids+dex=xyz", `{"method":"subscribe","subscription":{"type":"allMids","dex":"xyz"}}`},
		{"activeAssetCtx@HYPE", `{"method":"subscribe","subscription":{"type":"activeAssetCtx","coin":"HYPE"}}`},
	} {
		s, err := parseSubscription(tc.spec)
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if got := string(s.AppendSubscribe(nil)); got != tc.frame {
			t.Errorf("%s:\n got %s\nwant %s", tc.spec, got, tc.frame)
		}
		if !json.Valid(s.AppendUnsubscribe(nil)) || !strings.HasPrefix(string(s.AppendUnsubscribe(nil)), `{"method":"unsubscribe","subscription":`) {
			t.Errorf("%s: unsubscribe %s", tc.spec, s.AppendUnsubscribe(nil))
		}
		if s.String() != tc.spec {
			t.Errorf("round trip %s -> %s", tc.spec, s)
		}
	}
	for _, bad := range []string{"", "orderUpdates@BTC", "l2Book", "allMids@BTC", "l2Book+nSigFigs=1@BTC",
		"l2Book+mantissa=2@BTC", "l2Book+nSigFigs=5+mantissa=3@BTC", "bbo+fast@BTC", "candle@BTC", "candle+interval=7m@BTC",
		"trades+interval=1m@BTC", "l2Book+slow@BTC", "l2Book+nSigFigs=x@BTC", "bbo+dex=a@BTC"} {
		if _, err := parseSubscription(bad); !errors.Is(err, ErrSubscription) {
			t.Errorf("%q: %v, want ErrSubscription", bad, err)
		}
	}
}

func TestExpandChannels(t *testing.T) {
	subs, err := expandChannels([]string{"l2Book", "bbo", "allMids", "l2Book"}, []string{"BTC", "ETH"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range subs {
		got = append(got, s.String())
	}
	if want := []string{"l2Book@BTC", "l2Book@ETH", "bbo@BTC", "bbo@ETH", "allMids"}; !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	if _, err := expandChannels([]string{"bbo"}, nil); err == nil {
		t.Error("a coin channel without coins accepted")
	}
	if _, err := expandChannels([]string{"l2Book+fast+nSigFigs=9"}, []string{"BTC"}); err == nil {
		t.Error("bad channel accepted")
	}
}

func TestPlanConnsSeparatesVariants(t *testing.T) {
	var subs []subSpec
	for _, c := range []string{"BTC", "ETH", "SOL"} {
		for _, ch := range []string{"l2Book", "l2Book+fast", "l2Book+nSigFigs=5", "bbo", "trades"} {
			s, _ := parseSubscription(ch + "@" + c)
			subs = append(subs, s)
		}
	}
	for _, tc := range []struct{ conns, want int }{{0, 3}, {3, 3}, {5, 5}, {10, 10}} {
		plan, err := planConns(subs, tc.conns)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan) != tc.want {
			t.Errorf("conns %d: %d connections, want %d", tc.conns, len(plan), tc.want)
		}
		n := 0
		for i, conn := range plan {
			keys := map[string]bool{}
			for _, s := range conn {
				if keys[s.SocketKey()] {
					t.Errorf("conns %d: connection %d carries two %s", tc.conns, i, s.SocketKey())
				}
				keys[s.SocketKey()] = true
			}
			n += len(conn)
			if len(conn) < len(subs)/len(plan) || len(conn) > len(subs)/len(plan)+1 {
				t.Errorf("conns %d: connection %d unbalanced with %d", tc.conns, i, len(conn))
			}
		}
		if n != len(subs) {
			t.Errorf("%d subscriptions planned of %d", n, len(subs))
		}
	}
	if _, err := planConns(subs, 2); err == nil || !strings.Contains(err.Error(), "cannot share a socket") {
		t.Errorf("2 connections for 3 variants: %v", err)
	}
	if _, err := planConns(subs, 11); err == nil {
		t.Error("11 connections accepted")
	}
	many := make([]subSpec, 0, 1001)
	for i := range 1001 {
		many = append(many, subSpec{Type: subTrades, Coin: fmt.Sprint("C", i)})
	}
	if _, err := planConns(many, 0); err == nil {
		t.Error("1001 subscriptions accepted")
	}
}

func TestParseMeta(t *testing.T) {
	meta := `{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40},{"name":"FTM","szDecimals":0,"isDelisted":true}],"marginTables":[]}`
	as, err := parseMeta([]byte(meta))
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 2 || as[0] != (metaAsset{Name: "BTC", SzDecimals: 5}) || !as[1].Delisted || as[1].Index != 1 {
		t.Errorf("%+v", as)
	}
	spot := `{"universe":[{"tokens":[1,0],"name":"PURR/USDC","index":0,"isCanonical":true},{"tokens":[150,0],"name":"@107","index":107}],
	"tokens":[{"name":"USDC","szDecimals":8,"index":0},{"name":"PURR","szDecimals":0,"index":1},{"name":"HYPE","szDecimals":2,"index":150}]}`
	sp, err := parseSpotMeta([]byte(spot))
	if err != nil {
		t.Fatal(err)
	}
	if len(sp) != 2 || sp[1] != (metaAsset{Name: "@107", SzDecimals: 2, Spot: true, Index: 107}) {
		t.Errorf("%+v", sp)
	}
	for _, bad := range []string{`[]`, `{}`, `{"universe":[{"szDecimals":1}]}`, `nope`} {
		if _, err := parseMeta([]byte(bad)); !errors.Is(err, ErrMetaBody) {
			t.Errorf("meta %q: %v", bad, err)
		}
	}
	for _, bad := range []string{`{"universe":[{"name":"X","tokens":[9,0]}],"tokens":[]}`, `{"universe":[{"name":"X","tokens":[1]}]}`} {
		if _, err := parseSpotMeta([]byte(bad)); !errors.Is(err, ErrMetaBody) {
			t.Errorf("spotMeta %q: %v", bad, err)
		}
	}
}
