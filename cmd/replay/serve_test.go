package main

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/serve"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"go.uber.org/goleak"
)

func TestServeFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // "" = parses
		check   func(o *serveCmdOptions) bool
	}{
		{"defaults", []string{"ds"}, "", func(o *serveCmdOptions) bool {
			return o.Listen == "127.0.0.1:8765" && o.Speed == 1 && o.Queue == serve.DefaultSendQueue &&
				o.Window == serve.DefaultSubscribeWindow && !o.CloseAtEnd && len(o.Paths) == 1
		}},
		{"all flags", []string{"--listen", "127.0.0.1:0", "--speed", "max", "--queue", "8", "--subscribe-window", "0s",
			"--close-at-end", "a", "b"}, "", func(o *serveCmdOptions) bool {
			return o.Listen == "127.0.0.1:0" && o.Speed == replayer.SpeedMax && o.Queue == 8 && o.Window == 0 &&
				o.CloseAtEnd && len(o.Paths) == 2
		}},
		{"no dataset", nil, "at least one DATASET", nil},
		{"bad speed", []string{"--speed", "fast", "ds"}, "--speed", nil},
		{"speed too slow", []string{"--speed", "0.0000001x", "ds"}, "--speed", nil}, // issue 13 item 11
		{"speed too fast", []string{"--speed", "1e9x", "ds"}, "--speed", nil},
		{"max gap", []string{"--max-gap", "-1s", "ds"}, "--max-gap", nil},
		{"no port", []string{"--listen", "127.0.0.1", "ds"}, "--listen", nil},
		{"bad port", []string{"--listen", "127.0.0.1:http", "ds"}, "--listen", nil},
		{"queue", []string{"--queue", "0", "ds"}, "--queue", nil},
		{"window", []string{"--subscribe-window", "-1s", "ds"}, "--subscribe-window", nil},
		{"fee tier", []string{"--trading", "--fee-tier", "99", "ds"}, "--fee-tier 99", nil},
		{"fee tier without trading", []string{"--fee-tier", "1", "ds"}, "--trading only", nil},
		{"listed fee tier", []string{"--trading", "--fee-tier", "6", "ds"}, "", func(o *serveCmdOptions) bool {
			return o.Trading && o.Hub.Backtest.FeeTier == 6
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *serveCmdOptions
			cmd := newServeCmd(func(_ context.Context, o *serveCmdOptions) error { got = o; return nil })
			err := executeQuiet(cmd, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got == nil || !tc.check(got) {
				t.Fatalf("err %v, options %+v", err, got)
			}
		})
	}
}

// serveSample returns the shipped sample of a venue, or a dataset built from
// the fixtures when the samples are not there.
func serveSample(t *testing.T, v string) string {
	t.Helper()
	shipped := filepath.Join("..", "..", "datasets", "samples", v)
	if _, err := datasets.ReadManifest(shipped); err == nil {
		return shipped
	}
	file := map[string]string{
		venue.Hyperliquid: "order_book_server_ack_l2book_trades_2025-07.ndjson",
		venue.Polymarket:  "polypy_semisynthetic_stream_single_asset.ndjson",
	}[v]
	data, err := os.ReadFile(filepath.Join("..", "..", "replayer", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), v)
	const base = int64(1_761_179_883_000_000_000)
	w, err := datasets.Create(dir, datasets.Manifest{Venue: v, Endpoint: "test", StartNs: base})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for i := int64(0); sc.Scan(); i++ {
		wall := base + i*int64(time.Millisecond)
		if _, err := w.Append(&datasets.Record{Kind: datasets.KindFrame, WallNs: wall, MonoNs: wall, Payload: sc.Bytes()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

var serveAssetRE = regexp.MustCompile(`"asset_id"\s*:\s*"([0-9]+)"`)

// serveFirstFrame returns the first recorded frame a client can subscribe to
// and the subscribe message that selects it.
func serveFirstFrame(t *testing.T, dir, v string) (frame []byte, subscribe string) {
	t.Helper()
	r, err := datasets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		rec := r.Record()
		if rec.Kind != datasets.KindFrame {
			continue
		}
		if v == venue.Polymarket {
			if m := serveAssetRE.FindSubmatch(rec.Payload); m != nil {
				return bytes.Clone(rec.Payload), `{"assets_ids":["` + string(m[1]) + `"],"type":"market"}`
			}
			continue
		}
		rt, err := hyperliquid.RouteFrame(rec.Payload)
		if err != nil || len(rt.Coin) == 0 || string(rt.Channel) == "candle" {
			continue
		}
		ch := string(rt.Channel)
		if ch == "activeSpotAssetCtx" {
			ch = "activeAssetCtx"
		}
		return bytes.Clone(rec.Payload),
			`{"method":"subscribe","subscription":{"type":"` + ch + `","coin":"` + string(rt.Coin) + `"}}`
	}
	t.Fatalf("%s: no frame to subscribe to", dir)
	return nil, ""
}

// TestServeExamples runs every Example line of the verb on the samples, on a
// free port, with a gorilla client that subscribes to the first servable
// frame and must receive it byte-identical (and a pong for its ping).
func TestServeExamples(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := 0
	for _, line := range strings.Split(newServeCmd(nil).Example, "\n") {
		cmdline, ok := strings.CutPrefix(strings.TrimSpace(line), "$ replay ")
		if !ok {
			continue
		}
		n++
		args := strings.Fields(cmdline)[1:] // drop "serve"
		var v string
		for i, a := range args {
			if after, ok := strings.CutPrefix(a, "datasets/samples/"); ok {
				v = after
				args[i] = serveSample(t, v)
			}
			if i > 0 && args[i-1] == "--listen" {
				args[i] = "127.0.0.1:0"
			}
			if i > 0 && args[i-1] == "--out" {
				args[i] = t.TempDir()
			}
		}
		want, sub := serveFirstFrame(t, args[0], v)
		ping, pong := `{"method":"ping"}`, `{"channel":"pong"}`
		if v == venue.Polymarket {
			ping, pong = "PING", "PONG"
		}
		ctx, cancel := context.WithCancel(context.Background())
		var clientErr string
		cmd := newServeCmd(func(_ context.Context, o *serveCmdOptions) error {
			o.Window = 0
			o.Ready = func(addr net.Addr) {
				defer cancel()
				clientErr = serveExampleClient("ws://"+addr.String()+"/ws", ping, pong, sub, want)
			}
			return runServe(ctx, o)
		})
		var errb bytes.Buffer
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&errb)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.Execute(); err != nil || clientErr != "" {
			t.Errorf("%s: err %v, client: %s\n%s", line, err, clientErr, errb.String())
		}
		if !strings.Contains(errb.String(), "serving "+v+" recording at ws://127.0.0.1:") ||
			!strings.Contains(errb.String(), "served 1 connections") {
			t.Errorf("%s: stderr %q", line, errb.String())
		}
	}
	if n != 4 {
		t.Fatalf("%d examples", n)
	}
}

// serveExampleClient pings, subscribes and waits for the first data frame; it
// returns "" on success or what went wrong.
func serveExampleClient(url, ping, pong, sub string, want []byte) string {
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := c.WriteMessage(websocket.TextMessage, []byte(ping)); err != nil {
		return err.Error()
	}
	if _, m, err := c.ReadMessage(); err != nil || string(m) != pong {
		return "ping: " + string(m) + " " + serveErrText(err)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(sub)); err != nil {
		return err.Error()
	}
	for {
		_, m, err := c.ReadMessage()
		if err != nil {
			return "no data frame: " + err.Error()
		}
		if strings.Contains(string(m), `"subscriptionResponse"`) {
			continue
		}
		if !bytes.Equal(m, want) {
			return "first frame " + string(m) + ", want " + string(want)
		}
		return ""
	}
}

func serveErrText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
