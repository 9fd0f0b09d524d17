package backtest

import (
	"sync"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
)

// fanout delivers each event to every engine, in the engines' order on one
// goroutine, or split across workers that all finish an event before the
// next one is delivered (the event and its books are borrowed for the call).
type fanout struct {
	engines []*Engine
	shares  [][]*Engine // engines of each extra worker
	start   []chan *feed.Event
	done    sync.WaitGroup
	mine    []*Engine // engines stepped on the caller's goroutine
}

func newFanout(engines []*Engine, workers int) *fanout {
	f := &fanout{engines: engines, mine: engines}
	if workers <= 1 || len(engines) < 2 {
		return f
	}
	workers = min(workers, len(engines))
	per := (len(engines) + workers - 1) / workers
	f.mine = engines[:per]
	for lo := per; lo < len(engines); lo += per {
		share := engines[lo:min(lo+per, len(engines))]
		ch := make(chan *feed.Event)
		f.shares = append(f.shares, share)
		f.start = append(f.start, ch)
		go func() {
			for ev := range ch {
				for _, e := range share {
					e.OnEvent(ev)
				}
				f.done.Done()
			}
		}()
	}
	return f
}

// OnEvent implements feed.Subscriber. An engine isolates its strategy's
// panics itself, so one run's failure never stops the others.
func (f *fanout) OnEvent(ev *feed.Event) error {
	if ev.Kind == datasets.KindRESTResponse && ev.Control != nil {
		// Every engine reads the body's listing (Engine.restBody): once.
		l := &listing{body: ev.Payload}
		for _, e := range f.engines {
			e.listing = l
		}
	}
	if len(f.start) > 0 {
		f.done.Add(len(f.start))
		for _, ch := range f.start {
			ch <- ev
		}
	}
	for _, e := range f.mine {
		e.OnEvent(ev)
	}
	if len(f.start) > 0 {
		f.done.Wait()
	}
	return nil
}

func (f *fanout) close() {
	for _, ch := range f.start {
		close(ch)
	}
	f.start = nil
}
