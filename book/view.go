package book

import (
	"sync/atomic"
	"unsafe"
)

// Publisher hands consistent top-of-book views of one Book from its writer
// goroutine to any number of reader goroutines (strategies, servers, UIs)
// without locks: the writer never waits for a reader and a reader never waits
// for the writer.
//
// The writer copies the top levels of the book into one of a few preallocated
// View slots and makes it current. A reader Acquires the current View, which
// pins that slot until Release; the writer only ever fills a slot that is
// neither current nor pinned, so a pinned View never changes under its reader.
// Publishing allocates nothing.
//
// Pinning is one atomic add on a single word that holds both the current
// slot and how many readers pinned it (the split reference count of
// ArcSwap-like designs): a reader learns which slot is current and pins it in
// the same instruction, with no pointer to chase and no re-check. An
// Acquire and a copy of View.Bids that follow a new publish wait for two
// cache-line transfers in a row (that word, then the slot's header and
// levels), or three when the number of levels shown or a flag changed since
// the slot's last view (the View holds the levels' address; see slot); a
// Load after one publish waits for one (see Load). When the writer
// makes another slot current it swaps the word and moves the old slot's pin
// count onto that slot, where late Releases take it back. (Load and Refresh
// pin only where they must: on amd64 they copy without a pin and check that
// the writer did not overtake the copy; see Load.)
//
// Publish must be called only from the goroutine that owns the Book. Acquire,
// Release, Load, Published and Skipped are safe from any goroutine.
type Publisher struct {
	// Read-only after NewPublisher.
	depth  int
	stride int // levels from one slot's levels in store to the next's
	lines  int // cache lines holding one slot's levels
	slots  []*slot
	// store holds the levels of all slots: slot i's bids from i*stride
	// (depth of them), its asks right after; each slot's levels start on a
	// cache line of their own.
	store []Level
	_     [cacheLine - 8]byte // state at a multiple of 16 bytes (with 64-bit field sizes)

	// state is the current slot (1-based; 0 before the first Publish) in its
	// top byte and the number of pins taken on it since it became current
	// below. It is the only word of the Publisher that readers write.
	// curSeq, in the same cache line (the Publisher is 16-byte aligned), is
	// the current view's Seq, which the writer stores just before it swaps
	// state, so that Refresh checks for a new view in that one line and the
	// writer waits for that line once per publish, not for it and another.
	state  atomic.Uint64
	curSeq atomic.Uint64
	_      [cacheLine]byte

	// The writer's own.
	cur  int    // index of the current slot, -1 before the first Publish
	next int    // slot to try first
	seq  uint64 // last published sequence number

	skipped atomic.Uint64
}

const (
	cacheLine = 64
	// levelsPerLines is the fewest Levels that fill whole cache lines: 8
	// of 24 bytes where int64 is 8-byte aligned, 16 of 20 bytes on 32-bit
	// platforms, where it is 4-byte aligned. (A power of two's greatest
	// common divisor with n is n's lowest set bit, or the power itself.)
	levelSize      = int(unsafe.Sizeof(Level{}))
	levelsPerLines = cacheLine / min(levelSize&-levelSize, cacheLine)
	idxShift       = 56
	countMask      = 1<<idxShift - 1
	// ofView marks a View's own slot number in Top.slot, which a copy of
	// the View's Top keeps: such a Top's slices are the slot's.
	ofView = 1 << 63
)

// slot is a View and the pins moved onto it when it stopped being current,
// less the Releases since.
//
// A slot is two cache lines of its own (allocated one by one: a small object
// of a size class of whole lines, with no allocation header, starts a line;
// TestPublisherLayout checks it), so readers of the current slot do not slow
// the writer filling the next. The first line holds what a refill seldom
// changes: the View's publisher, its level slices, scale and flags,
// rewritten only when the number of levels shown on a side, a flag or the
// scale differs from what the slot last held, so a reader that saw this slot
// before still has that line, and the levels' address with it, in its
// cache. The second holds what every refill writes (full level counts,
// generation, sequence, stamp) and the pin count.
type slot struct {
	view View
	refs atomic.Int64
	_    [2*cacheLine - (unsafe.Sizeof(View{})+7)&^7 - 8]byte // refs is 8-byte aligned
}

// Top is the content of a View: the top of a book at one instant. A reader
// that wants its own copy to keep fills one with Publisher.Load or
// Publisher.Refresh.
type Top struct {
	// Bids and Asks hold up to the publisher's depth levels, best first.
	Bids, Asks []Level
	// Scale is the book's fixed-point scale.
	Scale Scale
	// Valid, Crossed and Locked are the book's flags at publish time.
	Valid, Crossed, Locked bool
	// pub and slot (below) say which view this is: the Publisher and
	// 1-based slot of a View (with ofView set), or where Load or Refresh
	// last copied this Top from (nil, 0: nowhere). pub sits here to share a slot's seldom
	// written line (see slot).
	pub *Publisher
	// BidLevels and AskLevels are the book's full level counts per side,
	// which may exceed len(Bids) and len(Asks).
	BidLevels, AskLevels int
	// Generation is the book's Generation when this view was made. Publish
	// keeps the current view while its content is unchanged, so the book may
	// have moved on below the view's depth.
	Generation uint64
	// Seq numbers the views of one Publisher from 1, so a reader can tell
	// whether it has seen this one before.
	Seq uint64
	// Stamp is the caller's value passed to the Publish that made this view
	// (e.g. the receive time in ns of the frame just applied).
	Stamp int64

	slot uint64
}

// View is an immutable Top published by a Publisher. A View obtained from
// Acquire stays unchanged until its Release; after Release the reader must
// not touch it or any slice taken from it. Its fields are read-only: the
// Publisher owns all of its memory.
type View struct {
	Top // its pub and slot are the View's own; slot is 1-based, as in Publisher.state
}

// NewPublisher returns a Publisher of views holding up to depth levels per
// side, for up to readers goroutines that hold a View at the same time. It
// preallocates readers+2 slots: one current, one being filled and one per
// pinning reader, so Publish can always find a free slot while at most
// readers Views are held. depth and readers must be at least 1, and readers
// below 250 (it panics otherwise: a programming error, not bad data).
func NewPublisher(depth, readers int) *Publisher {
	if depth < 1 || readers < 1 || readers+2 >= 1<<(64-idxShift) {
		panic("book: NewPublisher needs depth ≥ 1 and 1 ≤ readers < 250")
	}
	p := &Publisher{depth: depth, slots: make([]*slot, readers+2), cur: -1}
	// The levels of all slots in one block, each slot's levels on cache
	// lines of their own: a stride of whole lines (8 levels are 3 lines)
	// from a line boundary (the block starts at a multiple of 8 bytes, as
	// any allocation of 8 bytes or more does, and its first levelsPerLines
	// levels start at every multiple of gcd(levelSize, cacheLine) below a
	// line from there, so one of them starts a line).
	stride := (2*depth + levelsPerLines - 1) / levelsPerLines * levelsPerLines
	block := make([]Level, len(p.slots)*stride+levelsPerLines-1)
	skip := 0
	for uintptr(unsafe.Pointer(&block[skip]))%cacheLine != 0 {
		skip++
	}
	store := block[skip : skip+len(p.slots)*stride]
	p.stride, p.store = stride, store
	p.lines = (2*depth*int(unsafe.Sizeof(Level{})) + cacheLine - 1) / cacheLine
	for i := range p.slots {
		s := new(slot)
		p.slots[i] = s
		lv := store[i*stride : i*stride+2*depth : i*stride+2*depth]
		s.view.Bids = lv[0:0:depth]
		s.view.Asks = lv[depth:depth]
		s.view.pub = p
		s.view.slot = uint64(i+1) | ofView
	}
	return p
}

// Depth returns the number of levels per side a View holds at most.
func (p *Publisher) Depth() int { return p.depth }

// Publish makes the current View show the top of b and returns true. When
// the current View already shows exactly that (same levels to its depth,
// level counts and flags: nothing changed, or only deeper levels did) it
// keeps it, so readers see no new Seq and the writer writes nothing a reader
// would have to fetch again. Otherwise it copies the top of b into a free
// slot and makes that current. When every other slot is pinned by readers
// (more concurrent holders than NewPublisher was sized for) it publishes
// nothing, counts the skip and returns false; the current View stays the
// previous one and the next Publish carries the newer state. Call it only
// from b's writer, always with the same Book.
func (p *Publisher) Publish(b *Book, stamp int64) bool {
	if p.cur >= 0 && p.shows(&p.slots[p.cur].view, b) {
		return true
	}
	n := len(p.slots)
	for k := 0; k < n; k++ {
		i := p.next + k
		if i >= n {
			i -= n
		}
		s := p.slots[i]
		if i == p.cur || s.refs.Load() != 0 {
			continue
		}
		// No reader can pin this slot from here on: readers pin only the
		// current slot, and it does not become current until the Swap.
		v := &s.view
		// The slot's first line is written only where it changes (see
		// slot); the levels always are.
		if bids := b.Top(Bid, v.Bids[:0], p.depth); len(bids) != len(v.Bids) {
			v.Bids = bids
		}
		if asks := b.Top(Ask, v.Asks[:0], p.depth); len(asks) != len(v.Asks) {
			v.Asks = asks
		}
		if crossed, locked := b.Crossed(), b.Locked(); v.Valid != b.valid || v.Crossed != crossed ||
			v.Locked != locked || v.Scale != b.scale {
			v.Valid, v.Crossed, v.Locked, v.Scale = b.valid, crossed, locked, b.scale
		}
		v.BidLevels = len(b.bids)
		v.AskLevels = len(b.asks)
		v.Generation = b.gen
		p.seq++
		v.Seq = p.seq
		v.Stamp = stamp
		p.curSeq.Store(p.seq)
		old := p.state.Swap(uint64(i+1) << idxShift)
		if p.cur >= 0 {
			// The pins taken on the old slot while it was current; their
			// Releases now find it not current and count down refs.
			if c := old & countMask; c != 0 {
				p.slots[p.cur].refs.Add(int64(c))
			}
		}
		p.cur, p.next = i, i+1
		return true
	}
	p.skipped.Add(1)
	return false
}

// shows reports whether v, made by this writer, shows b's current top.
// Reading v here is cheap: the writer made it and readers only read it.
func (p *Publisher) shows(v *View, b *Book) bool {
	if v.Generation == b.gen {
		return true
	}
	if v.Valid != b.valid || v.BidLevels != len(b.bids) || v.AskLevels != len(b.asks) ||
		v.Scale != b.scale || v.Crossed != b.Crossed() || v.Locked != b.Locked() {
		return false
	}
	return sameTop(v.Bids, b.bids) && sameTop(v.Asks, b.asks)
}

// sameTop reports whether top (best first) equals the best len(top) levels
// of side (stored best last).
func sameTop(top, side []Level) bool {
	if len(top) > len(side) {
		return false
	}
	for k, l := range top {
		if side[len(side)-1-k] != l {
			return false
		}
	}
	return true
}

// Acquire pins and returns the current View, or nil before the first
// Publish. The caller must call Release exactly once when done. It never
// blocks and never retries: one atomic add.
func (p *Publisher) Acquire() *View {
	g := p.state.Add(1)
	if g>>idxShift == 0 {
		p.unpinNone()
		return nil
	}
	return &p.slots[g>>idxShift-1].view
}

// unpinNone takes back a pin taken before the first Publish, unless that
// Publish already dropped it.
func (p *Publisher) unpinNone() {
	for {
		g := p.state.Load()
		if g>>idxShift != 0 || p.state.CompareAndSwap(g, g-1) {
			return
		}
	}
}

// Release unpins a View obtained from Acquire. The View must not be used
// afterwards.
func (v *View) Release() { v.pub.release(v.slot &^ ofView) }

// release unpins slot idx (1-based).
func (p *Publisher) release(idx uint64) {
	for {
		g := p.state.Load()
		if g>>idxShift != idx {
			// No longer current: the writer moved this pin onto the slot.
			p.slots[idx-1].refs.Add(-1)
			return
		}
		if p.state.CompareAndSwap(g, g-1) {
			return
		}
	}
}

// Load copies the current View into dst, reusing dst's slices (no
// allocation once they have the publisher's depth as capacity), and reports
// whether there was one (false before the first Publish, dst's content
// unchanged). dst is the caller's own: it needs no Release and stays as it
// is until the next Load into it (a copy of a View's Top, whose slices are
// the Publisher's, first gets slices of its own). On amd64 the copy takes
// no pin: Load reads the pin word and the current Seq, copies the slot, and
// reads them again, copying again should the writer have refilled the slot
// meanwhile (see load), so a reader writes no shared memory; in race
// builds and elsewhere one atomic add pins the current slot, the copy
// follows, then the pin is taken back. Refresh is the cheaper call for a
// reader that polls the same dst.
//
// Right after a Publish most lines a reader touches were last written by
// the writer, on another core, and each wait for them costs a cache-line
// transfer, which is anything from 20 to over 150 ns depending on where the
// two cores sit. Load waits for one: it starts fetching, before the pin,
// the pin word and the levels and header of the slot the writer fills
// after the one dst was last loaded from (the writer takes its slots in
// turn), so that when one view was published since, all of them arrive
// together. Otherwise (the first Load into dst, several views since, or a
// reader holding that slot) it waits for two: the pin word, then the
// slot's header and levels together, since their addresses follow from the
// slot index alone and Load copies the slot's full depth (dst's elements
// beyond the view's levels are left as whatever the slot held), so no load
// of the levels waits for the header. Acquire and a copy of View.Bids take
// two as well while the view's level counts and flags are the slot's last
// ones (the line holding the slices is then still in the reader's cache,
// see slot), three otherwise.
func (p *Publisher) Load(dst *Top) bool {
	p.own(dst) // before the pin: nothing but the copy while pinned
	p.prefetchNext(dst)
	return p.load(dst)
}

// Refresh makes dst show the current View, like Load, and reports whether
// there is one, but when dst already shows it (it was last filled by Load
// or Refresh from this Publisher, and no view was published since) it
// leaves dst as it is, having written no shared memory: two atomic loads
// from one cache line, which stays in the reader's cache until the writer
// publishes.
// That is the cheap check of a reader polling for the current top. dst must
// hold what the last Load or Refresh put there: Refresh cannot tell a Top
// its caller changed since (Load copies every time). Each call returns the
// current view, consistent, as Load's would: it leaves dst only when it
// reads the pin word and then the current Seq (which the writer stores
// before the pin word) and finds dst's slot and Seq, so that dst's view was
// current when the pin word was read (Seqs only grow).
func (p *Publisher) Refresh(dst *Top) bool {
	if dst.pub == p {
		// When the writer did publish, the lines a Load then needs are on
		// their way while Refresh looks at the pin word.
		p.prefetchNext(dst)
		if g := p.state.Load(); g>>idxShift == dst.slot && p.curSeq.Load() == dst.Seq {
			return true
		}
	}
	p.own(dst)
	return p.load(dst)
}

// own makes sure dst's level slices are the caller's and hold the depth:
// a copy of a View's Top has the slot's (Load must not write there), and a
// new Top has none.
func (p *Publisher) own(dst *Top) {
	if dst.slot&ofView != 0 {
		dst.Bids, dst.Asks, dst.pub, dst.slot = nil, nil, nil, 0
	}
	if d := p.depth; cap(dst.Bids) < d || cap(dst.Asks) < d {
		growTop(dst, d)
	}
}

// prefetchNext starts fetching, for writing, the pin word, and the levels
// and both lines of the slot the writer fills after the one dst was last
// loaded from, if it was loaded from p: what a read finds new when the writer made
// one view since. The writer tries its slots in turn (see Publish), so that
// is the slot after dst's unless a reader held it.
func (p *Publisher) prefetchNext(dst *Top) {
	if dst.pub != p {
		return
	}
	k := dst.slot // 1-based: the next slot's 0-based index
	if k >= uint64(len(p.slots)) {
		k = 0 // and a View's (ofView)
	}
	prefetch(unsafe.Pointer(&p.store[int(k)*p.stride]), p.lines, unsafe.Pointer(p.slots[k]), unsafe.Pointer(&p.state))
}

// load is Load once dst's slices have the capacity.
//
// Where optimistic (amd64, outside race builds) it first copies the
// current slot without pinning it: it reads the pin word and the current
// Seq, copies the slot, and reads both again. The writer refills only a
// slot that is not current, and before it writes one it has stored, in
// this order, a new current Seq and the pin word that makes another slot
// current; x86 makes stores visible in order and keeps loads in order, so a
// copy that read any of a refill's writes then reads a changed Seq or slot
// and is done again. A copy that finds both unchanged holds the view that
// was current when the pin word was first read. The reader then writes no
// shared memory, which saves two atomic read-modify-writes of the pin word
// (and the writer the wait for that word's line when it next swaps it).
// After optimisticTries copies that the writer overtook (a reader
// descheduled mid-copy, say), or elsewhere, it pins the slot as Acquire
// does.
func (p *Publisher) load(dst *Top) bool {
	if optimistic {
		for try := 0; try < optimisticTries; try++ {
			g, cs := p.state.Load(), p.curSeq.Load()
			i := int(g>>idxShift) - 1
			if i < 0 {
				return false
			}
			p.copySlot(dst, i)
			if p.state.Load()>>idxShift == g>>idxShift && p.curSeq.Load() == cs {
				return true
			}
		}
	}
	g := p.state.Add(1)
	i := int(g>>idxShift) - 1
	if i < 0 {
		p.unpinNone()
		return false
	}
	p.copySlot(dst, i)
	p.release(uint64(i + 1))
	return true
}

// optimisticTries bounds the unpinned copies of one load.
const optimisticTries = 4

// copyHook, when set (by tests), runs in copySlot between the copy of the
// bids and that of the asks: a test makes the writer overtake a copy there.
var copyHook func()

// copySlot copies slot i's view into dst (whose slices have the depth as
// capacity): its full depth of levels per side, then the header.
func (p *Publisher) copySlot(dst *Top, i int) {
	d := p.depth
	lv := p.store[i*p.stride : i*p.stride+2*d]
	copy(dst.Bids[:d], lv[:d])
	if copyHook != nil {
		copyHook()
	}
	copy(dst.Asks[:d], lv[d:])
	v := &p.slots[i].view
	dst.Bids, dst.Asks = dst.Bids[:len(v.Bids)], dst.Asks[:len(v.Asks)]
	dst.BidLevels, dst.AskLevels = v.BidLevels, v.AskLevels
	dst.Valid, dst.Crossed, dst.Locked = v.Valid, v.Crossed, v.Locked
	dst.Generation, dst.Seq, dst.Stamp, dst.Scale = v.Generation, v.Seq, v.Stamp, v.Scale
	dst.pub, dst.slot = p, uint64(i+1)
}

// growTop gives t's level slices a capacity of at least n, keeping their
// content.
//
//go:noinline
func growTop(t *Top, n int) {
	if cap(t.Bids) < n {
		t.Bids = append(make([]Level, 0, n), t.Bids...)
	}
	if cap(t.Asks) < n {
		t.Asks = append(make([]Level, 0, n), t.Asks...)
	}
}

// Best returns the best level of a side in the view and whether there is one.
func (v *View) Best(side Side) (Level, bool) {
	lv := v.Bids
	if side == Ask {
		lv = v.Asks
	}
	if len(lv) == 0 {
		return Level{}, false
	}
	return lv[0], true
}

// Published returns how many Views have been made current (unchanged
// publishes that kept the current View are not counted): the current View's
// Seq.
func (p *Publisher) Published() uint64 {
	v := p.Acquire()
	if v == nil {
		return 0
	}
	n := v.Seq
	v.Release()
	return n
}

// Skipped returns how many Publish calls found no free slot.
func (p *Publisher) Skipped() uint64 { return p.skipped.Load() }
