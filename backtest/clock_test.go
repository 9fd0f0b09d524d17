package backtest

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// An order reaching the venue at exchange time T meets the book as it
// stood at T: liquidity stamped after T is not there for it, liquidity
// stamped at T is (hftbacktest applies exchange data before an order
// received at the same timestamp).
func TestOrderMeetsTheBookAtItsArrival(t *testing.T) {
	for _, c := range []struct {
		name    string
		stampMs int64 // the new ask's stamp, after the submit
		want    string
	}{
		{"after", 4, ""},     // arrives at +3 ms; the 0.42 ask is stamped +4
		{"at", 3, "0.42:10"}, // the ask is stamped +3, exactly the arrival
		{"before", 2, "0.42:10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &script{}
			tp := newTape(t, venue.Polymarket, s, Config{Cash: cash(t, "1000"), Latency: ConstantLatency{EntryNs: 3e6}})
			tp.pmBook(pmYes, "0.40:100", "0.45:100")
			var id uint64
			s.do = func(ctx *Context) {
				// $4.20 at up to 0.43: 10 shares at 0.42.
				id, _ = ctx.Submit(OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.43"), Amount: tp.px("4.2"), TIF: FAK})
			}
			tp.idle(1) // submit at t, arrival at t + 3 ms
			sub := tp.recvNs
			// The ask is received at +5 ms whatever its stamp (feed latency
			// 5 − stamp ms); the next frame is stamped +6.
			tp.step = 5e6
			tp.lag = 5e6 - c.stampMs*1e6
			tp.pmChange(pmYes, "SELL", "0.42", "50")
			tp.step, tp.lag = 1e6, 0
			tp.idle(1)
			o := tp.e.order(id)
			got := ""
			for _, f := range tp.e.fills {
				got += book2(tp, f.Price, f.Size)
			}
			if got != c.want {
				t.Fatalf("fills %q, want %q (order %s %q)", got, c.want, o.Status, o.Reason)
			}
			if o.ActiveNs != sub+3e6 {
				t.Fatalf("active at %d, want the arrival %d", o.ActiveNs, sub+3e6)
			}
			wantCash := cash(t, "1000")
			if c.want != "" {
				wantCash -= cash(t, "4.2") // 10 × 0.42, no fee
			} else if o.Status != StatusCancelled || !strings.Contains(o.Reason, "no orders found to match with FAK") {
				t.Fatalf("unfilled FAK: %s %q", o.Status, o.Reason)
			}
			if tp.e.cash != wantCash {
				t.Fatalf("cash %d, want %d", tp.e.cash, wantCash)
			}
		})
	}
}

func book2(tp *tape, p, s int64) string {
	return fmtDec(p, tp.sc.PriceDecimals) + ":" + fmtDec(s, tp.sc.SizeDecimals)
}

// Messages without an exchange timestamp (Hyperliquid asset contexts,
// pongs) never move the exchange clock: an order waits for the feed to
// show a time after its arrival, and meets the book as the venue had it
// then, not as the last stale frame received showed it. Adding an
// unrelated asset context changes nothing.
func TestUnstampedMessagesDoNotMoveTheClock(t *testing.T) {
	run := func(extraCtx bool) (*tape, uint64) {
		s := &script{}
		tp := newTape(t, venue.Hyperliquid, s, Config{Cash: cash(t, "100000")})
		tp.rest(`{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40}]}`)
		tp.lag = 10e6 // the feed arrives 10 ms after the venue stamps it
		tp.hlBook("BTC", "100000:1", "100001:0.5,100005:3")
		var id uint64
		s.do = func(ctx *Context) {
			id, _ = ctx.Submit(OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100010"), Size: tp.sz("0.1"), TIF: IOC})
		}
		tp.pong(1) // submit at t (no latency): arrives at exchange time t
		if extraCtx {
			tp.hlCtx("ETH", "3000", "0.00001")
		}
		tp.hlCtx("BTC", "100000", "0.0000125")
		tp.pong(1)
		if o := tp.e.order(id); o.Status != StatusPending {
			t.Fatalf("order %s before the feed showed a time after its arrival", o.Status)
		}
		// Stamped t − 5 ms (received t + 5): the venue took the 100001 ask
		// before the order arrived.
		tp.hlBook("BTC", "100000:1", "100005:3")
		tp.idle(10) // stamps reach past t
		return tp, id
	}
	tp, id := run(false)
	o := wantStatus(t, tp, id, StatusFilled, "")
	if len(tp.e.fills) != 1 || tp.e.fills[0].Price != tp.px("100005") || o.Filled != tp.sz("0.1") {
		t.Fatalf("fills %+v, want 0.1 at 100005", tp.e.fills)
	}
	// 0.1 × 100005 = 10000.5, taker fee 0.045%: 4.500225.
	if tp.e.cash != cash(t, "100000")-cash(t, "10000.5")-cash(t, "4.500225") {
		t.Fatalf("cash %d", tp.e.cash)
	}
	tp2, _ := run(true)
	if len(tp2.e.fills) != 1 || tp2.e.fills[0] != tp.e.fills[0] {
		t.Fatalf("an unrelated asset context changed the fills: %+v vs %+v", tp2.e.fills, tp.e.fills)
	}
}

// The strategy's view changes only when a report reaches it: with a 5 ms
// acknowledgement latency, a fill at the exchange shows in Position, Cash,
// Fills and Order only 5 ms later; the queue estimate is the model's, not
// part of the order the strategy reads.
func TestStrategySeesOnlyWhatWasReported(t *testing.T) {
	s := &script{}
	tp := newTape(t, venue.Polymarket, s, Config{Cash: cash(t, "1000"), Latency: ConstantLatency{AckNs: 5e6}})
	tp.pmBook(pmYes, "0.40:100", "0.42:80")
	tp.pmBook(pmNo, "0.58:80", "0.60:100")
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTC})
	ctx := &tp.e.ctx
	if lo := ctx.Order(id); lo.Status != StatusPending || ctx.Working(pmYes) != 1 || len(ctx.OpenOrders(nil, pmYes)) != 0 {
		t.Fatalf("before the ack: %s, working %d", lo.Status, ctx.Working(pmYes))
	}
	if q, ok := ctx.QueueEstimate(id); ok || tp.e.order(id).Status != StatusOpen {
		t.Fatalf("before the ack the queue estimate says the order rests (%d %v)", q, ok)
	}
	tp.idle(5)
	if lo := ctx.Order(id); lo.Status != StatusOpen || lo.Queue != 0 || len(ctx.OpenOrders(nil, pmYes)) != 1 {
		t.Fatalf("after the ack: %+v", *lo)
	}
	if q, ok := ctx.QueueEstimate(id); !ok || q != tp.sz("100") {
		t.Fatalf("queue estimate %d %v, want 100 ahead", q, ok)
	}
	tp.pmTrade(pmYes, "SELL", "0.40", "104") // 100 ahead, then 4 of ours
	if tp.e.insts[pmYes].xPos != tp.sz("4") {
		t.Fatalf("exchange position %d, want 4", tp.e.insts[pmYes].xPos)
	}
	if ctx.Position(pmYes) != 0 || ctx.Cash() != cash(t, "1000") || len(ctx.Fills()) != 0 || ctx.Order(id).Filled != 0 {
		t.Fatalf("the strategy saw the fill before its report: position %d cash %d", ctx.Position(pmYes), ctx.Cash())
	}
	tp.idle(4)
	if ctx.Position(pmYes) != 0 {
		t.Fatal("fill report early")
	}
	tp.idle(1)
	if ctx.Position(pmYes) != tp.sz("4") || ctx.Cash() != cash(t, "998.4") || len(ctx.Fills()) != 1 || ctx.Order(id).Filled != tp.sz("4") {
		t.Fatalf("after the report: position %d cash %d fills %d", ctx.Position(pmYes), ctx.Cash(), len(ctx.Fills()))
	}
}

// A GTD order is gone at its expiry (the venue's one-minute threshold
// before the stated time), exactly: a trade stamped at that instant does
// not fill it, and the expiry happens on any event of the venue stamped
// then, not only on the order's instrument's.
func TestGTDGoneAtExpiry(t *testing.T) {
	tp, s := pmTape(t, Config{})
	expire := tp.recvNs + 10e9 + 60e9 // effective 10 s after now, ms-aligned
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTD, ExpireNs: expire})
	wantStatus(t, tp, id, StatusOpen, "")
	tp.step = expire - 60e9 - tp.recvNs      // the next frame is stamped at the expiry exactly
	tp.pmTrade(pmYes, "SELL", "0.39", "500") // through the order's price
	o := wantStatus(t, tp, id, StatusExpired, "expired")
	if o.Filled != 0 || len(tp.e.fills) != 0 || o.DoneNs != expire-60e9 {
		t.Fatalf("filled %d at expiry; done at %d, want %d", o.Filled, o.DoneNs, expire-60e9)
	}

	// On another instrument's event.
	tp, s = pmTape(t, Config{})
	expire = tp.recvNs + 10e9 + 60e9
	id = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTD, ExpireNs: expire})
	tp.step = expire - 60e9 - tp.recvNs + 1e6
	tp.idle(1) // an unrelated instrument's trade, 1 ms after the expiry
	if o := wantStatus(t, tp, id, StatusExpired, "expired"); o.DoneNs != expire-60e9 {
		t.Fatalf("done at %d, want the expiry %d", o.DoneNs, expire-60e9)
	}
}

// A cancel that reaches the venue before its order is refused with the
// venue's unknown-order error, reported to the strategy; the order then
// arrives and rests, and the strategy is told so too.
func TestCancelBeforeOrderIsRefused(t *testing.T) {
	for _, ven := range []string{venue.Polymarket, venue.Hyperliquid} {
		t.Run(ven, func(t *testing.T) {
			var tp *tape
			s := &script{}
			cfg := Config{Latency: ConstantLatency{EntryNs: 10e6, CancelNs: 1e6}}
			var req OrderRequest
			if ven == venue.Polymarket {
				cfg.Cash = cash(t, "1000")
				tp = newTape(t, ven, s, cfg)
				tp.pmBook(pmYes, "0.40:100", "0.42:80")
				req = OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTC}
			} else {
				cfg.Cash = cash(t, "100000")
				tp = newTape(t, ven, s, cfg)
				tp.hlBook("BTC", "100000:1", "100001:5")
				req = OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100000"), Size: tp.sz("0.1"), TIF: GTC}
			}
			var id uint64
			s.do = func(ctx *Context) {
				id, _ = ctx.Submit(req)
				if err := ctx.Cancel(id); err != nil {
					t.Fatal(err)
				}
			}
			tp.idle(15)
			want := tp.e.venues[ven].t.Reasons.UnknownOrder
			if want == "" {
				t.Fatal("the venue states no unknown-order reason")
			}
			if len(s.orders) != 2 || s.orders[0].Status != StatusPending || s.orders[0].Reason != want || s.orders[1].Status != StatusOpen {
				t.Fatalf("reports %+v, want the refused cancel (%q) then open", s.orders, want)
			}
			wantStatus(t, tp, id, StatusOpen, "")
			if tp.e.ctx.Working("") != 1 || tp.e.cancelRejects != 1 {
				t.Fatalf("working %d, cancel rejects %d", tp.e.ctx.Working(""), tp.e.cancelRejects)
			}
		})
	}
}

// Everything the strategy reads of an instrument through the Context waits
// for the reports: a fill at exchange time T with an acknowledgement
// latency of 5 ms shows in Instrument(id).Position, LastTrade, the
// liquidation price and Context.Position and Cash at T + 5 ms, not before;
// funding paid at the hour H shows in Instrument(id).Funding and Cash at
// H + 5 ms.
func TestInstrumentViewWaitsForReports(t *testing.T) {
	const ack = 5e6
	tp, s := hlTape(t, Config{Cash: cash(t, "1000"), Latency: ConstantLatency{AckNs: ack}})
	ctx := &tp.e.ctx
	s.do = func(ctx *Context) {
		ctx.Submit(OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("100000"), Size: tp.sz("0.3"), TIF: IOC})
	}
	tp.idle(1)
	// Sold 0.3 at the 100000 bid, taker fee 30000 × 0.00045 = 13.5: cash
	// 1000 + 30000 − 13.5 = 30986.5. Liquidation where 30986.5 − 0.3 P =
	// 0.3 P / 40 × ½: P = 30986.5 / 0.30375.
	liq := int64(math.Round(30986.5 / 0.30375 * float64(pow10(tp.sc.PriceDecimals))))
	var before, after int
	for range 8 {
		tp.idle(1)
		in := ctx.Instrument("BTC")
		if len(tp.e.fills) != 1 || in.xPos != -tp.sz("0.3") {
			t.Fatalf("at the exchange: %d fills, position %d", len(tp.e.fills), in.xPos)
		}
		lp, ok := ctx.LiquidationPrice("BTC")
		if tp.recvNs < tp.e.fills[0].ExchangeNs+ack {
			before++
			if in.Position != 0 || ctx.Position("BTC") != 0 || in.LastTrade != 0 || ctx.Cash() != cash(t, "1000") || ok {
				t.Fatalf("%d ns after the fill, before its report: position %d/%d, last trade %d, cash %d, liquidation %d %v",
					tp.recvNs-tp.e.fills[0].ExchangeNs, in.Position, ctx.Position("BTC"), in.LastTrade, ctx.Cash(), lp, ok)
			}
			continue
		}
		after++
		if in.Position != -tp.sz("0.3") || ctx.Position("BTC") != in.Position || in.LastTrade != tp.px("100000") ||
			ctx.Cash() != cash(t, "30986.5") || !ok || abs64(lp-liq) > 1 {
			t.Fatalf("after the report: position %d/%d, last trade %d, cash %d, liquidation %d %v (want %d)",
				in.Position, ctx.Position("BTC"), in.LastTrade, ctx.Cash(), lp, ok, liq)
		}
	}
	if before != 4 || after != 4 {
		t.Fatalf("%d frames before the report, %d after; want 4 and 4", before, after)
	}
	tp.hlCtx("BTC", "100000", "0.0000125")
	// t0 is on an hour: the next frame is stamped one ms after the next.
	hour := t0 + 3600e9
	tp.step = hour + 1e6 - tp.recvNs
	tp.idle(1)
	tp.step = 1e6
	// The short receives 0.3 × 100000 × 0.0000125 = 0.375 at the hour.
	in := ctx.Instrument("BTC")
	if in.xFunding != -cash(t, "0.375") {
		t.Fatalf("funding at the exchange %d, want -0.375", in.xFunding)
	}
	before, after = 1, 0
	for range 6 {
		if tp.recvNs < hour+ack {
			if in.Funding != 0 || ctx.Cash() != cash(t, "30986.5") {
				t.Fatalf("%d ns after the hour: funding %d cash %d, before the report", tp.recvNs-hour, in.Funding, ctx.Cash())
			}
		} else if after++; in.Funding != -cash(t, "0.375") || ctx.Cash() != cash(t, "30986.875") {
			t.Fatalf("%d ns after the hour: funding %d cash %d, want -0.375 and 30986.875", tp.recvNs-hour, in.Funding, ctx.Cash())
		}
		tp.idle(1)
		before++
	}
	if after != 2 {
		t.Fatalf("%d checks after the funding report, want 2", after)
	}
}

// Context.Available and Take subtract the strategy's own takes only once
// their fill reports arrive: a BUY that took the 80 YES at 0.42 at exchange
// time T (and so the 80 NO bid at 0.58 of the mirror) leaves both offered
// to the strategy until T + 5 ms.
func TestAvailableWaitsForTheFillReport(t *testing.T) {
	const ack = 5e6
	tp, s := pmTape(t, Config{Latency: ConstantLatency{AckNs: ack}})
	ctx := &tp.e.ctx
	s.do = func(ctx *Context) {
		ctx.Submit(OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Size: tp.sz("80"), TIF: GTC})
	}
	tp.idle(1)
	var before, after int
	for range 8 {
		tp.idle(1)
		if len(tp.e.fills) != 1 || tp.e.insts[pmYes].takenAt(book.Ask, tp.px("0.42")) != tp.sz("80") {
			t.Fatalf("at the exchange: %d fills", len(tp.e.fills))
		}
		yes, no := ctx.Available(pmYes, Buy, tp.px("0.42")), ctx.Available(pmNo, Sell, tp.px("0.58"))
		p, n, _ := ctx.Take(pmYes, Buy)
		if tp.recvNs < tp.e.fills[0].ExchangeNs+ack {
			before++
			if yes != tp.sz("80") || no != tp.sz("80") || p != tp.px("0.42") || n != tp.sz("80") {
				t.Fatalf("before the report: available %d YES, %d NO, take %d × %d; want the 80 at 0.42 still", yes, no, n, p)
			}
			continue
		}
		after++
		if yes != 0 || no != 0 || p != tp.px("0.43") || n != tp.sz("200") {
			t.Fatalf("after the report: available %d YES, %d NO, take %d × %d; want nothing at 0.42, 200 at 0.43", yes, no, n, p)
		}
	}
	if before != 4 || after != 4 {
		t.Fatalf("%d frames before the report, %d after; want 4 and 4", before, after)
	}
	// The venue re-publishes the level in both books: what it shows is
	// whole again, at the exchange and for the strategy.
	tp.pmChange(pmYes, "SELL", "0.42", "30")
	tp.pmChange(pmNo, "BUY", "0.58", "30")
	if got := ctx.Available(pmYes, Buy, tp.px("0.42")); got != tp.sz("30") || tp.e.insts[pmYes].takenAt(book.Ask, tp.px("0.42")) != 0 {
		t.Fatalf("after the venue's update: available %d, want 30", got)
	}
}

// Funding is paid at the hour of the exchange clock on the position held
// then, at the oracle price and the rate in force at the boundary: an
// asset context received after the hour (before the feed showed the hour
// turn) does not apply to it.
func TestFundingAtTheBoundary(t *testing.T) {
	s := &script{}
	tp := newTape(t, venue.Hyperliquid, s, Config{Cash: cash(t, "1000000")})
	tp.hlBook("BTC", "100000:1", "100001:5")
	id := tp.submit(s, OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100001"), Size: tp.sz("2"), TIF: IOC})
	wantStatus(t, tp, id, StatusFilled, "")
	// t0 is on an hour. Before the next one: oracle 100500, mark 101000,
	// rate 0.0000125.
	tp.step = 50 * 60e9
	tp.hlCtxOracle("BTC", "101000", "100500", "0.0000125")
	tp.step = 9*60e9 + 59e9
	tp.hlBook("BTC", "100000:1", "100001:5") // 00:59:59.xxx
	c0 := tp.e.cash
	tp.step = 2e9
	tp.hlCtxOracle("BTC", "99000", "99000", "0.0001") // received 01:00:01
	tp.hlBook("BTC", "100000:1", "100001:5")          // stamped 01:00:03: the hour turned
	in := tp.e.insts["BTC"]
	// 2 × 100500 × 0.0000125 = 2.5125.
	if in.Funding != cash(t, "2.5125") || c0-tp.e.cash != cash(t, "2.5125") {
		t.Fatalf("funding %d, cash change %d: want 2.5125 paid", in.Funding, c0-tp.e.cash)
	}
	// The next hour pays at the context received after this one.
	tp.step = 60 * 60e9
	tp.hlBook("BTC", "100000:1", "100001:5")
	// 2 × 99000 × 0.0001 = 19.8.
	if in.Funding != cash(t, "2.5125")+cash(t, "19.8") {
		t.Fatalf("funding %d after the second hour", in.Funding)
	}
}

// The engine's copy of an instrument's book, kept from the strategy's
// first order on it, holds the book as it stood after the event being
// delivered, not after the whole frame: a first order that becomes due
// between two events of one frame (a frame carrying messages stamped
// apart, here with the exchange's clock ahead of the receive clock) meets
// neither the later event's liquidity nor, through the mirror, its
// complement's.
func TestFirstOrderMeetsTheBookMidFrame(t *testing.T) {
	for _, c := range []struct{ name, asset, side, price string }{
		{"same", pmYes, "SELL", "0.42"},     // a Yes ask at 0.42
		{"complement", pmNo, "BUY", "0.58"}, // a No bid at 0.58: a Yes ask at 0.42 through the mirror
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &script{}
			tp := newTape(t, venue.Polymarket, s, Config{Cash: cash(t, "1000"), Latency: ConstantLatency{EntryNs: 3e6}})
			tp.pmBook(pmYes, "0.40:100", "0.45:100")
			tp.pmBook(pmNo, "0.55:100", "0.60:100")
			var id uint64
			s.do = func(ctx *Context) {
				id, _ = ctx.Submit(OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.43"), Amount: tp.px("4.2"), TIF: FAK})
			}
			// One frame received at R: a trade stamped R (the strategy
			// submits on it; arrival R+3 ms), then the new level stamped
			// R+4 ms, after the arrival.
			r := (tp.recvNs + tp.step) / 1e6
			ms := func(d int64) string { return strconv.FormatInt(r+d, 10) }
			tp.frame(`[{"event_type":"last_trade_price","asset_id":"1","market":"0x01","price":"0.5","size":"1","side":"BUY","timestamp":"` + ms(0) +
				`"},{"event_type":"price_change","market":"` + pmMarket + `","timestamp":"` + ms(4) +
				`","price_changes":[{"asset_id":"` + c.asset + `","price":"` + c.price + `","size":"50","side":"` + c.side + `"}]}]`)
			if id == 0 {
				t.Fatal("submit did not run")
			}
			tp.idle(2)
			o := tp.e.order(id)
			for _, f := range tp.e.fills {
				t.Errorf("fill %s: the level is stamped after the arrival", book2(tp, f.Price, f.Size))
			}
			if o.Status != StatusCancelled || !strings.Contains(o.Reason, "no orders found to match with FAK") {
				t.Fatalf("FAK: %s %q, want cancelled unmatched", o.Status, o.Reason)
			}
			if o.ActiveNs != (r+3)*1e6 {
				t.Fatalf("active at %d, want the arrival %d", o.ActiveNs, (r+3)*1e6)
			}
		})
	}
}
