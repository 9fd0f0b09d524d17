package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/jstest"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// TestRunPaperTrading runs capture run --trading against the loopback test
// exchange and points the Hyperliquid TypeScript SDK, unchanged, at the
// trading address: it places, modifies and cancels a resting order, takes
// the live ask with an IOC, and receives that fill on its userFills
// subscription, all answered by the simulator against the live book; the
// test exchange receives nothing but the capture's own subscriptions.
func TestRunPaperTrading(t *testing.T) {
	bin, js, flags := jstest.Node(t, "@nktkas/hyperliquid")
	// One BTC book, sent over and over (the default feed alternates two
	// books captured a year apart, 30% apart in price).
	cfg := fakeexchange.HyperliquidConfig()
	cfg.Feed = map[string][]fakeexchange.Template{"l2Book": cfg.Feed["l2Book"][1:2]}
	s := fakeexchange.New(cfg)
	defer s.Close()
	out := filepath.Join(t.TempDir(), "ds")
	addr := make(chan string, 1)
	var cmd = newRunCmd(nil)
	cmd = newRunCmd(func(o *runOptions) error {
		o.tradingReady = func(a string) { addr <- a }
		return runCapture(cmd.Context(), o)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd.SetContext(ctx)
	cmd.SetArgs([]string{"--venue", "hyperliquid", "--instruments", "BTC", "--channels", "l2Book", "--endpoint", s.WSURL(),
		"--rest-endpoint", s.RESTURL(), "--trading", "127.0.0.1:0", "--out", out, "--log-format", "json"})
	var stderr bytes.Buffer
	cmd.SetOut(io.Discard)
	cmd.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	var a string
	select {
	case a = <-addr:
	case err := <-done:
		t.Fatalf("capture run ended: %v\n%s", err, stderr.String())
	}

	nctx, ncancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer ncancel()
	const key = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" // Hardhat's second development key
	node := exec.CommandContext(nctx, bin, append(flags, filepath.Join(js, "hl_sdk_trade.mjs"), "http://"+a, "ws://"+a+"/ws", key, "BTC")...)
	node.Dir = js
	var nerr bytes.Buffer
	node.Stderr = &nerr
	res, err := node.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\n%s", err, res, nerr.String())
	}
	steps := map[string]json.RawMessage{}
	for _, line := range strings.Split(strings.TrimSpace(string(res)), "\n") {
		var st struct{ Step string }
		if json.Unmarshal([]byte(line), &st) != nil {
			t.Fatalf("bad line %q", line)
		}
		steps[st.Step] = json.RawMessage(line)
	}
	var rest struct {
		Oid uint64
		Sz  string
	}
	if json.Unmarshal(steps["rest"], &rest) != nil || rest.Oid == 0 {
		t.Errorf("resting order %s", steps["rest"])
	}
	if !strings.Contains(string(steps["cancel"]), `"success"`) {
		t.Errorf("cancel %s", steps["cancel"])
	}
	var ioc struct {
		Filled struct {
			TotalSz, AvgPx string
			Oid            uint64
		}
	}
	if json.Unmarshal(steps["ioc"], &ioc) != nil || ioc.Filled.TotalSz != rest.Sz {
		t.Errorf("IOC %s, size %s", steps["ioc"], rest.Sz)
	}
	var wsfill struct {
		Fills []struct {
			Oid     uint64
			Px      string
			Crossed bool
		}
	}
	if json.Unmarshal(steps["wsfill"], &wsfill) != nil || len(wsfill.Fills) != 1 || wsfill.Fills[0].Oid != ioc.Filled.Oid ||
		!wsfill.Fills[0].Crossed || wsfill.Fills[0].Px != ioc.Filled.AvgPx {
		t.Errorf("userFills subscription %s, IOC %s", steps["wsfill"], steps["ioc"])
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("capture run: %v\n%s", err, stderr.String())
	}
	// The account the simulator kept, as the capture logs it at the end.
	if !strings.Contains(stderr.String(), `"msg":"paper trading account","account":"0x70997970c51812dc3a010c7d01b50e0d17dc79c8","orders":3,"fills":1`) {
		t.Errorf("no account summary with the IOC's fill in the log:\n%s", stderr.String())
	}
	// Nothing but the capture's own frames reached the exchange.
	for _, c := range s.Conns() {
		for _, m := range c.Received() {
			if strings.Contains(string(m), `"action"`) || strings.Contains(string(m), "order") {
				t.Errorf("the exchange received %s", m)
			}
		}
	}
}
