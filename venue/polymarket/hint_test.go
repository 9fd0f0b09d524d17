package polymarket

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// Hints (hint.go) find exactly the asset and market a frame names, with many
// assets interleaved: ids of 77 digits, ids sharing their first 16 bytes (one
// hint slot, the others through the map), ids shorter than a key, markets
// sharing a prefix. Every event names the asset and market sent, and the
// books equal those of the same frames spaced out, which the generic scanner
// reads (no fast path, no hint).
func TestHintsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 1))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		return string(b)
	}
	type market struct{ id, yes, no string }
	var markets []market
	shared := digits(16)
	for i := 0; i < 150; i++ {
		m := market{id: "0x" + digits(64), yes: digits(76 + r.IntN(3)), no: digits(76 + r.IntN(3))}
		switch i % 10 {
		case 3: // the same first 16 bytes as other assets: one hint slot
			m.yes = shared + digits(61)
		case 5: // shorter than a key
			m.yes, m.no = fmt.Sprint("t", i), digits(15)
		case 7: // a market sharing its first 16 bytes with the previous one
			m.id = markets[i-1].id[:16] + digits(50)
		}
		markets = append(markets, m)
	}
	var frames [][]byte
	for i := 0; i < 3000; i++ {
		m := markets[r.IntN(len(markets))]
		px := func() string { return fmt.Sprintf("0.%02d", 1+r.IntN(98)) }
		if i < len(markets) || r.IntN(8) == 0 {
			if i < len(markets) {
				m = markets[i]
			}
			for _, a := range []string{m.yes, m.no} {
				frames = append(frames, fmt.Appendf(nil, `{"market":%q,"asset_id":%q,"timestamp":"%d","hash":"h","bids":[{"price":"0.01","size":"%d"}],"asks":[{"price":"0.99","size":"5"}],"event_type":"book"}`,
					m.id, a, 1000+i, 1+r.IntN(99)))
			}
			continue
		}
		frames = append(frames, fmt.Appendf(nil, `{"market":%q,"price_changes":[`+
			`{"asset_id":%q,"price":%q,"size":"%d","side":"BUY","hash":"h1","best_bid":"0","best_ask":"0"},`+
			`{"asset_id":%q,"price":%q,"size":"%d","side":"SELL","hash":"h2","best_bid":"0","best_ask":"0"}],"timestamp":"%d","event_type":"price_change"}`,
			m.id, m.yes, px(), r.IntN(5), m.no, px(), r.IntN(5), 1000+i))
	}
	spaced := func(f []byte) []byte { // the generic scanner's input: white space after every ':' and ','
		f = bytes.ReplaceAll(f, []byte(`":`), []byte(`": `))
		return bytes.ReplaceAll(f, []byte(`,"`), []byte(`, "`))
	}
	fast, slow := NewDecoder(), NewDecoder()
	var out, sout venue.Frame
	for _, f := range frames {
		mustDecode(t, fast, f, &out)
		mustDecode(t, slow, spaced(f), &sout)
		if len(out.Events) != len(sout.Events) {
			t.Fatalf("%d events, spaced %d: %s", len(out.Events), len(sout.Events), f)
		}
		for k, ev := range out.Events {
			if ev.Instrument != sout.Events[k].Instrument || ev.Market != sout.Events[k].Market ||
				!bytes.Contains(ev.Raw, []byte(`"`+ev.Instrument+`"`)) || !bytes.Contains(f, []byte(`"market":"`+ev.Market+`"`)) {
				t.Fatalf("event %d of %s: %s in %s (spaced: %s in %s)", k, f, ev.Instrument, ev.Market, sout.Events[k].Instrument, sout.Events[k].Market)
			}
		}
	}
	ids := fast.Instruments(nil)
	if want := slow.Instruments(nil); !slices.Equal(ids, want) || len(ids) != 2*len(markets) {
		t.Fatalf("%d instruments, spaced %d, want %d", len(ids), len(want), 2*len(markets))
	}
	for _, id := range ids {
		for _, side := range []book.Side{book.Bid, book.Ask} {
			if a, b := fast.Book(id).Top(side, nil, -1), slow.Book(id).Top(side, nil, -1); !slices.Equal(a, b) {
				t.Fatalf("%s side %v: %v, spaced %v", id, side, a, b)
			}
		}
	}
}
