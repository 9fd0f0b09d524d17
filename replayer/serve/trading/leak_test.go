package trading_test

import (
	"runtime"
	"testing"
	"weak"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/replayer/serve"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// TestServerStateDiesWithServer checks that nothing outlives a trading
// server: once it is dropped, its simulated exchange (and with it the
// venue API's keys and order ids) is collected, for both venues.
func TestServerStateDiesWithServer(t *testing.T) {
	for _, v := range []string{"polymarket", "hyperliquid"} {
		t.Run(v, func(t *testing.T) {
			hubs := make([]weak.Pointer[trading.Hub], 3)
			for i := range hubs {
				srv, err := serve.New([]string{sample(t, v)},
					serve.WithTrading(trading.Options{Deterministic: true, Backtest: backtest.Config{Cash: 1000e10}}, tradeapi.TradingOptions{}))
				if err != nil {
					t.Fatal(err)
				}
				hubs[i] = weak.Make(srv.Hub())
			}
			runtime.GC()
			runtime.GC()
			for i, w := range hubs {
				if w.Value() != nil {
					t.Errorf("server %d: its exchange is still held after the server was dropped", i)
				}
			}
		})
	}
}
