package trading_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/internal/jstest"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/serve"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// testKey is the second well-known Hardhat development key; its address is
// public (0x7099…79c8). The signer recovered from its signatures is the
// account the simulator opens.
const (
	testKey  = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
	testUser = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
)

func sample(t *testing.T, venueName string) string {
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "datasets", "samples", venueName))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// node returns the node binary, the tests/js directory and node's flags,
// or skips.
func node(t *testing.T, pkg string) (string, string, []string) {
	t.Helper()
	return jstest.Node(t, pkg)
}

// running is a trading server on a loopback port.
type running struct {
	srv  *serve.Server
	addr string
	stop func()
}

func startTrading(t *testing.T, paths []string, hub trading.Options, api tradeapi.TradingOptions, opts ...serve.Option) *running {
	t.Helper()
	opts = append(opts, serve.WithTrading(hub, api), serve.WithSubscribeWindow(50*time.Millisecond))
	if hub.Deterministic {
		opts = append(opts, serve.WithSpeed(replayer.SpeedMax))
	} else if hub.Speed != 0 {
		opts = append(opts, serve.WithSpeed(hub.Speed))
	}
	srv, err := serve.New(paths, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	r := &running{srv: srv, addr: ln.Addr().String()}
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	t.Cleanup(r.stop)
	return r
}

// runNode runs a script of tests/js and returns its JSON lines by step.
func runNode(t *testing.T, bin, js string, flags []string, script string, args ...string) map[string]json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append(flags, filepath.Join(js, script)), args...)...)
	cmd.Dir = js
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s\n%s", script, err, out, stderr.String())
	}
	steps := map[string]json.RawMessage{}
	for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var s struct{ Step string }
		if json.Unmarshal([]byte(line), &s) != nil {
			t.Fatalf("bad line %q", line)
		}
		if s.Step == "" {
			s.Step = fmt.Sprintf("line%d", i) // a script's own output (fills)
		}
		steps[s.Step] = json.RawMessage(line)
	}
	return steps
}

func decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
}

// TestHyperliquidSDKTrades points the Hyperliquid TypeScript SDK,
// unchanged, at replay serve --trading on the shipped sample: a viem
// wallet signs every action, and each step's answer is checked against
// the simulator's own record of the account afterwards.
func TestHyperliquidSDKTrades(t *testing.T) {
	bin, js, flags := node(t, "@nktkas/hyperliquid")
	r := startTrading(t, []string{sample(t, "hyperliquid")},
		trading.Options{Speed: 20, Backtest: backtest.Config{Cash: 1000e10}}, tradeapi.TradingOptions{})
	steps := runNode(t, bin, js, flags, "hl_sdk_trade.mjs", "http://"+r.addr, "ws://"+r.addr+"/ws", testKey, "BTC")
	r.stop()

	var rest struct {
		Oid   uint64
		Cloid string
		Sz    string
	}
	decode(t, steps["rest"], &rest)
	var open struct {
		Orders []struct {
			Oid      uint64
			Px, Side string
			Cloid    *string
		}
	}
	decode(t, steps["open"], &open)
	if len(open.Orders) != 1 || open.Orders[0].Oid != rest.Oid || open.Orders[0].Side != "B" ||
		open.Orders[0].Cloid == nil || *open.Orders[0].Cloid != rest.Cloid {
		t.Errorf("open orders %s after %s", steps["open"], steps["rest"])
	}
	var status struct{ Status, OrderStatus string }
	decode(t, steps["status"], &status)
	if status.Status != "order" || status.OrderStatus != "open" {
		t.Errorf("orderStatus %s", steps["status"])
	}
	var mod struct {
		Px  string
		Oid uint64
	}
	decode(t, steps["modified"], &mod)
	if mod.Oid != rest.Oid || mod.Px == open.Orders[0].Px {
		t.Errorf("modify: %s, was %s", steps["modified"], steps["open"])
	}
	if !strings.Contains(string(steps["cancel"]), `"success"`) {
		t.Errorf("cancel %s", steps["cancel"])
	}
	if !strings.Contains(string(steps["recancel"]), "Order was never placed, already canceled, or filled.") {
		t.Errorf("second cancel %s", steps["recancel"])
	}
	var ioc struct {
		Filled struct {
			TotalSz, AvgPx string
			Oid            uint64
		}
	}
	decode(t, steps["ioc"], &ioc)
	if ioc.Filled.TotalSz != rest.Sz {
		t.Errorf("IOC %s, size %s", steps["ioc"], rest.Sz)
	}
	var wsfill struct {
		Fills []struct {
			Oid          uint64
			Px, Sz, Side string
			Crossed      bool
		}
	}
	decode(t, steps["wsfill"], &wsfill)
	// The IOC takes one level or several (paced, the book it meets depends
	// on when it arrives): one fill per level, all the IOC's, all taker,
	// adding up to its size; a single fill is at the average price.
	wsSz := 0.0
	for _, f := range wsfill.Fills {
		if f.Oid != ioc.Filled.Oid || !f.Crossed {
			t.Errorf("userFills subscription %s, IOC %s", steps["wsfill"], steps["ioc"])
		}
		wsSz += parseFloat(t, f.Sz)
	}
	if len(wsfill.Fills) == 0 || !sameSize(wsSz, parseFloat(t, rest.Sz)) || len(wsfill.Fills) == 1 && wsfill.Fills[0].Px != ioc.Filled.AvgPx {
		t.Errorf("userFills subscription %s, IOC %s", steps["wsfill"], steps["ioc"])
	}
	var fills struct {
		Fills []struct {
			Oid               uint64
			Px, Sz, Side, Dir string
		}
	}
	decode(t, steps["fills"], &fills)
	restSz := 0.0
	for _, f := range fills.Fills {
		if f.Dir != "Open Long" || f.Oid != ioc.Filled.Oid {
			t.Errorf("userFills %s", steps["fills"])
		}
		restSz += parseFloat(t, f.Sz)
	}
	if len(fills.Fills) != len(wsfill.Fills) || !sameSize(restSz, parseFloat(t, rest.Sz)) {
		t.Errorf("userFills %s", steps["fills"])
	}
	var ch struct {
		Positions []struct {
			Coin, Szi string
			Lev       struct {
				Type  string
				Value int
			}
		}
	}
	decode(t, steps["clearinghouse"], &ch)
	if len(ch.Positions) != 1 || ch.Positions[0].Szi != rest.Sz || ch.Positions[0].Lev.Type != "cross" || ch.Positions[0].Lev.Value != 5 {
		t.Errorf("clearinghouseState %s", steps["clearinghouse"])
	}
	if !strings.Contains(string(steps["bad"]), "Order has invalid price.") {
		t.Errorf("bad price %s", steps["bad"])
	}
	var end struct {
		Open int
		User string
	}
	decode(t, steps["end"], &end)
	if end.Open != 0 || end.User != testUser {
		t.Errorf("end %s", steps["end"])
	}

	// The simulator's record: one account, the signer; four orders (rest,
	// IOC, the refused one; the modify kept the id), one taker fill at the
	// price the SDK was told.
	ids, results := r.srv.Hub().Results()
	if len(ids) != 1 || ids[0] != testUser {
		t.Fatalf("accounts %v", ids)
	}
	res := results[0]
	if len(res.Fills) != len(wsfill.Fills) {
		t.Fatalf("fills %+v", res.Fills)
	}
	for i, f := range res.Fills {
		if f.Liquidity != backtest.Taker || f.OrderID != ioc.Filled.Oid {
			t.Fatalf("fills %+v", res.Fills)
		}
		if got := book.FormatDecimal(f.Price, 8); !strings.HasPrefix(got, strings.TrimSuffix(wsfill.Fills[i].Px, ".0")) {
			t.Errorf("engine fill %d price %s, SDK told %s", i, got, wsfill.Fills[i].Px)
		}
	}
	if len(res.Orders) != 3 || res.Orders[0].Status != backtest.StatusCancelled || res.Orders[2].Status != backtest.StatusRejected {
		for _, o := range res.Orders {
			t.Logf("order %+v", *o)
		}
		t.Errorf("orders")
	}
}

// TestPolymarketSDKTrades points the official Polymarket client
// (@polymarket/clob-client), unchanged, at replay serve --trading on the
// shipped sample, deterministic: API key by L1 signature, a GTC BUY that
// rests, open orders, the order, a cancel, a FOK market BUY that fills, the
// trades, a FOK the book cannot fill (the venue's error, nothing changes),
// the balance, and the user channel's order and trade events.
func TestPolymarketSDKTrades(t *testing.T) {
	bin, js, flags := node(t, "@polymarket/clob-client")
	const token = "3329029450753225654467003002742946394863848082479209219558348197750220015613"
	r := startTrading(t, []string{sample(t, "polymarket")},
		trading.Options{Deterministic: true, Settle: 50 * time.Millisecond, Backtest: backtest.Config{Cash: 1000e10}},
		tradeapi.TradingOptions{})
	steps := runNode(t, bin, js, flags, "pm_sdk_trade.mjs", "http://"+r.addr, "ws://"+r.addr, testKey, token)
	r.stop()

	var key struct {
		Key  string
		Same bool
	}
	decode(t, steps["apikey"], &key)
	if key.Key == "" || !key.Same {
		t.Errorf("api key %s", steps["apikey"])
	}
	var gtc struct {
		Success bool
		Status  string
		OrderID string
	}
	decode(t, steps["gtc"], &gtc)
	if !gtc.Success || gtc.Status != "live" || len(gtc.OrderID) != 66 {
		t.Errorf("GTC %s", steps["gtc"])
	}
	var open struct {
		IDs    []string
		Status string
	}
	decode(t, steps["open"], &open)
	if len(open.IDs) != 1 || open.IDs[0] != gtc.OrderID || open.Status != "LIVE" {
		t.Errorf("open orders %s", steps["open"])
	}
	if !strings.Contains(string(steps["cancel"]), `"canceled":["`+gtc.OrderID+`"]`) || !strings.Contains(string(steps["open2"]), `"n":0`) {
		t.Errorf("cancel %s, then %s", steps["cancel"], steps["open2"])
	}
	var fok struct {
		Success        bool
		Status         string
		Taking, Making string
	}
	decode(t, steps["fok"], &fok)
	// $5 buys the shares the client asked for (5 / price, rounded down to
	// the tick's amount decimals): a hair under $5 unless the price divides.
	spent, err := strconv.ParseFloat(fok.Making, 64)
	if !fok.Success || fok.Status != "matched" || err != nil || spent > 5 || spent < 4.99 {
		t.Errorf("FOK %s", steps["fok"])
	}
	var trades struct {
		N          int
		Side, Size string
	}
	decode(t, steps["trades"], &trades)
	if trades.N != 1 || trades.Side != "BUY" || trades.Size != fok.Taking {
		t.Errorf("trades %s after %s", steps["trades"], steps["fok"])
	}
	// The venue refuses it for the money it lacks (the simulator's balance
	// check) or for the book it cannot fill, in its own words.
	if refused := string(steps["refused"]); !strings.Contains(refused, `"status":400`) ||
		(!strings.Contains(refused, "order couldn't be fully filled. FOK orders are fully filled or killed.") &&
			!strings.Contains(refused, "not enough balance / allowance")) {
		t.Errorf("refused %s", steps["refused"])
	}
	if want := fmt.Sprintf(`"balance":"%d"`, 1000_000000-int64(math.Round(spent*1e6))); !strings.Contains(string(steps["balance"]), want) {
		t.Errorf("balance %s: $1000 less the FOK's %s", steps["balance"], fok.Making)
	}
	var user struct {
		Events []struct{ Event_type, Type, ID, Status string }
	}
	decode(t, steps["user"], &user)
	var placement, cancellation, trade bool
	for _, e := range user.Events {
		placement = placement || (e.Type == "PLACEMENT" && e.ID == gtc.OrderID)
		cancellation = cancellation || (e.Type == "CANCELLATION" && e.ID == gtc.OrderID)
		trade = trade || (e.Event_type == "trade" && e.Status == "MATCHED")
	}
	if !placement || !cancellation || !trade || len(user.Events) > 4 {
		t.Errorf("user channel %s", steps["user"])
	}
	ids, results := r.srv.Hub().Results()
	if len(ids) != 1 || ids[0] != key.Key || len(results[0].Fills) != 1 || len(results[0].Orders) != 3 {
		t.Fatalf("accounts %v, results %+v", ids, results)
	}
}

func parseFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// sameSize compares sizes the venue writes with at most 8 decimals.
func sameSize(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
