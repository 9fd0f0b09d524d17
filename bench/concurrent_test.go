package bench

import (
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/internal/latency"
	"github.com/tapedeck/tapedeck/venue"
)

// BenchmarkReaderUnderWriter is a strategy goroutine reading a consistent
// top 10 of the busiest book while the decoder applies a generated
// Polymarket session flat out on another goroutine, for book.Publisher
// (lock-free published views) and for a plain sync.Mutex and a sync.RWMutex
// around the decoder. One op is one read; read-p50/p99/p99.9-ns are the
// reader's latency percentiles (and maximum: a mutex reader's mean is made of
// rare multi-millisecond waits), write-ns/frame the writer's cost per frame
// (decode + apply + publish, or decode + apply under the lock) and
// write-slowdown its CPU time per frame beside the reader over the same
// writer's alone, in the same run (see latency.ReaderUnderWriter). Every
// sample includes one reading of the clock (clock-p50-ns). new-% is the
// share of reads that found a new view (for the locks: a new book
// generation) and read-new-* their percentiles: those reads fetch from the
// writer's core and make the tail; none can take less than xfer-p50-ns, one
// cache-line transfer between the two CPUs, measured in the same run. A run
// on a busy shared machine where the writer's thread was mostly descheduled
// shows a tiny new-% and says little about contention. A mutex reader's tail stays short because it keeps the
// lock: the writer then applies its frames in bursts between
// millisecond-long waits, so few reads see new state and those wait about
// a millisecond (new-%, read-new-p50-ns).
func BenchmarkReaderUnderWriter(b *testing.B) {
	const depth = 10
	s := loadSession(b, venue.Polymarket, streamFrames(b))
	inst := busiest(b, s)
	// publisher: Publisher.Load, the consistent copy of the current view
	// (its header and top levels); publisher-refresh: Publisher.Refresh, the
	// same unless the reader's copy is still the current view (then two
	// atomic loads); publisher-view: Acquire, copy the View's levels,
	// Release, as a reader that may hold the view would.
	for _, design := range []string{"publisher", "publisher-refresh", "publisher-view"} {
		b.Run("design="+design, func(b *testing.B) {
			d := newDecoder(venue.Polymarket)
			warm(b, d, s.frames)
			bk := d.Book(inst)
			p := book.NewPublisher(depth, 1)
			p.Publish(bk, 0)
			var out venue.Frame
			write := func(i int) {
				_ = d.Decode(s.frames[i%len(s.frames)], 0, &out)
				p.Publish(bk, int64(i))
			}
			if design == "publisher-view" {
				latency.ReaderUnderWriter(b, write, latency.PinnedRead(p.Acquire, func(v *book.View) ([]book.Level, []book.Level, uint64) {
					return v.Bids, v.Asks, v.Seq
				}, (*book.View).Release))
				return
			}
			read := p.Load
			if design == "publisher-refresh" {
				read = p.Refresh
			}
			var top book.Top
			latency.ReaderUnderWriter(b, write, latency.SeqRead(func() (uint64, bool) {
				ok := read(&top)
				return top.Seq, ok
			}))
		})
	}
	for _, l := range latency.Locks() {
		b.Run("design="+l.Design, func(b *testing.B) {
			d := newDecoder(venue.Polymarket)
			warm(b, d, s.frames)
			bk := d.Book(inst)
			var out venue.Frame
			bids, asks := make([]book.Level, 0, 16), make([]book.Level, 0, 16)
			var last uint64 // the previous read's book generation
			latency.ReaderUnderWriter(b, func(i int) {
				l.W.Lock()
				_ = d.Decode(s.frames[i%len(s.frames)], 0, &out)
				l.W.Unlock()
			}, func() bool {
				l.R.Lock()
				bids = bk.Top(book.Bid, bids[:0], depth)
				asks = bk.Top(book.Ask, asks[:0], depth)
				g := bk.Generation()
				l.R.Unlock()
				changed := g != last
				last = g
				return changed
			})
		})
	}
}

// busiest returns the instrument with the most events in the session.
func busiest(b *testing.B, s *session) string {
	d := newDecoder(s.venue)
	var out venue.Frame
	n := map[string]int{}
	for _, f := range s.frames {
		if d.Decode(f, 0, &out) == nil {
			for _, e := range out.Events {
				n[e.Instrument]++
			}
		}
	}
	best := ""
	for k, c := range n {
		if k != "" && (c > n[best] || (c == n[best] && k < best)) {
			best = k
		}
	}
	if best == "" {
		b.Fatal("no instrument in the session")
	}
	return best
}

func warm(b *testing.B, d venue.Decoder, frames [][]byte) {
	var out venue.Frame
	for _, f := range frames {
		_ = d.Decode(f, 0, &out)
	}
}
