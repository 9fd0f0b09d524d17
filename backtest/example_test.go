package backtest_test

import (
	"context"
	"fmt"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/feed"
)

// joinBid rests one post-only bid at the best bid of every book it sees
// (joining the queue), and sells what it bought one tick above.
type joinBid struct{ bids, asks map[string]uint64 }

func (s *joinBid) OnEvent(ctx *backtest.Context, e *feed.Event) {
	if e.Channel != feed.ChannelBook || e.Book == nil || !e.Book.Valid() {
		return
	}
	in := ctx.Instrument(e.Instrument)
	bid, ok := e.Book.Best(book.Bid)
	if in == nil || !ok || in.Resolved {
		return
	}
	tif, post := in.PostOnly() // GTC post-only on Polymarket, ALO on Hyperliquid
	size := ctx.Shares(in.ID, 5)
	if o := ctx.Order(s.bids[in.ID]); o == nil || o.Status.Done() {
		s.bids[in.ID], _ = ctx.Submit(backtest.OrderRequest{Instrument: in.ID, Side: backtest.Buy,
			Price: bid.Price, Size: size, TIF: tif, PostOnly: post, Tag: "join"})
	}
	if o := ctx.Order(s.asks[in.ID]); in.Position >= size && (o == nil || o.Status.Done()) {
		s.asks[in.ID], _ = ctx.Submit(backtest.OrderRequest{Instrument: in.ID, Side: backtest.Sell,
			Price: bid.Price + in.PriceStep(bid.Price), Size: size, TIF: tif, PostOnly: post, Tag: "exit"})
	}
}

// A user strategy in about forty lines, run on the shipped Polymarket
// sample with the risk-averse queue model and 50 ms of entry latency.
func Example() {
	s := &joinBid{bids: map[string]uint64{}, asks: map[string]uint64{}}
	cfg := backtest.Config{Cash: 1000e10, Latency: backtest.ConstantLatency{EntryNs: 50e6, AckNs: 50e6, CancelNs: 50e6}}
	res, _, err := backtest.Run(context.Background(), []string{"../datasets/samples/polymarket"}, s, cfg,
		backtest.RunOptions{Name: "join-bid"})
	if err != nil {
		fmt.Println(err)
		return
	}
	sum := res.Summary
	fmt.Println("orders:", sum.Orders > 0, "maker fills only:", sum.Fills > 0 && sum.MakerFills == sum.Fills)
	fmt.Println("same digest twice:", sum.Digest == rerun(cfg))
	// Output:
	// orders: true maker fills only: true
	// same digest twice: true
}

func rerun(cfg backtest.Config) string {
	s := &joinBid{bids: map[string]uint64{}, asks: map[string]uint64{}}
	res, _, err := backtest.Run(context.Background(), []string{"../datasets/samples/polymarket"}, s, cfg, backtest.RunOptions{Name: "join-bid"})
	if err != nil {
		return err.Error()
	}
	return res.Summary.Digest
}
