package backtest

import (
	"runtime"
	"sync/atomic"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
)

// fanout delivers each event to every engine, in the engines' order on one
// goroutine, or split across workers that all finish an event before the
// next one is delivered (the event and its books are borrowed for the call).
//
// The hand-off is per event: the books the engines read move with the next
// frame. A channel send and a WaitGroup per event put both goroutines to
// sleep and wake them again each time (a futex call each way, ~9 µs of CPU
// an event on the shipped Polymarket sample: 2 workers cost 40% more CPU
// than 1). So each side first spins a little on the other's counter — an
// engine's share of an event and the decode of the next take microseconds —
// and sleeps only when the wait goes on (a descheduled thread on a busy
// host).
type fanout struct {
	engines []*Engine
	mine    []*Engine // engines stepped on the caller's goroutine
	sh      *shared   // what the engines share of each event, worked out once
	workers []*worker
	posted  uint64 // events handed to the workers
	// waiting is set while the caller sleeps on back for a worker to finish.
	waiting atomic.Bool
	back    chan struct{} // capacity 1: a wake-up for the caller
}

// worker steps a fixed share of the engines on its own goroutine.
type worker struct {
	share []*Engine
	f     *fanout
	ev    *feed.Event // the event posted; written before posted is
	// posted is the number of the last event handed over (written by the
	// caller), done the last one stepped (by the worker); each side spins,
	// then sleeps, on the other's.
	posted   atomic.Uint64
	_        [56]byte // posted and done on separate cache lines
	done     atomic.Uint64
	sleeping atomic.Bool
	wake     chan struct{} // capacity 1: a wake-up for the worker
	quit     bool          // written before the last post
}

// spins is how many times a side checks the other's counter before it
// sleeps, yielding now and then: a few microseconds, about an engine
// share's work on an event.
const spins = 1 << 9

// await returns c's value once it is above after: spinning first, then
// sleeping on wake with sleeping set. The other side stores c, then wakes
// the sleeper if sleeping is set; since both sides store before they load
// (sequentially consistent atomics), one of them sees the other's store and
// no wake-up is lost. A wake-up left over from an earlier wait only makes
// the next wait check again.
func await(c *atomic.Uint64, after uint64, sleeping *atomic.Bool, wake chan struct{}) uint64 {
	for i := 1; ; i++ {
		if v := c.Load(); v > after {
			return v
		}
		if i < spins {
			if i%64 == 0 {
				runtime.Gosched()
			}
			continue
		}
		sleeping.Store(true)
		if v := c.Load(); v > after {
			sleeping.Store(false)
			return v
		}
		<-wake
		sleeping.Store(false)
	}
}

// signal wakes the other side if it sleeps (after the counter was stored).
func signal(sleeping *atomic.Bool, wake chan struct{}) {
	if sleeping.Load() {
		select {
		case wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

func newFanout(engines []*Engine, workers int) *fanout {
	f := &fanout{engines: engines, mine: engines, back: make(chan struct{}, 1), sh: newShared()}
	for _, e := range engines {
		e.sh = f.sh
	}
	if workers <= 1 || len(engines) < 2 {
		return f
	}
	workers = min(workers, len(engines))
	per := (len(engines) + workers - 1) / workers
	f.mine = engines[:per]
	for lo := per; lo < len(engines); lo += per {
		w := &worker{share: engines[lo:min(lo+per, len(engines))], f: f, wake: make(chan struct{}, 1)}
		f.workers = append(f.workers, w)
		go w.run()
	}
	return f
}

func (w *worker) run() {
	var last uint64
	for {
		last = await(&w.posted, last, &w.sleeping, w.wake)
		if w.quit {
			return
		}
		ev := w.ev
		for _, e := range w.share {
			e.OnEvent(ev)
		}
		w.done.Store(last)
		signal(&w.f.waiting, w.f.back)
	}
}

// OnEvent implements feed.Subscriber. An engine isolates its strategy's
// panics itself, so one run's failure never stops the others.
func (f *fanout) OnEvent(ev *feed.Event) error {
	// What the engines share of ev is worked out before any of them steps
	// through it, and brought up to date (end) once all of them, the
	// workers' included, are done with it (shared.go).
	f.sh.begin(ev)
	if ev.Kind == datasets.KindRESTResponse && ev.Control != nil {
		// Every engine reads the body's listing (Engine.restBody): once.
		l := &listing{body: ev.Payload}
		for _, e := range f.engines {
			e.listing = l
		}
	}
	if len(f.workers) > 0 {
		f.posted++
		for _, w := range f.workers {
			w.ev = ev
			w.posted.Store(f.posted)
			signal(&w.sleeping, w.wake)
		}
	}
	for _, e := range f.mine {
		e.OnEvent(ev)
	}
	for _, w := range f.workers {
		await(&w.done, f.posted-1, &f.waiting, f.back)
	}
	f.sh.end()
	return nil
}

// close stops the workers (after the last event was stepped).
func (f *fanout) close() {
	f.posted++
	for _, w := range f.workers {
		w.quit = true
		w.posted.Store(f.posted)
		signal(&w.sleeping, w.wake)
	}
	f.workers = nil
}
