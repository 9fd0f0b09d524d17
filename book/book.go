// Package book is tapedeck's L2 order-book engine: one price-aggregated book
// per instrument, with fixed-point int64 prices and sizes at a per-book Scale.
//
// A Book is owned by one writer goroutine (the decoder applying frames) and is
// not safe for concurrent use; readers on other goroutines use the published
// views described in view.go. All operations on a warmed-up book are free of
// heap allocations: a side grows its storage only when it holds more levels
// than ever before.
package book

import "errors"

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
	if err := checkSnapshotSide(bids); err != nil {
		return err
	}
	if err := checkSnapshotSide(asks); err != nil {
		return err
	}
	nb := fillSide(b.spareBids, bids, true)
	na := fillSide(b.spareAsks, asks, false)
	if hasAdjacentDup(nb) || hasAdjacentDup(na) {
		b.spareBids, b.spareAsks = nb, na
		return ErrDuplicatePrice
	}
	b.spareBids, b.bids = b.bids, nb
	b.spareAsks, b.asks = b.asks, na
	b.valid = true
	b.gen++
	return nil
}

func checkSnapshotSide(lv []Level) error {
	for i := range lv {
		if lv[i].Size <= 0 || lv[i].Price < 0 {
			return ErrBadLevel
		}
	}
	return nil
}

// fillSide copies src into dst stored worst-to-best (ascending for bids,
// descending for asks), sorting when the input is in neither monotone order.
func fillSide(dst, src []Level, bid bool) []Level {
	dst = append(dst[:0], src...)
	if len(dst) < 2 {
		return dst
	}
	better := func(a, c int64) bool { // a is better than c
		if bid {
			return a > c
		}
		return a < c
	}
	// Already worst-to-best?
	ok := true
	for i := 1; i < len(dst); i++ {
		if !better(dst[i].Price, dst[i-1].Price) {
			ok = false
			break
		}
	}
	if ok {
		return dst
	}
	// Best-to-worst: reverse.
	rev := true
	for i := 1; i < len(dst); i++ {
		if !better(dst[i-1].Price, dst[i].Price) {
			rev = false
			break
		}
	}
	if rev {
		for i, j := 0, len(dst)-1; i < j; i, j = i+1, j-1 {
			dst[i], dst[j] = dst[j], dst[i]
		}
		return dst
	}
	// Unordered: insertion sort (snapshots are short and nearly sorted).
	for i := 1; i < len(dst); i++ {
		x := dst[i]
		j := i - 1
		for j >= 0 && better(dst[j].Price, x.Price) {
			dst[j+1] = dst[j]
			j--
		}
		dst[j+1] = x
	}
	return dst
}

// hasAdjacentDup reports a repeated price in a sorted side.
func hasAdjacentDup(lv []Level) bool {
	for i := 1; i < len(lv); i++ {
		if lv[i].Price == lv[i-1].Price {
			return true
		}
	}
	return false
}

// Set sets the absolute size (and order count) at a price on one side; size 0
// removes the level, and removing an absent level is a no-op. Set never changes
// validity. A negative size or price is ErrBadLevel and changes nothing.
func (b *Book) Set(side Side, price, size int64, count int32) error {
	if size < 0 || price < 0 {
		return ErrBadLevel
	}
	if side == Bid {
		b.bids = setLevel(b.bids, price, size, count, true)
	} else {
		b.asks = setLevel(b.asks, price, size, count, false)
	}
	b.gen++
	return nil
}

// setLevel updates a worst-to-best side. It searches from the best end, where
// almost every update lands, and falls back to binary search.
func setLevel(lv []Level, price, size int64, count int32, bid bool) []Level {
	// Find the first index i such that lv[i] is not worse than price, i.e.
	// the insertion point in worst-to-best order.
	n := len(lv)
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		p := lv[m].Price
		var worse bool
		if bid {
			worse = p < price
		} else {
			worse = p > price
		}
		if worse {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo
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
	for k := 0; k < n; k++ {
		dst = append(dst, lv[len(lv)-1-k])
	}
	return dst
}

// Level returns the size and count at a price, or zeros when absent.
func (b *Book) Level(side Side, price int64) (size int64, count int32) {
	lv := b.side(side)
	for i := len(lv) - 1; i >= 0; i-- {
		if lv[i].Price == price {
			return lv[i].Size, lv[i].Count
		}
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
