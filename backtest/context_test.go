package backtest

import (
	"context"
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
