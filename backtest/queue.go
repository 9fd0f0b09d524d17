package backtest

import "iter"

// queue holds the engine's timed items (actions, reports, timers) and
// gives them back in order of time, then sequence (deterministic), without
// container/heap's boxing of every element in an interface.
//
// Items mostly arrive in that order already: an action is sent at the
// local clock plus a constant latency, a report at the exchange time plus
// one. Those that sort after the last one taken in go to a FIFO (fifo), in
// order by construction, and cost a copy in and a copy out; only the
// others (a GTD expiry, a cancel faster than an entry, an event stamped
// behind its venue's clock) go to a binary min-heap (heap). The first item
// is the earlier of the two fronts. No two items share a key except a GTD
// order's expiry entered twice (an amend re-enters it), and those two are
// the same action, so the order given back is the one of a single heap.
type queue[T timed] struct {
	fifo []entry[T] // fifo[head:] are queued, in key order
	head int
	heap []entry[T] // a binary min-heap by key
}

type timed interface{ key() (int64, uint64) }

func (a action) key() (int64, uint64) { return a.atNs, a.seq }
func (n note) key() (int64, uint64)   { return n.atNs, n.seq }
func (t timer) key() (int64, uint64)  { return t.atNs, t.seq }

// entry is a queued item with its key, taken once when it is pushed:
// comparisons then read two integers, not the item.
type entry[T any] struct {
	at  int64
	seq uint64
	v   T
}

func (a *entry[T]) before(b *entry[T]) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (q *queue[T]) len() int { return len(q.fifo) - q.head + len(q.heap) }

// front returns the queue's first entry; the queue must not be empty.
func (q *queue[T]) front() *entry[T] {
	if q.head == len(q.fifo) {
		return &q.heap[0]
	}
	if f := &q.fifo[q.head]; len(q.heap) == 0 || f.before(&q.heap[0]) {
		return f
	}
	return &q.heap[0]
}

// peek returns the first item, to read; the queue must not be empty.
func (q *queue[T]) peek() *T { return &q.front().v }

func (q *queue[T]) push(x T) {
	at, seq := x.key()
	n := entry[T]{at: at, seq: seq, v: x}
	if q.head == len(q.fifo) || !n.before(&q.fifo[len(q.fifo)-1]) {
		q.pushFIFO(n)
		return
	}
	h := append(q.heap, n)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	q.heap = h
}

// pushFIFO appends n to the FIFO. A full array is compacted when at
// least half of it is taken already, and grown otherwise: each compaction
// moves no more items than were taken since the last one.
func (q *queue[T]) pushFIFO(n entry[T]) {
	if q.head == len(q.fifo) {
		q.fifo, q.head = q.fifo[:0], 0
	} else if len(q.fifo) == cap(q.fifo) && q.head >= len(q.fifo)/2 {
		k := copy(q.fifo, q.fifo[q.head:])
		clear(q.fifo[k:])
		q.fifo, q.head = q.fifo[:k], 0
	}
	q.fifo = append(q.fifo, n)
}

// pop removes and returns the first item; the queue must not be empty.
func (q *queue[T]) pop() T {
	var zero entry[T]
	if f := q.front(); len(q.heap) == 0 || f != &q.heap[0] {
		x := f.v
		*f = zero // let go of what it points to
		q.head++
		return x
	}
	h := q.heap
	top := h[0].v
	n := len(h) - 1
	h[0] = h[n]
	h[n] = zero
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h[l].before(&h[m]) {
			m = l
		}
		if r := l + 1; r < n && h[r].before(&h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	q.heap = h
	return top
}

// all yields every queued item, in no particular order.
func (q *queue[T]) all() iter.Seq[*T] {
	return func(yield func(*T) bool) {
		for _, s := range [2][]entry[T]{q.fifo[q.head:], q.heap} {
			for i := range s {
				if !yield(&s[i].v) {
					return
				}
			}
		}
	}
}

// reset empties the queue, keeping its arrays.
func (q *queue[T]) reset() {
	clear(q.fifo)
	clear(q.heap)
	q.fifo, q.head, q.heap = q.fifo[:0], 0, q.heap[:0]
}
