package backtest

import (
	"github.com/tapedeck/tapedeck/venue/registry"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// A resting BUY at 0.40 behind 100 shares; the risk-averse queue advances
// only on trades at the level and is capped by decreases.
func TestQueueRiskAverse(t *testing.T) {
	tp, s := pmTape(t, Config{})
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("20"), TIF: GTC})
	o := tp.e.order(id)
	tp.pmTrade(pmYes, "SELL", "0.40", "30") // a selling taker at our price: 100 − 30
	if o.Queue != tp.sz("70") {
		t.Fatalf("after a trade of 30: queue %d, want 70", o.Queue)
	}
	tp.pmChange(pmYes, "BUY", "0.40", "90") // 100 → 90 after the trade: a cancel we cannot place
	if o.Queue != tp.sz("70") {
		t.Fatalf("a decrease above the queue changed it: %d", o.Queue)
	}
	tp.pmChange(pmYes, "BUY", "0.40", "50") // the level holds 50: at most 50 ahead
	if o.Queue != tp.sz("50") {
		t.Fatalf("after the level fell to 50: queue %d, want 50", o.Queue)
	}
	tp.pmTrade(pmYes, "BUY", "0.40", "80") // a buying taker does not reach bids
	if o.Queue != tp.sz("50") {
		t.Fatalf("a buy trade moved the bid queue: %d", o.Queue)
	}
	tp.pmTrade(pmYes, "SELL", "0.40", "60") // 50 ahead consumed, 10 fill us
	if o.Filled != tp.sz("10") || o.Queue != 0 {
		t.Fatalf("after 60 traded: filled %d queue %d, want 10 and 0", o.Filled, o.Queue)
	}
	f := tp.e.fills[0]
	if f.Liquidity != Maker || f.Queue != tp.sz("50") || f.Price != tp.px("0.40") {
		t.Fatalf("fill %+v: want maker at 0.40 with 50 ahead", f)
	}
	tp.pmTrade(pmYes, "SELL", "0.39", "1") // a trade through our price fills the rest
	if o.Status != StatusFilled || o.Filled != tp.sz("20") {
		t.Fatalf("after a trade through: %s filled %d", o.Status, o.Filled)
	}
}

// hftbacktest's probabilistic model, computed by hand: front 100 in a
// level of 300 (back 200) falls to 240 with no trade, chg = 60.
//
//	power:2: p = 200² / (200² + 100²) = 0.8; front = 100 − 0.2·60 = 88
//	log:     p = ln 201 / (ln 201 + ln 101) = 0.534685…;
//	         front = 100 − (1 − p)·60 = 72.081…  → 72.081 shares
func TestQueueProbabilistic(t *testing.T) {
	lnp := math.Log1p(200) / (math.Log1p(200) + math.Log1p(100))
	for _, c := range []struct {
		model string
		want  float64
	}{{"power:2", 88}, {"power:1", 100 - 60.0/3}, {"log", 100 - (1-lnp)*60}} {
		t.Run(c.model, func(t *testing.T) {
			qm, err := ParseQueueModel(c.model)
			if err != nil {
				t.Fatal(err)
			}
			s := &script{}
			tp := newTape(t, venue.Polymarket, s, Config{Queue: qm, Cash: cash(t, "1000")})
			tp.pmBook(pmYes, "0.40:100", "0.42:80")
			tp.pmBook(pmNo, "0.58:80", "0.60:100")
			id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTC})
			tp.pmChange(pmYes, "BUY", "0.40", "310") // 200 join behind us (and our 10 is not in the feed)
			o := tp.e.order(id)
			tp.pmChange(pmYes, "BUY", "0.40", "300")
			// 310 → 300: chg 10, front 100, back 210.
			f := func(x float64) float64 {
				switch {
				case strings.HasPrefix(c.model, "power:2"):
					return x * x
				case c.model == "power:1":
					return x
				}
				return math.Log1p(x)
			}
			p := f(210) / (f(210) + f(100))
			front := 100 - (1-p)*10
			if got := float64(o.Queue) / 1e6; math.Abs(got-front) > 1e-6 {
				t.Fatalf("after 310→300: queue %.6f, want %.6f", got, front)
			}
			// Then the case of the doc comment, from a front set to 100.
			o.Queue = tp.sz("100")
			o.prevLevel = tp.sz("300")
			tp.pmChange(pmYes, "BUY", "0.40", "240")
			if got := float64(o.Queue) / 1e6; math.Abs(got-c.want) > 1e-6 {
				t.Fatalf("after 300→240: queue %.6f, want %.6f", got, c.want)
			}
			// A decrease explained by a trade at the level does not advance
			// the order twice: trade 40 (front 100 → 60) then 240 → 200.
			o.Queue, o.prevLevel = tp.sz("100"), tp.sz("240")
			tp.pmTrade(pmYes, "SELL", "0.40", "40")
			tp.pmChange(pmYes, "BUY", "0.40", "200")
			if o.Queue != tp.sz("60") {
				t.Fatalf("trade then matching decrease: queue %d, want 60", o.Queue)
			}
		})
	}
	for _, bad := range []string{"power:0", "power:-1", "power:x", "fifo", "power:Inf"} {
		if _, err := ParseQueueModel(bad); err == nil {
			t.Errorf("queue model %q accepted", bad)
		}
	}
}

// No look-ahead: an order sent at t with entry latency L never meets data
// received before t + L; a marketable order that the book moves away from
// during its flight does not fill.
func TestLatencyNoLookAhead(t *testing.T) {
	s := &script{}
	tp := newTape(t, venue.Polymarket, s, Config{Latency: ConstantLatency{EntryNs: 5e6, AckNs: 3e6}, Cash: cash(t, "1000")})
	tp.pmBook(pmYes, "0.40:100", "0.42:80")
	tp.pmBook(pmNo, "0.58:80", "0.60:100")
	var sent int64
	s.do = func(ctx *Context) {
		sent = ctx.Now()
		ctx.Submit(OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("8.4"), TIF: FAK})
	}
	tp.idle(1)
	tp.pmChange(pmYes, "SELL", "0.42", "0") // +1 ms: the ask is gone
	tp.pmChange(pmNo, "BUY", "0.58", "0")   // and its mirror
	tp.pmChange(pmYes, "SELL", "0.45", "50")
	tp.idle(8)
	o := tp.e.order(1)
	if o.Status != StatusCancelled || o.Filled != 0 {
		t.Fatalf("order met the book sent at %d: %s filled %d", sent, o.Status, o.Filled)
	}
	if o.ActiveNs < sent+5e6 {
		t.Fatalf("order active at %d, before submit %d + 5 ms", o.ActiveNs, sent)
	}
	// The strategy hears of it after the ack latency, not before.
	if len(s.orders) != 1 || s.orders[0].Status != StatusCancelled {
		t.Fatalf("notifications %+v", s.orders)
	}
	// Recorded feed latency: with exchange stamps 10 ms behind receive
	// times, the order arrives (sent + 5 ms) before the exchange stamps of
	// data received up to 15 ms later; it waits for a stamp past arrival.
	s2 := &script{}
	tp2 := newTape(t, venue.Polymarket, s2, Config{Latency: ConstantLatency{EntryNs: 5e6}, Cash: cash(t, "1000")})
	tp2.pmBook(pmYes, "0.40:100", "0.42:80")
	tp2.pmBook(pmNo, "0.58:80", "0.60:100")
	var sent2 int64
	s2.do = func(ctx *Context) {
		sent2 = ctx.Now()
		ctx.Submit(OrderRequest{Instrument: pmYes, Side: Buy, Price: tp2.px("0.42"), Amount: tp2.px("8.4"), TIF: FAK})
	}
	tp2.idle(1)
	for i := 0; i < 30; i++ {
		tp2.frame(`{"event_type":"price_change","market":"` + pmMarket + `","timestamp":"` +
			itoa((tp2.recvNs+tp2.step-10e6)/1e6) + `","price_changes":[{"asset_id":"` + pmYes + `","price":"0.39","size":"` + itoa(int64(i+1)) + `","side":"BUY"}]}`)
		if o := tp2.e.order(1); o.ActiveNs != 0 {
			ex := tp2.e.insts[pmYes].ExchangeNs
			if ex < sent2+5e6 || tp2.recvNs < sent2+15e6 {
				t.Fatalf("active at recv %d stamp %d: sent %d + 5 ms entry + 10 ms feed latency", tp2.recvNs, ex, sent2)
			}
			return
		}
	}
	t.Fatal("order never reached the exchange")
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// Fees to the last decimal: Polymarket taker fee = shares × rate × p ×
// (1 − p); makers pay nothing and get a share back as a rebate.
func TestPolymarketFees(t *testing.T) {
	cfg := Config{FeeRate: 0.02, MakerRebateShare: 0.25, FeeRates: map[string]float64{pmNo: 0.1}}
	tp, s := pmTape(t, cfg)
	// 80 shares at 0.42: 80 × 0.02 × 0.42 × 0.58 = 0.38976.
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("33.6"), TIF: FOK})
	if f := tp.e.fills[0]; f.Fee != cash(t, "0.38976") || f.Liquidity != Taker {
		t.Fatalf("taker fee %d, want 0.38976", f.Fee)
	}
	if tp.e.cash != cash(t, "1000")-cash(t, "33.6")-cash(t, "0.38976") {
		t.Fatalf("cash %d", tp.e.cash)
	}
	// NO at its own rate 0.1: 50 at 0.60 → 50 × 0.1 × 0.6 × 0.4 = 1.2.
	tp.submit(s, OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.60"), Amount: tp.px("30"), TIF: FOK})
	if f := tp.e.fills[1]; f.Fee != cash(t, "1.2") {
		t.Fatalf("per-instrument rate fee %d, want 1.2", f.Fee)
	}
	// A resting SELL of 10 at 0.43, filled as a maker by a buy printed
	// through it: a rebate of 25 % of the taker fee its fill generated.
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.43"), Size: tp.sz("10"), TIF: GTC})
	tp.pmTrade(pmYes, "BUY", "0.44", "10")
	// 10 × 0.02 × 0.43 × 0.57 = 0.04902 → 25 % = 0.012255.
	if f := tp.e.fills[2]; f.Liquidity != Maker || f.Fee != -cash(t, "0.012255") {
		t.Fatalf("maker rebate %d (%+v), want −0.012255", f.Fee, f)
	}
	res := tp.e.Finish()
	if res.Summary.Rebates != 0.012255 || math.Abs(res.Summary.Fees-(0.38976+1.2)) > 1e-12 {
		t.Fatalf("summary fees %v rebates %v", res.Summary.Fees, res.Summary.Rebates)
	}
	if err := (&Config{FeeRate: 1.5}).Validate(); err == nil {
		t.Fatal("a fee rate of 150% accepted")
	}
	// A fee tier is checked against the schedules of the datasets' venues
	// (Run; Validate knows no venue).
	if err := NewEngine(nil, Config{FeeTier: 99}).useDrivers(registry.All()); err == nil {
		t.Fatal("fee tier 99 accepted")
	}
	if err := NewEngine(nil, Config{FeeTier: 1}).useDrivers(registry.All()); err != nil {
		t.Fatal(err)
	}
}

// Conservation: a round trip with no price move changes cash + position
// value by exactly −fees.
func TestConservation(t *testing.T) {
	tp, s := pmTape(t, Config{FeeRate: 0.03})
	eq0 := tp.e.equityNow()
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("21"), TIF: FOK})
	tp.pmChange(pmYes, "SELL", "0.42", "30") // the venue's update after the take
	tp.pmChange(pmNo, "BUY", "0.58", "30")
	pos := tp.e.insts[pmYes].Position
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.40"), Size: pos, TIF: FOK})
	if tp.e.insts[pmYes].Position != 0 {
		t.Fatalf("position %d after the round trip", tp.e.insts[pmYes].Position)
	}
	// Bought at 0.42, sold at 0.40 (the spread), fees both ways.
	fees := tp.e.fees
	spread := Notional(tp.px("0.02"), pos, 4, 6)
	if got := tp.e.equityNow() - eq0; got != -fees-spread {
		t.Fatalf("equity change %d, want −fees %d − spread %d", got, fees, spread)
	}
}

// The matching path allocates nothing per event in steady state: resting
// orders on both sides, level changes and trades that move their queues
// without filling them, the book moving around them.
func TestMatchingAllocs(t *testing.T) {
	tp, s := pmTape(t, Config{Queue: PowerProb(2)})
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.39"), Size: tp.sz("10"), TIF: GTC})
	tp.submit(s, OrderRequest{Instrument: pmNo, Side: Buy, Price: tp.px("0.57"), Size: tp.sz("10"), TIF: GTC})
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.38"), Size: tp.sz("10"), TIF: GTC})
	frames := [][]byte{
		[]byte(`{"event_type":"price_change","market":"` + pmMarket + `","timestamp":"1761177600100","price_changes":[{"asset_id":"` + pmYes + `","price":"0.39","size":"60","side":"BUY"},{"asset_id":"` + pmYes + `","price":"0.41","size":"5","side":"SELL"}]}`),
		[]byte(`{"event_type":"last_trade_price","asset_id":"` + pmYes + `","market":"` + pmMarket + `","price":"0.40","size":"1","side":"SELL","fee_rate_bps":"0","timestamp":"1761177600101"}`),
		[]byte(`{"event_type":"price_change","market":"` + pmMarket + `","timestamp":"1761177600102","price_changes":[{"asset_id":"` + pmYes + `","price":"0.39","size":"50","side":"BUY"},{"asset_id":"` + pmYes + `","price":"0.41","size":"0","side":"SELL"}]}`),
		[]byte(`{"event_type":"price_change","market":"` + pmMarket + `","timestamp":"1761177600103","price_changes":[{"asset_id":"` + pmNo + `","price":"0.57","size":"150","side":"BUY"}]}`),
	}
	ev := &feed.Event{Venue: venue.Polymarket, Kind: datasets.KindFrame, Scale: tp.sc}
	recv := tp.recvNs
	step := func() {
		for _, f := range frames {
			recv += 1e6
			if err := tp.dec.Decode(f, recv, &tp.out); err != nil {
				t.Fatal(err)
			}
			for i := range tp.out.Events {
				d := &tp.out.Events[i]
				ev.RecvNs, ev.Decoded, ev.Book, ev.Instrument, ev.Channel, ev.Payload = recv, d, d.Book, d.Instrument, feed.ChannelOf(d.Type), f
				if err := tp.e.OnEvent(ev); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	step()
	if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
		t.Fatalf("%v allocations per %d frames", allocs, len(frames))
	}
	if n := tp.e.ctx.Working(""); n != 3 {
		t.Fatalf("%d orders working, want the 3 resting ones", n)
	}
}
