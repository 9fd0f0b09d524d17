package trading_test

import (
	"context"
	"math"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/registry"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// TestClosedPnl opens a BTC long at the ask and closes it at the bid on
// the Hyperliquid sample: the closing fill realizes size × (exit − entry),
// the opening one nothing, as the venue's closedPnl says.
func TestClosedPnl(t *testing.T) {
	hub := btcHub(t, 1000e10)
	acct, ok := hub.Account(testUser)
	if !ok {
		t.Fatal("no account")
	}
	const size = 100_000 // 0.001 BTC at 8 decimals
	trade := func(buy bool) tradeapi.SimOrder {
		bids, asks, _, _ := hub.Book("BTC", 1, nil, nil)
		px := bids[0].Price
		if buy {
			px = asks[0].Price
		}
		o := acct.Place(context.Background(), []tradeapi.SimOrderRequest{{Instrument: "BTC", Buy: buy, Price: px, Size: size, TIF: "IOC"}})[0]
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

// TestLiquidationPrice opens a 0.001 BTC long with $20 on the Hyperliquid
// sample: the position's liquidation price is where the account's value
// (cash and the long at that mark) meets the maintenance margin the
// simulator liquidates at, below the mark by about $20 / 0.001.
func TestLiquidationPrice(t *testing.T) {
	hub := btcHub(t, 20e10)
	acct, _ := hub.Account(testUser)
	_, asks, _, _ := hub.Book("BTC", 1, nil, nil)
	if o := acct.Place(context.Background(), []tradeapi.SimOrderRequest{{Instrument: "BTC", Buy: true, Price: asks[0].Price, Size: 100_000, TIF: "IOC"}})[0]; o.Filled == 0 {
		t.Fatalf("IOC %+v", o)
	}
	st := acct.State()
	if len(st.Positions) != 1 {
		t.Fatalf("positions %+v", st.Positions)
	}
	p := st.Positions[0]
	if p.LiqPx <= 0 || p.LiqPx >= p.Mark {
		t.Fatalf("long at mark %d: liquidation price %d", p.Mark, p.LiqPx)
	}
	// At the liquidation price the account's value equals the maintenance
	// margin, the venue's share of the initial margin at the listing's max
	// leverage (a whole number): value = q·P / maxLev · share.
	share := registryTrading(t).MaintenanceShare
	q := float64(p.Size) / 1e8
	value := float64(st.Cash)/1e10 + q*float64(p.LiqPx)/1e8
	lev := q * float64(p.LiqPx) / 1e8 * share / value
	if !(lev >= 1 && lev <= 100) || math.Abs(lev-math.Round(lev)) > 0.01 {
		t.Errorf("liquidation price %d: value %v, implied max leverage %v (want a whole number)", p.LiqPx, value, lev)
	}
	t.Logf("mark %d, liquidation %d, implied max leverage %.4f", p.Mark, p.LiqPx, lev)
}

func registryTrading(t *testing.T) *venue.Trading {
	d, err := registry.Lookup(venue.Hyperliquid)
	if err != nil || d.Capabilities().Trading == nil {
		t.Fatalf("hyperliquid trading rules: %v", err)
	}
	return d.Capabilities().Trading
}

// btcHub serves the Hyperliquid sample with the given cash (in the
// simulator's fixed point) and returns its hub once a WebSocket client
// subscribed to BTC's l2Book has been sent a frame and the hub holds a BTC
// book, so the test trades against the book its client sees.
func btcHub(t *testing.T, cash int64) *trading.Hub {
	t.Helper()
	r := startTrading(t, []string{sample(t, "hyperliquid")},
		trading.Options{Speed: 1, Backtest: backtest.Config{Cash: cash}}, tradeapi.TradingOptions{})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+r.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
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
	return hub
}
