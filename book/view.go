package book

import (
	"sync/atomic"
)

// Publisher hands consistent top-of-book views of one Book from its writer
// goroutine to any number of reader goroutines (strategies, servers, UIs)
// without locks: the writer never waits for a reader and a reader never waits
// for the writer.
//
// The writer copies the top levels of the book into one of a few preallocated
// View slots and publishes it with an atomic pointer store. A reader Acquires
// the current View, which pins that slot (a reference count) until Release;
// the writer only ever fills a slot that is neither current nor pinned, so a
// pinned View never changes under its reader. Publishing allocates nothing.
//
// Publish must be called only from the goroutine that owns the Book. Acquire,
// Release, Published and Skipped are safe from any goroutine.
type Publisher struct {
	depth int
	slots []slot
	cur   atomic.Pointer[View]
	next  int    // writer-only: slot to try first
	seq   uint64 // writer-only: last published sequence number

	published atomic.Uint64
	skipped   atomic.Uint64
}

// slot pairs a View with its pin count on a cache line of its own, so readers
// pinning one slot do not slow the writer filling the next.
type slot struct {
	refs atomic.Int32
	_    [60]byte
	view View
	_    [64]byte
}

// View is an immutable copy of the top of a book at one instant. A View
// obtained from Acquire stays unchanged until its Release; after Release the
// reader must not touch it or any slice taken from it. Its fields are
// read-only: the Publisher owns all of its memory.
type View struct {
	// Bids and Asks hold up to the publisher's depth levels, best first.
	Bids, Asks []Level
	// BidLevels and AskLevels are the book's full level counts per side,
	// which may exceed len(Bids) and len(Asks).
	BidLevels, AskLevels int
	// Valid, Crossed and Locked are the book's flags at publish time.
	Valid, Crossed, Locked bool
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
	// Scale is the book's fixed-point scale.
	Scale Scale

	refs *atomic.Int32
}

// NewPublisher returns a Publisher of views holding up to depth levels per
// side, for up to readers goroutines that hold a View at the same time. It
// preallocates readers+2 slots: one current, one being filled and one per
// pinning reader, so Publish can always find a free slot while at most
// readers Views are held. depth and readers must be at least 1 (it panics
// otherwise: a programming error, not bad data).
func NewPublisher(depth, readers int) *Publisher {
	if depth < 1 || readers < 1 {
		panic("book: NewPublisher needs depth ≥ 1 and readers ≥ 1")
	}
	p := &Publisher{depth: depth, slots: make([]slot, readers+2)}
	for i := range p.slots {
		s := &p.slots[i]
		s.view.Bids = make([]Level, 0, depth)
		s.view.Asks = make([]Level, 0, depth)
		s.view.refs = &s.refs
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
	cur := p.cur.Load()
	if cur != nil && p.shows(cur, b) {
		return true
	}
	n := len(p.slots)
	for k := 0; k < n; k++ {
		i := p.next + k
		if i >= n {
			i -= n
		}
		s := &p.slots[i]
		if &s.view == cur || s.refs.Load() != 0 {
			continue
		}
		// No reader can pin this slot from here on: a reader that loaded it
		// earlier re-checks the current pointer after pinning and backs off,
		// and the slot does not become current until the Store below.
		v := &s.view
		v.Bids = b.Top(Bid, v.Bids[:0], p.depth)
		v.Asks = b.Top(Ask, v.Asks[:0], p.depth)
		v.BidLevels = len(b.bids)
		v.AskLevels = len(b.asks)
		v.Valid = b.valid
		v.Crossed = b.Crossed()
		v.Locked = b.Locked()
		v.Generation = b.gen
		p.seq++
		v.Seq = p.seq
		v.Stamp = stamp
		v.Scale = b.scale
		p.cur.Store(v)
		p.next = i + 1
		p.published.Add(1)
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
// blocks; it retries only if the writer published in the few instructions
// between loading the pointer and pinning the slot.
func (p *Publisher) Acquire() *View {
	for {
		v := p.cur.Load()
		if v == nil {
			return nil
		}
		v.refs.Add(1)
		if p.cur.Load() == v {
			return v
		}
		// The writer replaced v meanwhile and may be refilling it: unpin and
		// take the newer one.
		v.refs.Add(-1)
	}
}

// Release unpins a View obtained from Acquire. The View must not be used
// afterwards.
func (v *View) Release() { v.refs.Add(-1) }

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
// publishes that kept the current View are not counted).
func (p *Publisher) Published() uint64 { return p.published.Load() }

// Skipped returns how many Publish calls found no free slot.
func (p *Publisher) Skipped() uint64 { return p.skipped.Load() }
