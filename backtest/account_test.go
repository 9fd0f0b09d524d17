package backtest

import (
	"math"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/feed"
)

// A Polymarket BUY needs its cost in cash beyond what resting BUYs hold: a
// $1 account cannot spend $2.
func TestPolymarketCollateral(t *testing.T) {
	tp, s := pmTape(t, Config{Cash: cash(t, "1")})
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("5"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_NOT_ENOUGH_BALANCE")
	if o := tp.e.order(id); !strings.Contains(o.Reason, "needs 2") {
		t.Fatalf("reason %q does not say what it needed", o.Reason)
	}
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.19"), Size: tp.sz("5"), TIF: GTC}) // 0.95
	wantStatus(t, tp, id, StatusOpen, "")
	id = tp.submit(s, OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.01"), Size: tp.sz("5"), TIF: GTC}) // 0.05 of 0.05 left
	wantStatus(t, tp, id, StatusOpen, "")
	id = tp.submit(s, OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.01"), Size: tp.sz("5"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_NOT_ENOUGH_BALANCE")
	// A dollar-sized BUY: its amount.
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("1"), TIF: FOK})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_NOT_ENOUGH_BALANCE")
	// Holding no NO does not let one sell YES's complement.
	id = tp.submit(s, OrderRequest{Instrument: pmNo, Side: Sell, Price: tp.px("0.58"), Size: tp.sz("5"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_NOT_ENOUGH_BALANCE")
	if tp.e.cash != cash(t, "1") || len(tp.e.fills) != 0 {
		t.Fatalf("cash %d", tp.e.cash)
	}
}

// Hyperliquid cross margin: an order needs notional / max leverage (40 for
// BTC in the recorded meta) of free margin; when the account value falls
// below the maintenance margin (half the initial) its positions are closed
// at the mark.
func TestHyperliquidMarginAndLiquidation(t *testing.T) {
	tp, s := hlTape(t, Config{Cash: cash(t, "1000")})
	// Shorting 8.83 BTC needs 8.83 × 99000 / 40 = 21,853.50.
	id := tp.submit(s, OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("99000"), Size: tp.sz("8.83"), TIF: IOC})
	wantStatus(t, tp, id, StatusRejected, "Insufficient margin to place order.")
	// 0.3 × 100000 / 40 = 750 of 1000: filled at the 100000 bid, taker fee
	// 30000 × 0.00045 = 13.50: cash 1000 + 30000 − 13.5 = 30986.50.
	id = tp.submit(s, OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("100000"), Size: tp.sz("0.3"), TIF: IOC})
	wantStatus(t, tp, id, StatusFilled, "")
	if tp.e.cash != cash(t, "30986.5") {
		t.Fatalf("cash %d", tp.e.cash)
	}
	// Mid 102100: value 30986.5 − 0.3 × 102100 = 356.50 < maintenance
	// 0.3 × 102100 / 40 / 2 = 382.875: closed at 102100, fee 30630 ×
	// 0.00045 = 13.7835: cash 30986.5 − 30630 − 13.7835 = 342.7165.
	tp.hlBook("BTC", "102000:1", "102200:1")
	in := tp.e.insts["BTC"]
	if in.Position != 0 || tp.e.liquidations != 1 || tp.e.cash != cash(t, "342.7165") {
		t.Fatalf("position %d, liquidations %d, cash %d", in.Position, tp.e.liquidations, tp.e.cash)
	}
	res := tp.e.Finish()
	last := res.Orders[len(res.Orders)-1]
	if last.Tag != "liquidation" || last.Status != StatusFilled || last.Side != Buy {
		t.Fatalf("liquidation order %+v", *last)
	}
	// Peak: 0.3 × 102100 / 40 = 765.75 when the liquidating book came.
	if res.Summary.PeakMargin != 765.75 || res.Summary.Liquidations != 1 {
		t.Fatalf("peak margin %v, liquidations %d", res.Summary.PeakMargin, res.Summary.Liquidations)
	}
}

// Margin judges the account at the venue's mark price, as the package doc's
// formula says, not at the book's mid: with the book at 100000 / 100001 a
// recorded mark of 101000 puts the liquidation price of a 0.3 BTC short
// with 30986.50 of cash where 30986.5 − 0.3 P = 0.3 P / 40 × ½ (P =
// 30986.5 / 0.30375 = 102013.17), and a mark of 102100 liquidates it though
// the mid has not moved.
func TestMarginJudgedAtTheMarkPrice(t *testing.T) {
	tp, s := hlTape(t, Config{Cash: cash(t, "1000")})
	id := tp.submit(s, OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("100000"), Size: tp.sz("0.3"), TIF: IOC})
	wantStatus(t, tp, id, StatusFilled, "")
	tp.hlCtx("BTC", "101000", "0")
	want := int64(math.Round(30986.5 / 0.30375 * float64(pow10(tp.sc.PriceDecimals))))
	if lp, ok := tp.e.ctx.LiquidationPrice("BTC"); !ok || abs64(lp-want) > 1 || tp.e.liquidations != 0 {
		t.Fatalf("liquidation price %d %v, want %d (liquidations %d)", lp, ok, want, tp.e.liquidations)
	}
	// Value at the mark 30986.5 − 30630 = 356.50 < maintenance 382.875:
	// closed at 102100, fee 13.7835: cash 342.7165.
	tp.hlCtx("BTC", "102100", "0")
	if tp.e.liquidations != 1 || tp.e.insts["BTC"].xPos != 0 || tp.e.cash != cash(t, "342.7165") {
		t.Fatalf("liquidations %d, position %d, cash %d; want the short closed at the mark 102100", tp.e.liquidations, tp.e.insts["BTC"].xPos, tp.e.cash)
	}
}

// A round trip at an unchanged book costs exactly the fees, margin on.
func TestRoundTripConservesWithMargin(t *testing.T) {
	tp, s := hlTape(t, Config{Cash: cash(t, "10000")})
	tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100001"), Size: tp.sz("0.1"), TIF: IOC})
	tp.submit(s, OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("100001"), Size: tp.sz("0.1"), TIF: GTC})
	tp.hlTrade("BTC", "B", "100002", "1") // through the resting sell: filled as maker
	fees := tp.e.fees - tp.e.rebates
	if got := tp.e.equityNow() - cash(t, "10000"); got != -fees || fees == 0 {
		t.Fatalf("equity moved %d, fees %d", got, fees)
	}
}

// The summary's fill ratio is in dollars (a dollar-sized order's value is
// its amount), per venue in its own units; PnL by instrument.
func TestSummaryFigures(t *testing.T) {
	tp, s := pmTape(t, Config{})
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("4.2"), TIF: FOK}) // 10 at 0.42
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("100"), TIF: FOK}) // rejected
	res := tp.e.Finish()
	sum := res.Summary
	// 4.20 filled of 104.20 submitted.
	if want := 4.2 / 104.2; sum.FillRatio < want-1e-12 || sum.FillRatio > want+1e-12 {
		t.Fatalf("fill ratio %v, want %v", sum.FillRatio, want)
	}
	v := sum.Venues["polymarket"]
	if v == nil || v.Orders != 2 || v.Fills != 1 || v.FilledSize != 10 || v.FilledValue != 4.2 {
		t.Fatalf("venue summary %+v", v)
	}
	// 10 YES marked at mid 0.41: 4.10 − 4.20 = −0.10.
	if p := sum.InstrumentPnL[pmYes]; p < -0.1-1e-9 || p > -0.1+1e-9 || sum.ReturnPeriodNs != 60e9 {
		t.Fatalf("pnl of YES %v, return period %d", p, sum.ReturnPeriodNs)
	}
}

// Sharpe and Sortino use returns over the stated period: a run of a few
// minutes has them.
func TestSharpeSortino(t *testing.T) {
	// Equity by minute 100 → 101 → 100.5 → 102 on 100 of cash: returns
	// 0.01, −0.005, 0.015; mean 0.006667, sd 0.010408, downside √(0.005²/3)
	// = 0.0028868; annualized by √525600 = 724.98.
	sh, so := ratios([]float64{101, 100.5, 102}, 100, 60e9)
	if sh < 464.3 || sh > 464.5 || so < 1674 || so > 1675 {
		t.Fatalf("sharpe %v sortino %v", sh, so)
	}
}

// reservedCheck runs the market maker and, on every third event, amends
// one of its resting orders (a size decrease that keeps its place, or a
// new price), and checks at each event that Engine.reserved is the sum
// of the resting BUYs' holds counted afresh.
type reservedCheck struct {
	MM
	t      *testing.T
	n      int
	checks int
}

func (s *reservedCheck) OnEvent(ctx *Context, ev *feed.Event) {
	s.check(ctx.e)
	s.MM.OnEvent(ctx, ev)
	s.n++
	if s.n%3 == 0 {
		if open := ctx.OpenOrders(nil, ""); len(open) > 0 {
			o := open[s.n%len(open)]
			in := ctx.Instrument(o.Instrument)
			if s.n%2 == 0 && o.Leaves() > in.Lot() {
				ctx.Amend(o.ID, o.Price, o.Size-in.Lot())
			} else {
				ctx.Amend(o.ID, o.Price-in.Tick, o.Size)
			}
		}
	}
	s.check(ctx.e)
}

func (s *reservedCheck) check(e *Engine) {
	var sum int64
	for _, in := range e.instList {
		for _, o := range in.open {
			sum += buyHold(in, o)
		}
	}
	if sum != e.reserved {
		s.t.Fatalf("event %d: resting BUYs hold %d, Engine.reserved says %d", s.n, sum, e.reserved)
	}
	if sum > 0 {
		s.checks++
	}
}

// TestReservedFollowsOrders: the cash resting BUYs hold, kept as orders
// rest, fill, are amended and leave, is always their sum.
func TestReservedFollowsOrders(t *testing.T) {
	mm, _, err := NewBuiltin("mm", Params{"spread": "0.02"})
	if err != nil {
		t.Fatal(err)
	}
	s := &reservedCheck{MM: *mm.(*MM), t: t}
	_, res := runEngine(t, s, false)
	if s.checks < 1000 || res.Summary.Fills == 0 {
		t.Fatalf("%d checks with BUYs resting, %d fills: too few to show anything", s.checks, res.Summary.Fills)
	}
}
