package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/jstest"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// serveRec is one record of a served test dataset.
type serveRec struct {
	kind    datasets.Kind
	wallNs  int64
	payload []byte
}

// serveDataset writes records into a new dataset of venue v.
func serveDataset(t testing.TB, v string, recs []serveRec) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ds")
	m := datasets.Manifest{Venue: v, Endpoint: "test://" + v}
	if len(recs) > 0 {
		m.StartNs = recs[0].wallNs
	}
	w, err := datasets.Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if _, err := w.Append(&datasets.Record{Kind: r.kind, WallNs: r.wallNs, MonoNs: r.wallNs, Payload: r.payload}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// framesDataset records frames 1 ms apart, with a sent subscribe and a
// connect record among them (which must never be served).
func serveFramesDataset(t testing.TB, v string, frames [][]byte) string {
	t.Helper()
	recs := []serveRec{
		{datasets.KindConnect, serveBaseNs - 2, datasets.EncodeControl(datasets.Control{URL: "test://"})},
		{datasets.KindSent, serveBaseNs - 1, []byte(`{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC"}}`)},
	}
	for i, f := range frames {
		recs = append(recs, serveRec{datasets.KindFrame, serveBaseNs + int64(i)*int64(time.Millisecond), f})
	}
	return serveDataset(t, v, recs)
}

// hlServeFrames is a Hyperliquid connection made of the real fixture frames
// (acks, books, bbo, context, trades, candle, pong) plus ETH copies of the
// BTC book and trades and the legacy greeting text.
func hlServeFrames(t testing.TB) [][]byte {
	frames := serveFixture(t, "arbitrage_observatory_probe_2026-09_core.ndjson",
		"order_book_server_ack_l2book_trades_2025-07.ndjson", "jkorf_l2book_trimmed_2025-12.ndjson")
	var eth [][]byte
	for _, f := range frames {
		if bytes.Contains(f, []byte(`"channel":"l2Book"`)) || bytes.Contains(f, []byte(`"channel":"trades"`)) {
			eth = append(eth, bytes.ReplaceAll(f, []byte(`"coin":"BTC"`), []byte(`"coin":"ETH"`)))
		}
	}
	frames = append([][]byte{[]byte("Websocket connection established.")}, frames...)
	// Interleave the ETH frames so each client's stream is a subsequence.
	var out [][]byte
	for i, f := range frames {
		out = append(out, f)
		if i < len(eth) {
			out = append(out, eth[i])
		}
	}
	return out
}

// selectFrames is the second path to the expected stream: plain substring
// tests on the recorded frames.
func serveSelect(frames [][]byte, keep func(s string) bool) []string {
	var out []string
	for _, f := range frames {
		if keep(string(f)) {
			out = append(out, string(f))
		}
	}
	return out
}

func serveStart(t *testing.T, paths []string, opts ...Option) (*Server, string) {
	t.Helper()
	s, err := New(paths, opts...)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return s, "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
}

func serveDial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func serveSend(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// readAll reads until the server closes the connection and returns the
// messages and the close error. The deadline only guards against a hang.
func serveReadAll(t *testing.T, c *websocket.Conn) ([]string, *websocket.CloseError) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	var msgs []string
	for {
		_, m, err := c.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("read: %v after %d messages", err, len(msgs))
			}
			return msgs, ce
		}
		msgs = append(msgs, string(m))
	}
}

func serveReadOne(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, m, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	return string(m)
}

func serveSubMsg(sub string) string { return `{"method":"subscribe","subscription":` + sub + `}` }

// serveAckMsg is the venue's ack of sub (compact JSON): an l2Book echo
// carries the defaults the client left out.
func serveAckMsg(method, sub string) string {
	if strings.Contains(sub, `"l2Book"`) {
		if !strings.Contains(sub, `"nSigFigs"`) {
			sub = strings.TrimSuffix(sub, "}") + `,"nSigFigs":null}`
		}
		if !strings.Contains(sub, `"mantissa"`) {
			sub = strings.TrimSuffix(sub, "}") + `,"mantissa":null}`
		}
	}
	return `{"channel":"subscriptionResponse","data":{"method":"` + method + `","subscription":` + sub + `}}`
}

// TestServeHyperliquid checks that each client gets the acks and exactly the
// recorded frames it subscribed to, byte-identical and in order.
func TestServeHyperliquid(t *testing.T) {
	frames := hlServeFrames(t)
	ds := serveFramesDataset(t, venue.Hyperliquid, frames)
	_, url := serveStart(t, []string{ds}, WithSpeed(replayer.SpeedMax), WithCloseAtEnd(), WithSubscribeWindow(time.Second)) // subscribes sent back to back land well inside it

	tests := []struct {
		name string
		subs []string
		keep func(s string) bool
	}{
		{"l2Book BTC", []string{`{"type":"l2Book","coin":"BTC","nSigFigs":null,"mantissa":null}`}, func(s string) bool {
			return strings.Contains(s, `"channel":"l2Book"`) && strings.Contains(s, `"coin":"BTC"`)
		}},
		{"trades ETH and bbo BTC", []string{`{"type":"trades","coin":"ETH"}`, `{"type":"bbo","coin":"BTC"}`}, func(s string) bool {
			return strings.Contains(s, `"channel":"trades"`) && strings.Contains(s, `"coin":"ETH"`) ||
				strings.Contains(s, `"channel":"bbo"`) && strings.Contains(s, `"coin":"BTC"`)
		}},
		{"candle, ctx, HYPE book", []string{`{"type":"candle","coin":"BTC","interval":"1m"}`,
			`{"type":"activeAssetCtx","coin":"BTC"}`, `{"type":"l2Book","coin":"HYPE"}`}, func(s string) bool {
			return strings.Contains(s, `"channel":"candle"`) || strings.Contains(s, `"channel":"activeAssetCtx"`) ||
				strings.Contains(s, `"channel":"l2Book"`) && strings.Contains(s, `"coin":"HYPE"`)
		}},
		{"candle of another interval", []string{`{"type":"candle","coin":"BTC","interval":"5m"}`}, func(string) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := serveDial(t, url)
			for _, s := range tt.subs {
				serveSend(t, c, serveSubMsg(s))
			}
			got, ce := serveReadAll(t, c)
			if ce.Code != websocket.CloseNormalClosure || !strings.Contains(ce.Text, "end of recording") {
				t.Errorf("close %d %q", ce.Code, ce.Text)
			}
			var acks []string
			for _, s := range tt.subs {
				acks = append(acks, serveAckMsg("subscribe", s))
			}
			if len(got) < len(acks) || !slices.Equal(got[:len(acks)], acks) {
				t.Fatalf("acks %q, want %q", got[:min(len(got), len(acks))], acks)
			}
			want := serveSelect(frames, tt.keep)
			if got := got[len(acks):]; !slices.Equal(got, want) {
				t.Errorf("%d frames, want %d:\n%s\nwant\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestServeHyperliquidControl checks pong, unsubscribe and the venue's errors.
func TestServeHyperliquidControl(t *testing.T) {
	ds := serveFramesDataset(t, venue.Hyperliquid, hlServeFrames(t))
	// Wire speed on a 22 ms recording: the client's requests are answered
	// while the replay is still running, whatever the machine's speed.
	_, url := serveStart(t, []string{ds}, WithSubscribeWindow(time.Hour))
	c := serveDial(t, url)
	sub := `{"type":"l2Book","coin":"BTC"}`
	for _, tt := range []struct{ send, want string }{
		{`{"method":"ping"}`, `{"channel":"pong"}`},
		{serveSubMsg(sub), serveAckMsg("subscribe", sub)},
		{serveSubMsg(` {"type": "l2Book", "coin": "BTC"}`), `{"channel":"error","data":"Already subscribed: {\"type\":\"l2Book\",\"coin\":\"BTC\"}"}`},
		{`{"method":"unsubscribe","subscription":` + sub + `}`, serveAckMsg("unsubscribe", sub)},
		{`{"method":"unsubscribe","subscription":` + sub + `}`, `{"channel":"error","data":"Already unsubscribed: {\"type\":\"l2Book\",\"coin\":\"BTC\"}"}`},
		{`{"method":"subscribe"`, `{"channel":"error","data":"Error parsing JSON into valid websocket request: {\"method\":\"subscribe\""}`},
		{`{"method":"subscribe","subscription":{"coin":"BTC"}}`, `{"channel":"error","data":"Error parsing JSON into valid websocket request: {\"method\":\"subscribe\",\"subscription\":{\"coin\":\"BTC\"}}"}`},
		{`{"method":"post","id":7,"request":{"type":"info","payload":{"type":"meta"}}}`, `{"channel":"error","data":"tapedeck serves subscriptions only, not post requests: {\"method\":\"post\",\"id\":7,\"request\":{\"type\":\"info\",\"payload\":{\"type\":\"meta\"}}}"}`},
	} {
		serveSend(t, c, tt.send)
		if got := serveReadOne(t, c); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.send, got, tt.want)
		}
	}
}

// TestServeManyClients runs clients at once, each on its own cursor, and
// checks each gets exactly its coin's books.
func TestServeManyClients(t *testing.T) {
	base := serveFixture(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1]
	coins := []string{"BTC", "ETH", "SOL", "HYPE"}
	var frames [][]byte
	for i := range 200 {
		f := bytes.Replace(base, []byte(`"coin":"BTC"`), []byte(`"coin":"`+coins[i%len(coins)]+`"`), 1)
		frames = append(frames, bytes.Replace(f, []byte(`"time":1751427259657`), []byte(fmt.Sprintf(`"time":%d`, 1751427259657+int64(i))), 1))
	}
	ds := serveFramesDataset(t, venue.Hyperliquid, frames)
	s, url := serveStart(t, []string{ds}, WithSpeed(replayer.SpeedMax), WithCloseAtEnd(), WithSubscribeWindow(0))
	const clients = 8
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		coin := coins[i%len(coins)]
		c := serveDial(t, url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub := `{"type":"l2Book","coin":"` + coin + `"}`
			if err := c.WriteMessage(websocket.TextMessage, []byte(serveSubMsg(sub))); err != nil {
				errs <- err
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			var got []string
			for {
				_, m, err := c.ReadMessage()
				if err != nil {
					break
				}
				got = append(got, string(m))
			}
			want := append([]string{serveAckMsg("subscribe", sub)}, serveSelect(frames, func(s string) bool {
				return strings.Contains(s, `"coin":"`+coin+`"`)
			})...)
			if !slices.Equal(got, want) {
				k := 0
				for k < min(len(got), len(want)) && got[k] == want[k] {
					k++
				}
				errs <- fmt.Errorf("client %d (%s): %d messages, want %d; first difference at %d", i, coin, len(got), len(want), k)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := s.Stats(); st.Connections != clients || st.FramesSent != clients*50 || st.SlowDisconnects != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestServeSlowClient checks that a client that stops reading is disconnected
// with a reason while another client gets its whole stream.
func TestServeSlowClient(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 30 MB over loopback")
	}
	// 20000 BTC books 1 ms apart, served at 20x: one second, 30 MB, far more
	// than socket buffers and queue hold; and 200 ETH books among them, a
	// stream any client keeps up with, even under the race detector.
	book := serveFixture(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1]
	eth := bytes.Replace(book, []byte(`"coin":"BTC"`), []byte(`"coin":"ETH"`), 1)
	var frames [][]byte
	for i := range 20000 {
		frames = append(frames, book)
		if i%100 == 0 {
			frames = append(frames, eth)
		}
	}
	ds := serveFramesDataset(t, venue.Hyperliquid, frames)
	s, url := serveStart(t, []string{ds}, WithSpeed(20), WithCloseAtEnd(), WithSubscribeWindow(0),
		WithSendQueue(1024), WithWriteTimeout(time.Minute))

	// The slow client reads nothing until the server gave up on it.
	slow := serveDial(t, url)
	serveSend(t, slow, serveSubMsg(`{"type":"l2Book","coin":"BTC"}`))

	other := serveDial(t, url)
	serveSend(t, other, serveSubMsg(`{"type":"l2Book","coin":"ETH"}`))
	got, ce := serveReadAll(t, other)
	if len(got) != 1+200 || ce.Code != websocket.CloseNormalClosure {
		t.Errorf("other client: %d messages, close %v; want %d and 1000", len(got), ce, 1+200)
	}

	// Wait (bounded) for the server to give up on the slow client, then read
	// what reached it: the frames in flight and the close frame with the reason.
	for end := time.Now().Add(30 * time.Second); s.Stats().SlowDisconnects == 0; {
		if time.Now().After(end) {
			t.Fatalf("slow client never disconnected: %+v", s.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, ce := serveReadAll(t, slow)
	if ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "too slow") {
		t.Errorf("slow client closed with %d %q", ce.Code, ce.Text)
	}
	if len(n) == 0 || len(n) >= 1+20000 {
		t.Errorf("slow client got %d messages", len(n))
	}
	if st := s.Stats(); st.SlowDisconnects != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestServeMaxSpeedBackpressure checks that at replayer.SpeedMax a small queue makes
// the replay wait for the client rather than drop it, and that a ping sent
// while the queue is full is answered.
func TestServeMaxSpeedBackpressure(t *testing.T) {
	book := serveFixture(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1]
	frames := make([][]byte, 2000)
	for i := range frames {
		frames[i] = book
	}
	ds := serveFramesDataset(t, venue.Hyperliquid, frames)
	s, url := serveStart(t, []string{ds}, WithSpeed(replayer.SpeedMax), WithSubscribeWindow(0), WithSendQueue(4))
	c := serveDial(t, url)
	serveSend(t, c, serveSubMsg(`{"type":"l2Book","coin":"BTC"}`))
	if got := serveReadOne(t, c); !strings.Contains(got, "subscriptionResponse") {
		t.Fatalf("ack: %s", got)
	}
	if got := serveReadOne(t, c); got != string(book) {
		t.Fatalf("first frame: %.60s", got)
	}
	// The replay is blocked on the full queue now; the pong must get by it.
	serveSend(t, c, `{"method":"ping"}`)
	n := 1
	for {
		got := serveReadOne(t, c)
		if got == `{"channel":"pong"}` {
			break
		}
		if got != string(book) {
			t.Fatalf("frame %d: %.60s", n, got)
		}
		n++
	}
	for n < len(frames) {
		if got := serveReadOne(t, c); got != string(book) {
			t.Fatalf("frame %d: %.60s", n, got)
		}
		n++
	}
	if st := s.Stats(); st.SlowDisconnects != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestServePolymarket checks asset routing, whole mixed frames, market-wide
// frames and PING/PONG on the Polymarket protocol.
func TestServePolymarket(t *testing.T) {
	stream := serveFixture(t, "polypy_semisynthetic_stream_single_asset.ndjson") // asset A
	other := serveFixture(t, "nautilus_ws_book_2024-10.ndjson")[0]               // asset B
	const a = "72936048731589292555781174533757608024096898681344338816447372274344589246891"
	const b = "48331043336612883890938759509493159234755048973500640148014422747788308965732"
	mixed := []byte(`[` + string(stream[0][1:len(stream[0])-1]) + `,` + string(other) + `]`)
	marketWide := []byte(`{"event_type":"settlement_preview","market":"0x84c0"}`)
	frames := append([][]byte{other, []byte("PONG"), mixed, marketWide}, stream...)
	ds := serveFramesDataset(t, venue.Polymarket, frames)
	_, url := serveStart(t, []string{ds}, WithSpeed(replayer.SpeedMax), WithCloseAtEnd(), WithSubscribeWindow(time.Second)) // subscribes sent back to back land well inside it

	for _, tt := range []struct {
		name string
		send []string
		want [][]byte
	}{
		{"asset B", []string{`{"assets_ids":["` + b + `"],"type":"market"}`}, [][]byte{other, mixed, marketWide}},
		{"asset A, dynamic", []string{`{"assets_ids":[],"type":"market"}`, `{"assets_ids":["` + a + `"],"operation":"subscribe"}`},
			append([][]byte{mixed, marketWide}, stream...)},
		{"A then unsubscribed", []string{`{"assets_ids":["` + a + `","` + b + `"],"type":"market"}`, `{"assets_ids":["` + a + `"],"operation":"unsubscribe"}`},
			[][]byte{other, mixed, marketWide}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := serveDial(t, url)
			for _, m := range tt.send {
				serveSend(t, c, m)
			}
			got, _ := serveReadAll(t, c)
			var want []string
			for _, w := range tt.want {
				want = append(want, string(w))
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %d frames, want %d:\n%.200q", len(got), len(want), got)
			}
		})
	}

	c := serveDial(t, url)
	serveSend(t, c, "PING")
	if got := serveReadOne(t, c); got != "PONG" {
		t.Errorf("PING answered %q", got)
	}
}

// serveSleeper advances virtual time instead of sleeping; safe for concurrent use.
type serveSleeper struct {
	mu    sync.Mutex
	now   int64
	slept []int64
}

func (f *serveSleeper) Now() int64 { f.mu.Lock(); defer f.mu.Unlock(); return f.now }

func (f *serveSleeper) Sleep(ctx context.Context, d int64, wake <-chan struct{}) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now += d
	f.slept = append(f.slept, d)
	return ctx.Err()
}

// TestServePacing checks the schedule at 1x and 10x on virtual time: each
// frame waits exactly its recorded gap divided by the speed.
func TestServePacing(t *testing.T) {
	book := serveFixture(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1]
	gaps := []int64{0, 5e6, 20e6, 1e9, 3e6}
	var recs []serveRec
	at := serveBaseNs
	for _, g := range gaps {
		at += g
		recs = append(recs, serveRec{datasets.KindFrame, at, book})
	}
	ds := serveDataset(t, venue.Hyperliquid, recs)
	for _, speed := range []replayer.Speed{1, 10} {
		t.Run(speed.String(), func(t *testing.T) {
			fs := &serveSleeper{}
			_, url := serveStart(t, []string{ds}, WithSpeed(speed), WithSleeper(fs), WithCloseAtEnd(), WithSubscribeWindow(0))
			c := serveDial(t, url)
			serveSend(t, c, serveSubMsg(`{"type":"l2Book","coin":"BTC"}`))
			got, _ := serveReadAll(t, c)
			if len(got) != 1+len(gaps) {
				t.Fatalf("%d messages", len(got))
			}
			fs.mu.Lock()
			defer fs.mu.Unlock()
			var want []int64
			for _, g := range gaps[1:] {
				want = append(want, int64(float64(g)/float64(speed)))
			}
			if !slices.Equal(fs.slept, want) {
				t.Errorf("slept %v, want %v", fs.slept, want)
			}
		})
	}
}

func TestNewServerErrors(t *testing.T) {
	hl := serveDataset(t, venue.Hyperliquid, nil)
	pm := serveDataset(t, venue.Polymarket, nil)
	other := serveDataset(t, "binance", nil)
	for _, tt := range []struct {
		name  string
		paths []string
		opts  []Option
		err   error
	}{
		{"no paths", nil, nil, ErrNoDatasets},
		{"two venues", []string{hl, pm}, nil, ErrVenue},
		{"unknown venue", []string{other}, nil, ErrVenue},
		{"queue", []string{hl}, []Option{WithSendQueue(0)}, ErrOption},
		{"speed", []string{hl}, []Option{WithSpeed(-1)}, ErrOption},
		{"window", []string{hl}, []Option{WithSubscribeWindow(-1)}, ErrOption},
		{"write timeout", []string{hl}, []Option{WithWriteTimeout(0)}, ErrOption},
		{"sleeper", []string{hl}, []Option{WithSleeper(nil)}, ErrOption},
	} {
		if _, err := New(tt.paths, tt.opts...); !errors.Is(err, tt.err) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
	}
	if _, err := New([]string{filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("missing dataset accepted")
	}
}

// TestServeListen checks Serve on a real listener ends cleanly with its context.
func TestServeListen(t *testing.T) {
	ds := serveFramesDataset(t, venue.Hyperliquid, hlServeFrames(t))
	s, err := New([]string{ds}, WithSubscribeWindow(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	c := serveDial(t, "ws://"+ln.Addr().String()+"/ws")
	serveSend(t, c, `{"method":"ping"}`)
	if got := serveReadOne(t, c); got != `{"channel":"pong"}` {
		t.Errorf("ping: %s", got)
	}
	closed := make(chan *websocket.CloseError, 1)
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				var ce *websocket.CloseError
				errors.As(err, &ce)
				closed <- ce
				return
			}
		}
	}()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if ce := <-closed; ce == nil || ce.Code != websocket.CloseGoingAway {
		t.Errorf("close %v", ce)
	}
}

// TestServeHyperliquidSDK points the Hyperliquid TypeScript SDK
// (@nktkas/hyperliquid, tests/js) at the server and checks the books its
// SubscriptionClient.l2Book delivers are the recorded ones.
func TestServeHyperliquidSDK(t *testing.T) {
	node, js, flags := jstest.Node(t, "@nktkas/hyperliquid")
	frames := hlServeFrames(t)
	ds := serveFramesDataset(t, venue.Hyperliquid, frames)
	_, url := serveStart(t, []string{ds}, WithSpeed(10))
	want := serveSelect(frames, func(s string) bool {
		return strings.Contains(s, `"channel":"l2Book"`) && strings.Contains(s, `"coin":"BTC"`)
	})

	args := append(flags, filepath.Join(js, "hl_sdk_serve.mjs"), url, "BTC", fmt.Sprint(len(want)))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = js
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(want) {
		t.Fatalf("SDK delivered %d books, want %d:\n%s", len(got), len(want), out)
	}
	for i := range want {
		var env struct{ Data json.RawMessage }
		if err := json.Unmarshal([]byte(want[i]), &env); err != nil {
			t.Fatal(err)
		}
		var a, b any
		if json.Unmarshal(env.Data, &a) != nil || json.Unmarshal([]byte(got[i]), &b) != nil {
			t.Fatalf("book %d: bad JSON %s", i, got[i])
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("book %d:\n got %s\nwant %s", i, got[i], env.Data)
		}
	}
}

// TestServeRoutingAllocs asserts that picking a recorded frame for a client
// allocates nothing, for both venues' server sessions.
func TestServeRoutingAllocs(t *testing.T) {
	hl := hyperliquid.Driver.Server().NewSession()
	hl.Handle([]byte(serveSubMsg(`{"type":"l2Book","coin":"BTC"}`)), false)
	book := serveFixture(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1]
	trades := serveFixture(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[2]
	if !hl.Wants(book) || hl.Wants(trades) {
		t.Fatal("hl routing")
	}
	pm := polymarket.Driver.Server().NewSession()
	stream := serveFixture(t, "polypy_semisynthetic_stream_single_asset.ndjson")
	pm.Handle([]byte(`{"assets_ids":["72936048731589292555781174533757608024096898681344338816447372274344589246891"],"type":"market"}`), false)
	if !pm.Wants(stream[1]) {
		t.Fatal("pm routing")
	}
	for name, f := range map[string]func(){
		"hl book": func() { hl.Wants(book) }, "hl trades": func() { hl.Wants(trades) },
		"pm price_change": func() { pm.Wants(stream[1]) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocs per frame", name, n)
		}
	}
}

// BenchmarkServe measures one client replaying a book-heavy Hyperliquid
// recording at replayer.SpeedMax over loopback: routing, queueing, writing and the
// gorilla client's reading, per recorded frame.
func BenchmarkServe(b *testing.B) {
	book := serveFixture(b, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1]
	trades := serveFixture(b, "order_book_server_ack_l2book_trades_2025-07.ndjson")[2]
	const n = 5000
	frames := make([][]byte, 0, 2*n)
	for range n {
		frames = append(frames, book, trades) // half of them not subscribed
	}
	ds := serveFramesDataset(b, venue.Hyperliquid, frames)
	s, err := New([]string{ds}, WithSpeed(replayer.SpeedMax), WithCloseAtEnd(), WithSubscribeWindow(0))
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	defer s.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
	b.SetBytes(int64(n * len(book)))
	b.ReportAllocs()
	for b.Loop() {
		c, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.WriteMessage(websocket.TextMessage, []byte(serveSubMsg(`{"type":"l2Book","coin":"BTC"}`))); err != nil {
			b.Fatal(err)
		}
		got := 0
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				break
			}
			got++
		}
		c.Close()
		if got != n+1 {
			b.Fatalf("%d messages", got)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/frame")
}

// serveBaseNs is the receive time of the first frame of a test recording.
const serveBaseNs = int64(1_761_179_883_000_000_000)

// serveFixture returns the non-empty lines of testdata files, in order.
func serveFixture(t testing.TB, files ...string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("..", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				out = append(out, l)
			}
		}
	}
	return out
}
