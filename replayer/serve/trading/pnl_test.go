package trading_test

import (
	"context"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
)

// TestClosedPnl opens a BTC long at the ask and closes it at the bid on
// the Hyperliquid sample: the closing fill realizes size × (exit − entry),
// the opening one nothing, as the venue's closedPnl says.
func TestClosedPnl(t *testing.T) {
	r := startTrading(t, []string{sample(t, "hyperliquid")},
		trading.Options{Speed: 1, Backtest: backtest.Config{Cash: 1000e10}}, venue.TradingOptions{})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+r.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC"}}`)); err != nil {
		t.Fatal(err)
	}
	hub := r.srv.Hub()
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			t.Fatal(err)
		}
		if _, _, _, ok := hub.Book("BTC", 1, nil, nil); ok {
			break
		}
	}
	acct, ok := hub.Account(testUser)
	if !ok {
		t.Fatal("no account")
	}
	const size = 100_000 // 0.001 BTC at 8 decimals
	trade := func(buy bool) venue.SimOrder {
		bids, asks, _, _ := hub.Book("BTC", 1, nil, nil)
		px := bids[0].Price
		if buy {
			px = asks[0].Price
		}
		o := acct.Place(context.Background(), []venue.SimOrderRequest{{Instrument: "BTC", Buy: buy, Price: px, Size: size, TIF: "IOC"}})[0]
		if o.Filled != size {
			t.Fatalf("IOC %+v", o)
		}
		return o
	}
	trade(true)
	trade(false)
	fills := acct.Fills(nil)
	if len(fills) != 2 {
		t.Fatalf("%d fills", len(fills))
	}
	sc := hyperliquid.Scale
	want := backtest.Notional(fills[1].Price, size, sc.PriceDecimals, sc.SizeDecimals) -
		backtest.Notional(fills[0].Price, size, sc.PriceDecimals, sc.SizeDecimals)
	if fills[0].ClosedPnl != 0 || fills[1].ClosedPnl != want || want == 0 {
		t.Errorf("closedPnl open %d, close %d, want 0 and %d (entry %d exit %d)", fills[0].ClosedPnl, fills[1].ClosedPnl, want,
			fills[0].Price, fills[1].Price)
	}
}
