package polymarket

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
)

// hashCacheOp is one step of a random mutation sequence on a book that has a
// hash cache; each op says whether the cache is told (as the decoder tells it
// about its own Set) or the book changes behind its back.
type hashCacheOp func(r *rand.Rand, b *book.Book, c *hashCache)

// randLevel picks prices from a narrow band so that sets hit existing levels,
// delete them and insert between them; sizes include round numbers (trailing
// zeros trimmed) and values with every decimal.
func randLevel(r *rand.Rand) (price, size int64) {
	price = 100 * (1 + r.Int64N(40))
	if r.IntN(4) == 0 {
		price += r.Int64N(100) // a finer tick
	}
	switch r.IntN(5) {
	case 0:
		size = 0
	case 1:
		size = (1 + r.Int64N(1000)) * 1e6
	default:
		size = 1 + r.Int64N(1e12)
	}
	return price, size
}

func randSide(r *rand.Rand) []book.Level {
	seen := map[int64]bool{}
	var lv []book.Level
	for range r.IntN(30) {
		p, s := randLevel(r)
		if s == 0 || seen[p] {
			continue
		}
		seen[p] = true
		lv = append(lv, book.Level{Price: p, Size: s})
	}
	return lv
}

var hashCacheOps = []struct {
	name   string
	weight int
	op     hashCacheOp
}{
	{"set", 12, func(r *rand.Rand, b *book.Book, c *hashCache) {
		side := book.Side(r.IntN(2))
		p, s := randLevel(r)
		g0 := b.Generation()
		if err := b.Set(side, p, s, 0); err != nil {
			panic(err)
		}
		c.afterSet(b, g0, side, p, s)
	}},
	{"set-same-size", 2, func(r *rand.Rand, b *book.Book, c *hashCache) {
		side := book.Side(r.IntN(2))
		lv := b.Top(side, nil, -1)
		if len(lv) == 0 {
			return
		}
		l := lv[r.IntN(len(lv))]
		g0 := b.Generation()
		_ = b.Set(side, l.Price, l.Size, 0)
		c.afterSet(b, g0, side, l.Price, l.Size)
	}},
	{"set-unseen", 1, func(r *rand.Rand, b *book.Book, c *hashCache) {
		p, s := randLevel(r)
		_ = b.Set(book.Side(r.IntN(2)), p, s, 0)
	}},
	{"replace", 2, func(r *rand.Rand, b *book.Book, c *hashCache) {
		if err := b.Replace(randSide(r), randSide(r)); err != nil {
			panic(err)
		}
	}},
	{"replace-same", 2, func(r *rand.Rand, b *book.Book, c *hashCache) {
		bids, asks := b.Top(book.Bid, nil, -1), b.Top(book.Ask, nil, -1)
		if r.IntN(2) == 0 && len(bids) > 0 {
			bids[r.IntN(len(bids))].Size++ // one level differs
		}
		if err := b.Replace(bids, asks); err != nil {
			panic(err)
		}
	}},
	{"invalidate", 1, func(r *rand.Rand, b *book.Book, c *hashCache) { b.Invalidate() }},
	{"clear", 1, func(r *rand.Rand, b *book.Book, c *hashCache) { b.Clear() }},
}

// freshSide is the side serialized from scratch, as BookHash writes it.
func freshSide(b *book.Book, side book.Side) []byte {
	var tmp []book.Level
	return appendHashSide(nil, b, side, b.Scale(), &tmp)
}

// The cached serialization equals a fresh one after every step of random
// mutation sequences, whether the cache was told of a change or not, and its
// version moves whenever its bytes do (the memo of the last hash relies on it).
func TestHashCacheMatchesFresh(t *testing.T) {
	total := 0
	for _, o := range hashCacheOps {
		total += o.weight
	}
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 7))
		b := book.New(scale())
		var c hashCache
		var tmp []book.Level
		var prev [2][]byte
		prevVer := uint64(0)
		for step := range 400 {
			k := r.IntN(total)
			name := ""
			for _, o := range hashCacheOps {
				if k < o.weight {
					name = o.name
					o.op(r, b, &c)
					break
				}
				k -= o.weight
			}
			if r.IntN(3) == 0 {
				continue // let several changes pile up before a check
			}
			c.sync(b, &tmp)
			for s := book.Bid; s <= book.Ask; s++ {
				got, want := c.side[s].input(), freshSide(b, s)
				if !bytes.Equal(got, want) {
					t.Fatalf("seed %d step %d (%s), side %d:\ncached %s\nfresh  %s", seed, step, name, s, got, want)
				}
				sc := &c.side[s]
				if len(sc.prices) != b.Len(s) || len(sc.sizes) != len(sc.prices) || len(sc.ends) != len(sc.prices) {
					t.Fatalf("seed %d step %d (%s): %d prices, %d sizes, %d ends for %d levels", seed, step, name, len(sc.prices), len(sc.sizes), len(sc.ends), b.Len(s))
				}
				if n := len(sc.ends); n > 0 && int(sc.ends[n-1]) != len(sc.buf) {
					t.Fatalf("seed %d step %d (%s): last end %d, buf %d", seed, step, name, sc.ends[n-1], len(sc.buf))
				}
				if !bytes.Equal(got, prev[s]) && c.ver == prevVer && step > 0 {
					t.Fatalf("seed %d step %d (%s): bytes changed, version did not", seed, step, name)
				}
				prev[s] = append(prev[s][:0], got...)
			}
			prevVer = c.ver
		}
	}
}

// hashForm agrees with BookHash for random books, timestamps and fields
// (the market too: the saved SHA-1 state of the prefix depends on it), and a
// memoized result never answers for a different input or a different want.
func TestHashFormMatchesBookHash(t *testing.T) {
	const asset = "1234567"
	market := "0xabc"
	r := rand.New(rand.NewPCG(3, 4))
	d := NewDecoder()
	if err := d.setInstrumentInfo(instrumentInfo{AssetID: asset, Market: market, MinOrderSize: "5", TickSize: "0.01"}); err != nil {
		t.Fatal(err)
	}
	in := d.byID[asset]
	if err := in.book.Replace(randSide(r), randSide(r)); err != nil {
		t.Fatal(err)
	}
	ts := int64(1760000000000)
	for step := range 2000 {
		switch r.IntN(6) {
		case 0:
			ts++
		case 1:
			in.ltp = 100 * (1 + r.Int64N(99))
			if r.IntN(4) == 0 {
				in.ltp = -1 // "last_trade_price":""
			}
		case 2:
			in.negRisk = !in.negRisk
		case 3:
			in.tick = []int64{1, 10, 100, 1000}[r.IntN(4)]
		case 4:
			if r.IntN(10) == 0 {
				market = []string{"0xabc", "0xabd", "0x" + strings.Repeat("9", 64)}[r.IntN(3)]
				in.market = market
			}
		}
		if r.IntN(2) == 0 {
			hashCacheOps[0].op(r, in.book, &in.hc)
		}
		f := HashFields{
			Market: market, AssetID: asset, Timestamp: strconv.FormatInt(ts, 10),
			MinOrderSize: book.FormatDecimal(in.minOrder, sizeDecimals),
			TickSize:     book.FormatDecimal(in.tick, priceDecimals), NegRisk: in.negRisk,
		}
		withLtp := r.IntN(2) == 0 && in.ltp != 0
		if withLtp {
			f.LastTradePricePresent = true
			if in.ltp > 0 {
				f.LastTradePrice = book.FormatDecimal(in.ltp, priceDecimals)
			}
		}
		var want [sha1.Size]byte
		if _, err := hex.Decode(want[:], BookHash(nil, f, in.book)); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second call may be answered by the memo
			if !d.hashForm(in, []byte(f.Timestamp), &want, withLtp) {
				t.Fatalf("step %d: hashForm disagrees with BookHash %x", step, want)
			}
			bad := want
			bad[r.IntN(sha1.Size)] ^= 1
			if d.hashForm(in, []byte(f.Timestamp), &bad, withLtp) {
				t.Fatalf("step %d: hashForm accepted a wrong hash", step)
			}
		}
	}
}

func TestDecodeHash40(t *testing.T) {
	const h = "0123456789abcdefABCDEF0123456789abcdef01"
	var sum [sha1.Size]byte
	if !decodeHash40(&sum, []byte(h)) {
		t.Fatal("valid hash rejected")
	}
	if got := hex.EncodeToString(sum[:]); got != "0123456789abcdefabcdef0123456789abcdef01" {
		t.Fatalf("decoded %s", got)
	}
	for _, bad := range []string{"", "0xabc", h[:39], h + "0", h[:10] + "g" + h[11:], h[:39] + ":", h[:20] + "\x00" + h[21:]} {
		if decodeHash40(&sum, []byte(bad)) {
			t.Errorf("%q accepted", bad)
		}
	}
}
