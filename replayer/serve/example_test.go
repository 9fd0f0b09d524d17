package serve_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/serve"
)

// ExampleServer serves a Hyperliquid recording and connects a client as it
// would connect to the venue: it subscribes to BTC books and receives the
// venue's ack, then the recorded frame byte-identical.
func ExampleServer() {
	dir, _ := os.MkdirTemp("", "serve-example")
	defer os.RemoveAll(dir)
	ds := filepath.Join(dir, "hl")
	w, _ := datasets.Create(ds, datasets.Manifest{Venue: "hyperliquid", Endpoint: "wss://api.hyperliquid.xyz/ws"})
	for i, f := range []string{
		`{"channel":"trades","data":[{"coin":"BTC","side":"A","px":"84143.0","sz":"0.00036","time":1790232216193}]}`,
		`{"channel":"l2Book","data":{"coin":"BTC","time":1790232236546,"levels":[[{"px":"84143.0","sz":"10.25923","n":36}],[{"px":"84144.0","sz":"50.66449","n":18}]]}}`,
	} {
		wall := 1790232236600000000 + int64(i)
		_, _ = w.Append(&datasets.Record{Kind: datasets.KindFrame, WallNs: wall, MonoNs: wall, Payload: []byte(f)})
	}
	_ = w.Close()

	s, err := serve.New([]string{ds}, serve.WithSpeed(replayer.SpeedMax),
		serve.WithSubscribeWindow(0), serve.WithCloseAtEnd())
	if err != nil {
		fmt.Println(err)
		return
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	defer s.Close()

	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	_ = c.WriteMessage(websocket.TextMessage, []byte(`{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC"}}`))
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(msg))
	}
	// Output:
	// {"channel":"subscriptionResponse","data":{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC","nSigFigs":null,"mantissa":null}}}
	// {"channel":"l2Book","data":{"coin":"BTC","time":1790232236546,"levels":[[{"px":"84143.0","sz":"10.25923","n":36}],[{"px":"84144.0","sz":"50.66449","n":18}]]}}
	// websocket: close 1000 (normal): tapedeck: end of recording
}
