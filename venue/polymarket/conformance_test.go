package polymarket

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue/venuetest"
)

// suite is the market channel's conformance input: the real (semi-synthetic)
// polypy stream of one asset — its initial dump, then price changes.
func suite(t testing.TB) venuetest.Suite {
	stream := readLines(t, "real/polypy_semisynthetic_stream_single_asset.ndjson")
	const asset = "72936048731589292555781174533757608024096898681344338816447372274344589246891"
	const market = "0x84c0ffe3f56cb357ff5ff8bc5d2182ae90be4dd6718e8403a6af472b452dbfa8"
	change := func(field, value string) []byte {
		f := []byte(`{"market":"` + market + `","timestamp":"1733411299999","event_type":"price_change","price_changes":[{"asset_id":"` + asset +
			`","price":"0.53","size":"12","side":"BUY","hash":"471678fe14860e2c7a27053fa929e0095b2db520","best_bid":"0.53","best_ask":"0.54"}]}`)
		return bytes.Replace(f, []byte(`"`+field+`":"`), []byte(`"`+field+`":`+value+`,"x":"`), 1)
	}
	return venuetest.Suite{
		Driver:  Driver,
		Options: Driver.Capabilities().DecoderOptions(),
		Stream:  stream,
		Bad: []venuetest.Bad{
			{Name: "price not a decimal", Frame: change("price", `"0.5x"`), Field: "price_changes[0].price"},
			{Name: "side", Frame: change("side", `"MAYBE"`), Field: "price_changes[0].side"},
			{Name: "size an object", Frame: change("size", `{}`), Field: "price_changes[0].size"},
			{Name: "book level", Frame: []byte(`{"event_type":"book","asset_id":"` + asset + `","market":"` + market +
				`","timestamp":"1733411299999","bids":[{"price":"0.5","size":"-1"}],"asks":[]}`), Field: "bids[0].size"},
			{Name: "truncated", Frame: stream[1][:len(stream[1])/2], Field: ""},
		},
		Snapshot: func(inst string, b *book.Book) []byte {
			sc := b.Scale()
			out := fmt.Appendf(nil, `{"event_type":"book","asset_id":%q,"market":%q,"timestamp":"1733411299999"`, inst, market)
			for _, side := range []book.Side{book.Bid, book.Ask} {
				name := `,"bids":[`
				if side == book.Ask {
					name = `],"asks":[`
				}
				out = append(out, name...)
				for i, l := range b.Top(side, nil, b.Len(side)) {
					if i > 0 {
						out = append(out, ',')
					}
					out = fmt.Appendf(out, `{"price":"%s","size":"%s"}`,
						book.FormatDecimal(l.Price, sc.PriceDecimals), book.FormatDecimal(l.Size, sc.SizeDecimals))
				}
			}
			return append(out, "]}"...)
		},
		Items: []string{asset, "101155325224907042624192777106604175185803921887395325080529159889944296783944"},
	}
}

func TestConformance(t *testing.T) { venuetest.Run(t, suite(t)) }

func FuzzConformance(f *testing.F) { venuetest.Fuzz(f, suite(f)) }
