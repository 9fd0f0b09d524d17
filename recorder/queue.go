package recorder

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
)

// maxPooledBuf is the largest frame buffer kept for reuse, and maxPooled how
// many are kept: typical frames are a few KB, and rare large ones (an initial
// dump, allDexsAssetCtxs) should not pin memory; the pool holds at most 64 MiB.
const (
	maxPooledBuf = 64 << 10
	maxPooled    = 1024
)

// entry is one record on its way to the writer. For frames, buf is the pooled
// buffer Payload aliases; the writer returns it to the pool once appended.
type entry struct {
	rec    datasets.Record
	pooled bool
	// settle is the live engine's marker (liveEngine.settle): not a
	// record; the writer hands it to the engine.
	settle *settleMark
}

// queue is the bounded hand-off between socket readers and the writer. Frames
// are pushed without blocking: a frame that does not fit is dropped and
// counted on its connection, which reports the loss as a KindOverload record
// as soon as one fits again. Control records wait for room: they are rare
// and are what makes a loss visible.
type queue struct {
	ch       chan entry
	free     chan []byte
	maxBytes int64
	bytes    atomic.Int64

	// mu orders the time stamp and the send, so that MonoNs never decreases
	// along the queue (and so along Seq) although several readers push.
	mu       sync.Mutex
	base     time.Time // the dataset's monotonic origin
	baseWall int64
	lastMono int64
	lastWall int64
	closed   bool
	now      func() time.Time // the recorder's clock
}

func newQueue(frames int, maxBytes int64, base time.Time) *queue {
	return &queue{
		ch:       make(chan entry, frames),
		free:     make(chan []byte, min(frames, maxPooled)),
		maxBytes: maxBytes,
		base:     base,
		baseWall: base.UnixNano(),
		now:      time.Now,
	}
}

// getBuf returns an empty buffer for one frame, reused when possible.
func (q *queue) getBuf() []byte {
	select {
	case b := <-q.free:
		return b[:0]
	default:
		return make([]byte, 0, 4096)
	}
}

// putBuf recycles a frame buffer.
func (q *queue) putBuf(b []byte) {
	if cap(b) > maxPooledBuf {
		return
	}
	select {
	case q.free <- b:
	default:
	}
}

// stamp returns the wall and monotonic receive times of now. It must be
// called with q.mu held; t is the time the caller read the clock.
func (q *queue) stamp(t time.Time) (wall, mono int64) {
	mono = int64(t.Sub(q.base))
	if mono < q.lastMono {
		// Another reader stamped and pushed between our clock read and
		// taking the lock; keep MonoNs non-decreasing along Seq.
		mono = q.lastMono
	}
	q.lastMono = mono
	wall = t.UnixNano()
	if wall < q.lastWall && q.lastWall-wall < int64(time.Millisecond) {
		wall = q.lastWall // the same race; a real clock step back is kept
	}
	q.lastWall = wall
	return wall, mono
}

// tryPush sends a frame (or an overload record) received at t without
// blocking. It reports false when the queue is full (or closed); the caller
// then still owns buf.
func (q *queue) tryPush(e *entry, t time.Time) bool {
	n := int64(len(e.rec.Payload))
	if nb := q.bytes.Add(n); nb > q.maxBytes && nb != n { // one frame always fits an empty queue
		q.bytes.Add(-n)
		return false
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		q.bytes.Add(-n)
		return false
	}
	e.rec.WallNs, e.rec.MonoNs = q.stamp(t)
	select {
	case q.ch <- *e:
		q.mu.Unlock()
		return true
	default:
		q.mu.Unlock()
		q.bytes.Add(-n)
		return false
	}
}

// push sends a control record, waiting for room until ctx ends. The record
// is stamped when it enters the queue. It reports false if ctx ended first
// or the queue is closed.
func (q *queue) push(ctx context.Context, e entry) bool { return q.pushAt(ctx, e, time.Time{}) }

// pushAt is push with the record stamped at t instead (zero t: when it
// enters the queue), for a record a received frame caused: it carries that
// frame's receive time.
func (q *queue) pushAt(ctx context.Context, e entry, t time.Time) bool {
	delay := 50 * time.Microsecond
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return false
		}
		at := t
		if at.IsZero() {
			at = q.now()
		}
		e.rec.WallNs, e.rec.MonoNs = q.stamp(at)
		select {
		case q.ch <- e:
			q.bytes.Add(int64(len(e.rec.Payload)))
			q.mu.Unlock()
			return true
		default:
		}
		q.mu.Unlock()
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(2*delay, 10*time.Millisecond)
	}
}

// close ends the queue: the writer drains what is left. Every producer must
// have stopped pushing (tryPush and push see closed and fail safely).
func (q *queue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
}

// drops accounts frames one connection could not queue. The reader adds;
// whoever gets an overload record into the dataset first (the reader on its
// next frame, or the writer once the queue runs empty) takes the counts.
type drops struct {
	mu          sync.Mutex
	pending     atomic.Bool
	n           uint64
	first, last int64 // wall ns of the first and last dropped frame
}

func (d *drops) add(wallNs int64) {
	d.mu.Lock()
	if d.n == 0 {
		d.first = wallNs
	}
	d.n++
	d.last = wallNs
	d.pending.Store(true)
	d.mu.Unlock()
}

// peekLocked returns the pending counts as an overload payload; ok is false
// if there are none. Callers hold d.mu and call clearLocked once the record
// is in.
func (d *drops) peekLocked() (c datasets.Control, ok bool) {
	if d.n == 0 {
		return c, false
	}
	return datasets.Control{Dropped: d.n, FromNs: d.first, ToNs: d.last,
		Text: "writer queue full: frames dropped"}, true
}

func (d *drops) clearLocked() {
	d.n, d.first, d.last = 0, 0, 0
	d.pending.Store(false)
}
