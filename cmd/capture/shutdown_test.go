package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// TestSIGINTLeavesBooksValid stops real capture processes with SIGINT and
// replays their recordings with the real replay binary: `replay books --at
// end` says every book is valid (a clean shutdown is not a loss) and equals
// the exchange's last book, the one its own frames build.
func TestSIGINTLeavesBooksValid(t *testing.T) {
	defer goleak.VerifyNone(t)
	bin := buildCapture(t)
	replay := filepath.Join(t.TempDir(), "replay")
	if out, err := exec.Command("go", "build", "-o", replay, "../replay").CombinedOutput(); err != nil {
		t.Fatalf("go build replay: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		venue string
		cfg   fakeexchange.Config
		args  []string
		dec   func() venue.Decoder
	}{
		// Without the fixtures' hashes, which describe other books: a
		// confirmed mismatch would rightly leave a book not valid.
		{venue.Polymarket, fakeexchange.WithoutHashes(fakeexchange.PolymarketConfig()),
			[]string{"--instruments", fakeexchange.PolymarketStreamAsset + "," + fakeexchange.PolymarketOtherAsset},
			func() venue.Decoder { return polymarket.NewDecoder() }},
		{venue.Hyperliquid, fakeexchange.HyperliquidConfig(),
			[]string{"--instruments", "BTC,ETH", "--channels", "l2Book,trades"},
			func() venue.Decoder { return hyperliquid.NewDecoder() }},
	} {
		t.Run(tc.venue, func(t *testing.T) {
			s := fakeexchange.New(tc.cfg)
			defer s.Close()
			out := filepath.Join(t.TempDir(), "ds")
			args := append([]string{"run", "--venue", tc.venue, "--endpoint", s.WSURL(), "--rest-endpoint", s.RESTURL(),
				"--clob-endpoint", s.CLOBURL(), "--out", out, "--flush-interval", "20ms"}, tc.args...)
			cmd := exec.Command(bin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			capWait(t, "frames", func() bool { return capSent(s) > 200 })
			cmd.Process.Signal(syscall.SIGINT)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit: %v\n%s", err, stderr.String())
			}

			// The exchange's last books: its frames, in order, through the decoder.
			want := map[string]bookJSON{}
			for _, c := range s.Conns() {
				d := tc.dec()
				var f venue.Frame
				for _, fr := range c.Sent() {
					_ = d.Decode(fr, 0, &f) // PONGs and acks yield no book
				}
				for _, inst := range d.Instruments(nil) {
					want[inst] = toJSON(d.Book(inst))
				}
			}
			if len(want) != 2 {
				t.Fatalf("the exchange built %d books", len(want))
			}

			res, err := exec.Command(replay, "books", "--at", "end", "--format", "json", out).Output()
			if err != nil {
				t.Fatalf("replay books: %v", err)
			}
			var got struct {
				Books []struct {
					Instrument string     `json:"instrument"`
					Valid      bool       `json:"valid"`
					Bids       [][]string `json:"bids"`
					Asks       [][]string `json:"asks"`
				} `json:"books"`
			}
			if err := json.Unmarshal(res, &got); err != nil {
				t.Fatalf("%v: %s", err, res)
			}
			if len(got.Books) != len(want) {
				t.Fatalf("%d books replayed, want %d: %s", len(got.Books), len(want), res)
			}
			for _, b := range got.Books {
				w, ok := want[b.Instrument]
				if !b.Valid || !ok || !slices.EqualFunc(b.Bids, w.bids, slices.Equal) || !slices.EqualFunc(b.Asks, w.asks, slices.Equal) {
					t.Errorf("%s: valid %v\n got bids %v asks %v\nwant bids %v asks %v", b.Instrument, b.Valid, b.Bids, b.Asks, w.bids, w.asks)
				}
			}
		})
	}
}

type bookJSON struct{ bids, asks [][]string }

func toJSON(b *book.Book) bookJSON {
	sc := b.Scale()
	side := func(s book.Side) [][]string {
		out := [][]string{}
		for _, l := range b.Top(s, nil, b.Len(s)) {
			out = append(out, []string{book.FormatDecimal(l.Price, sc.PriceDecimals), book.FormatDecimal(l.Size, sc.SizeDecimals)})
		}
		return out
	}
	return bookJSON{side(book.Bid), side(book.Ask)}
}
