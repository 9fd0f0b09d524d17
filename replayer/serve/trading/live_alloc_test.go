package trading_test

import (
	"testing"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue"
)

// TestLiveHubAllocs checks a live hub's subscriber allocates nothing per
// event in steady state (the live engine's goroutine runs it): the book
// copy and the event passed on are the hub's own, reused.
func TestLiveHubAllocs(t *testing.T) {
	h, err := trading.NewLive(trading.Options{Backtest: backtest.Config{Cash: 1000e10}})
	if err != nil {
		t.Fatal(err)
	}
	sub := h.Live()
	sc := book.Scale{PriceDecimals: 2, SizeDecimals: 4}
	b := book.New(sc)
	_ = b.Replace([]book.Level{{Price: 100, Size: 5}, {Price: 99, Size: 3}}, []book.Level{{Price: 101, Size: 2}, {Price: 102, Size: 7}})
	d := venue.Event{Type: venue.EventLevel, Instrument: "X", ExchangeNs: 1}
	ev := feed.Event{Venue: "hyperliquid", Kind: datasets.KindFrame, Channel: feed.ChannelBook, Instrument: "X", Decoded: &d, Book: b, Scale: sc}
	n := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		n++
		ev.Seq, ev.RecvNs, d.ExchangeNs = uint64(n), n, n
		_ = b.Set(book.Bid, 100, 5+n%3, 0)
		_ = sub.OnEvent(&ev)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per live event, want 0", allocs)
	}
}
