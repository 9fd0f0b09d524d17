package book

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/tapedeck/tapedeck/internal/latency"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPublisherBasics(t *testing.T) {
	p := NewPublisher(2, 1)
	if p.Acquire() != nil {
		t.Fatal("Acquire before the first Publish returned a view")
	}
	b := New(pmScale)
	_ = b.Replace(lv(1, 1, 2, 2, 3, 3), lv(9, 9, 8, 8, 7, 7))
	if !p.Publish(b, 42) {
		t.Fatal("Publish failed with free slots")
	}
	v := p.Acquire()
	if v == nil {
		t.Fatal("Acquire after Publish returned nil")
	}
	if !equalLevels(v.Bids, lv(3, 3, 2, 2)) || !equalLevels(v.Asks, lv(7, 7, 8, 8)) {
		t.Fatalf("view top = %v %v", v.Bids, v.Asks)
	}
	if v.BidLevels != 3 || v.AskLevels != 3 || !v.Valid || v.Crossed || v.Locked ||
		v.Seq != 1 || v.Stamp != 42 || v.Generation != b.Generation() || v.Scale != pmScale {
		t.Fatalf("view header = %+v", *v)
	}
	if l, ok := v.Best(Ask); !ok || l.Price != 7 {
		t.Fatalf("Best(Ask) = %v %v", l, ok)
	}
	// A held view does not change while the writer goes on.
	want := slices.Clone(v.Bids)
	for i := int64(0); i < 10; i++ {
		_ = b.Set(Bid, 3, 100+i, 0)
		p.Publish(b, i)
	}
	if !equalLevels(v.Bids, want) || v.Seq != 1 {
		t.Fatalf("held view changed: %v seq %d", v.Bids, v.Seq)
	}
	v.Release()
	v = p.Acquire()
	if v.Seq != 11 || v.Bids[0].Size != 109 {
		t.Fatalf("latest view seq %d best %v, want seq 11 size 109", v.Seq, v.Bids[0])
	}
	v.Release()
	if p.Published() != 11 || p.Skipped() != 0 {
		t.Fatalf("Published %d Skipped %d", p.Published(), p.Skipped())
	}
	if p.Depth() != 2 {
		t.Fatalf("Depth = %d", p.Depth())
	}

	// Nothing changed, or only below the view's depth: the view stays.
	gen := b.Generation()
	for _, change := range []func(){
		func() {},
		func() { _ = b.Set(Bid, 1, 77, 0) }, // third bid: below depth 2
		func() { b.Invalidate(); _ = b.Replace(lv(1, 77, 2, 2, 3, 109), lv(9, 9, 8, 8, 7, 7)) },
	} {
		change()
		if !p.Publish(b, 999) {
			t.Fatal("Publish failed")
		}
		if v := p.Acquire(); v.Seq != 11 || v.Stamp != 9 {
			t.Fatalf("unchanged top made a new view: seq %d stamp %d", v.Seq, v.Stamp)
		} else {
			v.Release()
		}
	}
	if b.Generation() == gen {
		t.Fatal("the book did not change")
	}
	// A change of a level count or a flag below the depth does make one.
	for i, change := range []func(){
		func() { _ = b.Set(Bid, 0, 5, 0) }, // a fourth bid
		func() { b.Invalidate() },          // validity
		func() { _ = b.Set(Ask, 7, 0, 0) }, // the best ask
		func() { _ = b.Set(Ask, 3, 1, 0) }, // crossed
	} {
		change()
		p.Publish(b, int64(i))
		v := p.Acquire()
		if v.Seq != uint64(12+i) || v.Stamp != int64(i) || v.Generation != b.Generation() {
			t.Fatalf("change %d: seq %d stamp %d gen %d/%d", i, v.Seq, v.Stamp, v.Generation, b.Generation())
		}
		if v.BidLevels != b.Len(Bid) || v.Valid != b.Valid() || v.Crossed != b.Crossed() {
			t.Fatalf("change %d: view %+v", i, *v)
		}
		v.Release()
	}
}

func TestPublisherSkipsWhenAllPinned(t *testing.T) {
	p := NewPublisher(1, 1) // 3 slots
	b := New(pmScale)
	_ = b.Replace(lv(1, 1), nil)
	// Pin more views than the publisher was sized for: the writer must not
	// wait, and must not touch a pinned slot.
	var held []*View
	for i := 0; i < 3; i++ {
		_ = b.Set(Bid, 1, int64(i+2), 0)
		if !p.Publish(b, int64(i)) {
			t.Fatalf("publish %d failed", i)
		}
		held = append(held, p.Acquire())
	}
	_ = b.Set(Bid, 1, 99, 0)
	if p.Publish(b, 99) {
		t.Fatal("Publish succeeded with every slot pinned")
	}
	if p.Skipped() != 1 {
		t.Fatalf("Skipped = %d, want 1", p.Skipped())
	}
	for i, v := range held {
		if v.Stamp != int64(i) {
			t.Fatalf("pinned view %d has stamp %d", i, v.Stamp)
		}
	}
	held[0].Release()
	_ = b.Set(Bid, 1, 100, 0)
	if !p.Publish(b, 100) {
		t.Fatal("Publish failed after a release")
	}
	v := p.Acquire()
	if v.Stamp != 100 {
		t.Fatalf("current stamp %d, want 100", v.Stamp)
	}
	v.Release()
	for _, v := range held[1:] {
		v.Release()
	}
}

func TestPublisherAllocs(t *testing.T) {
	p := NewPublisher(20, 2)
	b := New(pmScale)
	bids := make([]Level, 50)
	for i := range bids {
		bids[i] = Level{Price: int64(i + 1), Size: 1}
	}
	_ = b.Replace(bids, nil)
	var own, polled Top
	n := testing.AllocsPerRun(200, func() {
		_ = b.Set(Bid, 50, 2, 0)
		p.Publish(b, 0)
		v := p.Acquire()
		v.Release()
		p.Load(&own)
		p.Refresh(&polled)
	})
	if n != 0 {
		t.Fatalf("Set+Publish+Acquire+Release+Load+Refresh: %v allocs per run, want 0", n)
	}
	if polled.Seq != own.Seq || !equalLevels(polled.Bids, own.Bids) {
		t.Fatalf("Refresh: seq %d bids %v, Load: seq %d bids %v", polled.Seq, polled.Bids, own.Seq, own.Bids)
	}
	if len(own.Bids) != 20 || own.Bids[0] != (Level{Price: 50, Size: 2}) || own.Seq != p.Published() {
		t.Fatalf("Load: %d bids, best %v, seq %d of %d", len(own.Bids), own.Bids[0], own.Seq, p.Published())
	}
}

// TestPublisherConsistency runs a writer flat out against readers and checks
// that every view is internally consistent: the writer keeps an invariant
// (every level's size equals the update number, which is also the stamp, the
// prices and the number of levels per side, depth or one or two fewer,
// follow from it) that a torn view would break; a Load, which copies a
// slot's full depth, must show exactly the view's levels. The readers start
// before the first Publish; the two that Acquire hold their first view and
// every 64th after it until the writer has published a newer one (waited
// for, not left to the scheduler, so their Releases always find the slot no
// longer current), one copies with Load, one polls with Refresh; each takes
// the same number of views. At the end every pin has been taken back. Run it
// under -race.
func TestPublisherConsistency(t *testing.T) {
	const depth, readers = 8, 4
	p := NewPublisher(depth, readers)
	b := New(pmScale)
	levels := make([]Level, 2*depth)
	stop := make(chan struct{})
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writer
		defer wg.Done()
		<-started
		for k := int64(1); ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			for i := range levels {
				levels[i] = Level{Price: k + int64(i), Size: k}
			}
			n := sideLevels(k)
			if err := b.Replace(levels[depth-n:depth], levels[depth:depth+n]); err != nil {
				t.Error(err)
				return
			}
			p.Publish(b, k)
		}
	}()
	iters := 20000
	if testing.Short() {
		iters = 2000
	}
	check := func(v *Top, lastSeq *uint64) {
		k := v.Stamp
		if v.Seq < *lastSeq {
			t.Errorf("view seq went back: %d after %d", v.Seq, *lastSeq)
		}
		*lastSeq = v.Seq
		if n := sideLevels(k); len(v.Bids) != n || len(v.Asks) != n || v.BidLevels != n || v.AskLevels != n {
			t.Errorf("view of stamp %d has %d/%d levels of %d/%d, want %d", k, len(v.Bids), len(v.Asks), v.BidLevels, v.AskLevels, n)
		}
		for j, l := range v.Bids {
			if l.Size != k || l.Price != k+int64(depth-1-j) {
				t.Errorf("torn view: stamp %d bid %d = %+v", k, j, l)
			}
		}
		for j, l := range v.Asks {
			if l.Size != k || l.Price != k+int64(depth+j) {
				t.Errorf("torn view: stamp %d ask %d = %+v", k, j, l)
			}
		}
	}
	var views, late atomic.Int64
	if sideLevels(1) == sideLevels(2) {
		t.Fatal("the writer does not vary its depth")
	}
	var rw sync.WaitGroup
	for r := 0; r < readers; r++ {
		rw.Add(1)
		go func() {
			defer rw.Done()
			var lastSeq uint64
			var own Top
			// Each reader takes iters views, however long the writer takes
			// to start or to publish (Refresh sees only new ones).
			for i, seen := 0, 0; seen < iters; i++ {
				if r == 0 && i == 10 {
					close(started) // some Acquires came before any Publish
				}
				if r%2 == 1 {
					read := p.Load
					if r == 3 {
						read = p.Refresh
					}
					if read(&own) {
						seen++
						views.Add(1)
						check(&own, &lastSeq)
					} else {
						runtime.Gosched()
					}
					continue
				}
				v := p.Acquire()
				if v == nil {
					runtime.Gosched()
					continue
				}
				seen++
				views.Add(1)
				check(&v.Top, &lastSeq)
				if seen%64 == 1 {
					// Hold the view until the writer has published a newer
					// one (it publishes until every reader is done, so this
					// ends whatever the scheduling): the view stays as it was
					// and its Release finds the slot no longer current.
					seq := v.Seq
					for p.Published() == seq {
						runtime.Gosched()
					}
					late.Add(1)
					check(&v.Top, &seq) // unchanged while held
				}
				v.Release()
			}
		}()
	}
	rw.Wait()
	close(stop)
	wg.Wait()
	if views.Load() == 0 || late.Load() == 0 {
		t.Fatalf("readers saw %d views, %d released after newer ones", views.Load(), late.Load())
	}
	if p.Skipped() != 0 {
		t.Fatalf("writer skipped %d publishes with readers ≤ sizing", p.Skipped())
	}
	// Every pin was taken back: no count on the current slot, none left on
	// the others.
	if g := p.state.Load(); g&countMask != 0 {
		t.Fatalf("%d pins left on the current slot", g&countMask)
	}
	for i := range p.slots {
		if n := p.slots[i].refs.Load(); n != 0 {
			t.Fatalf("slot %d keeps %d pins", i, n)
		}
	}
}

// sideLevels is the number of levels per side TestPublisherConsistency's
// writer gives its book at update k.
func sideLevels(k int64) int { return 8 - int(k%3) }

// Load copies exactly the current view (its levels and header, as Acquire
// shows them) into the caller's Top, whatever the slot held before, reusing
// the caller's slices once they have the depth as capacity.
func TestPublisherLoad(t *testing.T) {
	const depth = 4
	p := NewPublisher(depth, 1)
	var own Top
	if p.Load(&own) {
		t.Fatal("Load before the first Publish")
	}
	b := New(pmScale)
	for k, side := range [][]Level{
		lv(1, 1, 2, 2, 3, 3, 4, 4, 5, 5), // deeper than the view
		lv(7, 1),                         // a slot that held 4 levels now holds 1
		lv(1, 1, 2, 2, 3, 3),
		nil,
		lv(2, 9, 3, 9),
	} {
		if err := b.Replace(side, lv(9, 9, 8, 8)[:2*(k%2)]); err != nil {
			t.Fatal(err)
		}
		if k == 3 {
			b.Invalidate()
		}
		p.Publish(b, int64(k))
		if !p.Load(&own) {
			t.Fatal("no view")
		}
		v := p.Acquire()
		if !equalLevels(own.Bids, v.Bids) || !equalLevels(own.Asks, v.Asks) || header(own) != header(v.Top) {
			t.Fatalf("frame %d: Load %+v, view %+v", k, own, v.Top)
		}
		if k == 1 && (len(own.Bids) != 1 || own.Bids[0] != (Level{Price: 7, Size: 1})) {
			t.Fatalf("Load shows %v", own.Bids)
		}
		v.Release()
		if cap(own.Bids) < depth || cap(own.Asks) < depth {
			t.Fatalf("Load left capacities %d/%d below the depth", cap(own.Bids), cap(own.Asks))
		}
	}
	// The caller's slices are reused, not replaced.
	bids, asks := &own.Bids[:1][0], &own.Asks[:1][0]
	p.Load(&own)
	if &own.Bids[:1][0] != bids || &own.Asks[:1][0] != asks {
		t.Fatal("Load replaced slices that had the capacity")
	}
}

// Refresh leaves a Top that shows the current view as it is, without
// pinning, and otherwise copies the current view exactly as Load does:
// after any number of publishes (a slot refilled with the same index is
// not taken for the view it held), from a Top last filled by another
// Publisher, or a zero Top.
func TestPublisherRefresh(t *testing.T) {
	const depth = 3
	p, other := NewPublisher(depth, 1), NewPublisher(depth, 1) // 3 slots each
	var own Top
	if p.Refresh(&own) || len(own.Bids) != 0 {
		t.Fatal("Refresh before the first Publish")
	}
	b := New(pmScale)
	ob := New(pmScale)
	k := int64(0)
	publish := func(n int) {
		for ; n > 0; n-- {
			k++
			_ = b.Replace(lv(k, 1, k+1, 2), lv(k+10, 3))
			p.Publish(b, k)
			_ = ob.Replace(lv(k, 7), nil)
			other.Publish(ob, k)
		}
	}
	same := func(what string) {
		t.Helper()
		v := p.Acquire()
		defer v.Release()
		if !equalLevels(own.Bids, v.Bids) || !equalLevels(own.Asks, v.Asks) || header(own) != header(v.Top) {
			t.Fatalf("%s: Refresh %+v, view %+v", what, own, v.Top)
		}
	}
	publish(1)
	if !p.Refresh(&own) {
		t.Fatal("no view")
	}
	same("first")
	for _, n := range []int{0, 1, 2, 3, 4, 6, 0, 1} { // 3 and 6: back in the same slot
		publish(n)
		slot := own.slot
		if !p.Refresh(&own) {
			t.Fatal("no view")
		}
		same(fmt.Sprintf("%d publishes", n))
		if n%3 == 0 && own.slot != slot {
			t.Fatalf("%d publishes: slot %d after %d", n, own.slot, slot)
		}
	}
	// Unchanged: nothing is written, not even a pin (so a Top changed by
	// its caller stays changed: Refresh's contract says not to).
	state := p.state.Load()
	own.Bids[0].Size = -1
	if !p.Refresh(&own) || own.Bids[0].Size != -1 || p.state.Load() != state {
		t.Fatalf("unchanged view: bids %v, state %#x then %#x", own.Bids, state, p.state.Load())
	}
	own.Bids[0].Size = 2
	// An unchanged book makes no new view.
	p.Publish(b, 99)
	if !p.Refresh(&own) || own.Stamp != k {
		t.Fatalf("stamp %d, want %d", own.Stamp, k)
	}
	// other is at the same slot and sequence number: its view is copied.
	if own.Seq != other.Published() {
		t.Fatalf("seq %d and %d", own.Seq, other.Published())
	}
	if !other.Refresh(&own) || len(own.Bids) != 1 || own.Bids[0] != (Level{Price: k, Size: 7}) || own.pub != other {
		t.Fatalf("Refresh from another publisher: %+v", own)
	}
	// Load then Refresh, and Refresh then Load, agree.
	publish(1)
	p.Load(&own)
	if !p.Refresh(&own) {
		t.Fatal("no view")
	}
	same("Load then Refresh")
	publish(2)
	p.Refresh(&own)
	p.Load(&own)
	same("Refresh then Load")
	if g := p.state.Load(); g&countMask != 0 {
		t.Fatalf("%d pins left", g&countMask)
	}
}

// A copy of a View's Top has the slot's slices: Load and Refresh into it
// give it slices of its own rather than write into the slot, which may be
// pinned by other readers (here: the view itself) or refilled later.
func TestPublisherLoadIntoViewCopy(t *testing.T) {
	p := NewPublisher(2, 2)
	b := New(pmScale)
	_ = b.Replace(lv(1, 1, 2, 2), lv(5, 5))
	p.Publish(b, 1)
	v := p.Acquire()
	held := slices.Clone(v.Bids)
	inStore := func(l []Level) bool {
		first, last := uintptr(unsafe.Pointer(&p.store[0])), uintptr(unsafe.Pointer(&p.store[len(p.store)-1]))
		at := uintptr(unsafe.Pointer(&l[:1][0]))
		return at >= first && at <= last
	}
	current := v.Top
	if !p.Refresh(&current) || inStore(current.Bids) || !equalLevels(current.Bids, held) {
		t.Fatalf("Refresh of the current view's Top: %v, in the store %v", current.Bids, inStore(current.Bids))
	}
	_ = b.Replace(lv(3, 3, 4, 4), lv(5, 5))
	p.Publish(b, 2)
	for _, read := range []func(*Top) bool{p.Load, p.Refresh} {
		c := v.Top
		if !read(&c) || c.Stamp != 2 || c.Bids[0].Price != 4 || inStore(c.Bids) || inStore(c.Asks) {
			t.Fatalf("copy of the view: %+v", c)
		}
		if !equalLevels(v.Bids, held) {
			t.Fatalf("the held view changed: %v, was %v", v.Bids, held)
		}
	}
	v.Release()
	if p.Acquire().Release(); p.state.Load()&countMask != 0 {
		t.Fatal("pins left")
	}
}

// header is t without its levels, comparable.
func header(t Top) [9]any {
	return [9]any{t.BidLevels, t.AskLevels, t.Valid, t.Crossed, t.Locked, t.Generation, t.Seq, t.Stamp, t.Scale}
}

// Every slot's levels start a cache line and no two slots' levels share
// one, whatever the depth, so a reader copying one slot never waits for a
// line the writer is filling for the next.
func TestPublisherLayout(t *testing.T) {
	// A slot is two lines: the View's slices, scale, flags and publisher in
	// the first (written only when they change), the rest in the second.
	// The split of fields between the lines is laid out for 64-bit
	// platforms; on 32-bit ones the View is smaller and only the slot's
	// size holds.
	var v View // offsets of promoted fields are the View's
	if unsafe.Sizeof(slot{}) != 2*cacheLine || unsafe.Sizeof(uintptr(0)) == 8 && (unsafe.Offsetof(v.Bids) != 0 ||
		unsafe.Offsetof(v.Locked) >= cacheLine || unsafe.Offsetof(v.pub) >= cacheLine ||
		unsafe.Offsetof(v.BidLevels) != cacheLine) {
		t.Fatalf("slot of %d bytes: Locked at %d, pub at %d, BidLevels at %d",
			unsafe.Sizeof(slot{}), unsafe.Offsetof(v.Locked), unsafe.Offsetof(v.pub), unsafe.Offsetof(v.BidLevels))
	}
	// The pin word and the current Seq share a line that nothing else of
	// the Publisher's is on (where the fields before them have their 64-bit
	// sizes: see the Publisher's padding).
	line := func(p unsafe.Pointer) uintptr { return uintptr(p) / cacheLine }
	for readers := 1; readers <= 40 && unsafe.Sizeof(uintptr(0)) == 8; readers++ {
		p := NewPublisher(readers, readers)
		l := line(unsafe.Pointer(&p.state))
		if line(unsafe.Pointer(&p.curSeq)) != l || line(unsafe.Add(unsafe.Pointer(&p.store), 23)) == l ||
			line(unsafe.Pointer(&p.cur)) == l {
			t.Fatalf("%d readers: state at %p, curSeq at %p, store at %p, cur at %p", readers, &p.state, &p.curSeq, &p.store, &p.cur)
		}
	}
	for readers := 1; readers <= 40; readers++ {
		for _, s := range NewPublisher(1, readers).slots {
			if uintptr(unsafe.Pointer(s))%cacheLine != 0 {
				t.Fatalf("%d readers: a slot at %p", readers, s)
			}
		}
	}
	for depth := 1; depth <= 40; depth++ {
		p := NewPublisher(depth, 3)
		size := int(unsafe.Sizeof(Level{}))
		if p.stride < 2*depth || p.stride*size%cacheLine != 0 || len(p.store) != p.stride*len(p.slots) {
			t.Fatalf("depth %d: stride %d levels (%d bytes), %d levels for %d slots", depth, p.stride, p.stride*size, len(p.store), len(p.slots))
		}
		for i := range p.slots {
			at := unsafe.Pointer(&p.store[i*p.stride])
			if uintptr(at)%cacheLine != 0 || unsafe.Pointer(&p.slots[i].view.Bids[:1][0]) != at {
				t.Fatalf("depth %d slot %d: levels at %p (view's at %p)", depth, i, at, &p.slots[i].view.Bids[:1][0])
			}
		}
	}
}

// A pin taken before the first Publish is taken back whether or not that
// Publish came in between.
func TestPublisherAcquireBeforePublish(t *testing.T) {
	p := NewPublisher(1, 1)
	if p.Acquire() != nil || p.Published() != 0 {
		t.Fatal("a view before the first Publish")
	}
	if g := p.state.Load(); g != 0 {
		t.Fatalf("state %#x after an empty Acquire", g)
	}
	// The Publish drops pins counted on no slot: simulate one that raced.
	p.state.Add(1)
	b := New(pmScale)
	_ = b.Replace(lv(1, 1), nil)
	p.Publish(b, 1)
	p.unpinNone() // the racing reader's take-back: nothing left to do
	if g := p.state.Load(); g&countMask != 0 {
		t.Fatalf("%d pins after the first Publish", g&countMask)
	}
	v := p.Acquire()
	if v == nil || v.Seq != 1 || p.state.Load()&countMask != 1 {
		t.Fatalf("view %v, state %#x", v, p.state.Load())
	}
	v.Release()
}

// BenchmarkReaderUnderWriter compares a strategy goroutine reading the top of
// a book while a writer goroutine applies frames flat out, for the Publisher
// and for a plain sync.Mutex and a sync.RWMutex around the Book. A frame is
// what a decoder applies atomically: usually a few level changes, every 50th
// a 100+100-level snapshot. Each reader op takes a consistent top-10 of both
// sides; the metrics are the reader's latency percentiles and the writer's
// cost per frame, with the reader and alone (see latency.ReaderUnderWriter).
func BenchmarkReaderUnderWriter(b *testing.B) {
	const depth = 10
	// publisher: Load (a copy of the current view); publisher-refresh:
	// Refresh (the same, unless the reader's copy is still current);
	// publisher-view: Acquire, copy the View's levels, Release.
	for _, design := range []string{"publisher", "publisher-refresh", "publisher-view"} {
		b.Run("design="+design, func(b *testing.B) {
			p := NewPublisher(depth, 1)
			f := newBenchFrames(100)
			write := func(i int) {
				f.apply(i)
				p.Publish(f.book, int64(i))
			}
			if design == "publisher-view" {
				latency.ReaderUnderWriter(b, write, latency.PinnedRead(p.Acquire, viewLevels, (*View).Release))
				return
			}
			read := p.Load
			if design == "publisher-refresh" {
				read = p.Refresh
			}
			var top Top
			latency.ReaderUnderWriter(b, write, latency.SeqRead(func() (uint64, bool) {
				ok := read(&top)
				return top.Seq, ok
			}))
		})
	}
	for _, l := range latency.Locks() {
		b.Run("design="+l.Design, func(b *testing.B) {
			f := newBenchFrames(100)
			bids, asks := make([]Level, 0, 16), make([]Level, 0, 16)
			var last uint64
			latency.ReaderUnderWriter(b, func(i int) {
				l.W.Lock()
				f.apply(i)
				l.W.Unlock()
			}, func() bool {
				l.R.Lock()
				bids = f.book.Top(Bid, bids[:0], depth)
				asks = f.book.Top(Ask, asks[:0], depth)
				g := f.book.Generation()
				l.R.Unlock()
				changed := g != last
				last = g
				return changed
			})
		})
	}
}

// viewLevels is what latency.PinnedRead copies from a View.
func viewLevels(v *View) (bids, asks []Level, seq uint64) { return v.Bids, v.Asks, v.Seq }

// The reader benchmark's frames move the top of the book: nearly every
// frame makes a new view.
func TestBenchFramesMoveTheTop(t *testing.T) {
	f := newBenchFrames(100)
	p := NewPublisher(10, 1)
	const frames = 1000
	for i := 0; i < frames; i++ {
		f.apply(i)
		p.Publish(f.book, int64(i))
	}
	if n := p.Published(); n < frames*8/10 {
		t.Fatalf("%d views for %d frames", n, frames)
	}
}

type benchOp struct {
	side        Side
	price, size int64
}

// benchFrames is a writer's workload: a book of n levels per side around 0.50
// on a 1e-4 grid and a cycle of updates shaped like a live Polymarket book
// (most within a few ticks of the touch, some deletes and re-inserts, a few
// deep), grouped into frames of 4 changes with a full snapshot every 50th.
// Each change in the cycle is followed by one restoring its level; a frame
// starts with the restore of the previous frame's last change, so it leaves
// a level changed and nearly every frame moves the top a reader sees (were
// the frames aligned on the pairs, the book and its top would be the same
// after every frame and a Publisher would never make a new view).
type benchFrames struct {
	book       *Book
	ops        []benchOp
	bids, asks []Level
}

func newBenchFrames(n int) *benchFrames {
	f := &benchFrames{book: New(pmScale), bids: make([]Level, n), asks: make([]Level, n)}
	step := int64(benchTick(n))
	for i := range f.bids {
		f.bids[i] = Level{Price: 4900 - step*int64(i), Size: 1e6}
		f.asks[i] = Level{Price: 5000 + step*int64(i), Size: 1e6}
	}
	_ = f.book.Replace(f.bids, f.asks)
	f.ops = benchOps(n, 1024)
	return f
}

func (f *benchFrames) apply(i int) {
	if i%50 == 0 {
		_ = f.book.Replace(f.bids, f.asks)
		return
	}
	for k := 0; k < 4; k++ {
		o := f.ops[(4*i+k+1)%len(f.ops)]
		_ = f.book.Set(o.side, o.price, o.size, 0)
	}
}

// benchTick is the grid of a bench book of n levels per side: 0.001 like most
// Polymarket books, 0.0001 for the deepest so that prices stay in (0, 1).
func benchTick(n int) int {
	if n > 400 {
		return 1
	}
	return 10
}

// benchOps returns count level changes for a book of n levels per side built
// as in newBenchFrames: each change is followed by one restoring the level, so
// the book keeps its shape over the cycle.
func benchOps(n, count int) []benchOp {
	ops := make([]benchOp, 0, count)
	x := uint32(1)
	for len(ops) < count {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		side := Side(x & 1)
		var dist int64
		switch r := (x >> 1) % 100; {
		case r < 85:
			dist = int64((x >> 8) % 4) // at or next to the touch
		case r < 97:
			dist = int64((x>>8)%16) + 4
		default:
			dist = int64((x >> 8) % uint32(n))
		}
		dist = min(dist, int64(n-1))
		step := int64(benchTick(n))
		price := 4900 - step*dist
		if side == Ask {
			price = 5000 + step*dist
		}
		ops = append(ops, benchOp{side, price, int64(x>>4) % 5e6}, benchOp{side, price, 1e6})
	}
	return ops
}

// A Load or Refresh that the writer overtakes mid-copy (the slot it copies
// is refilled between its bids and its asks) copies again and returns the
// view current after the refill, never the bids of one view with the asks
// of another; one overtaken on every unpinned try ends pinned and
// consistent, and no pin is left behind.
func TestPublisherLoadOvertaken(t *testing.T) {
	if !optimistic {
		t.Skip("Load and Refresh pin in this build (the race detector, or not amd64)")
	}
	p := NewPublisher(4, 1) // three slots
	b := New(pmScale)
	k := int64(0)
	publish := func() { // every level's size is the view's stamp
		k++
		if err := b.Replace(lv(2, k, 1, k), lv(3, k, 4, k, 5, k)); err != nil {
			t.Fatal(err)
		}
		if !p.Publish(b, k) {
			t.Fatal("publish skipped")
		}
	}
	publish()
	defer func() { copyHook = nil }()
	for _, overtakes := range []int{1, 2, optimisticTries - 1, optimisticTries, 50} {
		for _, name := range []string{"Load", "Refresh"} {
			var top Top
			p.Load(&top) // Refresh finds a copy to refresh
			publish()    // and a new view to copy
			calls := 0
			copyHook = func() {
				if calls++; calls <= overtakes {
					for range 3 { // every slot refilled, the one being copied too
						publish()
					}
				}
			}
			read := p.Load
			if name == "Refresh" {
				read = p.Refresh
			}
			if !read(&top) {
				t.Fatalf("%s: no view", name)
			}
			copyHook = nil
			if want := min(overtakes, optimisticTries) + 1; calls != want {
				t.Fatalf("%s overtaken %d times: %d copies, want %d", name, overtakes, calls, want)
			}
			for _, l := range append(append([]Level(nil), top.Bids...), top.Asks...) {
				if l.Size != top.Stamp {
					t.Fatalf("%s overtaken %d times: torn view: stamp %d, levels %v %v", name, overtakes, top.Stamp, top.Bids, top.Asks)
				}
			}
			if len(top.Bids) != 2 || len(top.Asks) != 3 || top.Seq != uint64(top.Stamp) {
				t.Fatalf("%s overtaken %d times: view %+v", name, overtakes, top)
			}
			// The copy that succeeds is of the view current at its start: the
			// last one, unless it was pinned and overtaken too (the writer
			// then went on publishing into the other slots while the copy
			// held its slot).
			if overtakes <= optimisticTries && top.Stamp != k {
				t.Fatalf("%s overtaken %d times: stamp %d, the current view is %d", name, overtakes, top.Stamp, k)
			}
			if overtakes > optimisticTries && top.Stamp != k-3 {
				t.Fatalf("%s overtaken %d times, pinned: stamp %d, want the view of the pin, %d", name, overtakes, top.Stamp, k-3)
			}
		}
	}
	if g := p.state.Load(); g&countMask != 0 {
		t.Fatalf("%d pins left on the current slot", g&countMask)
	}
	for i := range p.slots {
		if n := p.slots[i].refs.Load(); n != 0 {
			t.Fatalf("slot %d keeps %d pins", i, n)
		}
	}
}
