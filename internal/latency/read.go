package latency

import "runtime"

// SeqRead returns a read for ReaderUnderWriter from load, which brings the
// reader's own copy of the writer's state up to date and returns its
// sequence number, or false while there is no state yet (the read then
// yields and tries again). The read reports whether the number differs from
// the previous read's.
func SeqRead(load func() (seq uint64, ok bool)) func() bool {
	var last uint64
	return func() bool {
		for {
			if seq, ok := load(); ok {
				changed := seq != last
				last = seq
				return changed
			}
			runtime.Gosched()
		}
	}
}

// PinnedRead returns a read for ReaderUnderWriter of a reader that pins
// the current view with acquire (nil while there is none: it yields and
// tries again), copies the levels that levels returns into slices of its
// own, and unpins the view with release, as a reader that may hold a view
// would (book.Publisher's Acquire and View.Release). The read reports
// whether the view's sequence number differs from the previous read's.
func PinnedRead[V, L any](acquire func() *V, levels func(*V) (bids, asks []L, seq uint64), release func(*V)) func() bool {
	bids, asks := make([]L, 0, 16), make([]L, 0, 16)
	return SeqRead(func() (uint64, bool) {
		v := acquire()
		if v == nil {
			return 0, false
		}
		b, a, seq := levels(v)
		bids = append(bids[:0], b...)
		asks = append(asks[:0], a...)
		release(v)
		return seq, true
	})
}
