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

// runExample runs examples/hyperliquid_taker.mjs against a deterministic
// trading server on the sample and returns the simulator's result.
func runExample(t *testing.T, bin, js string, flags []string, src []byte) (*backtest.Result, int64) {
	t.Helper()
	// The example imports the SDK by name: run a copy of it where the
	// test's node_modules resolve.
	script := filepath.Join(js, ".example_hyperliquid_taker.mjs")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(script)
	r := startTrading(t, []string{sample(t, "hyperliquid")},
		trading.Options{Deterministic: true, Settle: 300 * time.Millisecond, Backtest: backtest.Config{Cash: 1000e10}},
		venue.TradingOptions{})
	runNode(t, bin, js, flags, filepath.Base(script), "http://"+r.addr, "ws://"+r.addr+"/ws", testKey, "BTC", "3", "0.0002", "4")
	// The replay goes on to the end without the bot; the results are
	// complete once it has.
	select {
	case <-r.srv.Hub().Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("replay did not end")
	}
	r.stop()
	ids, res := r.srv.Hub().Results()
	if len(res) != 1 || ids[0] != testUser {
		t.Fatalf("accounts %v", ids)
	}
	return res[0], r.srv.Hub().Late()
}

// TestExampleBotEqualsBacktest runs the example bot twice in deterministic
// mode — the same fills, the same digest — and checks its fills are the
// ones replay backtest gives the Go twin of the bot.
func TestExampleBotEqualsBacktest(t *testing.T) {
	bin, js, flags := node(t, "@nktkas/hyperliquid")
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "hyperliquid_taker.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// The runNode helper wants JSON lines with a step; the bot prints
	// fills. Wrap: count on the simulator's side instead.
	first, r1late := runExample(t, bin, js, flags, src)
	second, r2late := runExample(t, bin, js, flags, src)
	if late := r1late + r2late; late != 0 {
		t.Skipf("%d requests came after the settle (a host too slow for it): the runs are not comparable", late)
	}
	if first.Summary.Digest != second.Summary.Digest || len(first.Fills) != len(second.Fills) {
		t.Fatalf("two deterministic runs: %s %d fills, %s %d fills", first.Summary.Digest, len(first.Fills),
			second.Summary.Digest, len(second.Fills))
	}
	if len(first.Fills) == 0 || len(first.Orders) != 4 {
		t.Fatalf("bot: %d orders, %d fills", len(first.Orders), len(first.Fills))
	}
	twin, _, err := backtest.Run(context.Background(), []string{sample(t, "hyperliquid")},
		&taker{coin: "BTC", every: 3, max: 4, size: 2e4}, backtest.Config{Cash: 1000e10}, backtest.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(twin.Fills) != len(first.Fills) {
		t.Fatalf("backtest %d fills, API %d", len(twin.Fills), len(first.Fills))
	}
	for i, f := range twin.Fills {
		g := first.Fills[i]
		if f.OrderID != g.OrderID || f.Side != g.Side || f.Price != g.Price || f.Size != g.Size ||
			f.Liquidity != g.Liquidity || f.Fee != g.Fee || f.RecvNs != g.RecvNs || f.ExchangeNs != g.ExchangeNs {
			t.Errorf("fill %d: backtest %+v, API %+v", i, f, g)
		}
	}
	for i, o := range twin.Orders {
		g := first.Orders[i]
		if o.SubmitNs != g.SubmitNs || o.Price != g.Price || o.Status != g.Status || o.Filled != g.Filled {
			t.Errorf("order %d: backtest %+v, API %+v", i, *o, *g)
		}
	}
	t.Logf("%d orders, %d fills, digest %s; backtest digest %s", len(first.Orders), len(first.Fills),
		first.Summary.Digest, twin.Summary.Digest)
}
