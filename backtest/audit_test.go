package backtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// Hand-built cases per item of issue 31, beside the ones in clock_test,
// match_test, account_test and polymarket_test: expected fills, positions
// and cash are computed by hand in each comment.

// Item 1 on Hyperliquid: an IOC arriving at exchange time T meets the book
// as it stood at T. A book stamped T comes first (hftbacktest's EventSet
// takes exchange data before an exchange order of the same timestamp); a
// book stamped T + 1 ms is not there for the order.
func TestHyperliquidOrderMeetsTheBookAtItsArrival(t *testing.T) {
	for _, c := range []struct {
		name    string
		stampMs int64
		price   string // the fill's price
		cash    string // 100000 − 0.1 × price − 0.045% of it
	}{
		// 0.1 × 100005 = 10000.5, fee 4.500225: 89995.000 − 4.500225.
		{"after", 4, "100005", "89994.999775"},
		// 0.1 × 100001 = 10000.1, fee 4.500045.
		{"at", 3, "100001", "89995.399955"},
		{"before", 2, "100001", "89995.399955"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &script{}
			tp := newTape(t, venue.Hyperliquid, s, Config{Cash: cash(t, "100000"), Latency: ConstantLatency{EntryNs: 3e6}})
			tp.rest(`{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40}]}`)
			tp.hlBook("BTC", "100000:1", "100005:1")
			var id uint64
			s.do = func(ctx *Context) {
				id, _ = ctx.Submit(OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100010"), Size: tp.sz("0.1"), TIF: IOC})
			}
			tp.idle(1) // submitted at t, arrives at t + 3 ms
			sub := tp.recvNs
			tp.step, tp.lag = 5e6, 5e6-c.stampMs*1e6 // received +5 ms, stamped +stampMs
			tp.hlBook("BTC", "100000:1", "100001:0.5,100005:1")
			tp.step, tp.lag = 1e6, 0
			tp.idle(1)
			o := wantStatus(t, tp, id, StatusFilled, "")
			if len(tp.e.fills) != 1 || tp.e.fills[0].Price != tp.px(c.price) || o.ActiveNs != sub+3e6 {
				t.Fatalf("fills %+v active %d: want 0.1 at %s at %d", tp.e.fills, o.ActiveNs, c.price, sub+3e6)
			}
			if tp.e.cash != cash(t, c.cash) {
				t.Fatalf("cash %d, want %s", tp.e.cash, c.cash)
			}
		})
	}
}

// Item 2: lines without an exchange time — an unrelated asset's
// activeAssetCtx and an allMids — change no fill, no cash, no time.
func TestUnstampedLinesChangeNothing(t *testing.T) {
	run := func(extra bool) *tape {
		s := &script{}
		tp := newTape(t, venue.Hyperliquid, s, Config{Cash: cash(t, "100000"), Latency: ConstantLatency{EntryNs: 2e6, AckNs: 1e6}})
		tp.rest(`{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40}]}`)
		tp.lag = 10e6
		tp.hlBook("BTC", "100000:1", "100001:0.5,100005:3")
		s.do = func(ctx *Context) {
			ctx.Submit(OrderRequest{Instrument: "BTC", Side: Buy, Price: tp.px("100010"), Size: tp.sz("0.1"), TIF: IOC})
		}
		tp.pong(1)
		if extra {
			tp.hlCtx("ETH", "3000", "0.00001")
			tp.frame(`{"channel":"allMids","data":{"mids":{"BTC":"100003","ETH":"3000.5"}}}`)
		} else {
			tp.pong(2) // the same receive times
		}
		tp.hlBook("BTC", "100000:1", "100005:3") // stamped 10 ms before it is received
		tp.idle(15)
		return tp
	}
	a, b := run(false), run(true)
	// The order arrives 2 ms after the submit; the feed shows the venue's
	// time pass it only with the books stamped 10 ms late: the 100001 ask
	// was gone by then. 0.1 at 100005, fee 4.500225.
	if len(a.e.fills) != 1 || a.e.fills[0].Price != a.px("100005") || a.e.cash != cash(t, "89994.999775") {
		t.Fatalf("fills %+v cash %d", a.e.fills, a.e.cash)
	}
	if len(b.e.fills) != 1 || b.e.fills[0] != a.e.fills[0] || b.e.cash != a.e.cash || b.e.order(1).ActiveNs != a.e.order(1).ActiveNs {
		t.Fatalf("unstamped lines changed the run: %+v vs %+v", b.e.fills, a.e.fills)
	}
}

// Item 3: cancels and rejections reach the strategy's view only with
// their reports: until then the order is open (or pending) in
// Context.Order, OpenOrders and Working, and the callback sees the same
// state Context shows.
func TestStrategySeesCancelAndRejectOnlyWhenReported(t *testing.T) {
	s := &script{}
	tp := newTape(t, venue.Polymarket, s, Config{Cash: cash(t, "1000"), Latency: ConstantLatency{AckNs: 5e6}})
	tp.pmBook(pmYes, "0.40:100", "0.42:80")
	tp.pmBook(pmNo, "0.58:80", "0.60:100")
	ctx := &tp.e.ctx
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTC})
	tp.idle(5)
	if ctx.Order(id).Status != StatusOpen {
		t.Fatalf("not open after the ack: %s", ctx.Order(id).Status)
	}
	s.do = func(c *Context) {
		if err := c.Cancel(id); err != nil {
			t.Fatal(err)
		}
	}
	tp.idle(2) // the cancel reaches the venue (no cancel latency)
	if tp.e.order(id).Status != StatusCancelled {
		t.Fatalf("exchange: %s", tp.e.order(id).Status)
	}
	for range 3 {
		if ctx.Order(id).Status != StatusOpen || len(ctx.OpenOrders(nil, pmYes)) != 1 || ctx.Working(pmYes) != 1 {
			t.Fatalf("the strategy saw the cancel before its report: %s", ctx.Order(id).Status)
		}
		tp.idle(1)
	}
	tp.idle(1)
	if ctx.Order(id).Status != StatusCancelled || len(ctx.OpenOrders(nil, pmYes)) != 0 || ctx.Working(pmYes) != 0 {
		t.Fatalf("after the report: %s", ctx.Order(id).Status)
	}
	if last := s.orders[len(s.orders)-1]; last.ID != id || last.Status != StatusCancelled {
		t.Fatalf("last report %+v", last)
	}
	// A crossing post-only is refused at the venue at once, pending to the
	// strategy for the 5 ms of its report.
	rej := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Size: tp.sz("10"), TIF: GTC, PostOnly: true})
	if tp.e.order(rej).Status != StatusRejected || ctx.Order(rej).Status != StatusPending || ctx.Working(pmYes) != 1 {
		t.Fatalf("exchange %s, strategy %s", tp.e.order(rej).Status, ctx.Order(rej).Status)
	}
	tp.idle(5)
	if ctx.Order(rej).Status != StatusRejected || ctx.Working(pmYes) != 0 || ctx.Cash() != cash(t, "1000") {
		t.Fatalf("after the report: %s", ctx.Order(rej).Status)
	}
}

// Item 5: whatever the queue model, a maker fill never exceeds what traded
// at its price, and all fills together never exceed all that traded.
func TestQueueModelsNeverFillMoreThanTraded(t *testing.T) {
	for _, name := range []string{"risk-averse", "power:1", "power:2", "power:3", "log"} {
		t.Run(name, func(t *testing.T) {
			q, err := ParseQueueModel(name)
			if err != nil {
				t.Fatal(err)
			}
			tp, s := pmTape(t, Config{Queue: q})
			tp.pmChange(pmYes, "BUY", "0.40", "10")
			id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("50"), TIF: GTC})
			// 990 join behind, then 995 of the 1000 leave: every model puts
			// the front at or below 10, some below 0.
			tp.pmChange(pmYes, "BUY", "0.40", "1000")
			tp.pmChange(pmYes, "BUY", "0.40", "5")
			var traded int64
			for _, sz := range []string{"0.5", "1", "0.25", "3", "2"} {
				n := len(tp.e.fills)
				tp.pmTrade(pmYes, "SELL", "0.40", sz)
				traded += tp.sz(sz)
				if len(tp.e.fills) > n+1 || (len(tp.e.fills) == n+1 && tp.e.fills[n].Size > tp.sz(sz)) {
					t.Fatalf("a trade of %s filled %+v", sz, tp.e.fills[n:])
				}
			}
			o := tp.e.order(id)
			if o.Filled > traded || o.Filled%tp.sz("0.01") != 0 {
				t.Fatalf("filled %d of %d traded", o.Filled, traded)
			}
			// Cash pays exactly the filled shares at 0.40.
			if tp.e.cash != cash(t, "1000")-Notional(tp.px("0.40"), o.Filled, 4, 6) {
				t.Fatalf("cash %d for %d filled", tp.e.cash, o.Filled)
			}
			if name == "risk-averse" {
				// front 10, capped at 5 when the level falls to 5; the
				// trades take it to 5 − 0.5 − 1 − 0.25 − 3 = 0.25, and the
				// last, 2, fills 2 − 0.25 = 1.75.
				if o.Filled != tp.sz("1.75") {
					t.Fatalf("risk-averse filled %d, want 1.75", o.Filled)
				}
			}
		})
	}
}

// Item 7, the other way round: a SELL YES at 0.40 takes the 100 resting
// YES bids first; a BUY NO at 0.60 — the same resting orders seen from NO —
// then finds nothing, at the next event as at the same one.
func TestMirrorConsumedOnceFromEitherSide(t *testing.T) {
	for _, sameEvent := range []bool{true, false} {
		t.Run(fmt.Sprint("same event ", sameEvent), func(t *testing.T) {
			tp, s := pmTape(t, Config{AllowShort: true})
			var sellYes, buyNo uint64
			buy := func(ctx *Context) {
				buyNo, _ = ctx.Submit(OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.60"), Amount: tp.px("60"), TIF: FAK})
			}
			s.do = func(ctx *Context) {
				sellYes, _ = ctx.Submit(OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.40"), Size: tp.sz("100"), TIF: FAK})
				if sameEvent {
					buy(ctx)
				}
			}
			tp.idle(2)
			if !sameEvent {
				s.do = buy
				tp.idle(2)
			}
			if o := tp.e.order(sellYes); o.Filled != tp.sz("100") {
				t.Fatalf("SELL YES filled %d, want 100", o.Filled)
			}
			if o := tp.e.order(buyNo); o.Filled != 0 || o.Status != StatusCancelled {
				t.Fatalf("BUY NO filled %d (%s) against the shares the SELL took", o.Filled, o.Status)
			}
			// Short 100 YES for 100 × 0.40 = 40: cash 1040.
			if tp.e.cash != cash(t, "1040") || tp.e.insts[pmYes].Position != -tp.sz("100") || tp.e.insts[pmNo].Position != 0 {
				t.Fatalf("cash %d", tp.e.cash)
			}
			// The venue tells the level anew, in both books as it does:
			// it is there again.
			tp.frame(`{"event_type":"price_change","market":"` + pmMarket + `","timestamp":"` + tp.ms() + `","price_changes":[` +
				`{"asset_id":"` + pmYes + `","price":"0.40","size":"100","side":"BUY"},{"asset_id":"` + pmNo + `","price":"0.60","size":"100","side":"SELL"}]}`)
			s.do = buy
			tp.idle(2)
			if o := tp.e.order(buyNo); o.Filled != tp.sz("100") || tp.e.cash != cash(t, "980") {
				t.Fatalf("after the venue's update: filled %d, cash %d", o.Filled, tp.e.cash)
			}
		})
	}
}

// Item 9: a cancel of an order already filled is refused with the venue's
// unknown-order reason and reported; the fill stands.
func TestCancelAfterFillIsRefused(t *testing.T) {
	tp, s := pmTape(t, Config{Latency: ConstantLatency{AckNs: 3e6}})
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTC})
	tp.idle(3)
	tp.pmTrade(pmYes, "SELL", "0.39", "50") // through 0.40: filled at the venue
	s.do = func(ctx *Context) {
		// The strategy has not heard of the fill yet.
		if ctx.Order(id).Status != StatusOpen {
			t.Errorf("strategy sees %s", ctx.Order(id).Status)
		}
		if err := ctx.Cancel(id); err != nil {
			t.Error(err)
		}
	}
	tp.idle(6)
	want := tp.e.venues[venue.Polymarket].t.Reasons.UnknownOrder
	var refused bool
	for _, o := range s.orders {
		if o.ID == id && o.Reason == want {
			refused = true
		}
	}
	if !refused || tp.e.cancelRejects != 1 || tp.e.ctx.Order(id).Status != StatusFilled {
		t.Fatalf("reports %+v: want the refused cancel and the fill", s.orders)
	}
	// 10 at 0.40: cash 996, position 10.
	if tp.e.cash != cash(t, "996") || tp.e.ctx.Position(pmYes) != tp.sz("10") {
		t.Fatalf("cash %d position %d", tp.e.cash, tp.e.ctx.Position(pmYes))
	}
}

// Item 11: a Polymarket SELL needs the tokens: holding NO does not let one
// sell YES, and resting SELLs hold what they may sell.
func TestPolymarketSellNeedsTheShares(t *testing.T) {
	tp, s := pmTape(t, Config{})
	// 10 NO at 0.60 for $6.
	wantStatus(t, tp, tp.submit(s, OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.60"), Amount: tp.px("6"), TIF: FOK}), StatusFilled, "")
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.45"), Size: tp.sz("10"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_NOT_ENOUGH_BALANCE")
	// 6 of the 10 NO rest on a SELL; 5 more are more than the 4 free.
	wantStatus(t, tp, tp.submit(s, OrderRequest{Instrument: pmNo, Side: Sell, Price: tp.px("0.65"), Size: tp.sz("6"), TIF: GTC}), StatusOpen, "")
	id = tp.submit(s, OrderRequest{Instrument: pmNo, Side: Sell, Price: tp.px("0.65"), Size: tp.sz("5"), TIF: GTC})
	wantStatus(t, tp, id, StatusRejected, "INVALID_ORDER_NOT_ENOUGH_BALANCE")
	if tp.e.cash != cash(t, "994") || tp.e.insts[pmNo].Position != tp.sz("10") {
		t.Fatalf("cash %d position %d", tp.e.cash, tp.e.insts[pmNo].Position)
	}
}

// Conservation on Polymarket with a taker fee: a round trip at an
// unchanged price moves equity by the fees less the rebates, exactly.
func TestPolymarketRoundTripConserves(t *testing.T) {
	tp, s := pmTape(t, Config{FeeRate: 0.02})
	// 10 YES at 0.42 for $4.20; fee 10 × 0.02 × 0.42 × 0.58 = 0.04872.
	wantStatus(t, tp, tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("4.2"), TIF: FOK}), StatusFilled, "")
	// Sold back at 0.42 as a maker: a buy printed at 0.43 goes through it.
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.42"), Size: tp.sz("10"), TIF: GTC})
	tp.pmTrade(pmYes, "BUY", "0.43", "100")
	wantStatus(t, tp, id, StatusFilled, "")
	if tp.e.fees != cash(t, "0.04872") {
		t.Fatalf("fees %d, want 0.04872", tp.e.fees)
	}
	if got := tp.e.equityNow() - cash(t, "1000"); got != -(tp.e.fees - tp.e.rebates) {
		t.Fatalf("equity moved %d, fees %d rebates %d", got, tp.e.fees, tp.e.rebates)
	}
}

// Item 6 through an amend: a size decrease keeps the order's place only
// with a size the venue takes (whole lots, its minimum); otherwise the
// amend is refused in the venue's words and the order stays as it was.
func TestAmendKeepsTheSizeRules(t *testing.T) {
	tp, s := pmTape(t, Config{})
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTC}) // 100 ahead
	amend := func(size string) {
		s.do = func(ctx *Context) {
			if err := ctx.Amend(id, tp.px("0.40"), tp.sz(size)); err != nil {
				t.Fatal(err)
			}
		}
		tp.idle(2)
	}
	for _, c := range []struct{ size, reason string }{
		{"7.505", "invalid amounts, the buy orders maker amount supports a max accuracy of 4 decimals, taker amount a max of 2 decimals"},
		{"4", "INVALID_ORDER_MIN_SIZE"},
	} {
		n := len(s.orders)
		amend(c.size)
		o := tp.e.order(id)
		if o.Size != tp.sz("10") || o.Status != StatusOpen || o.Queue != tp.sz("100") {
			t.Fatalf("amend to %s changed the order: %+v", c.size, *o)
		}
		tp.idle(1)
		if len(s.orders) == n || s.orders[len(s.orders)-1].Reason == "" ||
			!strings.HasPrefix(s.orders[len(s.orders)-1].Reason, c.reason) {
			t.Fatalf("amend to %s: reports %+v, want the refusal %q", c.size, s.orders[n:], c.reason)
		}
	}
	amend("7.5")
	if o := tp.e.order(id); o.Size != tp.sz("7.5") || o.Queue != tp.sz("100") {
		t.Fatalf("amend to 7.5: size %d queue %d, want 7.5 with its place kept", o.Size, o.Queue)
	}
	// 100 ahead then 7.5 of ours: a trade of 120 fills 7.5 at 0.40: cash
	// 1000 − 3.
	tp.pmTrade(pmYes, "SELL", "0.40", "120")
	if o := tp.e.order(id); o.Filled != tp.sz("7.5") || tp.e.cash != cash(t, "997") {
		t.Fatalf("filled %d cash %d", o.Filled, tp.e.cash)
	}
}

// takeLog records what Context.Take offers a seller of YES at every event.
type takeLog struct {
	script
	seen []string
}

func (s *takeLog) OnEvent(ctx *Context, ev *feed.Event) {
	if p, n, ok := ctx.Take(pmYes, Sell); ok {
		s.seen = append(s.seen, fmtDec(p, 4)+":"+fmtDec(n, 6))
	}
	s.script.OnEvent(ctx, ev)
}

// Item 4 inside one frame: the venue's batch shows the aggressor resting
// (a bid at 0.45 over the 0.42 ask) and its match in the same message. The
// strategy received the whole message at once: Take offers the book after
// it (the 0.40 bid) at every one of its events, never the crossed state
// between them, even for an instrument the strategy trades.
func TestTakeNeverOffersACrossedStateInsideAFrame(t *testing.T) {
	s := &takeLog{}
	tp := newTape(t, venue.Polymarket, s, Config{Cash: cash(t, "1000")})
	tp.pmBook(pmYes, "0.40:100", "0.42:80")
	tp.pmBook(pmNo, "0.58:80", "0.60:100")
	tp.submit(&s.script, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.30"), Size: tp.sz("10"), TIF: GTC}) // traded: its book is kept per event
	s.seen = nil
	tp.frame(`{"event_type":"price_change","market":"` + pmMarket + `","timestamp":"` + tp.ms() + `","price_changes":[` +
		`{"asset_id":"` + pmYes + `","price":"0.45","size":"50","side":"BUY"},` +
		`{"asset_id":"` + pmYes + `","price":"0.45","size":"0","side":"BUY"},` +
		`{"asset_id":"` + pmYes + `","price":"0.42","size":"30","side":"SELL"}]}`)
	if len(s.seen) != 3 {
		t.Fatalf("Take at the frame's events: %v, want 3 offers", s.seen)
	}
	for _, x := range s.seen {
		if x != "0.4:100" {
			t.Fatalf("Take offered %v inside the frame, want 0.40 × 100 each time", s.seen)
		}
	}
}
