package serve

import (
	"context"
	"log/slog"
	"math"
	"net"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// PaperOptions configure paper trading over live books (capture run
// --trading).
type PaperOptions struct {
	Venue string
	// Listener is where the API is served; the caller chose it (capture
	// run refuses a non-loopback address without --listen-public).
	Listener net.Listener
	Cash     float64 // each account's starting collateral
	Logger   *slog.Logger
	// Subscribe hands the trading hub's live subscriber to the live engine
	// (recorder.Subscribe); it is called before the API starts serving.
	Subscribe func(feed.Subscriber)
}

// Paper is the venue's trading API and market-data WebSocket served over
// the live books: a live trading hub fed by the live engine answers every
// order with the backtester's simulator, and nothing reaches the venue.
type Paper struct {
	hub    *trading.Hub
	log    *slog.Logger
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
}

// StartPaper serves on o.Listener until ctx ends or Close.
func StartPaper(ctx context.Context, o PaperOptions) (*Paper, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Live, an order meets the first event received after it (plus the
	// latency) on this machine's clock: the venue's timestamps are another
	// clock, as far off as the two machines' skew.
	hub, err := trading.NewLive(trading.Options{Backtest: backtest.Config{Cash: int64(math.Round(o.Cash * 1e10)), IgnoreExchangeTime: true}})
	if err != nil {
		return nil, err
	}
	srv, err := NewLive(o.Venue, hub, tradeapi.TradingOptions{})
	if err != nil {
		return nil, err
	}
	ln := o.Listener
	if o.Subscribe != nil {
		o.Subscribe(hub.Live())
	}
	sctx, cancel := context.WithCancel(ctx)
	p := &Paper{hub: hub, log: log, addr: ln.Addr().String(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		if err := srv.Serve(sctx, ln); err != nil {
			log.Error("trading API", "err", err)
		}
	}()
	log.Info("paper trading", "http", "http://"+p.addr, "ws", "ws://"+p.addr)
	return p, nil
}

// Addr is the address the API listens on.
func (p *Paper) Addr() string { return p.addr }

// Close stops serving, waits for the connections to end and logs each
// account's orders, fills and end cash.
func (p *Paper) Close() {
	p.cancel()
	<-p.done
	ids, res := p.hub.Results()
	for i, r := range res {
		p.log.Info("paper trading account", "account", ids[i], "orders", len(r.Orders), "fills", len(r.Fills), "end_cash", r.Summary.EndCash)
	}
}
