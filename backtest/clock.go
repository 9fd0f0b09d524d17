package backtest

import (
	"slices"

	"github.com/tapedeck/tapedeck/feed"
)

// activate applies the strategy's actions that have reached the exchange by
// this event, each to its own instrument's book as last received: no
// look-ahead, an action meets only the state after data received at or
// after its arrival (submit + latency on the local clock), and, unless
// IgnoreExchangeTime, only once the venue's feed shows an exchange
// timestamp at or after it (the recorded feed latency: an event stamped
// before the arrival but received after it was already in the book the
// order met). Actions on one instrument apply in the order they were sent.
func (e *Engine) activate(ev *feed.Event) {
	if len(e.actions) == 0 {
		return
	}
	exNs := int64(0)
	if ev.Decoded != nil && !e.cfg.IgnoreExchangeTime {
		exNs = ev.Decoded.ExchangeNs
	}
	for len(e.actions) > 0 {
		a := e.actions[0]
		if a.atNs > ev.RecvNs {
			break
		}
		in := e.insts[a.order.Instrument]
		if exNs != 0 && in.Venue == ev.Venue && a.atNs > exNs {
			break
		}
		e.actions.pop()
		e.apply(in, a, ev)
	}
}

type actionKind uint8

const (
	actSubmit actionKind = iota
	actCancel
	actAmend
)

type action struct {
	atNs  int64
	seq   uint64
	kind  actionKind
	order *Order
	price int64
	size  int64
}

func (e *Engine) apply(in *Instrument, a action, ev *feed.Event) {
	o := a.order
	o.pending = false
	switch a.kind {
	case actCancel:
		if !o.Status.Done() && o.Status != StatusPending {
			e.finish(in, o, StatusCancelled, "cancelled")
		}
	case actAmend:
		if o.Status != StatusOpen {
			return
		}
		if a.price == o.Price && a.size <= o.Size && a.size > o.Filled {
			o.Size = a.size // a size decrease keeps priority
			e.note(o, nil)
			return
		}
		e.unrest(in, o)
		o.Price, o.Size = a.price, a.size
		o.Status = StatusPending
		e.enter(in, o, ev)
	case actSubmit:
		e.enter(in, o, ev)
	}
}

func (e *Engine) unrest(in *Instrument, o *Order) {
	if i := slices.Index(in.open, o); i >= 0 {
		in.open = slices.Delete(in.open, i, i+1)
	}
}

func (e *Engine) reject(in *Instrument, o *Order, reason string) {
	e.rejects++
	e.finish(in, o, StatusRejected, reason)
}

func (e *Engine) finish(in *Instrument, o *Order, st Status, reason string) {
	if in != nil {
		e.unrest(in, o)
	}
	o.Status, o.Reason, o.DoneNs = st, reason, e.nowNs
	e.note(o, nil)
}

// Notifications reach the strategy after the acknowledgement latency.
type note struct {
	atNs  int64
	seq   uint64
	order *Order
	fill  int // index in fills, −1 none
	st    Status
}

func (e *Engine) note(o *Order, _ *Fill) {
	e.seq++
	e.notes.push(note{atNs: e.nowNs + e.cfg.Latency.Ack(), seq: e.seq, order: o, fill: -1, st: o.Status})
}

func (e *Engine) noteFill(f *Fill) {
	e.seq++
	e.notes.push(note{atNs: e.nowNs + e.cfg.Latency.Ack(), seq: e.seq, fill: int(f.Seq - 1)})
}

func (e *Engine) deliver() {
	for len(e.timers) > 0 || len(e.notes) > 0 {
		var useTimer bool
		switch {
		case len(e.notes) > 0 && e.notes[0].atNs <= e.nowNs && (len(e.timers) == 0 || e.notes[0].atNs <= e.timers[0].atNs):
		case len(e.timers) > 0 && e.timers[0].atNs <= e.nowNs:
			useTimer = true
		default:
			return
		}
		if useTimer {
			t := e.timers.pop()
			if h, ok := e.strat.(TimerHandler); ok && !e.stratDead {
				e.guard(&feed.Event{RecvNs: e.nowNs}, func() { h.OnTimer(&e.ctx, t.tag) })
			}
			continue
		}
		n := e.notes.pop()
		if e.stratDead {
			continue
		}
		if n.fill >= 0 {
			if h, ok := e.strat.(FillHandler); ok {
				f := e.fills[n.fill]
				e.guard(&feed.Event{RecvNs: e.nowNs}, func() { h.OnFill(&e.ctx, &f) })
			}
		} else if h, ok := e.strat.(OrderHandler); ok {
			e.guard(&feed.Event{RecvNs: e.nowNs}, func() { h.OnOrder(&e.ctx, n.order) })
		}
	}
}

type timer struct {
	atNs int64
	seq  uint64
	tag  int64
}

// queue is a binary min-heap ordered by time then sequence (deterministic),
// without container/heap's boxing of every element in an interface.
type queue[T timed] []T

type timed interface{ key() (int64, uint64) }

func (a action) key() (int64, uint64) { return a.atNs, a.seq }
func (n note) key() (int64, uint64)   { return n.atNs, n.seq }
func (t timer) key() (int64, uint64)  { return t.atNs, t.seq }

func before[T timed](a, b T) bool {
	at, as := a.key()
	bt, bs := b.key()
	return at < bt || (at == bt && as < bs)
}

func (q *queue[T]) push(x T) {
	h := append(*q, x)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !before(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *queue[T]) pop() T {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	var zero T
	h[n] = zero
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && before(h[l], h[m]) {
			m = l
		}
		if r := l + 1; r < n && before(h[r], h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}
