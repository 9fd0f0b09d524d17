package recorder

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
)

// writer is the single goroutine that appends queued records to the sink,
// flushes it on a ticker, reports write failures and overloads as records,
// and measures how long frames take from socket read to disk.
type writer struct {
	r    *Recorder
	sink Sink
	q    *queue

	records, errors, lost atomic.Uint64
	lostFrames            atomic.Uint64

	// Write-failure episode: set on the first failure, recorded as one
	// KindWriteError once a flush succeeds again (every record accepted so
	// far reached the disk: that, not an accepted append, is recovery).
	errFirst, errLast int64
	errText           string
	errCount          uint64
	okSince           time.Time // the first flush that succeeded since the last failure
	lastLog           time.Time
	// recovery is the write_error record of an episode that ended, waiting
	// for the queue to empty: appended earlier it would go ahead of queued
	// records stamped before it.
	recovery *datasets.Control

	// stopAt is when the recorder began to stop (unix ns, 0 while running):
	// from then on a refusing sink is retried for shutdownRetry at most, and
	// what it still refuses is given up, counted and reported.
	stopAt              atomic.Int64
	lostFirst, lostLast int64 // receive times of the first and last record given up

	recv     []pending // frames appended and not yet known to be on disk, in seq order
	head     int       // recv[head:] are still pending
	sinceChk int       // appends since the last check of the sink's progress
	stater   interface{ Stats() datasets.WriterStats }
	lag      lagHist // read-to-disk latency
	cur      entry   // the entry being written (see take)
}

// pending is a frame the sink accepted: its seq and when it was read.
type pending struct {
	seq  uint64
	mono int64
}

func newWriter(r *Recorder, sink Sink, q *queue) *writer {
	w := &writer{r: r, sink: sink, q: q, recv: make([]pending, 0, 1<<14)}
	// A sink that reports how many records reached the OS (datasets.Writer
	// does) lets the latency be measured at the block write, not just at
	// our flushes.
	w.stater, _ = sink.(interface{ Stats() datasets.WriterStats })
	return w
}

// maxRecvTracked bounds the latency bookkeeping while the disk is down.
const maxRecvTracked = 1 << 20

// shutdownRetry is how long a shutdown keeps retrying a sink that refuses
// records (its backlog is full because the disk is): five flush intervals,
// within [1s, 10s].
func (w *writer) shutdownRetry() time.Duration {
	return min(max(5*w.r.o.flushInterval, time.Second), 10*time.Second)
}

// givingUp reports whether the shutdown's retry time is over.
func (w *writer) givingUp() bool {
	at := w.stopAt.Load()
	return at != 0 && time.Duration(time.Now().UnixNano()-at) >= w.shutdownRetry()
}

// loop runs until the queue is closed and drained (then it writes the
// clean-close record and flushes), or the sink is closed under it (fatal
// is called and loop returns the error).
func (w *writer) loop(fatal func(error)) error {
	tick := time.NewTicker(w.r.o.flushInterval)
	defer tick.Stop()
	for {
		select {
		case e, ok := <-w.q.ch:
			if !ok {
				return w.finish()
			}
			if e.settle != nil {
				w.r.live.handSettle(e.settle)
				continue
			}
			if err := w.take(e); err != nil {
				fatal(err)
				w.discard()
				return err
			}
			if len(w.q.ch) == 0 {
				w.sweepDrops()
				if w.recovery != nil {
					w.recovered(false)
				}
			}
		case <-tick.C:
			w.checkWritten()
			w.r.m.queueDepth.Set(float64(len(w.q.ch)))
			w.r.m.queueBytes.Set(float64(w.q.bytes.Load()))
			w.flush()
			if len(w.q.ch) == 0 {
				// Only an empty queue proves no frame received after the
				// drops is waiting ahead of their record.
				w.sweepDrops()
			}
		}
	}
}

// discard empties the queue after a fatal error so producers never block.
func (w *writer) discard() {
	for e := range w.q.ch {
		if e.settle != nil {
			close(e.settle.done) // nothing more is written
			continue
		}
		w.lost.Add(1)
		w.release(&e)
	}
}

func (w *writer) release(e *entry) {
	w.q.bytes.Add(-int64(len(e.rec.Payload)))
	if e.pooled {
		w.q.putBuf(e.rec.Payload)
	}
}

// take writes e through w.cur: the sink's Append takes a pointer through an
// interface, which would move a local entry to the heap on every frame.
func (w *writer) take(e entry) error {
	w.cur = e
	err := w.write(&w.cur)
	w.cur = entry{}
	return err
}

// write appends one record, retrying while the sink refuses it (its backlog
// is full because the disk fails). While it retries the queue fills and the
// readers drop and count frames, which come back as overload records. Once
// a shutdown's retry time is over, a refused record is given up and counted.
func (w *writer) write(e *entry) error {
	defer w.release(e)
	delay := 50 * time.Millisecond
	for {
		seq, err := w.sink.Append(&e.rec)
		if seq != 0 {
			w.records.Add(1)
			w.r.track.record(&e.rec, seq)
			if w.r.live.offer(&e.rec, seq, e.pooled) {
				e.pooled = false // the live engine returns the buffer
			}
			if e.rec.Kind == datasets.KindFrame && len(w.recv)-w.head < maxRecvTracked {
				w.recv = append(w.recv, pending{seq, e.rec.MonoNs})
			}
			if w.sinceChk++; w.sinceChk >= 64 || len(w.q.ch) == 0 {
				w.checkWritten()
			}
			if err != nil {
				w.noteErr(err)
			}
			return nil
		}
		if errors.Is(err, datasets.ErrClosed) {
			return fmt.Errorf("recorder: dataset writer closed: %w", err) // recording cannot go on
		}
		if errors.Is(err, datasets.ErrPayloadSize) {
			// Cannot happen with the read limits below MaxPayloadSize, but a
			// lost frame must still show: record it as a gap.
			w.appendControl(datasets.KindGap, e.rec.Conn, datasets.Control{FromNs: e.rec.WallNs, ToNs: e.rec.WallNs,
				Err: err.Error(), Text: "frame too large for the dataset"})
			return nil
		}
		w.noteErr(err)
		if w.givingUp() {
			w.giveUp(&e.rec)
			return nil
		}
		d := delay
		if at := w.stopAt.Load(); at != 0 {
			d = min(d, max(time.Until(time.Unix(0, at).Add(w.shutdownRetry())), time.Millisecond))
		}
		time.Sleep(d)
		delay = min(2*delay, 2*time.Second)
	}
}

// giveUp counts a record the sink refused past the shutdown's retry time.
func (w *writer) giveUp(r *datasets.Record) {
	if w.lost.Add(1) == 1 {
		w.lostFirst = r.WallNs
	}
	w.lostLast = r.WallNs
	if r.Kind == datasets.KindFrame {
		w.lostFrames.Add(1)
	}
}

// appendControl appends a record directly (the writer's own records),
// stamped now in queue order.
func (w *writer) appendControl(k datasets.Kind, conn uint32, c datasets.Control) bool {
	w.q.mu.Lock()
	wall, mono := w.q.stamp(w.q.now())
	w.q.mu.Unlock()
	rec := datasets.Record{Kind: k, Conn: conn, WallNs: wall, MonoNs: mono, Payload: datasets.EncodeControl(c)}
	seq, err := w.sink.Append(&rec)
	if seq != 0 {
		w.records.Add(1)
		w.r.track.record(&rec, seq)
		w.r.live.offer(&rec, seq, false)
	}
	if err != nil {
		w.noteErr(err)
	}
	return seq != 0
}

func (w *writer) noteErr(err error) {
	now := time.Now()
	w.errors.Add(1)
	w.r.m.writeErrors.Inc()
	if w.errCount == 0 {
		w.errFirst = now.UnixNano()
	}
	w.errCount++
	w.errLast = now.UnixNano()
	w.errText = err.Error()
	w.okSince = time.Time{}
	if now.Sub(w.lastLog) >= 10*time.Second {
		w.lastLog = now
		w.r.log.Error("dataset write failed; retrying", "err", err, "failures", w.errCount)
	}
}

// recoverQuiet is how long flushes must keep succeeding before a
// write-failure episode counts as over: a nearly full disk takes a small
// block now and then, which is not a recovery.
func (w *writer) recoverQuiet() time.Duration {
	return min(max(5*w.r.o.flushInterval, 500*time.Millisecond), 10*time.Second)
}

// recovered notes a successful flush (every record accepted so far is on
// the disk). A write-failure episode ends once flushes kept succeeding for
// recoverQuiet (or at shutdown, when now is set), and is recorded once the
// queue is empty.
func (w *writer) recovered(final bool) {
	if w.errCount > 0 {
		now := time.Now()
		if w.okSince.IsZero() {
			w.okSince = now
		}
		if final || now.Sub(w.okSince) >= w.recoverQuiet() {
			w.recovery = &datasets.Control{Err: w.errText, FromNs: w.errFirst, ToNs: w.okSince.UnixNano(),
				Text: fmt.Sprintf("%d failed writes or flushes over %v; every record accepted was written late, once the disk took writes again (what the queue could not hold is in overload records)",
					w.errCount, w.okSince.Sub(time.Unix(0, w.errFirst)).Round(time.Millisecond))}
			w.errCount, w.okSince, w.lastLog = 0, time.Time{}, time.Time{}
		}
	}
	if w.recovery != nil && len(w.q.ch) == 0 {
		c := *w.recovery
		if w.appendControl(datasets.KindWriteError, 0, c) {
			w.recovery = nil
			w.r.log.Warn("dataset writes recovered", "since", time.Unix(0, c.FromNs), "failures", c.Text)
		}
	}
}

// flush flushes the sink and, on success, measures the read-to-disk time of
// every frame it wrote and ends a write-failure episode.
func (w *writer) flush() {
	if err := w.sink.Flush(); err != nil {
		w.noteErr(err)
		return
	}
	w.flushOK(false)
}

// checkWritten settles the frames the sink reports written to the OS.
func (w *writer) checkWritten() {
	w.sinceChk = 0
	if w.stater != nil && w.head < len(w.recv) {
		w.settle(w.stater.Stats().Records)
	}
}

// settle records the read-to-disk time of pending frames with seq <= upTo.
func (w *writer) settle(upTo uint64) {
	now := int64(w.r.now().Sub(w.r.base))
	for w.head < len(w.recv) && w.recv[w.head].seq <= upTo {
		d := time.Duration(now - w.recv[w.head].mono)
		w.lag.add(d)
		w.r.m.diskLag.Observe(d.Seconds())
		w.head++
	}
	if w.head == len(w.recv) {
		w.recv, w.head = w.recv[:0], 0
	} else if w.head > len(w.recv)/2 && w.head > 1<<12 {
		w.recv = w.recv[:copy(w.recv, w.recv[w.head:])]
		w.head = 0
	}
}

// sweepDrops writes the overload records of connections whose readers have
// not had a chance to (no frame arrived since the drops).
func (w *writer) sweepDrops() {
	w.r.mu.Lock()
	slots := w.r.slots
	w.r.mu.Unlock()
	for _, s := range slots {
		if !s.drops.pending.Load() {
			continue
		}
		s.drops.mu.Lock()
		if c, ok := s.drops.peekLocked(); ok && w.appendControl(datasets.KindOverload, s.id, c) {
			s.drops.clearLocked()
			w.r.log.Warn("writer queue overflowed", "conn", s.id, "dropped", c.Dropped)
		}
		s.drops.mu.Unlock()
	}
}

// finish writes the clean-close record and flushes, retrying a failing
// flush for the rest of the shutdown's retry time. When the sink still
// fails, what was given up is recorded (a KindGap on ConnAll) and so is the
// unfinished write-failure episode, as far as the sink takes them: the
// dataset writer holds them with its own backlog, and says at Close what it
// could not write. It returns an error naming what was not written.
func (w *writer) finish() error {
	w.stopAt.CompareAndSwap(0, time.Now().UnixNano())
	w.sweepDrops()
	var err error
	for {
		if err = w.sink.Flush(); err == nil {
			w.flushOK(true)
			break
		}
		w.noteErr(err)
		if w.givingUp() {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	lost, frames := w.lost.Load(), w.lostFrames.Load()
	if lost > 0 {
		w.appendControl(datasets.KindGap, datasets.ConnAll, datasets.Control{Dropped: frames, FromNs: w.lostFirst, ToNs: w.lostLast,
			Err: w.errText, Text: fmt.Sprintf("%d records (%d frames) given up at shutdown: the dataset writer kept refusing them", lost, frames)})
	}
	if err != nil && w.errCount > 0 {
		w.appendControl(datasets.KindWriteError, 0, datasets.Control{Err: w.errText, FromNs: w.errFirst, ToNs: time.Now().UnixNano(),
			Text: fmt.Sprintf("%d failed writes or flushes; the disk still failed at shutdown", w.errCount)})
	}
	w.appendControl(datasets.KindCleanClose, 0, datasets.Control{Text: "recorder stopped"})
	if err == nil {
		if err = w.sink.Flush(); err == nil {
			w.flushOK(true)
		}
	}
	switch {
	case lost > 0:
		return fmt.Errorf("recorder: %d records (%d frames) given up at shutdown, the dataset writer kept refusing them: %w",
			lost, frames, errors.Join(err, errorsText(w.errText)))
	case err != nil:
		return fmt.Errorf("recorder: final flush failed (the dataset writer still holds what it could not write): %w", err)
	}
	return nil
}

func (w *writer) flushOK(final bool) {
	w.settle(^uint64(0))
	w.recovered(final)
}

func errorsText(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

// lagHist is a log-linear latency histogram: 8 sub-buckets per power of two
// of nanoseconds (about 9% resolution), enough for p50/p99 in reports.
type lagHist struct {
	mu     sync.Mutex
	counts [64 * 8]uint64
	n      uint64
	max    time.Duration
}

// lagBucket maps d to its bucket: d itself below 8 ns, then 8 buckets per
// power of two.
func lagBucket(d time.Duration) int {
	if d < 8 {
		return int(max(d, 0))
	}
	v := uint64(d)
	e := bits.Len64(v) - 1 // v in [2^e, 2^(e+1)), e >= 3
	sub := (v >> (e - 3)) & 7
	return (e-2)*8 + int(sub)
}

// lagBucketUpper is the largest duration of bucket i.
func lagBucketUpper(i int) time.Duration {
	if i < 8 {
		return time.Duration(i)
	}
	e, sub := i/8+2, i%8
	return time.Duration((uint64(8+sub+1) << (e - 3)) - 1)
}

func (h *lagHist) add(d time.Duration) {
	h.mu.Lock()
	h.counts[lagBucket(d)]++
	h.n++
	h.max = max(h.max, d)
	h.mu.Unlock()
}

// LagStats summarises a latency distribution.
type LagStats struct {
	Count         uint64
	P50, P99, Max time.Duration
}

func (h *lagHist) stats() LagStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := LagStats{Count: h.n, Max: h.max}
	q := func(p float64) time.Duration {
		want := uint64(math.Ceil(p * float64(h.n)))
		var acc uint64
		for i, c := range h.counts {
			acc += c
			if acc >= want && c > 0 {
				return min(lagBucketUpper(i), h.max)
			}
		}
		return h.max
	}
	if h.n > 0 {
		s.P50, s.P99 = q(0.50), q(0.99)
	}
	return s
}
