// Package latency measures, in benchmarks, how long a reader takes while a
// writer runs flat out on another goroutine: the contention a strategy thread
// sees when it reads a book the replayer or recorder is updating.
package latency

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	_ "unsafe" // go:linkname
)

// nanotime is the runtime's monotonic clock: one vDSO read, where time.Now
// reads the wall clock as well, so the figures carry less of the timer.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// soloFor is how long the writer first runs with no reader, for the
// no-reader baseline of the same run.
const soloFor = 20 * time.Millisecond

// ReaderUnderWriter calls write(0) once, then write(1), write(2), … on a
// goroutine locked to its own OS thread until the benchmark ends. The writer
// first runs alone (soloFor to warm up, soloFor timed), then the benchmark
// goroutine times b.N calls of read while the writer goes on. Where the
// system allows it (Linux) the reader's and the writer's threads are bound
// to two different CPUs (pinned reports 1), so that on a busy shared machine
// they are never time-sliced on one CPU, where the reader would see the
// writer's work only between time slices and no contention at all. read
// reports whether it found state the writer changed since the previous read (a new
// view, a new book generation): those reads fetch it from the writer's core,
// and how many there are depends on how fast the writer ran on a shared
// machine, so they are also reported on their own. It reports:
//   - the reads' p50, p99, p99.9, p99.99 and maximum (read-p50-ns …,
//     read-max-ns), from a histogram exact to the ns below 2 µs and within
//     1/64 above (no per-read slice, which would stream megabytes through
//     the reader's cache);
//   - the share of reads that found new state (new-%) and their p50, p99
//     and p99.9 (read-new-p50-ns …);
//   - where both threads were pinned, what one cache-line transfer from the
//     writer's CPU to the reader's costs on this machine at this moment
//     (xfer-p50-ns, xfer-p99-ns, clock included like every figure): after
//     the reads, the writer hands the reader a freshly written line
//     xferRounds times and the reader times its load. It is the floor of a
//     read that finds new state, and it moves: on a VM two vCPUs may share
//     a core complex (tens of ns) or not (over 100 ns), and the host may
//     move them between runs;
//   - the clock's own part of every figure (clock-p50-ns, clock-p99-ns):
//     two back-to-back readings of the clock each sample takes, timed the
//     same way after the reads;
//   - the writer's wall time per call beside the reader (write-ns/frame)
//     and alone before it (write-solo-ns/frame): a reader that holds a lock
//     the writer needs shows here (the writer waits, its CPU time does not
//     grow), as does a shared machine that runs other work on the writer's
//     core; and, where the system gives a thread's CPU time (Linux), its CPU time
//     per call with the reader (write-cpu-ns/frame), alone before it
//     (write-solo-cpu-ns/frame), and their ratio (write-slowdown): what the
//     reader costs the writer, independent of how much of the shared
//     machine the writer's thread got.
func ReaderUnderWriter(b *testing.B, write func(i int), read func() bool) {
	var start, stop, writerPinned, readerPinnedToo atomic.Bool
	x := new(xfer)
	var soloFrames, frames, soloCPU, cpu, soloWall, wall int64
	solo := make(chan struct{})
	done := make(chan struct{})
	write(0) // a first state before the reader starts
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		restore, ok := pinThread(1)
		defer restore()
		writerPinned.Store(ok)
		// Warm up as long again untimed, then time the writer alone,
		// reading the clock once per 64 calls.
		i := 1
		for _, timed := range []bool{false, true} {
			n0, c0, t0 := i, threadCPU(), nanotime()
			for i-n0 < 1024 || nanotime()-t0 < int64(soloFor) {
				for k := 0; k < 64; k++ {
					write(i)
					i++
				}
			}
			if timed {
				soloFrames, soloCPU, soloWall = int64(i-n0), threadCPU()-c0, nanotime()-t0
			}
		}
		close(solo)
		for !start.Load() {
			runtime.Gosched()
		}
		n0, c0, t0 := i, threadCPU(), nanotime()
		for !stop.Load() {
			write(i)
			i++
		}
		frames, cpu, wall = int64(i-n0), threadCPU()-c0, nanotime()-t0
		if ok && readerPinnedToo.Load() {
			x.write()
		}
	}()
	<-solo
	runtime.LockOSThread()
	restore, readerPinned := pinThread(0)
	readerPinnedToo.Store(readerPinned)
	h, hn := new(Histogram), new(Histogram)
	b.ReportAllocs()
	b.ResetTimer()
	start.Store(true)
	for i := 0; i < b.N; i++ {
		t0 := nanotime()
		changed := read()
		dt := nanotime() - t0
		h.Add(dt)
		if changed {
			hn.Add(dt)
		}
	}
	b.StopTimer()
	stop.Store(true)
	pinned := readerPinned && writerPinned.Load()
	var transfer *Histogram
	if pinned {
		transfer = x.read()
	}
	restore()
	runtime.UnlockOSThread()
	<-done
	clock := new(Histogram)
	for i := 0; i < min(b.N, 1<<16); i++ {
		t0 := nanotime()
		clock.Add(nanotime() - t0)
	}
	b.ReportMetric(float64(h.Quantile(0.50)), "read-p50-ns")
	b.ReportMetric(float64(h.Quantile(0.99)), "read-p99-ns")
	b.ReportMetric(float64(h.Quantile(0.999)), "read-p99.9-ns")
	b.ReportMetric(float64(h.Quantile(0.9999)), "read-p99.99-ns")
	b.ReportMetric(float64(h.Max()), "read-max-ns")
	if pinned {
		b.ReportMetric(1, "pinned")
		b.ReportMetric(float64(transfer.Quantile(0.50)), "xfer-p50-ns")
		b.ReportMetric(float64(transfer.Quantile(0.99)), "xfer-p99-ns")
	} else {
		b.ReportMetric(0, "pinned")
	}
	b.ReportMetric(100*float64(hn.Count())/float64(max(h.Count(), 1)), "new-%")
	b.ReportMetric(float64(hn.Quantile(0.50)), "read-new-p50-ns")
	b.ReportMetric(float64(hn.Quantile(0.99)), "read-new-p99-ns")
	b.ReportMetric(float64(hn.Quantile(0.999)), "read-new-p99.9-ns")
	b.ReportMetric(float64(clock.Quantile(0.50)), "clock-p50-ns")
	b.ReportMetric(float64(clock.Quantile(0.99)), "clock-p99-ns")
	if frames == 0 {
		return
	}
	b.ReportMetric(float64(wall)/float64(frames), "write-ns/frame")
	b.ReportMetric(float64(soloWall)/float64(soloFrames), "write-solo-ns/frame")
	if cpu > 0 && soloCPU > 0 {
		with, alone := float64(cpu)/float64(frames), float64(soloCPU)/float64(soloFrames)
		b.ReportMetric(with, "write-cpu-ns/frame")
		b.ReportMetric(alone, "write-solo-cpu-ns/frame")
		b.ReportMetric(with/alone, "write-slowdown")
	}
}

// xferRounds is how many lines the writer hands the reader for the
// transfer figure.
const xferRounds = 4096

// xfer is the writer's handing of fresh cache lines to the reader: it
// writes data, then flag; the reader, seeing flag, times its load of data,
// then acks. Each word has a line of its own, with a line between, so that
// no adjacent-line prefetch brings data in with flag.
type xfer struct {
	_    [2 * cacheLine]byte
	flag atomic.Int64
	_    [2*cacheLine - 8]byte
	ack  atomic.Int64
	_    [2*cacheLine - 8]byte
	data atomic.Int64
	_    [2*cacheLine - 8]byte
}

const cacheLine = 64

// write is the writer's side of the transfer rounds.
func (x *xfer) write() {
	for k := int64(1); k <= xferRounds; k++ {
		x.data.Store(k)
		x.flag.Store(k)
		for n := 0; x.ack.Load() != k; n++ {
			if n%4096 == 4095 {
				runtime.Gosched() // should the two threads share a CPU after all
			}
		}
	}
}

// read is the reader's side of the transfer rounds: the time each load of
// the freshly written line took.
func (x *xfer) read() *Histogram {
	h := new(Histogram)
	for k := int64(1); k <= xferRounds; k++ {
		for n := 0; x.flag.Load() != k; n++ {
			if n%4096 == 4095 {
				runtime.Gosched()
			}
		}
		t0 := nanotime()
		v := x.data.Load()
		h.Add(nanotime() - t0)
		x.ack.Store(v)
	}
	return h
}

// Histogram counts durations in ns: one bucket per ns below exact, then 64
// buckets per power of two (a value is known within 1/64). It is a fixed
// array, cheap to add to on the timed path.
type Histogram struct {
	counts [exact + 64*(63-exactBits)]uint64 // int64 values have at most 63 bits
	n      uint64
	max    int64
}

const (
	exactBits = 11
	exact     = 1 << exactBits // 2048 ns
)

// Add counts one duration (negative counts as 0).
func (h *Histogram) Add(ns int64) {
	v := uint64(max(ns, 0))
	h.counts[bucket(v)]++
	h.n++
	if int64(v) > h.max {
		h.max = int64(v)
	}
}

func bucket(v uint64) int {
	if v < exact {
		return int(v)
	}
	n := bits.Len64(v) // > exactBits
	return exact + (n-exactBits-1)*64 + int(v>>(n-7)) - 64
}

// lower returns the smallest value of bucket i.
func lower(i int) int64 {
	if i < exact {
		return int64(i)
	}
	o, s := (i-exact)/64, (i-exact)%64+64
	return int64(s) << (o + exactBits + 1 - 7)
}

// Count returns how many durations were added.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest duration added.
func (h *Histogram) Max() int64 { return h.max }

// Quantile returns the q-quantile (0 ≤ q ≤ 1): the lower bound of the bucket
// holding the ⌊q·n⌋-th smallest duration (0-based), as a sorted slice's
// element at that index would be.
func (h *Histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := min(uint64(q*float64(h.n)), h.n-1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			return min(lower(i), h.max)
		}
	}
	return h.max
}

// Lock is a locking design to measure beside a lock-free one: the lock its
// writer takes around a frame and the one its reader takes around a read.
type Lock struct {
	Design string
	W, R   sync.Locker
}

// Locks returns the locking designs, each with a fresh lock: a plain
// sync.Mutex, and a sync.RWMutex the reader read-locks.
func Locks() []Lock {
	mu, rw := new(sync.Mutex), new(sync.RWMutex)
	return []Lock{{"mutex", mu, mu}, {"rwmutex", rw, rw.RLocker()}}
}
