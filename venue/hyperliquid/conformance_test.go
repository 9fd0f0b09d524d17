package hyperliquid

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue/venuetest"
)

// suite is the WebSocket API's conformance input: real frames of every
// channel (ack, l2Book, bbo, activeAssetCtx, trades, candle, pong) and two
// more coins' books and trades.
func suite(t testing.TB) venuetest.Suite {
	var stream [][]byte
	for _, name := range []string{"arbitrage_observatory_probe_2026-09_core.ndjson", "jkorf_l2book_trimmed_2025-12.ndjson",
		"jkorf_trades_2025-12.ndjson", "jkorf_bbo_2025-12.ndjson", "jkorf_allmids_trimmed_2025-12.ndjson"} {
		stream = append(stream, lines(t, name)...)
	}
	book0 := lines(t, "arbitrage_observatory_probe_2026-09_core.ndjson")[1]
	replace := func(old, new string) []byte { return bytes.Replace(book0, []byte(old), []byte(new), 1) }
	return venuetest.Suite{
		Driver:  Driver,
		Options: Driver.Capabilities().DecoderOptions(),
		Stream:  stream,
		Bad: []venuetest.Bad{
			{Name: "px not a decimal", Frame: replace(`"px":"84143.0"`, `"px":"84143.0x"`), Field: "levels[0][0].px"},
			{Name: "sz an object", Frame: replace(`"sz":"10.25923"`, `"sz":{}`), Field: "levels[0][0].sz"},
			{Name: "n negative", Frame: replace(`"n":36`, `"n":-36`), Field: "levels[0][0].n"},
			{Name: "truncated", Frame: book0[:len(book0)/2], Field: "levels[0][2]"},
		},
		Snapshot: func(inst string, b *book.Book) []byte {
			sc := b.Scale()
			out := fmt.Appendf(nil, `{"channel":"l2Book","data":{"coin":%q,"time":1790232299999,"levels":[`, inst)
			for si, side := range []book.Side{book.Bid, book.Ask} {
				if si > 0 {
					out = append(out, ',')
				}
				out = append(out, '[')
				for i, l := range b.Top(side, nil, b.Len(side)) {
					if i > 0 {
						out = append(out, ',')
					}
					out = fmt.Appendf(out, `{"px":"%s","sz":"%s","n":%d}`,
						book.FormatDecimal(l.Price, sc.PriceDecimals), book.FormatDecimal(l.Size, sc.SizeDecimals), l.Count)
				}
				out = append(out, ']')
			}
			return append(out, "]}}"...)
		},
		Items: []string{"l2Book@BTC", "l2Book+fast@ETH", "trades@BTC", "candle+interval=1m@BTC", "allMids"},
	}
}

func TestConformance(t *testing.T) { venuetest.Run(t, suite(t)) }

func FuzzConformance(f *testing.F) { venuetest.Fuzz(f, suite(f)) }
