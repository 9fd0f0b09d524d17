package backtest

import (
	"strings"
	"testing"

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
