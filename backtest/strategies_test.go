package backtest

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

// mmScenario drives the built-in market maker through a hand-built
// Polymarket tape where acknowledgements, fills (of its quote, of its
// complement quote, in part) and a refused cancel arrive between
// identical books, and checks, book by book, whether MM skipped its
// evaluation (only with the skip on: noSkip evaluates every event) and
// what it did. It returns the run's result.
func mmScenario(t *testing.T, noSkip bool) *Result {
	s, _, err := NewBuiltin("mm", Params{"spread": "0.02", "size": "10", "skew": "0.002"})
	if err != nil {
		t.Fatal(err)
	}
	m := s.(*MM)
	m.noSkip = noSkip
	// Reports take 10 ms; a frame comes every 1 ms.
	tp := newTape(t, venue.Polymarket, m, Config{Cash: cash(t, "1000"), Latency: ConstantLatency{AckNs: 10e6}})
	// Books wide enough that no quote crosses them, whatever the skew.
	yesA := func() { tp.pmBook(pmYes, "0.30:100", "0.60:80") }
	yesB := func() { tp.pmBook(pmYes, "0.31:100", "0.61:80") }
	yesA()
	tp.pmBook(pmNo, "0.40:80", "0.70:100")
	st := m.insts[tp.e.insts[pmYes].Index]
	// book delivers a YES book and checks that MM skipped it or not.
	book := func(b func(), skip bool, what string) {
		t.Helper()
		n := m.skipped
		b()
		if got := m.skipped > n; got != (skip && !noSkip) {
			t.Fatalf("%s: skipped %v, want %v", what, got, skip && !noSkip)
		}
	}
	reports := func() { tp.idle(12) }
	// requote lets a cancel through, requotes, and lets the new quote's
	// ack through.
	requote := func(b func(), what string) {
		t.Helper()
		reports()
		book(b, false, what+": requote")
		reports()
		book(b, false, what+": after the acks")
		book(b, true, what+": same book, quotes open")
	}

	// Acknowledgements: quotes still pending cannot be cancelled, so a
	// book that moves them changes nothing until the acks arrive; then
	// the same book must be evaluated again, and the quotes cancelled.
	book(yesA, false, "the ask quoted on NO, now known")
	book(yesA, false, "first book with pending quotes")
	book(yesA, true, "same book, nothing heard")
	book(yesB, false, "moved book")
	book(yesB, true, "same moved book, quotes pending")
	reports()
	book(yesB, false, "same book after the acks")
	if !st.q[0].cancelling {
		t.Fatal("the acknowledged bid was not cancelled")
	}
	requote(yesB, "after the cancels")

	// A fill of the complement quote, in part: only the inventory moves
	// (YES − NO), and with it the bid, once the fill is reported.
	ask := tp.e.localOrder(st.q[1].id)
	if ask.Instrument != pmNo || ask.Side != Buy {
		t.Fatalf("ask quote %+v, want a BUY of NO", *ask)
	}
	tp.pmTrade(pmNo, "SELL", fmtDec(ask.Price, tp.sc.PriceDecimals), "5")
	book(yesB, true, "same book, NO fill not reported")
	reports()
	// The trade went through the NO bid MM quoted on NO's book, a tick
	// higher, and filled half of this one, which stays open.
	if tp.e.insts[pmNo].Position == 0 || ask.Status != StatusOpen || ask.Filled != tp.sz("5") {
		t.Fatalf("NO position %d, ask %s filled %d: want it open, 5 of 10 filled", tp.e.insts[pmNo].Position, ask.Status, ask.Filled)
	}
	book(yesB, false, "same book after the NO fill report")
	if !st.q[0].cancelling {
		t.Fatal("the bid did not move with the inventory")
	}
	requote(yesB, "after the NO fill")

	// A fill of the bid: heard of only at its report.
	bid := st.q[0].id
	tp.pmTrade(pmYes, "SELL", "0.30", "500") // through the bid: filled at the venue
	if tp.e.order(bid).Status != StatusFilled {
		t.Fatalf("bid %s at the venue", tp.e.order(bid).Status)
	}
	book(yesB, true, "same book, fill not reported")
	reports()
	book(yesB, false, "same book after the fill report")
	if st.q[0].id == bid {
		t.Fatal("the filled bid was not replaced")
	}
	// Long now: the ask becomes a SELL of YES once the NO bid is cancelled.
	requote(yesB, "after the fill")
	if o := tp.e.localOrder(st.q[1].id); o.Side != Sell || o.Instrument != pmYes {
		t.Fatalf("ask quote %+v, want a SELL of YES", *o)
	}

	// A refused cancel: the bid fills at the venue, the book moves before
	// the fill is reported and MM cancels it; the venue refuses.
	bid = st.q[0].id
	tp.pmTrade(pmYes, "SELL", "0.30", "500")
	book(yesA, false, "moved book, fill not reported")
	if !st.q[0].cancelling {
		t.Fatal("the bid was not cancelled")
	}
	book(yesA, false, "same book after the cancel")
	book(yesA, true, "same book, cancel in flight")
	reports()
	if tp.e.cancelRejects != 1 || tp.e.localOrder(bid).Status != StatusFilled {
		t.Fatalf("cancel rejects %d, bid %s: want the cancel refused, the bid filled", tp.e.cancelRejects, tp.e.localOrder(bid).Status)
	}
	book(yesA, false, "same book after the fill and the refusal")
	if st.q[0].id == bid {
		t.Fatal("the filled bid was not replaced")
	}
	return tp.e.Finish()
}

// MM skips a book event whose inputs equal those of its last evaluation
// that did nothing: it must act exactly as if it evaluated every event,
// on a hand-built tape where reports arrive between identical books and
// on the samples (full and summary-only runs, with latencies).
func TestMMSkipChangesNothing(t *testing.T) {
	skip, all := mmScenario(t, false), mmScenario(t, true)
	sameResult(t, "hand-built tape", skip, all)

	for _, c := range []struct {
		path   string
		params Params
		cfg    func() Config // a run's own (a sampled latency has state)
	}{
		{pmSample, Params{"spread": "0.02"}, func() Config { return Config{Cash: 1000e10} }},
		{pmSample, Params{"spread": "0.01", "size": "40"}, func() Config {
			return Config{Cash: 1000e10, Latency: ConstantLatency{EntryNs: 50e6, AckNs: 30e6, CancelNs: 50e6}, Queue: PowerProb(2)}
		}},
		{pmSample, Params{"spread": "0.05", "size": "5"}, func() Config {
			return Config{Cash: 1000e10, Latency: &SampledLatency{RoundTrips: []int64{4e6, 2e9, 2e6, 300e6, 10e6, 150e6}}}
		}},
		{hlSample, Params{"spread": "0.5", "size": "0.01"}, func() Config { return Config{Cash: 1e6 * 1e10} }},
	} {
		for _, summaryOnly := range []bool{false, true} {
			var res [2]*Result
			var skipped int
			for i, noSkip := range []bool{false, true} {
				s, ps, err := NewBuiltin("mm", c.params)
				if err != nil {
					t.Fatal(err)
				}
				m := s.(*MM)
				m.noSkip = noSkip
				out, _, err := RunMany(context.Background(), []string{c.path}, []Spec{{Strategy: m, Config: c.cfg(), Name: "mm", Params: ps}},
					ManyOptions{SummaryOnly: summaryOnly})
				if err != nil {
					t.Fatal(err)
				}
				res[i] = out[0]
				skipped += m.skipped
			}
			what := c.path + " " + fmt.Sprint(c.params)
			if skipped == 0 {
				t.Fatalf("%s: MM skipped no event", what)
			}
			sameResult(t, what, res[0], res[1])
		}
	}
}

// sameResult fails unless two runs made the same orders, fills and summary.
func sameResult(t *testing.T, what string, a, b *Result) {
	t.Helper()
	if len(a.Orders) != len(b.Orders) || len(a.Fills) != len(b.Fills) {
		t.Fatalf("%s: %d orders and %d fills with the skip, %d and %d without", what, len(a.Orders), len(a.Fills), len(b.Orders), len(b.Fills))
	}
	for i := range a.Orders {
		if !reflect.DeepEqual(*a.Orders[i], *b.Orders[i]) {
			t.Fatalf("%s: order %d with the skip %+v, without %+v", what, i, *a.Orders[i], *b.Orders[i])
		}
	}
	if !reflect.DeepEqual(a.Fills, b.Fills) || !reflect.DeepEqual(a.Summary, b.Summary) {
		t.Fatalf("%s: fills or summary differ with the skip:\n%+v\n%+v", what, a.Summary, b.Summary)
	}
}
