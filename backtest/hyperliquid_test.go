package backtest

import (
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

func hlTape(t *testing.T, cfg Config) (*tape, *script) {
	s := &script{}
	if cfg.Cash == 0 {
		cfg.Cash = cash(t, "100000")
	}
	tp := newTape(t, venue.Hyperliquid, s, cfg)
	// szDecimals from a recorded meta body: BTC 5, so prices take at most
	// 6 − 5 = 1 decimal.
	tp.rest(`{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40},{"name":"ETH","szDecimals":4,"maxLeverage":25}]}`)
	tp.hlBook("BTC", "100000:1,99999:2", "100001:0.5,100002:3")
	return tp, s
}

func TestHyperliquidTIFs(t *testing.T) {
	tp, s := hlTape(t, Config{})
	if in := tp.e.insts["BTC"]; in.SzDecimals != 5 {
		t.Fatalf("szDecimals %d from meta", in.SzDecimals)
	}
	// ALO that would cross: the venue's words.
	id := tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100001"), Size: tp.sz("0.1"), TIF: ALO})
	wantStatus(t, tp, id, StatusRejected, "Post only order would have immediately matched")
	// GTD and FOK are not Hyperliquid's.
	id = tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("99000"), Size: tp.sz("0.1"), TIF: FOK})
	wantStatus(t, tp, id, StatusRejected, "not offered by hyperliquid")
	// Post-only as a flag is Polymarket's: Hyperliquid's is ALO.
	id = tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("99000"), Size: tp.sz("0.1"), TIF: GTC, PostOnly: true})
	wantStatus(t, tp, id, StatusRejected, "ALO")
	// IOC buying 1 BTC up to 100002 takes 0.5 + 0.5, and shorts are allowed.
	id = tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100002"), Size: tp.sz("1"), TIF: IOC})
	o := wantStatus(t, tp, id, StatusFilled, "")
	if len(tp.e.fills) != 2 || tp.e.fills[0].Price != tp.px("100001") || tp.e.fills[1].Size != tp.sz("0.5") {
		t.Fatalf("fills %+v", tp.e.fills)
	}
	_ = o
	// IOC with nothing in reach: cancelled with the venue's reason.
	id = tp.submit(s, OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("100005"), Size: tp.sz("0.1"), TIF: IOC})
	wantStatus(t, tp, id, StatusCancelled, "Order could not immediately match")
	// Reduce-only: a buy while long would increase the position.
	id = tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("99000"), Size: tp.sz("0.1"), TIF: GTC, ReduceOnly: true})
	wantStatus(t, tp, id, StatusRejected, "Reduce only order would increase position")
	// A reduce-only sell larger than the position is cut to it.
	id = tp.submit(s, OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("99999"), Size: tp.sz("3"), TIF: IOC, ReduceOnly: true})
	o = wantStatus(t, tp, id, StatusFilled, "")
	if o.Filled != tp.sz("1") || tp.e.insts["BTC"].Position != 0 {
		t.Fatalf("reduce-only filled %d, position %d", o.Filled, tp.e.insts["BTC"].Position)
	}
}

func TestHyperliquidTickAndLot(t *testing.T) {
	tp, s := hlTape(t, Config{})
	for _, c := range []struct {
		px, sz string
		want   Status
		reason string
	}{
		{"99000", "0.1", StatusOpen, ""},                                      // integer price: always valid
		{"99000.5", "0.1", StatusRejected, "Order has invalid price"},         // 6 significant figures
		{"99000", "0.000001", StatusRejected, "Order has invalid size"},       // 6 decimals, szDecimals 5
		{"99000", "0.00001", StatusRejected, "Order must have minimum value"}, // $0.99
		{"99000", "0.0001", StatusRejected, "Order must have minimum value"},  // $9.90
		{"99000", "0.00011", StatusOpen, ""},                                  // $10.89
	} {
		id := tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px(c.px), Size: tp.sz(c.sz), TIF: GTC})
		wantStatus(t, tp, id, c.want, c.reason)
	}
	// A price below 1 with 5 significant figures and szDecimals 0: at most
	// 6 decimals — 0.12345 valid, 0.123456 (6 figures) not.
	tp.rest(`{"universe":[{"name":"MEME","szDecimals":0}]}`)
	tp.hlBook("MEME", "0.12:1000", "0.13:1000")
	id := tp.submit(s, OrderRequest{Instrument: "MEME", Side: Buy, Price: tp.px("0.12345"), Size: tp.sz("100"), TIF: GTC})
	wantStatus(t, tp, id, StatusOpen, "")
	id = tp.submit(s, OrderRequest{Instrument: "MEME", Side: Buy, Price: tp.px("0.123456"), Size: tp.sz("100"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "Order has invalid price")
	id = tp.submit(s, OrderRequest{Instrument: "MEME", Side: Buy, Price: tp.px("0.1234"), Size: tp.sz("100.5"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "Order has invalid size")
	// A spot pair from a recorded spotMeta body (read by the driver's
	// Instruments, as the exports' instruments table reads it): its base
	// token's szDecimals 0 and spot's 8 − 0 price decimals, where a perp of
	// szDecimals 0 has 6.
	tp.rest(`{"universe":[{"name":"PURR/USDC","tokens":[1,0],"index":0}],"tokens":[{"name":"USDC","szDecimals":8,"index":0},{"name":"PURR","szDecimals":0,"index":1}]}`)
	tp.hlBook("PURR/USDC", "0.0012:100000", "0.0013:100000")
	if in := tp.e.insts["PURR/USDC"]; in.SzDecimals != 0 || in.maxPriceDecimals() != 8 {
		t.Fatalf("spot rules: szDecimals %d, price decimals %d", in.SzDecimals, in.maxPriceDecimals())
	}
	id = tp.submit(s, OrderRequest{Instrument: "PURR/USDC", Side: Buy, Price: tp.px("0.0012345"), Size: tp.sz("10000"), TIF: GTC})
	wantStatus(t, tp, id, StatusOpen, "")
	tp.hlBook("MEME", "0.0012:100000", "0.0013:100000")
	id = tp.submit(s, OrderRequest{Instrument: "MEME", Side: Buy, Price: tp.px("0.0012345"), Size: tp.sz("10000"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "Order has invalid price")
}

// Funding: at each hour of the exchange clock, a long pays position × mark
// × rate from the latest asset context.
func TestHyperliquidFunding(t *testing.T) {
	s := &script{}
	// No recorded meta: leverage 1, the 2 BTC need 200,002 of margin.
	tp := newTape(t, venue.Hyperliquid, s, Config{Cash: cash(t, "1000000")})
	tp.hlBook("BTC", "100000:1", "100001:5")
	tp.hlCtx("BTC", "100000", "0.0000125")
	tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100001"), Size: tp.sz("2"), TIF: IOC})
	tp.hlCtx("BTC", "101000", "0.0000125")
	c0 := tp.e.cash
	// Asset contexts carry no time: funding follows the instrument's
	// exchange clock (the books' stamps). t0 is on an hour; 20 minutes per
	// book: the hour turns once, at the third.
	tp.step = 20 * 60e9
	for range 3 {
		tp.hlBook("BTC", "100000:1", "100001:5")
	}
	in := tp.e.insts["BTC"]
	// 2 × 101000 × 0.0000125 = 2.525 per hour.
	if in.Funding != cash(t, "2.525") || c0-tp.e.cash != cash(t, "2.525") {
		t.Fatalf("funding %d, cash change %d: want 2.525 paid", in.Funding, c0-tp.e.cash)
	}
}

// Hyperliquid fees by tier: notional × rate.
func TestHyperliquidFees(t *testing.T) {
	tp, s := hlTape(t, Config{FeeTier: 2}) // taker 0.035%, maker 0.008%
	tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100001"), Size: tp.sz("0.5"), TIF: IOC})
	// 0.5 × 100001 × 0.00035 = 17.500175
	if f := tp.e.fills[0]; f.Fee != cash(t, "17.500175") {
		t.Fatalf("taker fee %d, want 17.500175", f.Fee)
	}
	tp.submit(s, OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("100010"), Size: tp.sz("0.2"), TIF: ALO})
	tp.hlTrade("BTC", "B", "100011", "1") // a buy printed through our ask
	// 0.2 × 100010 × 0.00008 = 1.60016
	if f := tp.e.fills[1]; f.Liquidity != Maker || f.Fee != cash(t, "1.60016") {
		t.Fatalf("maker fill %+v, want fee 1.60016", f)
	}
}

// The strategy's own resting orders are not in the recorded book: a taker
// order never matches them.
func TestNoSelfMatch(t *testing.T) {
	tp, s := hlTape(t, Config{})
	ask := tp.submit(s, OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("100001"), Size: tp.sz("0.1"), TIF: GTC})
	wantStatus(t, tp, ask, StatusOpen, "")
	// Our IOC buy at 100001 takes the recorded 0.5 there and nothing of our own ask.
	id := tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100001"), Size: tp.sz("1"), TIF: IOC})
	o := tp.e.order(id)
	if o.Filled != tp.sz("0.5") {
		t.Fatalf("IOC filled %d, want the recorded 0.5 only", o.Filled)
	}
	if a := tp.e.order(ask); a.Status != StatusOpen || a.Filled != 0 {
		t.Fatalf("our resting ask %s filled %d by our own order", a.Status, a.Filled)
	}
}

// A panicking strategy is isolated: the error names the event, the
// simulated exchange goes on (its resting order still fills).
func TestStrategyPanic(t *testing.T) {
	tp, s := hlTape(t, Config{})
	id := tp.submit(s, OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("100010"), Size: tp.sz("0.2"), TIF: GTC})
	s.do = func(*Context) { panic("boom") }
	tp.idle(1)
	n := s.events
	tp.hlTrade("BTC", "B", "100011", "1")
	res := tp.e.Finish()
	if s.events != n {
		t.Fatal("a dead strategy still receives events")
	}
	if tp.e.order(id).Status != StatusFilled {
		t.Fatal("the exchange stopped with the strategy")
	}
	if len(res.Errors) != 1 || res.Summary.StrategyError == "" {
		t.Fatalf("errors %v", res.Errors)
	}
	if se, ok := res.Errors[0].(*StrategyError); !ok || se.Value != "boom" || se.Seq == 0 {
		t.Fatalf("strategy error %#v", res.Errors[0])
	}
}
