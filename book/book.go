// Package book is tapedeck's L2 order-book engine: one price-aggregated book
// per instrument, with fixed-point int64 prices and sizes at a per-book Scale.
//
// A Book is owned by one writer goroutine (the decoder applying frames) and is
// not safe for concurrent use; readers on other goroutines read the immutable
// Views a Publisher hands out. All operations on a warmed-up book are free of
// heap allocations: a side grows its storage only when it holds more levels
// than ever before.
package book

import (
	"errors"
	"slices"
)

// Side is the side of a book.
type Side uint8

// The two sides of a book.
const (
	Bid Side = iota
	Ask
)

// String returns "bid" or "ask".
func (s Side) String() string {
	if s == Bid {
		return "bid"
	}
	return "ask"
}

// Level is one aggregated price level. Price and Size are fixed-point at the
// book's Scale; Count is the number of resting orders, or 0 when the venue does
// not say.
type Level struct {
	Price int64
	Size  int64
	Count int32
}

// ErrDuplicatePrice means a snapshot side held two levels at one price.
var ErrDuplicatePrice = errors.New("book: duplicate price in snapshot")

// ErrBadLevel means a snapshot level had a non-positive size or a negative price.
var ErrBadLevel = errors.New("book: level with non-positive size or negative price")

// Book is an L2 book. The zero value is not usable; call New.
type Book struct {
	scale Scale
	// Each side is kept sorted worst-to-best, so the best level is the last
	// element: the busy end of the book moves without shifting the rest.
	bids []Level // ascending price
	asks []Level // descending price
	// Replace sorts into these and swaps, so a rejected snapshot changes nothing.
	spareBids, spareAsks []Level
	valid                bool
	gen                  uint64 // incremented by every mutation
}

// New returns an empty, invalid book at scale s.
func New(s Scale) *Book { return &Book{scale: s} }

// Scale returns the book's fixed-point scale.
func (b *Book) Scale() Scale { return b.scale }

// Valid reports whether the book reflects the venue: false until the first
// snapshot and after Invalidate, until the next snapshot.
func (b *Book) Valid() bool { return b.valid }

// Invalidate marks the book as not trustworthy (a gap, a disconnect) and keeps
// its levels for inspection; the next Replace makes it valid again.
func (b *Book) Invalidate() { b.valid = false; b.gen++ }

// Revalidate marks an invalid book valid again without changing its levels,
// for a caller that has verified them another way (a venue book hash that
// matches them). It is a no-op on a valid book.
func (b *Book) Revalidate() {
	if !b.valid {
		b.valid = true
		b.gen++
	}
}

// Generation returns a counter that changes with every mutation.
func (b *Book) Generation() uint64 { return b.gen }

// Clear removes every level and invalidates the book.
func (b *Book) Clear() {
	b.bids = b.bids[:0]
	b.asks = b.asks[:0]
	b.valid = false
	b.gen++
}

// Replace installs a snapshot and marks the book valid. bids and asks may be
// in either price order (best-first or best-last); levels must have distinct
// prices and positive sizes. On error the book is unchanged. The slices are
// copied; the caller keeps ownership.
func (b *Book) Replace(bids, asks []Level) error {
	nb, err := fillSide(b.spareBids, bids, true)
	if err != nil {
		b.spareBids = nb
		return err
	}
	na, err := fillSide(b.spareAsks, asks, false)
	if err != nil {
		b.spareBids, b.spareAsks = nb, na
		return err
	}
	b.spareBids, b.bids = b.bids, nb
	b.spareAsks, b.asks = b.asks, na
	b.valid = true
	b.gen++
	return nil
}

// CopyFrom makes b hold src's levels and validity (b keeps its own scale),
// as Replace with src's levels would, without re-checking levels src has
// already checked. It allocates only when a side of src holds more levels
// than b's ever has.
func (b *Book) CopyFrom(src *Book) {
	b.bids = append(b.bids[:0], src.bids...)
	b.asks = append(b.asks[:0], src.asks...)
	b.valid = src.valid
	b.gen++
}

// Matches reports whether the book is valid and holds exactly bids and asks
// (each side in either strictly monotone price order, as Replace takes it):
// whether Replace(bids, asks) would change nothing. Input in no monotone
// order reports false. It allocates nothing.
func (b *Book) Matches(bids, asks []Level) bool {
	return b.valid && sideMatches(b.bids, bids) && sideMatches(b.asks, asks)
}

// sideMatches reports whether src, in storage order or reversed, equals stored.
func sideMatches(stored, src []Level) bool {
	n := len(src)
	if n != len(stored) {
		return false
	}
	if n == 0 {
		return true
	}
	if src[0] == stored[0] {
		for i := range src {
			if src[i] != stored[i] {
				return false
			}
		}
		return true
	}
	for i := range src {
		if src[i] != stored[n-1-i] {
			return false
		}
	}
	return true
}

// Input order of a snapshot side, found in one pass.
const (
	orderWorstFirst = iota // strictly worst-to-best: our storage order
	orderBestFirst         // strictly best-to-worst: copy reversed
	orderNone              // anything else: copy and sort
)

// fillSide copies src into dst stored worst-to-best (ascending for bids,
// descending for asks) and returns dst. It validates every level. Venues send
// sides in a monotone order (Polymarket best-last, Hyperliquid best-first), so
// one scan classifies the input and the copy needs no sort.
func fillSide(dst, src []Level, bid bool) ([]Level, error) {
	if n := len(src); n <= cap(dst) {
		// The usual case in one pass: validate and copy in input order,
		// then reverse or sort if that was not worst-to-best. A loop of
		// the few levels of most snapshots costs less than a memmove call.
		dst = dst[:n]
		for i := range src {
			l := src[i]
			if l.Size <= 0 || l.Price < 0 {
				return dst[:0], ErrBadLevel
			}
			dst[i] = l
			if i > 0 && ((l.Price > dst[i-1].Price) != bid || l.Price == dst[i-1].Price) {
				return orderSide(dst, src, i, bid)
			}
		}
		return dst, nil
	}
	dst = dst[:0]
	n := len(src)
	// up/down: strictly ascending / descending in price so far.
	up, down := true, true
	for i := range src {
		if src[i].Size <= 0 || src[i].Price < 0 {
			return dst, ErrBadLevel
		}
		if i > 0 {
			p, q := src[i-1].Price, src[i].Price
			up = up && q > p
			down = down && q < p
		}
	}
	order := orderNone
	switch {
	case n < 2:
		order = orderWorstFirst
	case up == bid: // bids ascending or asks descending
		if up || down {
			order = orderWorstFirst
		}
	case down == bid: // bids descending or asks ascending
		if up || down {
			order = orderBestFirst
		}
	}
	if cap(dst) < n {
		// Grow once to the new high-water mark; later snapshots reuse it.
		dst = make([]Level, n, n+n/4)
	} else {
		dst = dst[:n]
	}
	switch order {
	case orderWorstFirst:
		copy(dst, src)
	case orderBestFirst:
		for i, l := range src {
			dst[n-1-i] = l
		}
	default:
		copy(dst, src)
		return sortSide(dst, bid)
	}
	return dst, nil
}

// orderSide finishes fillSide for a src that is not worst-to-best from
// level i on: dst[:i] holds src[:i], all valid.
func orderSide(dst, src []Level, i int, bid bool) ([]Level, error) {
	n := len(src)
	for _, l := range src[i:] {
		if l.Size <= 0 || l.Price < 0 {
			return dst[:0], ErrBadLevel
		}
	}
	copy(dst[i:], src[i:])
	// Strictly best-to-worst throughout: reverse.
	best := true
	for k := 1; k < n && best; k++ {
		best = (dst[k].Price < dst[k-1].Price) == bid && dst[k].Price != dst[k-1].Price
	}
	if best {
		slices.Reverse(dst)
		return dst, nil
	}
	return sortSide(dst, bid)
}

// sortSide sorts a side's levels worst-to-best and rejects two at one price.
func sortSide(dst []Level, bid bool) ([]Level, error) {
	if bid {
		slices.SortFunc(dst, cmpAscending)
	} else {
		slices.SortFunc(dst, cmpDescending)
	}
	for k := 1; k < len(dst); k++ {
		if dst[k].Price == dst[k-1].Price {
			return dst, ErrDuplicatePrice
		}
	}
	return dst, nil
}

func cmpAscending(a, c Level) int {
	switch {
	case a.Price < c.Price:
		return -1
	case a.Price > c.Price:
		return 1
	}
	return 0
}

func cmpDescending(a, c Level) int { return cmpAscending(c, a) }

// Set sets the absolute size (and order count) at a price on one side; size 0
// removes the level, and removing an absent level is a no-op. Set never changes
// validity. A negative size or price is ErrBadLevel and changes nothing.
func (b *Book) Set(side Side, price, size int64, count int32) error {
	if size < 0 || price < 0 {
		return ErrBadLevel
	}
	if side == Bid {
		b.bids = setLevel(b.bids, price, size, count, search(b.bids, price, true))
	} else {
		b.asks = setLevel(b.asks, price, size, count, search(b.asks, price, false))
	}
	b.gen++
	return nil
}

// nearBest is how many levels from the best end Set and Level scan linearly
// before switching to binary search: almost every update of a live book lands
// within a few ticks of the touch, where a short scan beats halving.
const nearBest = 8

// search returns the index of the first level of a worst-to-best side that is
// not worse than price: the level at price if present, else its insertion point.
func search(lv []Level, price int64, bid bool) int {
	n := len(lv)
	// Scan from the best end: stop at the first level that is worse than price.
	stop := max(n-nearBest, 0)
	i := n
	if bid {
		for i > stop && lv[i-1].Price >= price {
			i--
		}
	} else {
		for i > stop && lv[i-1].Price <= price {
			i--
		}
	}
	if i > stop || i == 0 {
		return i
	}
	// lv[stop:] are all not worse; binary search lv[:stop].
	lo, hi := 0, stop
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		p := lv[m].Price
		if (bid && p < price) || (!bid && p > price) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// setLevel applies one absolute size at index i found by search.
func setLevel(lv []Level, price, size int64, count int32, i int) []Level {
	n := len(lv)
	if i < n && lv[i].Price == price {
		if size == 0 {
			copy(lv[i:], lv[i+1:])
			return lv[:n-1]
		}
		lv[i].Size = size
		lv[i].Count = count
		return lv
	}
	if size == 0 {
		return lv
	}
	lv = append(lv, Level{})
	copy(lv[i+1:], lv[i:n])
	lv[i] = Level{Price: price, Size: size, Count: count}
	return lv
}

// Best returns the best level of a side and whether the side has any.
func (b *Book) Best(side Side) (Level, bool) {
	lv := b.side(side)
	if len(lv) == 0 {
		return Level{}, false
	}
	return lv[len(lv)-1], true
}

// Len returns the number of levels on a side.
func (b *Book) Len(side Side) int { return len(b.side(side)) }

// Top appends up to n levels of a side to dst, best first, and returns the
// extended slice. n < 0 means every level.
func (b *Book) Top(side Side, dst []Level, n int) []Level {
	lv := b.side(side)
	if n < 0 || n > len(lv) {
		n = len(lv)
	}
	dst = slices.Grow(dst, n)
	for k := 0; k < n; k++ {
		dst = append(dst, lv[len(lv)-1-k])
	}
	return dst
}

// Level returns the size and count at a price, or zeros when absent.
func (b *Book) Level(side Side, price int64) (size int64, count int32) {
	lv := b.side(side)
	i := search(lv, price, side == Bid)
	if i < len(lv) && lv[i].Price == price {
		return lv[i].Size, lv[i].Count
	}
	return 0, 0
}

// Crossed reports whether the best bid is above the best ask.
func (b *Book) Crossed() bool {
	bb, ok1 := b.Best(Bid)
	ba, ok2 := b.Best(Ask)
	return ok1 && ok2 && bb.Price > ba.Price
}

// Locked reports whether the best bid equals the best ask.
func (b *Book) Locked() bool {
	bb, ok1 := b.Best(Bid)
	ba, ok2 := b.Best(Ask)
	return ok1 && ok2 && bb.Price == ba.Price
}

func (b *Book) side(s Side) []Level {
	if s == Bid {
		return b.bids
	}
	return b.asks
}
