package backtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

func TestLatencyCSV(t *testing.T) {
	l, err := ReadLatencyCSV(strings.NewReader("sent,rtt\n# measured\n1,800us\n2,1.2ms\n\n3,2000000\n"))
	if err != nil {
		t.Fatal(err)
	}
	// entry, ack, cancel: half of each round trip, in order, wrapping.
	want := []int64{400e3, 600e3, 1e6, 400e3}
	for i, w := range want {
		if got := l.Entry(); got != w {
			t.Fatalf("draw %d = %d, want %d", i, got, w)
		}
	}
	for _, bad := range []string{"", "rtt\n", "1ms\nx\n", "-5\n"} {
		if _, err := ReadLatencyCSV(strings.NewReader(bad)); err == nil {
			t.Errorf("latency csv %q accepted", bad)
		}
	}
	if _, err := ReadLatencyCSV(strings.NewReader("1ms\nfast\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error %v does not name line 2", err)
	}
}

// Cancel takes effect after the cancel latency (the order can fill
// meanwhile); Amend keeps the queue position only for a size decrease at
// the same price.
func TestCancelAndAmend(t *testing.T) {
	s := &script{}
	tp := newTape(t, venue.Polymarket, s, Config{Latency: ConstantLatency{CancelNs: 3e6}, Cash: cash(t, "1000")})
	tp.pmBook(pmYes, "0.40:100", "0.42:80")
	tp.pmBook(pmNo, "0.58:80", "0.60:100")
	id := tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("20"), TIF: GTC})
	tp.pmTrade(pmYes, "SELL", "0.40", "60") // 40 ahead
	s.do = func(ctx *Context) {
		if err := ctx.Amend(id, tp.px("0.40"), tp.sz("10")); err != nil {
			t.Fatal(err)
		}
	}
	tp.idle(2)
	o := tp.e.order(id)
	if o.Size != tp.sz("10") || o.Queue != tp.sz("40") || o.Status != StatusOpen {
		t.Fatalf("after a size decrease: size %d queue %d %s, want 10, 40 ahead, open", o.Size, o.Queue, o.Status)
	}
	s.do = func(ctx *Context) { ctx.Amend(id, tp.px("0.39"), tp.sz("10")) }
	tp.idle(2)
	if o.Price != tp.px("0.39") || o.Status != StatusOpen || o.Queue != 0 {
		t.Fatalf("after a price change: %+v, want a new entry at 0.39 (nothing there)", *o)
	}
	tp.pmChange(pmYes, "BUY", "0.39", "30") // others join behind us
	s.do = func(ctx *Context) { ctx.Cancel(id) }
	tp.idle(1)
	tp.pmTrade(pmYes, "SELL", "0.39", "4") // within the cancel latency: fills 4
	if o.Filled != tp.sz("4") || o.Status != StatusOpen {
		t.Fatalf("during the cancel's flight: filled %d %s", o.Filled, o.Status)
	}
	tp.idle(3)
	if o.Status != StatusCancelled {
		t.Fatalf("after the cancel latency: %s", o.Status)
	}
	if err := tp.e.ctx.Cancel(id); err == nil {
		t.Fatal("cancelling a cancelled order succeeded")
	}
	if err := tp.e.ctx.Amend(999, 1, 1); err == nil {
		t.Fatal("amending an unknown order succeeded")
	}
}

type timerStrategy struct {
	script
	fired []int64
}

func (s *timerStrategy) OnTimer(ctx *Context, tag int64) { s.fired = append(s.fired, tag, ctx.Now()) }

func TestTimers(t *testing.T) {
	s := &timerStrategy{}
	tp := newTape(t, venue.Polymarket, s, Config{})
	tp.pmBook(pmYes, "0.40:100", "0.42:80")
	at := tp.recvNs + 2500e3 // 2.5 ms: fires at the first event at or after
	s.do = func(ctx *Context) { ctx.SetTimer(at+1e6, 2); ctx.SetTimer(at, 1) }
	tp.idle(5)
	if len(s.fired) != 4 || s.fired[0] != 1 || s.fired[2] != 2 || s.fired[1] < at || s.fired[1] >= at+1e6 {
		t.Fatalf("timers fired %v (set for %d and %d)", s.fired, at, at+1e6)
	}
}

// viewState is everything a strategy can observe of its account, and the
// callbacks it has received: what Context.ViewVersion must follow.
func viewState(e *Engine, s *timerStrategy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "reports %d fills %d timers %d cash %d kept %d/%d fills %d|", len(s.orders), len(s.fills), len(s.fired),
		e.view.cash, e.orderBase, len(e.view.orders), len(e.view.fills))
	for _, o := range e.view.orders {
		fmt.Fprintf(&b, "%d %s %d %d %q|", o.ID, o.Status, o.Price, o.Filled, o.Reason)
	}
	for _, in := range e.instList { // (new instruments are market data)
		if in.Position == 0 && in.Funding == 0 && in.LastTrade == 0 && len(in.view.live) == 0 && len(in.view.taken) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s %d %d %d %d %v|", in.ID, in.Position, in.Funding, in.LastTrade, len(in.view.live), in.view.taken)
	}
	return b.String()
}

// Context.ViewVersion changes at every event that changes what the
// strategy can observe of its account (a report of each kind, a timer, a
// summary-only run forgetting orders and fills, a liquidation's orders)
// and at each action, and at no other: market data alone (books, trades,
// ticks, marks, a resolution until its reports arrive) leaves it.
func TestViewVersion(t *testing.T) {
	// step delivers frames one by one: the version must change exactly
	// when the strategy's observable state does, or when it acted.
	step := func(t *testing.T, tp *tape, s *timerStrategy, f func()) {
		t.Helper()
		v, st := tp.e.ctx.ViewVersion(), viewState(tp.e, s)
		acted := s.do != nil
		f()
		changed, moved := tp.e.ctx.ViewVersion() != v, viewState(tp.e, s) != st
		if changed != (moved || acted) {
			t.Fatalf("frame %d: version changed %v; state moved %v, strategy acted %v\nbefore %s\nafter  %s",
				tp.seq, changed, moved, acted, st, viewState(tp.e, s))
		}
	}
	frames := func(t *testing.T, tp *tape, s *timerStrategy, n int) {
		t.Helper()
		for range n {
			step(t, tp, s, func() { tp.idle(1) })
		}
	}
	// act runs f in the strategy at the next frame and checks that it
	// moved the version.
	act := func(t *testing.T, tp *tape, s *timerStrategy, f func(ctx *Context)) {
		t.Helper()
		s.do = func(ctx *Context) {
			v := ctx.ViewVersion()
			f(ctx)
			if ctx.ViewVersion() == v {
				t.Errorf("frame %d: the strategy acted, the version stayed", tp.seq)
			}
		}
		step(t, tp, s, func() { tp.idle(1) })
	}

	t.Run("polymarket", func(t *testing.T) {
		s := &timerStrategy{}
		tp := newTape(t, venue.Polymarket, s, Config{Cash: cash(t, "1000"), Latency: ConstantLatency{AckNs: 3e6, CancelNs: 1e6}})
		tp.e.summaryOnly = true // forgets orders and fills as it goes
		for _, f := range []func(){
			func() { tp.pmBook(pmYes, "0.40:100,0.39:50", "0.42:80,0.43:200") },
			func() { tp.pmBook(pmNo, "0.58:80,0.57:200", "0.60:100,0.61:50") },
			func() { tp.pmChange(pmYes, "BUY", "0.39", "70") },
			func() { tp.pmTrade(pmYes, "BUY", "0.42", "5") },
			func() { tp.pmTick(pmYes, "0.01", "0.001") },
			func() { tp.pong(1) },
		} {
			step(t, tp, s, f) // market data only
		}
		var a, b uint64
		act(t, tp, s, func(ctx *Context) {
			a, _ = ctx.Submit(OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.40"), Size: tp.sz("10"), TIF: GTC})
			b, _ = ctx.Submit(OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.30"), Size: tp.sz("10"), TIF: GTC})
			v := ctx.ViewVersion()
			if ctx.Cancel(999) == nil || ctx.Amend(999, 1, 1) == nil || ctx.ViewVersion() != v {
				t.Error("a refused cancel or amend moved the version")
			}
		})
		act(t, tp, s, func(ctx *Context) { ctx.SetTimer(ctx.Now()+5e6, 7) })
		frames(t, tp, s, 8) // acks, the timer
		act(t, tp, s, func(ctx *Context) { ctx.Amend(b, tp.px("0.31"), tp.sz("10")) })
		frames(t, tp, s, 6)
		act(t, tp, s, func(ctx *Context) { ctx.Cancel(b) })
		frames(t, tp, s, 6)
		step(t, tp, s, func() { tp.pmTrade(pmYes, "SELL", "0.39", "500") }) // fills a
		frames(t, tp, s, 6)
		act(t, tp, s, func(ctx *Context) { // taker: a take, the NO mirror's too
			ctx.Submit(OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("2.1"), TIF: FOK})
		})
		frames(t, tp, s, 6)
		step(t, tp, s, func() { tp.pmResolved(pmYes) })
		frames(t, tp, s, 6)
		if len(s.fired) == 0 || len(s.fills) < 2 || tp.e.orderBase == 0 || tp.e.localOrder(a) != nil || tp.e.insts[pmYes].Position != 0 || !tp.e.insts[pmYes].Resolved {
			t.Fatalf("timers %v, %d fills, %d orders forgotten, position %d: the tape missed a kind of change",
				s.fired, len(s.fills), tp.e.orderBase, tp.e.insts[pmYes].Position)
		}
	})

	t.Run("hyperliquid", func(t *testing.T) {
		s := &timerStrategy{}
		tp := newTape(t, venue.Hyperliquid, s, Config{Cash: cash(t, "1000"), Latency: ConstantLatency{AckNs: 2e6}})
		tp.rest(`{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40}]}`)
		step(t, tp, s, func() { tp.hlBook("BTC", "100000:1,99999:2", "100001:0.5,100002:3") })
		act(t, tp, s, func(ctx *Context) {
			ctx.Submit(OrderRequest{Instrument: "BTC", Side: Sell, Price: tp.px("100000"), Size: tp.sz("0.3"), TIF: IOC})
		})
		frames(t, tp, s, 4)
		step(t, tp, s, func() { tp.hlCtx("BTC", "100000", "0.0000125") })
		tp.step = t0 + 3600e9 + 1e6 - tp.recvNs // past the hour: funding
		frames(t, tp, s, 1)
		tp.step = 1e6
		frames(t, tp, s, 4)
		funding := tp.e.insts["BTC"].Funding
		// The mark liquidates the short: its order appears at once.
		step(t, tp, s, func() { tp.hlCtx("BTC", "102100", "0") })
		frames(t, tp, s, 4)
		if funding == 0 || tp.e.liquidations != 1 || tp.e.insts["BTC"].Position != 0 {
			t.Fatalf("funding %d, liquidations %d, position %d: the tape missed a kind of change", funding, tp.e.liquidations, tp.e.insts["BTC"].Position)
		}
	})
}

// runEngine runs s over the shipped Polymarket sample on one engine,
// summary-only or not, and returns the engine after Finish and its result.
func runEngine(t *testing.T, s Strategy, summaryOnly bool) (*Engine, *Result) {
	t.Helper()
	e := NewEngine(s, Config{Cash: 1000e10, Latency: ConstantLatency{EntryNs: 5e6, AckNs: 5e6, CancelNs: 5e6}})
	e.summaryOnly = summaryOnly
	rp, err := replayer.New([]string{pmSample}, replayer.WithWarmupREST(e.warmupREST))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.useDrivers(rp.Drivers()); err != nil {
		t.Fatal(err)
	}
	rp.Subscribe(replayer.Key{}, e)
	if _, err := rp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e, e.Finish()
}

// TestExchangeOrdersReused: a summary-only run takes the exchange's
// records of its orders from a few slabs, again and again, as it lets go
// of the orders (xorderSlabs), and comes to the full run's summary and
// digest; a full run hands back every order, none overwritten.
func TestExchangeOrdersReused(t *testing.T) {
	mm := func() Strategy {
		s, _, err := NewBuiltin("mm", Params{"spread": "0.02"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	_, full := runEngine(t, mm(), false)
	for i, o := range full.Orders {
		if o.ID != uint64(i+1) {
			t.Fatalf("full run: order %d has ID %d", i+1, o.ID)
		}
	}
	e, sum := runEngine(t, mm(), true)
	if sum.Summary.Digest != full.Summary.Digest || sum.Summary.Orders != full.Summary.Orders || sum.Summary.Fills != full.Summary.Fills {
		t.Fatalf("summary-only run: digest %s, %d orders, %d fills; full run %s, %d, %d", sum.Summary.Digest, sum.Summary.Orders,
			sum.Summary.Fills, full.Summary.Digest, full.Summary.Orders, full.Summary.Fills)
	}
	held := (len(e.xorders.filled) + 1) * orderSlabLen
	if n := full.Summary.Orders; n < 1000 || held > n/4 {
		t.Fatalf("%d orders sent, the exchange's records take %d places at the end: want far fewer", n, held)
	}
}
