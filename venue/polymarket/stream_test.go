package polymarket

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// refHashBook is the hashed object built with encoding/json: struct fields
// keep their order, so this is an implementation independent of BookHash.
type refHashBook struct {
	Market       string      `json:"market"`
	AssetID      string      `json:"asset_id"`
	Timestamp    string      `json:"timestamp"`
	Hash         string      `json:"hash"`
	Bids         []jsonLevel `json:"bids"`
	Asks         []jsonLevel `json:"asks"`
	MinOrderSize string      `json:"min_order_size"`
	TickSize     string      `json:"tick_size"`
	NegRisk      bool        `json:"neg_risk"`
}

// streamModel is an independent model of two books: price → size maps.
type streamModel map[string]*[2]map[int64]int64

func (m streamModel) levels(asset string, side book.Side) []book.Level {
	var out []book.Level
	for p, s := range m[asset][side] {
		out = append(out, book.Level{Price: p, Size: s})
	}
	slices.SortFunc(out, func(a, b book.Level) int { return int(a.Price - b.Price) })
	if side == book.Ask {
		slices.Reverse(out) // worst first, as on the wire
	}
	return out
}

func (m streamModel) best(asset string, side book.Side) int64 {
	var best int64
	for p := range m[asset][side] {
		if best == 0 || side == book.Bid && p > best || side == book.Ask && p < best {
			best = p
		}
	}
	return best
}

func (m streamModel) hash(asset, ts string) string {
	toJSON := func(lv []book.Level) []jsonLevel {
		out := []jsonLevel{}
		for _, l := range lv {
			out = append(out, jsonLevel{book.FormatDecimal(l.Price, 4), book.FormatDecimal(l.Size, 6)})
		}
		return out
	}
	b, err := json.Marshal(refHashBook{Market: mk, AssetID: asset, Timestamp: ts,
		Bids: toJSON(m.levels(asset, book.Bid)), Asks: toJSON(m.levels(asset, book.Ask)),
		MinOrderSize: "5", TickSize: "0.001"})
	if err != nil {
		panic(err)
	}
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

func (m streamModel) bookFrame(asset, ts string) string {
	side := func(s book.Side) string {
		var parts []string
		for _, l := range m.levels(asset, s) {
			parts = append(parts, lvl(book.FormatDecimal(l.Price, 4), book.FormatDecimal(l.Size, 6)))
		}
		return strings.Join(parts, ",")
	}
	return `{"event_type":"book","market":"` + mk + `","asset_id":"` + asset + `","timestamp":"` + ts +
		`","hash":"` + m.hash(asset, ts) + `","bids":[` + side(book.Bid) + `],"asks":[` + side(book.Ask) + `],"tick_size":"0.001"}`
}

const hashSlot = "HASH"

// A long deterministic stream of snapshots and multi-asset price changes,
// with hashes and best_bid/best_ask computed from an independent model: the
// decoder must end with the model's books, every hash must match and no
// top-of-book check may disagree. As the venue does, every entry of a
// same-timestamp batch (which may span frames) carries the hash of its
// asset's book after the whole batch.
func TestModelStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	assets := []string{tA, tB}
	model := streamModel{}
	for _, a := range assets {
		model[a] = &[2]map[int64]int64{{}, {}}
	}
	d := NewDecoder(withInstrumentInfo(instrumentInfo{AssetID: tA, MinOrderSize: "5"}, instrumentInfo{AssetID: tB, MinOrderSize: "5"}))
	var out venue.Frame
	type entry struct {
		a, rest string // rest: the entry's fields after the hash
	}
	type frame struct {
		ts      string
		books   []string // a snapshot frame per asset, or
		entries []entry
	}
	// Pass 1 runs the model: frames with every field but the batch hashes,
	// which are known only once a batch is over.
	type batchKey struct{ a, ts string }
	batchHash := map[batchKey]string{}
	open := map[string]string{} // asset → ts of its open batch
	var frames []frame
	ts := int64(1761179949000)
	var entries, hashes int
	for i := 0; i < 1000; i++ {
		if rng.IntN(3) > 0 {
			ts++ // otherwise the frame joins the current timestamp batch
		}
		tss := fmt.Sprint(ts)
		if i%250 == 0 {
			f := frame{ts: tss}
			for _, a := range assets {
				f.books = append(f.books, model.bookFrame(a, tss))
				hashes++
				if open[a] == tss {
					// The snapshot of the batch's own millisecond is checked
					// instead of the batch.
					hashes--
				}
				delete(open, a)
			}
			frames = append(frames, f)
			continue
		}
		f := frame{ts: tss}
		touched := map[string]bool{}
		for n := 1 + rng.IntN(3); n > 0; n-- {
			a := assets[rng.IntN(2)]
			side := book.Side(rng.IntN(2))
			// Bids 0.001-0.499, asks 0.501-0.999: never crossed.
			price := int64(10 + 10*rng.IntN(499))
			if side == book.Ask {
				price += 5000
			}
			size := int64(0)
			if rng.IntN(4) > 0 {
				size = int64(1+rng.IntN(1_000_000)) * 10_000
			}
			if size == 0 {
				delete(model[a][side], price)
			} else {
				model[a][side][price] = size
			}
			sideText := "BUY"
			if side == book.Ask {
				sideText = "SELL"
			}
			// The hash goes where hashSlot is, once the batch is over.
			f.entries = append(f.entries, entry{a, `{"asset_id":"` + a + `","price":"` + book.FormatDecimal(price, 4) +
				`","size":"` + book.FormatDecimal(size, 6) + `","side":"` + sideText + `","hash":"` + hashSlot +
				`","best_bid":"` + book.FormatDecimal(model.best(a, book.Bid), 4) +
				`","best_ask":"` + book.FormatDecimal(model.best(a, book.Ask), 4) + `"}`})
			touched[a] = true
			entries++
		}
		for a := range touched {
			if open[a] != tss {
				hashes++
				open[a] = tss
			}
			batchHash[batchKey{a, tss}] = model.hash(a, tss) // the last one written is the batch's
		}
		frames = append(frames, f)
	}
	// Pass 2 decodes them.
	for i, f := range frames {
		if f.books != nil {
			for _, b := range f.books {
				mustDecode(t, d, []byte(b), &out)
			}
			continue
		}
		var es []string
		for _, e := range f.entries {
			es = append(es, strings.Replace(e.rest, hashSlot, batchHash[batchKey{e.a, f.ts}], 1))
		}
		mustDecode(t, d, pcFrame(f.ts, es...), &out)
		if len(out.Events) != len(es) {
			t.Fatalf("frame %d: %d events for %d entries", i, len(out.Events), len(es))
		}
	}
	d.Flush(nil)
	st := d.Stats()
	if st.HashChecked != uint64(hashes) || st.HashOK != st.HashChecked {
		t.Fatalf("hashes: %d checked, %d ok, want %d", st.HashChecked, st.HashOK, hashes)
	}
	if st.TopChecked == 0 || st.TopMismatch != 0 || st.CrossedBatches != 0 {
		t.Fatalf("top checks: %+v", st)
	}
	for _, a := range assets {
		for _, side := range []book.Side{book.Bid, book.Ask} {
			want := model.levels(a, side)
			slices.Reverse(want)
			if got := d.Book(a).Top(side, nil, -1); !slices.Equal(got, want) {
				t.Fatalf("%s %v: %d levels, model %d", a, side, len(got), len(want))
			}
		}
	}
	t.Logf("%d entries, %d hashes, %d top checks", entries, st.HashChecked, st.TopChecked)
}
