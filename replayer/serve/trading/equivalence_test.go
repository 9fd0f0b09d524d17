package trading_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// taker is the Go twin of examples/hyperliquid_taker.mjs: on every
// every-th l2Book of coin it sends an IOC at the touch (a buy at the best
// ask, then a sell at the best bid, alternately), and the order reaches the
// simulator at the next event, as the bot's order, sent while the
// deterministic replay waits on it, reaches its account's simulator.
type taker struct {
	coin       string
	every, max int
	size       int64
	books      int
	sent       int
	pending    *backtest.OrderRequest
}

func (s *taker) OnEvent(ctx *backtest.Context, ev *feed.Event) {
	if s.pending != nil {
		_, _ = ctx.Submit(*s.pending)
		s.pending = nil
	}
	d := ev.Decoded
	if ev.Kind != datasets.KindFrame || d == nil || d.Type != venue.EventSnapshot || d.Instrument != s.coin {
		return
	}
	s.books++
	if s.books%s.every != 0 || s.sent >= s.max {
		return
	}
	buy := s.sent%2 == 0
	s.sent++
	side, bs := backtest.Buy, book.Ask
	if !buy {
		side, bs = backtest.Sell, book.Bid
	}
	l, _ := ev.Book.Best(bs)
	s.pending = &backtest.OrderRequest{Instrument: s.coin, Side: side, Price: l.Price, Size: s.size, TIF: backtest.IOC}
}

// runExample runs a bot of examples/ against a deterministic trading
// server on a sample and returns the simulator's result for its one
// account, and the requests that came late.
func runExample(t *testing.T, bin, js string, flags []string, name string, src []byte, venueName string, args ...string) (*backtest.Result, int64) {
	t.Helper()
	// The example imports the SDK by name: run a copy of it where the
	// test's node_modules resolve.
	script := filepath.Join(js, ".example_"+name)
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(script)
	r := startTrading(t, []string{sample(t, venueName)},
		trading.Options{Deterministic: true, Settle: time.Nanosecond, Backtest: backtest.Config{Cash: 1000e10}},
		tradeapi.TradingOptions{})
	ws := "ws://" + r.addr
	if venueName == "hyperliquid" {
		ws += "/ws"
	}
	runNode(t, bin, js, flags, filepath.Base(script), append([]string{"http://" + r.addr, ws, testKey}, args...)...)
	// The replay goes on to the end without the bot; the results are
	// complete once it has.
	select {
	case <-r.srv.Hub().Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("replay did not end")
	}
	r.stop()
	_, res := r.srv.Hub().Results()
	if len(res) != 1 {
		t.Fatalf("%d accounts", len(res))
	}
	return res[0], r.srv.Hub().Late()
}

// exampleEqualsBacktest runs an example bot twice in deterministic mode —
// the same fills, the same digest — and checks its orders and fills are the
// ones replay backtest gives its Go twin.
func exampleEqualsBacktest(t *testing.T, pkg, name, venueName string, twin backtest.Strategy, wantOrders int, args ...string) {
	bin, js, flags := node(t, pkg)
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	// The bot acknowledges each market message: the replay waits for that,
	// not for a quiet window (the test gives it 1 ns), whatever the load.
	t.Setenv("LOCKSTEP", "1")
	first, r1late := runExample(t, bin, js, flags, name, src, venueName, args...)
	second, r2late := runExample(t, bin, js, flags, name, src, venueName, args...)
	if late := r1late + r2late; late != 0 {
		t.Errorf("%d requests came while the replay ran rather than waited for the bot", late)
	}
	if first.Summary.Digest != second.Summary.Digest || len(first.Fills) != len(second.Fills) {
		t.Fatalf("two deterministic runs: %s %d fills, %s %d fills", first.Summary.Digest, len(first.Fills),
			second.Summary.Digest, len(second.Fills))
	}
	if len(first.Fills) == 0 || len(first.Orders) != wantOrders {
		t.Fatalf("bot: %d orders, %d fills", len(first.Orders), len(first.Fills))
	}
	want, _, err := backtest.Run(context.Background(), []string{sample(t, venueName)}, twin,
		backtest.Config{Cash: 1000e10}, backtest.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Fills) != len(first.Fills) || len(want.Orders) != len(first.Orders) {
		t.Fatalf("backtest %d orders %d fills, API %d orders %d fills", len(want.Orders), len(want.Fills),
			len(first.Orders), len(first.Fills))
	}
	for i, f := range want.Fills {
		g := first.Fills[i]
		if f.OrderID != g.OrderID || f.Side != g.Side || f.Price != g.Price || f.Size != g.Size ||
			f.Liquidity != g.Liquidity || f.Fee != g.Fee || f.RecvNs != g.RecvNs || f.ExchangeNs != g.ExchangeNs {
			t.Errorf("fill %d: backtest %+v, API %+v", i, f, g)
		}
	}
	for i, o := range want.Orders {
		g := first.Orders[i]
		if o.SubmitNs != g.SubmitNs || o.Price != g.Price || o.Size != g.Size || o.Amount != g.Amount ||
			o.Status != g.Status || o.Filled != g.Filled || o.Reason != g.Reason {
			t.Errorf("order %d: backtest %+v, API %+v", i, *o, *g)
		}
	}
	if want.Summary.Digest != first.Summary.Digest {
		t.Errorf("digest: backtest %s, API %s", want.Summary.Digest, first.Summary.Digest)
	}
	t.Logf("%d orders, %d fills, digest %s; backtest digest %s", len(first.Orders), len(first.Fills),
		first.Summary.Digest, want.Summary.Digest)
}

// TestExampleBotEqualsBacktest runs examples/hyperliquid_taker.mjs (the
// Hyperliquid TypeScript SDK) against the Hyperliquid sample.
func TestExampleBotEqualsBacktest(t *testing.T) {
	exampleEqualsBacktest(t, "@nktkas/hyperliquid", "hyperliquid_taker.mjs", "hyperliquid",
		&taker{coin: "BTC", every: 3, max: 4, size: 2e4}, 4, "BTC", "3", "0.0002", "4")
}

// pmTaker is the Go twin of examples/polymarket_taker.mjs: on every
// every-th book of token it sends a FOK at the touch — a BUY of amount
// dollars at the best ask, then a SELL of size shares at the best bid,
// alternately — which reaches the simulator at the first event of the next
// record, as the bot's order, sent while the deterministic replay waits on
// it, reaches its account's simulator.
type pmTaker struct {
	token        string
	every, max   int
	amount, size int64
	books, sent  int
	pending      *backtest.OrderRequest
	at           [2]uint64 // the record that triggered pending
}

func (s *pmTaker) OnEvent(ctx *backtest.Context, ev *feed.Event) {
	if s.pending != nil && [2]uint64{uint64(ev.Dataset), ev.Seq} != s.at {
		_, _ = ctx.Submit(*s.pending)
		s.pending = nil
	}
	d := ev.Decoded
	if ev.Kind != datasets.KindFrame || d == nil || d.Type != venue.EventSnapshot || d.Instrument != s.token {
		return
	}
	s.books++
	if s.books%s.every != 0 || s.sent >= s.max {
		return
	}
	bid, ok1 := ev.Book.Best(book.Bid)
	ask, ok2 := ev.Book.Best(book.Ask)
	if !ok1 || !ok2 {
		return
	}
	r := backtest.OrderRequest{Instrument: s.token, Side: backtest.Buy, Price: ask.Price, Amount: s.amount, TIF: backtest.FOK}
	if s.sent%2 == 1 {
		r = backtest.OrderRequest{Instrument: s.token, Side: backtest.Sell, Price: bid.Price, Size: s.size, TIF: backtest.FOK}
	}
	s.sent++
	s.pending, s.at = &r, [2]uint64{uint64(ev.Dataset), ev.Seq}
}

// TestPolymarketExampleBotEqualsBacktest runs examples/polymarket_taker.mjs
// (the official @polymarket/clob-client) against the Polymarket sample: $5
// BUYs and 5-share SELLs of one token every 10th book.
func TestPolymarketExampleBotEqualsBacktest(t *testing.T) {
	const token = "3329029450753225654467003002742946394863848082479209219558348197750220015613"
	exampleEqualsBacktest(t, "@polymarket/clob-client", "polymarket_taker.mjs", "polymarket",
		&pmTaker{token: token, every: 10, max: 6, amount: 5e4, size: 5e6}, 6, token, "10", "5", "5", "6")
}
