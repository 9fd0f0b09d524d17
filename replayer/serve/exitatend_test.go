package serve

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// TestServeExitAtEnd checks that a trading server with WithExitAtEnd
// returns from Serve by itself once the shared replay has ended (replay
// serve --trading --exit-at-end), with the accounts' results complete, and
// that Path names the venue's WebSocket path.
func TestServeExitAtEnd(t *testing.T) {
	ds := serveFramesDataset(t, venue.Hyperliquid, hlServeFrames(t))
	s, err := New([]string{ds}, WithExitAtEnd(), WithSubscribeWindow(time.Millisecond),
		WithTrading(trading.Options{Speed: replayer.SpeedMax, Backtest: backtest.Config{Cash: 1000e10}}, tradeapi.TradingOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Path(); p != "/ws" {
		t.Errorf("Path %q, want /ws", p)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), ln) }() // never cancelled: only the end of the replay stops it
	c := serveDial(t, "ws://"+ln.Addr().String()+s.Path())
	serveSend(t, c, serveSubMsg(`{"type":"l2Book","coin":"BTC"}`))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(time.Minute): // a hang guard, not a synchronisation
		t.Fatal("Serve did not return at the end of the replay")
	}
	select {
	case <-s.Hub().Done():
	default:
		t.Fatal("Serve returned before the replay ended")
	}
	if ids, _ := s.Hub().Results(); len(ids) != 0 {
		t.Errorf("accounts %q: nobody traded", ids)
	}
}
