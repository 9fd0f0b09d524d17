package recorder_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
	"github.com/tapedeck/tapedeck/replayer"
)

// printTop is a strategy's view of the market: it runs unchanged on a live
// capture and on a replay of the recording.
func printTop(where string) feed.SubscriberFunc {
	return func(e *feed.Event) error {
		bid, _ := e.Book.Best(book.Bid)
		ask, _ := e.Book.Best(book.Ask)
		px := func(l book.Level) string { return book.FormatDecimal(l.Price, e.Scale.PriceDecimals) }
		fmt.Printf("%s %s %s: %s / %s valid=%v hash ok %d of %d\n", where, e.Kind, e.Decoded.Type,
			px(bid), px(ask), e.Book.Valid(), e.Quality.HashOK, e.Quality.HashChecked)
		return nil
	}
}

// One function follows the top of a Polymarket book live, while the
// recorder writes it, then on the replay of what it wrote: the same events,
// the same books. Here the venue is a loopback test exchange that sends the
// REST book summary and one WebSocket book; point the Spec at the real
// endpoints (its zero value) to watch the real market.
func ExampleRecorder_Subscribe() {
	s := fakeexchange.New(fakeexchange.PolymarketHashConfig())
	defer s.Close()
	asset := fakeexchange.PolymarketHashAsset
	r, err := recorder.New(recorder.Spec{Venue: "polymarket", Endpoint: s.WSURL(), CLOBEndpoint: s.CLOBURL(),
		Instruments: []string{asset}})
	if err != nil {
		log.Fatal(err)
	}
	key := feed.Key{Instrument: asset, Channel: feed.ChannelBook}
	r.Subscribe(key, printTop("live"))

	dir, err := os.MkdirTemp("", "recorder-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "pm")
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := r.Prepare(ctx); err != nil {
		log.Fatal(err)
	}
	w, err := datasets.Create(path, r.Manifest())
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, w) }()
	for b, _ := r.LiveBook(asset); b.Quality.HashChecked < 2; b, _ = r.LiveBook(asset) {
		time.Sleep(time.Millisecond) // until the WebSocket book is in
	}
	cancel() // as SIGINT does in capture run
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	rp, err := replayer.New([]string{path}, replayer.WithHashCheck(true))
	if err != nil {
		log.Fatal(err)
	}
	rp.Subscribe(key, printTop("replay"))
	sum, err := rp.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same digest:", sum.Digest == r.LiveStats().Digest)
	// Output:
	// live rest_response snapshot: 0.33 / 0.34 valid=true hash ok 1 of 1
	// live frame snapshot: 0.33 / 0.34 valid=true hash ok 2 of 2
	// replay rest_response snapshot: 0.33 / 0.34 valid=true hash ok 1 of 1
	// replay frame snapshot: 0.33 / 0.34 valid=true hash ok 2 of 2
	// same digest: true
}
