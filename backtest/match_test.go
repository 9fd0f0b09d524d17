package backtest

import (
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// A taker order arriving at T meets the book after the venue's whole batch
// stamped T, never a state inside it: Polymarket shows the aggressor
// resting (the book crossed) before the match removes it. Marks and Take
// ignore the crossed state too.
func TestNoFillOnATransientCrossedBook(t *testing.T) {
	s := &script{}
	tp := newTape(t, venue.Polymarket, s, Config{Cash: cash(t, "1000"), AllowShort: true,
		Latency: ConstantLatency{EntryNs: 2e6}, EquityEveryNs: 1e6})
	tp.pmBook(pmYes, "0.40:100", "0.42:80")
	tp.pmBook(pmNo, "0.58:80", "0.60:100")
	var id uint64
	s.do = func(ctx *Context) {
		id, _ = ctx.Submit(OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.44"), Size: tp.sz("50"), TIF: FAK})
	}
	tp.idle(1) // arrival 2 ms later
	// Two frames stamped at the arrival: a BUY at 0.45 rests (crossing the
	// 0.42 ask), then its match removes it with the ask.
	tp.step, tp.lag = 3e6, 1e6 // received +3 ms, stamped +2 ms: the arrival
	tp.pmChange(pmYes, "BUY", "0.45", "50")
	if _, _, ok := tp.e.ctx.Take(pmYes, Sell); ok {
		t.Fatal("Take offered the crossed book's bid")
	}
	tp.step = 0 // same receive time and stamp
	tp.frame(`{"event_type":"price_change","market":"` + pmMarket + `","timestamp":"` + tp.ms() + `","price_changes":[` +
		`{"asset_id":"` + pmYes + `","price":"0.45","size":"0","side":"BUY"},{"asset_id":"` + pmYes + `","price":"0.42","size":"0","side":"SELL"}]}`)
	tp.step, tp.lag = 1e6, 0
	tp.idle(1)
	o := wantStatus(t, tp, id, StatusCancelled, "no orders found to match with FAK")
	if o.Filled != 0 || tp.e.cash != cash(t, "1000") {
		t.Fatalf("filled %d on a transient bid", o.Filled)
	}
}

// One printed trade fills the strategy's resting orders at its price no
// more than its size in all, in their arrival order, whether they rest on
// the printed token or on its mirror (a SELL NO at 0.59 waits in the same
// queue as a BUY YES at 0.41): the strategy's orders share the venue's one
// queue. Nothing rests at 0.41 but ours.
func TestOnePrintFillsNoMoreThanItsSize(t *testing.T) {
	for _, atPrice := range []bool{false, true} {
		// Two BUY YES at 0.41 × 10, a SELL print of 15: 10 and 5, cash
		// 1000 − 15 × 0.41 = 993.85.
		tp, s := pmTape(t, Config{TradesAtPrice: atPrice})
		a := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.41"), Size: tp.sz("10"), TIF: GTC})
		b := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.41"), Size: tp.sz("10"), TIF: GTC})
		tp.pmTrade(pmYes, "SELL", "0.41", "15")
		if fa, fb := tp.e.order(a).Filled, tp.e.order(b).Filled; fa != tp.sz("10") || fb != tp.sz("5") || tp.e.cash != cash(t, "993.85") {
			t.Fatalf("trades at price %v: filled %d and %d of a print of 15, cash %d; want 10, 5, 993.85", atPrice, fa, fb, tp.e.cash)
		}

		// BUY YES 0.41 × 10, then SELL NO 0.59 × 10 (the same bid): a YES
		// print of 10 fills the first only (cash 1000 − 4.10 = 995.90); a
		// NO print of 10 at 0.59 then fills the second (+ 5.90 = 1001.80).
		tp, s = pmTape(t, Config{TradesAtPrice: atPrice, AllowShort: true})
		a = tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.41"), Size: tp.sz("10"), TIF: GTC})
		b = tp.submit(s, OrderRequest{Instrument: pmNo, Side: Sell, Price: tp.px("0.59"), Size: tp.sz("10"), TIF: GTC})
		tp.pmTrade(pmYes, "SELL", "0.41", "10")
		if fa, fb := tp.e.order(a).Filled, tp.e.order(b).Filled; fa != tp.sz("10") || fb != 0 || tp.e.cash != cash(t, "995.9") {
			t.Fatalf("trades at price %v: filled %d and %d of a print of 10 on the mirror, cash %d; want 10, 0, 995.90", atPrice, fa, fb, tp.e.cash)
		}
		tp.pmTrade(pmNo, "BUY", "0.59", "10")
		if fb := tp.e.order(b).Filled; fb != tp.sz("10") || tp.e.cash != cash(t, "1001.8") {
			t.Fatalf("trades at price %v: the NO print filled %d, cash %d; want 10, 1001.80", atPrice, fb, tp.e.cash)
		}
	}
}

// The mark of a position never is a crossed book's mid: the last uncrossed
// one stands.
func TestMarkIgnoresCrossedBook(t *testing.T) {
	tp, s := pmTape(t, Config{EquityEveryNs: 1e6})
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("4.2"), TIF: FOK}) // 10 at 0.42
	tp.pmChange(pmYes, "BUY", "0.45", "50")                                                                        // crossed: 0.45 / 0.42
	last := tp.e.positions[len(tp.e.positions)-1]
	// Mid before the cross (0.40 + 0.42) / 2 = 0.41: 10 × 0.41 = 4.1.
	if last.Mark != tp.px("0.41") || last.Value != cash(t, "4.1") {
		t.Fatalf("marked at %d (value %d) on a crossed book, want 0.41", last.Mark, last.Value)
	}
}

// The probabilistic queue models can estimate a queue below zero (more
// cancelled ahead than was there); a fill still never exceeds what traded at
// the price (hftbacktest caps exec_qty at the trade's qty).
func TestMakerFillCappedByTrade(t *testing.T) {
	q, err := ParseQueueModel("log")
	if err != nil {
		t.Fatal(err)
	}
	tp, s := pmTape(t, Config{Queue: q})
	tp.pmChange(pmYes, "BUY", "0.40", "10")
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("20"), TIF: GTC})
	tp.pmChange(pmYes, "BUY", "0.40", "100") // 90 join behind: front 10, back 90
	tp.pmChange(pmYes, "BUY", "0.40", "50")  // 50 cancelled
	// log model: p = ln 91 / (ln 91 + ln 11) = 0.6529; front ← 10 − 0.3471 × 50
	// = −7.35: below zero.
	if o := tp.e.order(id); o.Queue >= 0 {
		t.Fatalf("queue %d: the case needs a negative estimate", o.Queue)
	}
	tp.pmTrade(pmYes, "SELL", "0.40", "0.5")
	if len(tp.e.fills) != 1 || tp.e.fills[0].Size != tp.sz("0.5") || tp.e.cash != cash(t, "999.8") {
		t.Fatalf("fills %+v cash %d: want 0.5 at 0.40 (cash 999.80)", tp.e.fills, tp.e.cash)
	}
	tp.pmTrade(pmYes, "SELL", "0.40", "1") // nothing ahead now: 1 more
	if o := tp.e.order(id); o.Filled != tp.sz("1.5") {
		t.Fatalf("filled %d, want 1.5", o.Filled)
	}
}

// Partial maker fills come in whole lots (szDecimals): the model's
// fraction of a lot is not filled.
func TestMakerFillWholeLots(t *testing.T) {
	q, _ := ParseQueueModel("log")
	tp, s := hlTape(t, Config{Queue: q})
	tp.hlBook("ETH", "3000:2", "3001:5") // ETH szDecimals 4: lot 0.0001
	id := tp.submit(s, OrderRequest{Instrument: "ETH", Side: Buy, Price: tp.px("3000"), Size: tp.sz("1"), TIF: ALO})
	tp.hlBook("ETH", "3000:10", "3001:5") // front 2, back 8
	tp.hlBook("ETH", "3000:9", "3001:5")  // 1 cancelled
	// p = ln 9 / (ln 9 + ln 3) = 2/3: front ← 2 − 1/3 = 1.66666667.
	tp.hlTrade("ETH", "A", "3000", "2")
	// 2 − 1.66666667 = 0.33333333 traded beyond the queue: 0.3333 in lots.
	if len(tp.e.fills) != 1 || tp.e.fills[0].Size != tp.sz("0.3333") {
		t.Fatalf("fills %+v, want 0.3333 ETH", tp.e.fills)
	}
	if o := tp.e.order(id); o.Leaves() != tp.sz("0.6667") || o.Status != StatusOpen {
		t.Fatalf("order %+v: the remainder rests", *o)
	}
}

// The YES/NO mirror shows one resting order in both books: taking it
// through one token leaves nothing for a taker of the other.
func TestMirrorLiquidityConsumedOnce(t *testing.T) {
	tp, s := pmTape(t, Config{AllowShort: true})
	// YES bid 0.40 × 100 is NO's ask 0.60 × 100 (the tape's books agree).
	var buyNo, sellYes uint64
	s.do = func(ctx *Context) {
		buyNo, _ = ctx.Submit(OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.60"), Amount: tp.px("60"), TIF: FAK})
		sellYes, _ = ctx.Submit(OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.40"), Size: tp.sz("100"), TIF: FAK})
	}
	tp.idle(2)
	if o := tp.e.order(buyNo); o.Filled != tp.sz("100") {
		t.Fatalf("BUY NO filled %d, want 100 at 0.60", o.Filled)
	}
	if o := tp.e.order(sellYes); o.Filled != 0 {
		t.Fatalf("SELL YES filled %d against the same 100 shares", o.Filled)
	}
	// Cash: −60 for the NO shares only.
	if tp.e.cash != cash(t, "940") {
		t.Fatalf("cash %d, want 940", tp.e.cash)
	}
}

// Trades at a resting order's price: by default they consume the queue
// ahead first; with TradesAtPrice they fill it up to their size.
func TestTradesAtPriceOption(t *testing.T) {
	for _, c := range []struct {
		atPrice bool
		want    string // filled
	}{{false, "0"}, {true, "10"}} {
		tp, s := pmTape(t, Config{TradesAtPrice: c.atPrice})
		id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTC}) // 100 ahead
		tp.pmTrade(pmYes, "SELL", "0.40", "30")
		o := tp.e.order(id)
		if o.Filled != tp.sz(c.want) || tp.e.cash != cash(t, "1000")-Notional(o.Price, o.Filled, 4, 6) {
			t.Fatalf("trades at price %v: filled %d, want %s", c.atPrice, o.Filled, c.want)
		}
	}
}

// Polymarket prints a match on one token: a taker BUY of YES at 0.41 is a
// taker SELL of NO at 0.59, and reaches a resting BUY NO at 0.59.
func TestComplementTradeReachesMirror(t *testing.T) {
	tp, s := pmTape(t, Config{})
	id := tp.submit(s, OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.59"), Size: tp.sz("10"), TIF: GTC}) // nothing ahead
	tp.pmTrade(pmYes, "BUY", "0.41", "20")
	o := tp.e.order(id)
	// 10 at 0.59: cash 1000 − 5.90.
	if o.Filled != tp.sz("10") || tp.e.cash != cash(t, "994.1") {
		t.Fatalf("filled %d, cash %d", o.Filled, tp.e.cash)
	}
}

// The matching path allocates nothing per event once warm: level changes
// and trades reaching the exchange's book of a traded instrument with a
// resting order, the queue model, marks and the clock.
func TestMatchingPathAllocs(t *testing.T) {
	tp, s := pmTape(t, Config{Queue: PowerProb(2)})
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.39"), Size: tp.sz("10"), TIF: GTC})
	events := func(f string) []*feed.Event {
		tp.recvNs += tp.step
		if err := tp.dec.Decode([]byte(f), tp.recvNs, &tp.out); err != nil {
			t.Fatal(err)
		}
		var l []*feed.Event
		for i := range tp.out.Events {
			d := tp.out.Events[i]
			l = append(l, &feed.Event{Venue: tp.ven, RecvNs: tp.recvNs, Kind: datasets.KindFrame, Channel: feed.ChannelOf(d.Type),
				Instrument: d.Instrument, Decoded: &d, Book: d.Book, Scale: tp.sc})
		}
		return l
	}
	lvl := events(`{"event_type":"price_change","market":"` + pmMarket + `","timestamp":"` + tp.ms() +
		`","price_changes":[{"asset_id":"` + pmYes + `","price":"0.39","size":"60","side":"BUY"}]}`)
	trade := events(`{"event_type":"last_trade_price","asset_id":"` + pmYes + `","market":"` + pmMarket +
		`","price":"0.40","size":"1","side":"SELL","timestamp":"` + tp.ms() + `"}`)
	n := testing.AllocsPerRun(200, func() {
		for _, l := range [][]*feed.Event{lvl, trade} {
			for _, ev := range l {
				ev.RecvNs += 1e6
				ev.Decoded.ExchangeNs += 1e6
				if err := tp.e.OnEvent(ev); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per event pair", n)
	}
	if o := tp.e.order(1); o.Status != StatusOpen {
		t.Fatalf("order %s", o.Status)
	}
}
