package book

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"unsafe"
)

var pmScale = Scale{PriceDecimals: 4, SizeDecimals: 6}

// lv builds levels from price,size pairs.
func lv(ps ...int64) []Level {
	out := make([]Level, 0, len(ps)/2)
	for i := 0; i+1 < len(ps); i += 2 {
		out = append(out, Level{Price: ps[i], Size: ps[i+1]})
	}
	return out
}

// top returns every level of a side, best first.
func top(b *Book, s Side) []Level { return b.Top(s, nil, -1) }

func equalLevels(a, b []Level) bool { return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b)) }

func TestReplaceOrders(t *testing.T) {
	wantBids := lv(4800, 1, 4790, 2, 4780, 3) // best first
	wantAsks := lv(5200, 4, 5210, 5, 5220, 6)
	tests := []struct {
		name       string
		bids, asks []Level
	}{
		{"wire order best last", lv(4780, 3, 4790, 2, 4800, 1), lv(5220, 6, 5210, 5, 5200, 4)},
		{"best first", lv(4800, 1, 4790, 2, 4780, 3), lv(5200, 4, 5210, 5, 5220, 6)},
		{"unordered", lv(4790, 2, 4780, 3, 4800, 1), lv(5210, 5, 5200, 4, 5220, 6)},
		{"mixed orders", lv(4800, 1, 4790, 2, 4780, 3), lv(5220, 6, 5210, 5, 5200, 4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(pmScale)
			in := slices.Clone(tt.bids)
			if err := b.Replace(tt.bids, tt.asks); err != nil {
				t.Fatal(err)
			}
			if !b.Valid() {
				t.Fatal("book not valid after Replace")
			}
			if got := top(b, Bid); !equalLevels(got, wantBids) {
				t.Fatalf("bids = %v, want %v", got, wantBids)
			}
			if got := top(b, Ask); !equalLevels(got, wantAsks) {
				t.Fatalf("asks = %v, want %v", got, wantAsks)
			}
			if !slices.Equal(in, tt.bids) {
				t.Fatal("Replace modified the caller's slice")
			}
			// The book must not alias the caller's slice.
			tt.bids[0].Size = 999
			if got := top(b, Bid); !equalLevels(got, wantBids) {
				t.Fatalf("book changed with the caller's slice: %v", got)
			}
		})
	}
}

func TestReplaceLarge(t *testing.T) {
	// Long unordered sides take the sorting path.
	for _, n := range []int{1, 2, 33, 1000} {
		bids := make([]Level, n)
		for i := range bids {
			bids[i] = Level{Price: int64((i * 7919) % n), Size: int64(i + 1)}
		}
		b := New(pmScale)
		if err := b.Replace(bids, nil); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		got := top(b, Bid)
		if len(got) != n || !slices.IsSortedFunc(got, func(a, c Level) int { return cmpDescending(a, c) }) {
			t.Fatalf("n=%d: bids not best-first sorted", n)
		}
		for _, l := range bids {
			if s, _ := b.Level(Bid, l.Price); s != l.Size {
				t.Fatalf("n=%d: Level(%d) = %d, want %d", n, l.Price, s, l.Size)
			}
		}
	}
}

func TestReplaceRejects(t *testing.T) {
	tests := []struct {
		name       string
		bids, asks []Level
		err        error
	}{
		{"duplicate bid unordered", lv(4800, 1, 4790, 2, 4800, 3), nil, ErrDuplicatePrice},
		{"duplicate adjacent", lv(4800, 1, 4800, 2), nil, ErrDuplicatePrice},
		{"duplicate ask", nil, lv(5200, 1, 5210, 1, 5200, 1), ErrDuplicatePrice},
		{"zero size", lv(4800, 0), nil, ErrBadLevel},
		{"negative size", nil, lv(5200, -1), ErrBadLevel},
		{"negative price", lv(-1, 5), nil, ErrBadLevel},
		{"bad ask after good bids", lv(4800, 1, 4790, 1), lv(5200, 1, 5300, 0), ErrBadLevel},
		{"duplicate ask after good bids", lv(4800, 1), lv(5200, 1, 5200, 2), ErrDuplicatePrice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(pmScale)
			if err := b.Replace(lv(100, 1, 200, 2), lv(300, 3)); err != nil {
				t.Fatal(err)
			}
			b.Invalidate()
			gen := b.Generation()
			wb, wa := top(b, Bid), top(b, Ask)
			err := b.Replace(tt.bids, tt.asks)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Replace error = %v, want %v", err, tt.err)
			}
			if !equalLevels(top(b, Bid), wb) || !equalLevels(top(b, Ask), wa) {
				t.Fatalf("book changed by a rejected snapshot: %v %v", top(b, Bid), top(b, Ask))
			}
			if b.Valid() || b.Generation() != gen {
				t.Fatal("rejected snapshot changed validity or generation")
			}
		})
	}
}

func TestSet(t *testing.T) {
	// Start: bids 4780..4800 (best 4800), asks 5200..5220 (best 5200).
	tests := []struct {
		name     string
		side     Side
		price    int64
		size     int64
		wantBids []Level
		wantAsks []Level
	}{
		{"update best bid", Bid, 4800, 7, lv(4800, 7, 4790, 2, 4780, 3), nil},
		{"update middle bid", Bid, 4790, 7, lv(4800, 1, 4790, 7, 4780, 3), nil},
		{"update worst bid", Bid, 4780, 7, lv(4800, 1, 4790, 2, 4780, 7), nil},
		{"insert new best bid", Bid, 4810, 7, lv(4810, 7, 4800, 1, 4790, 2, 4780, 3), nil},
		{"insert middle bid", Bid, 4795, 7, lv(4800, 1, 4795, 7, 4790, 2, 4780, 3), nil},
		{"insert new worst bid", Bid, 10, 7, lv(4800, 1, 4790, 2, 4780, 3, 10, 7), nil},
		{"delete best bid", Bid, 4800, 0, lv(4790, 2, 4780, 3), nil},
		{"delete middle bid", Bid, 4790, 0, lv(4800, 1, 4780, 3), nil},
		{"delete worst bid", Bid, 4780, 0, lv(4800, 1, 4790, 2), nil},
		{"delete absent bid", Bid, 4785, 0, lv(4800, 1, 4790, 2, 4780, 3), nil},
		{"update best ask", Ask, 5200, 7, nil, lv(5200, 7, 5210, 5, 5220, 6)},
		{"insert new best ask", Ask, 5100, 7, nil, lv(5100, 7, 5200, 4, 5210, 5, 5220, 6)},
		{"insert middle ask", Ask, 5215, 7, nil, lv(5200, 4, 5210, 5, 5215, 7, 5220, 6)},
		{"insert new worst ask", Ask, 9999, 7, nil, lv(5200, 4, 5210, 5, 5220, 6, 9999, 7)},
		{"delete best ask", Ask, 5200, 0, nil, lv(5210, 5, 5220, 6)},
		{"delete worst ask", Ask, 5220, 0, nil, lv(5200, 4, 5210, 5)},
		{"delete absent ask", Ask, 1, 0, nil, lv(5200, 4, 5210, 5, 5220, 6)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(pmScale)
			if err := b.Replace(lv(4780, 3, 4790, 2, 4800, 1), lv(5220, 6, 5210, 5, 5200, 4)); err != nil {
				t.Fatal(err)
			}
			gen := b.Generation()
			if err := b.Set(tt.side, tt.price, tt.size, 0); err != nil {
				t.Fatal(err)
			}
			if b.Generation() == gen {
				t.Fatal("Set did not change the generation")
			}
			wb, wa := tt.wantBids, tt.wantAsks
			if wb == nil {
				wb = lv(4800, 1, 4790, 2, 4780, 3)
			}
			if wa == nil {
				wa = lv(5200, 4, 5210, 5, 5220, 6)
			}
			if got := top(b, Bid); !equalLevels(got, wb) {
				t.Fatalf("bids = %v, want %v", got, wb)
			}
			if got := top(b, Ask); !equalLevels(got, wa) {
				t.Fatalf("asks = %v, want %v", got, wa)
			}
			if !b.Valid() {
				t.Fatal("Set changed validity")
			}
		})
	}
}

func TestSetDeep(t *testing.T) {
	// Updates far from the touch take the binary-search path.
	b := New(pmScale)
	for p := int64(1); p <= 100; p++ {
		if err := b.Set(Bid, p*10, p, int32(p)); err != nil {
			t.Fatal(err)
		}
		if err := b.Set(Ask, 10000-p*10, p, int32(p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []int64{5, 10, 15, 500, 505, 995, 1000, 1005} {
		_ = b.Set(Bid, p, 77, 1)
		if s, c := b.Level(Bid, p); s != 77 || c != 1 {
			t.Fatalf("bid %d: size %d count %d, want 77 1", p, s, c)
		}
		_ = b.Set(Ask, 10000-p, 77, 1)
		if s, _ := b.Level(Ask, 10000-p); s != 77 {
			t.Fatalf("ask %d: size %d, want 77", 10000-p, s)
		}
	}
	for _, s := range []Side{Bid, Ask} {
		got := top(b, s)
		cmp := cmpDescending
		if s == Ask {
			cmp = cmpAscending
		}
		if !slices.IsSortedFunc(got, cmp) {
			t.Fatalf("%v side out of order: %v", s, got)
		}
	}
	if b.Len(Bid) != 105 || b.Len(Ask) != 105 {
		t.Fatalf("Len = %d/%d, want 105/105", b.Len(Bid), b.Len(Ask))
	}
}

func TestSetRejects(t *testing.T) {
	b := New(pmScale)
	_ = b.Replace(lv(4800, 1), lv(5200, 1))
	gen := b.Generation()
	for _, c := range []struct{ price, size int64 }{{-1, 1}, {1, -1}} {
		if err := b.Set(Bid, c.price, c.size, 0); !errors.Is(err, ErrBadLevel) {
			t.Fatalf("Set(%d, %d) error = %v, want ErrBadLevel", c.price, c.size, err)
		}
	}
	if b.Generation() != gen || !equalLevels(top(b, Bid), lv(4800, 1)) {
		t.Fatal("rejected Set changed the book")
	}
}

func TestTop(t *testing.T) {
	b := New(pmScale)
	_ = b.Replace(lv(1, 1, 2, 2, 3, 3), lv(9, 9, 8, 8))
	buf := make([]Level, 0, 8)
	buf = append(buf, Level{Price: -5})
	got := b.Top(Bid, buf, 2)
	if !equalLevels(got, []Level{{Price: -5}, {Price: 3, Size: 3}, {Price: 2, Size: 2}}) {
		t.Fatalf("Top(Bid, 2) = %v", got)
	}
	if &got[0] != &buf[0] {
		t.Fatal("Top did not append into the caller's buffer")
	}
	if got := b.Top(Ask, nil, 10); !equalLevels(got, lv(8, 8, 9, 9)) {
		t.Fatalf("Top(Ask, 10) = %v", got)
	}
	if got := b.Top(Ask, nil, 0); len(got) != 0 {
		t.Fatalf("Top(Ask, 0) = %v", got)
	}
	if l, ok := b.Best(Bid); !ok || l.Price != 3 {
		t.Fatalf("Best(Bid) = %v %v", l, ok)
	}
	if _, ok := New(pmScale).Best(Ask); ok {
		t.Fatal("Best on an empty side reported a level")
	}
}

func TestCrossedLocked(t *testing.T) {
	tests := []struct {
		name            string
		bids, asks      []Level
		crossed, locked bool
	}{
		{"normal", lv(4800, 1), lv(5200, 1), false, false},
		{"locked", lv(5000, 1), lv(5000, 1), false, true},
		{"crossed", lv(5100, 1), lv(5000, 1), true, false},
		{"empty bids", nil, lv(5000, 1), false, false},
		{"empty asks", lv(5000, 1), nil, false, false},
		{"empty", nil, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(pmScale)
			if err := b.Replace(tt.bids, tt.asks); err != nil {
				t.Fatal(err)
			}
			if b.Crossed() != tt.crossed || b.Locked() != tt.locked {
				t.Fatalf("Crossed %v Locked %v, want %v %v", b.Crossed(), b.Locked(), tt.crossed, tt.locked)
			}
		})
	}
	// A transient cross inside a match is flagged, never refused.
	b := New(pmScale)
	_ = b.Replace(lv(5000, 1), lv(5100, 1))
	if err := b.Set(Ask, 4900, 1, 0); err != nil || !b.Crossed() {
		t.Fatalf("Set into a cross: err %v crossed %v", err, b.Crossed())
	}
}

func TestValidity(t *testing.T) {
	b := New(pmScale)
	if b.Valid() {
		t.Fatal("new book is valid")
	}
	_ = b.Set(Bid, 1, 1, 0)
	if b.Valid() {
		t.Fatal("Set made the book valid")
	}
	_ = b.Replace(lv(1, 1), nil)
	if !b.Valid() {
		t.Fatal("Replace did not make the book valid")
	}
	b.Invalidate()
	if b.Valid() || b.Len(Bid) != 1 {
		t.Fatal("Invalidate must keep levels and clear validity")
	}
	_ = b.Replace(nil, nil)
	if !b.Valid() {
		t.Fatal("empty snapshot must make the book valid")
	}
	_ = b.Set(Bid, 1, 1, 0)
	b.Clear()
	if b.Valid() || b.Len(Bid) != 0 || b.Len(Ask) != 0 {
		t.Fatal("Clear must empty and invalidate")
	}
	if b.Scale() != pmScale {
		t.Fatal("Scale changed")
	}
}

// CopyFrom leaves the copy with the source's levels and validity, sharing
// no storage with it, and bumps its generation.
func TestCopyFrom(t *testing.T) {
	src := New(pmScale)
	if err := src.Replace(lv(4780, 3, 4790, 2, 4800, 1), lv(5220, 6, 5210, 5, 5200, 4)); err != nil {
		t.Fatal(err)
	}
	dst := New(pmScale)
	_ = dst.Replace(lv(1, 1, 2, 2, 3, 3, 4, 4), nil)
	g := dst.Generation()
	dst.CopyFrom(src)
	if !dst.Valid() || !equalLevels(top(dst, Bid), top(src, Bid)) || !equalLevels(top(dst, Ask), top(src, Ask)) {
		t.Fatalf("copy %v/%v valid %v, want %v/%v", top(dst, Bid), top(dst, Ask), dst.Valid(), top(src, Bid), top(src, Ask))
	}
	if dst.Generation() == g {
		t.Fatal("CopyFrom kept the generation")
	}
	_ = src.Set(Bid, 4800, 7, 0)
	_ = dst.Set(Ask, 5200, 0, 0)
	if l, _ := dst.Best(Bid); l.Size != 1 {
		t.Fatalf("copy shares the source's bids: best %v", l)
	}
	if l, _ := src.Best(Ask); l.Price != 5200 {
		t.Fatalf("copy shares the source's asks: best %v", l)
	}
	src.Invalidate()
	dst.CopyFrom(src)
	if dst.Valid() || !equalLevels(top(dst, Bid), top(src, Bid)) {
		t.Fatalf("copy of an invalid book: valid %v, bids %v", dst.Valid(), top(dst, Bid))
	}
	empty := New(pmScale)
	dst.CopyFrom(empty)
	if dst.Valid() || dst.Len(Bid) != 0 || dst.Len(Ask) != 0 {
		t.Fatal("copy of a new book is not empty and invalid")
	}
}

// TestAllocs asserts the steady state of every hot operation is free of heap
// allocations once a book has reached its size.
func TestAllocs(t *testing.T) {
	bids, asks := make([]Level, 100), make([]Level, 100)
	for i := range bids {
		bids[i] = Level{Price: int64(4800 - i), Size: 100}
		asks[i] = Level{Price: int64(5200 + i), Size: 100}
	}
	unordered := slices.Clone(bids)
	unordered[0], unordered[50] = unordered[50], unordered[0]
	b := New(pmScale)
	_ = b.Replace(bids, asks)
	_ = b.Replace(bids, asks) // both buffers warmed
	buf := make([]Level, 0, 100)
	cp := New(pmScale)
	cp.CopyFrom(b) // warmed
	i := int64(0)
	cases := []struct {
		name string
		f    func()
	}{
		{"Set update", func() { _ = b.Set(Bid, 4800, 100+i%7, 1); i++ }},
		{"Set insert+delete", func() { _ = b.Set(Ask, 5199, 5, 0); _ = b.Set(Ask, 5199, 0, 0) }},
		{"Set deep", func() { _ = b.Set(Bid, 4750, 5+i%3, 0); i++ }},
		{"Replace", func() { _ = b.Replace(bids, asks) }},
		{"Replace unordered", func() { _ = b.Replace(unordered, asks) }},
		{"CopyFrom", func() { cp.CopyFrom(b) }},
		{"Top", func() { buf = b.Top(Bid, buf[:0], 100) }},
		{"Best", func() { _, _ = b.Best(Ask) }},
		{"Level", func() { _, _ = b.Level(Bid, 4710) }},
		{"Crossed", func() { _ = b.Crossed() || b.Locked() }},
	}
	for _, c := range cases {
		c.f()
		if n := testing.AllocsPerRun(200, c.f); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", c.name, n)
		}
	}
}

// model is the reference: a map per side, sorted on demand.
type model struct {
	side  [2]map[int64]Level
	valid bool
}

func (m *model) top(s Side) []Level {
	ps := slices.Sorted(maps.Keys(m.side[s]))
	if s == Bid {
		slices.Reverse(ps)
	}
	out := make([]Level, 0, len(ps))
	for _, p := range ps {
		out = append(out, m.side[s][p])
	}
	return out
}

func FuzzBookOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Fuzz(func(t *testing.T, ops []byte) {
		b := New(pmScale)
		m := &model{side: [2]map[int64]Level{{}, {}}}
		// A published view must always show the book's current top, whether
		// Publish made a new view or kept the previous one.
		p := NewPublisher(3, 1)
		var snap [2][]Level
		for len(ops) >= 3 {
			op, a, c := ops[0], ops[1], ops[2]
			ops = ops[3:]
			side := Side(op & 1)
			price := int64(a % 64) // a small grid so updates collide
			size := int64(c % 8)
			switch op >> 1 % 8 {
			case 0, 1, 2, 3: // Set
				if op&0x80 != 0 {
					price, size = -price-1, -size-1 // invalid
				}
				err := b.Set(side, price, size, int32(c))
				if price < 0 || size < 0 {
					if !errors.Is(err, ErrBadLevel) {
						t.Fatalf("Set(%d,%d) error = %v", price, size, err)
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if size == 0 {
					delete(m.side[side], price)
				} else {
					m.side[side][price] = Level{Price: price, Size: size, Count: int32(c)}
				}
			case 4: // add a level to the pending snapshot (duplicates and zero sizes allowed)
				snap[side] = append(snap[side], Level{Price: price, Size: size})
			case 5: // Replace from the pending snapshot
				err := b.Replace(snap[Bid], snap[Ask])
				wantErr := false
				for s := range snap {
					seen := map[int64]bool{}
					for _, l := range snap[s] {
						if l.Size <= 0 || seen[l.Price] {
							wantErr = true
						}
						seen[l.Price] = true
					}
				}
				if (err != nil) != wantErr {
					t.Fatalf("Replace(%v, %v) error = %v, want error %v", snap[Bid], snap[Ask], err, wantErr)
				}
				if err == nil {
					for s := range snap {
						m.side[s] = map[int64]Level{}
						for _, l := range snap[s] {
							m.side[s][l.Price] = l
						}
					}
					m.valid = true
				}
				snap = [2][]Level{}
			case 6:
				b.Invalidate()
				m.valid = false
			case 7:
				if c%4 == 0 {
					b.Clear()
					m.side = [2]map[int64]Level{{}, {}}
					m.valid = false
				}
			}
			for _, s := range []Side{Bid, Ask} {
				want := m.top(s)
				if got := top(b, s); !equalLevels(got, want) {
					t.Fatalf("%v side = %v, want %v", s, got, want)
				}
				if b.Len(s) != len(want) {
					t.Fatalf("Len(%v) = %d, want %d", s, b.Len(s), len(want))
				}
				if sz, _ := b.Level(s, price); sz != m.side[s][price].Size {
					t.Fatalf("Level(%v, %d) = %d, want %d", s, price, sz, m.side[s][price].Size)
				}
			}
			if b.Valid() != m.valid {
				t.Fatalf("Valid = %v, want %v", b.Valid(), m.valid)
			}
			bb, ab := m.top(Bid), m.top(Ask)
			crossed := len(bb) > 0 && len(ab) > 0 && bb[0].Price > ab[0].Price
			if b.Crossed() != crossed {
				t.Fatalf("Crossed = %v, want %v", b.Crossed(), crossed)
			}
			if !p.Publish(b, 0) {
				t.Fatal("Publish failed with no reader")
			}
			v := p.Acquire()
			if !equalLevels(v.Bids, bb[:min(3, len(bb))]) || !equalLevels(v.Asks, ab[:min(3, len(ab))]) ||
				v.BidLevels != len(bb) || v.AskLevels != len(ab) || v.Valid != m.valid || v.Crossed != crossed {
				t.Fatalf("view %+v, want bids %v asks %v valid %v", *v, bb, ab, m.valid)
			}
			v.Release()
		}
	})
}

// TestLevelLayout locks the size of Level: Views, Top buffers and decoders'
// scratch arrays are sized in Levels, and a wider Level costs every copy.
// (On 32-bit platforms int64 is 4-byte aligned and a Level is 20 bytes.)
func TestLevelLayout(t *testing.T) {
	want := uintptr(24)
	if unsafe.Alignof(int64(0)) == 4 {
		want = 20
	}
	if s := unsafe.Sizeof(Level{}); s != want {
		t.Fatalf("sizeof(Level) = %d, want %d", s, want)
	}
	if o := unsafe.Offsetof(Level{}.Count); o != 16 {
		t.Fatalf("offsetof(Level.Count) = %d, want 16", o)
	}
}

func TestMatches(t *testing.T) {
	b := New(pmScale)
	bids := []Level{{Price: 4800, Size: 10}, {Price: 4900, Size: 20}}
	asks := []Level{{Price: 5100, Size: 30}, {Price: 5000, Size: 40}}
	if b.Matches(bids, asks) {
		t.Fatal("an invalid, empty book matches a snapshot")
	}
	if err := b.Replace(bids, asks); err != nil {
		t.Fatal(err)
	}
	rev := func(l []Level) []Level { return []Level{l[1], l[0]} }
	for name, c := range map[string]struct {
		bids, asks []Level
		want       bool
	}{
		"same order":           {bids, asks, true},
		"reversed":             {rev(bids), rev(asks), true},
		"one size differs":     {bids, []Level{{Price: 5100, Size: 30}, {Price: 5000, Size: 41}}, false},
		"one level fewer":      {bids[:1], asks, false},
		"a price differs":      {[]Level{{Price: 4800, Size: 10}, {Price: 4950, Size: 20}}, asks, false},
		"sides swapped":        {asks, bids, false},
		"unordered of three":   {[]Level{{Price: 4800, Size: 10}, {Price: 4700, Size: 1}, {Price: 4900, Size: 20}}, asks, false},
		"empty side vs levels": {nil, asks, false},
	} {
		if got := b.Matches(c.bids, c.asks); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", name, got, c.want)
		}
	}
	b.Invalidate()
	if b.Matches(bids, asks) {
		t.Error("an invalidated book matches its old levels")
	}
	if n := testing.AllocsPerRun(100, func() { b.Matches(bids, asks) }); n != 0 {
		t.Errorf("Matches allocates %v times", n)
	}
}
