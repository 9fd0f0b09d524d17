package hyperliquid

import (
	"errors"
	"testing"
)

func TestRouteFrame(t *testing.T) {
	ls := lines(t, "arbitrage_observatory_probe_2026-09_core.ndjson")
	tests := []struct {
		frame                    string
		channel, coin, ival, dex string
	}{
		{string(ls[0]), "subscriptionResponse", "", "", ""},
		{string(ls[1]), "l2Book", "BTC", "", ""},
		{string(ls[2]), "bbo", "BTC", "", ""},
		{string(ls[3]), "activeAssetCtx", "BTC", "", ""},
		{string(ls[4]), "trades", "BTC", "", ""},
		{string(ls[5]), "candle", "BTC", "1m", ""},
		{string(ls[6]), "pong", "", "", ""},
		{string(lines(t, "nautilus_ws_allmids_trimmed.ndjson")[0]), "allMids", "", "", ""},
		{`{"data":{"mids":{"xyz:SP500":"1"},"dex":"xyz"},"channel":"allMids"}`, "allMids", "", "", "xyz"},
		{`{"channel":"trades","data":[]}`, "trades", "", "", ""},
		{`{"channel":"error","data":"Already subscribed: {\"coin\":\"BTC\"}"}`, "error", "", "", ""},
	}
	for _, tt := range tests {
		r, err := RouteFrame([]byte(tt.frame))
		if err != nil {
			t.Errorf("%.50s: %v", tt.frame, err)
			continue
		}
		if string(r.Channel) != tt.channel || string(r.Coin) != tt.coin || string(r.Interval) != tt.ival || string(r.Dex) != tt.dex {
			t.Errorf("%.50s: route %q %q %q %q", tt.frame, r.Channel, r.Coin, r.Interval, r.Dex)
		}
	}
	for _, bad := range []string{"Websocket connection established.", `{"data":{}}`, `{"channel":"l2Book","data":{"coin":}}`, `{"channel":"x"} x`, ``} {
		var de *DecodeError
		if _, err := RouteFrame([]byte(bad)); !errors.As(err, &de) {
			t.Errorf("%q: error %v", bad, err)
		}
	}
	f := ls[1]
	if n := testing.AllocsPerRun(100, func() { _, _ = RouteFrame(f) }); n != 0 {
		t.Errorf("RouteFrame allocates %v times", n)
	}
}
