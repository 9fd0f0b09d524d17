package replayer_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// Replay a recording and follow one instrument's book. The recording here is
// written on the spot from real Hyperliquid frames (trimmed by their
// source); a backtest would open a captured dataset instead.
func Example() {
	dir, err := os.MkdirTemp("", "replayer-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "hl")
	w, err := datasets.Create(path, datasets.Manifest{Venue: venue.Hyperliquid, Endpoint: "wss://api.hyperliquid.xyz/ws"})
	if err != nil {
		log.Fatal(err)
	}
	frames := []string{
		`{"channel":"l2Book","data":{"coin":"BTC","time":1790232236546,"levels":[[{"px":"84143.0","sz":"10.25923","n":36},{"px":"84142.0","sz":"1.65875","n":7}],[{"px":"84144.0","sz":"50.66449","n":18},{"px":"84150.0","sz":"0.00711","n":2}]]}}`,
		`{"channel":"trades","data":[{"coin":"BTC","side":"A","px":"84143.0","sz":"0.00036","time":1790232216193,"hash":"0x7ab608dad75f7ce37c2f044516391f02023a00c072529bb51e7eb42d965356ce","tid":1045359869404765,"users":["0x9aa589355bf745db9784c8ef3c646360f11b58af","0x8269c0a4f5f1a14582e0aa46856a234893c41970"]}]}`,
	}
	for i, f := range frames {
		wall := int64(1790232236600000000) + int64(i)*1e6
		if _, err := w.Append(&datasets.Record{Kind: datasets.KindFrame, WallNs: wall, MonoNs: wall, Payload: []byte(f)}); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	r, err := replayer.New([]string{path})
	if err != nil {
		log.Fatal(err)
	}
	r.Subscribe(replayer.Key{Venue: venue.Hyperliquid, Instrument: "BTC"}, replayer.SubscriberFunc(func(e *replayer.Event) error {
		bid, _ := e.Book.Best(book.Bid)
		ask, _ := e.Book.Best(book.Ask)
		fmt.Printf("%s %s: %s / %s valid=%v\n", e.Channel, e.Decoded.Type,
			book.FormatDecimal(bid.Price, e.Scale.PriceDecimals), book.FormatDecimal(ask.Price, e.Scale.PriceDecimals), e.Book.Valid())
		return nil
	}))
	s, err := r.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("frames:", s.Frames, "events:", s.Events)
	// Output:
	// book snapshot: 84143 / 84144 valid=true
	// trades trade: 84143 / 84144 valid=true
	// frames: 2 events: map[snapshot:1 trade:1]
}
