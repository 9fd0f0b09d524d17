package venuesample

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"

	"github.com/tapedeck/tapedeck/book"
)

// Lines returns the non-blank lines of one embedded fixture of fsys (a
// generator's go:embed of its testdata). A missing file is a build defect
// and panics.
func Lines(fsys fs.FS, name string) [][]byte {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(fmt.Sprintf("venuesample: embedded fixture %s: %v", name, err)) // a build defect, not input
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
	}
	return out
}

// MustJSON decodes an embedded fixture line; fixtures are fixed at build
// time, so a failure is a defect of the generator and panics.
func MustJSON(line []byte, v any) {
	if err := json.Unmarshal(line, v); err != nil {
		panic(fmt.Sprintf("venuesample: embedded fixture: %v", err))
	}
}

// MustDec parses a decimal of an embedded fixture at the given decimals;
// a failure panics, as MustJSON.
func MustDec(s string, decimals uint8) int64 {
	v, err := book.ParseDecimal([]byte(s), decimals)
	if err != nil {
		panic(fmt.Sprintf("venuesample: embedded fixture value %q: %v", s, err))
	}
	return v
}

// Level is one price level: Px and Sz at the venue's fixed-point scale, N
// resting orders (0 where the venue does not count them).
type Level struct {
	Px, Sz int64
	N      int64
}

// SortLevels sorts ascending by price when asc, else descending.
func SortLevels(ls []Level, asc bool) {
	sort.Slice(ls, func(i, j int) bool {
		if asc {
			return ls[i].Px < ls[j].Px
		}
		return ls[i].Px > ls[j].Px
	})
}

// Book is a generated book as the venues' wire lists it: both sides best
// last (bids ascending, asks descending).
type Book struct {
	Bids []Level // ascending: best last, as on the wire
	Asks []Level // descending: best last
}

// Side returns the levels of side s.
func (b *Book) Side(s book.Side) *[]Level {
	if s == book.Bid {
		return &b.Bids
	}
	return &b.Asks
}

// Best returns the best price of side s, false when it is empty.
func (b *Book) Best(s book.Side) (int64, bool) {
	ls := *b.Side(s)
	if len(ls) == 0 {
		return 0, false
	}
	return ls[len(ls)-1].Px, true
}

// Get returns the size at px on side s, 0 when there is no level.
func (b *Book) Get(s book.Side, px int64) int64 {
	for _, l := range *b.Side(s) {
		if l.Px == px {
			return l.Sz
		}
	}
	return 0
}

// Set puts the absolute size at px (0 removes), keeping wire order.
func (b *Book) Set(s book.Side, px, sz int64) { b.SetN(s, px, sz, 0) }

// SetN is Set with a count of orders (Hyperliquid).
func (b *Book) SetN(s book.Side, px, sz, n int64) {
	p := b.Side(s)
	ls := *p
	asc := s == book.Bid
	i := 0
	for i < len(ls) && (asc && ls[i].Px < px || !asc && ls[i].Px > px) {
		i++
	}
	switch {
	case i < len(ls) && ls[i].Px == px && sz == 0:
		ls = append(ls[:i], ls[i+1:]...)
	case i < len(ls) && ls[i].Px == px:
		ls[i].Sz, ls[i].N = sz, n
	case sz != 0:
		ls = append(ls, Level{})
		copy(ls[i+1:], ls[i:])
		ls[i] = Level{px, sz, n}
	}
	*p = ls
}
