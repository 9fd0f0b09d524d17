package backtest

import (
	"slices"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// The three clocks (see the package doc): the exchange clock of each venue
// is the latest exchange timestamp its feed has shown (events without one
// never move it); the receive clock is the events' receive times; the
// strategy clock is the receive clock, on which the strategy acts and on
// which the exchange's responses reach it.
//
// An action (an order, a cancel, an amend) the strategy sends at local time
// t reaches the venue at T = t + entry latency on the venue's clock. It is
// applied when the first event of that venue stamped after T arrives, before
// that event touches anything, against the exchange's book as it stood
// after every event stamped at or before T (hftbacktest's rule: its
// EventSet orders exchange data before an order received at the same
// timestamp, evs.rs). The engine keeps that book itself (Instrument.xb),
// for every instrument of a tradable venue from its first event, because
// the decoder's book is already the book after the whole frame by the time
// an event is delivered. A copy started later, at the strategy's first
// order, would hold the events of that frame not yet delivered, which an
// order due between them (a frame with messages stamped apart) would meet.
// What remains: the copy taken at an instrument's first event is the book
// after that frame (the book before it is not known), and a snapshot is
// copied from the decoder's book, also the book after its frame; an order
// sent during such a frame and due before its later events would meet
// them. GTD expiries sit on the same queue at their expiry time and apply
// before any event stamped at or after it.

type actionKind uint8

const (
	actSubmit actionKind = iota
	actCancel
	actAmend
	actExpire // a GTD order leaves the book (exchange clock)
)

type action struct {
	atNs  int64 // on the venue's exchange clock
	seq   uint64
	kind  actionKind
	order *Order
	price int64
	size  int64
}

// actionSeq puts expiries before actions at the same time: an order gone
// at E is gone for an action arriving at E.
const actionSeq = uint64(1) << 62

// due reports whether a is applied before an event stamped x.
func (a *action) due(x int64) bool {
	return a.atNs < x || (a.atNs == x && a.kind == actExpire)
}

// exchangeTime is the exchange time ev moves its venue's clock to: the
// venue's timestamp (receive time with IgnoreExchangeTime); 0 when it has
// none (Hyperliquid asset contexts and mids, pongs, control records).
func (e *Engine) exchangeTime(ev *feed.Event) int64 {
	if e.cfg.IgnoreExchangeTime {
		return ev.RecvNs
	}
	if d := ev.Decoded; d != nil {
		return d.ExchangeNs
	}
	return 0
}

// advance brings venue r's exchange to time x: funding due at the interval
// boundaries crossed, then every action and expiry due before an event
// stamped x, in time order (then the order sent). The clock never goes
// back: an event stamped before the clock (another connection's, late) is
// applied where it is, and actions that became due later than the clock
// apply at the next stamped event.
func (e *Engine) advance(r *venueRules, x int64) {
	prev := r.clockNs
	if x > prev {
		if iv := int64(r.t.FundingInterval); iv > 0 && prev > 0 && x/iv > prev/iv {
			// Funding at each boundary crossed, after what was due before it.
			for h := (prev/iv + 1) * iv; h <= x; h += iv {
				e.drain(r, h, prev)
				e.xNs = h
				e.fundAt(r, h)
				prev = h
			}
		}
		r.clockNs = x
	}
	e.drain(r, x, prev)
}

// drain applies r's actions and expiries due before an event stamped x;
// each at its own time, or at the clock (prev) if that is later.
func (e *Engine) drain(r *venueRules, x, prev int64) {
	for r.due.len() > 0 && r.due.peek().due(x) {
		a := r.due.pop()
		e.xNs = max(a.atNs, prev)
		e.apply(a)
	}
}

func (e *Engine) push(a action) {
	in := e.instOf(a.order)
	if a.kind == actExpire {
		a.seq = a.order.ID
	} else {
		e.seq++
		a.seq = actionSeq + e.seq
	}
	a.order.refs++
	in.rules.due.push(a)
}

// apply carries out an action at the exchange (e.xNs is its time).
func (e *Engine) apply(a action) {
	o := a.order
	o.refs--
	in := e.instOf(o)
	switch a.kind {
	case actExpire:
		if o.Status == StatusOpen {
			e.finish(in, o, StatusExpired, "expired")
		}
	case actCancel:
		switch {
		case o.Status == StatusPending:
			// The venue does not know the order yet: it answers the cancel
			// with its unknown-order error, and the order, when it arrives,
			// rests as sent.
			e.cancelRejects++
			e.noteWith(o, in.rules.t.Reasons.UnknownOrder)
		case !o.Status.Done():
			e.finish(in, o, StatusCancelled, "cancelled")
		default:
			e.cancelRejects++
			e.noteWith(o, in.rules.t.Reasons.UnknownOrder)
		}
	case actAmend:
		if o.Status != StatusOpen {
			e.cancelRejects++
			e.noteWith(o, in.rules.t.Reasons.UnknownOrder)
			return
		}
		if a.price == o.Price && a.size <= o.Size && a.size > o.Filled {
			// A size decrease keeps priority, if the new size is one the
			// venue takes (whole lots, its minimum); else it is refused
			// with the rule's reason and the order stays as it was.
			x := *o
			x.Size, x.ExpireNs = a.size, 0
			if x.TIF == GTD {
				x.TIF = GTC // its expiration was checked when it entered
			}
			if reason := check(in, &x, e.xNs); reason != "" {
				e.noteWith(o, reason)
				return
			}
			e.reserved -= buyHold(in, o) // what it holds (open) changes
			o.Size = a.size
			e.reserved += buyHold(in, o)
			e.note(o)
			return
		}
		e.unrest(in, o)
		o.Price, o.Size = a.price, a.size
		o.Status = StatusPending
		e.enter(in, o)
	case actSubmit:
		e.enter(in, o)
	}
}

// track starts keeping the exchange-side book of in (and of its mirror),
// at in's first event (OnEvent): from then on every event of in updates
// in.xb as it is delivered, so an order arriving between two events meets
// the book between them.
// In a RunMany the engines share the books of tradable venues' instruments
// (shared.go): in.xs holds them and in.xb points at one of the two.
func (e *Engine) track(in *Instrument) {
	if in.xb == nil {
		if e.sh != nil && in.rules != nil {
			in.xs = e.sh.books(in)
			in.xb = in.xs.pre
		} else {
			in.xb = newXBook(in)
		}
	}
	if c := in.Complement; c != nil && c.xb == nil {
		e.track(c)
	}
}

// newXBook returns a new exchange-side book of in: a copy of the feed's
// book, invalid when there is none yet.
func newXBook(in *Instrument) *book.Book {
	xb := book.New(in.Scale)
	if in.Book != nil {
		copyBook(xb, in.Book)
	} else {
		xb.Invalidate()
	}
	return xb
}

// copyBook makes dst a copy of src (levels and validity); an invalid src
// invalidates dst and leaves its levels.
func copyBook(dst, src *book.Book) {
	if !src.Valid() {
		dst.Invalidate()
		return
	}
	dst.CopyFrom(src)
}

// followBook applies ev to xb, an exchange-side book of ev's instrument,
// as the decoder applied it to the feed's book.
func followBook(xb *book.Book, ev *feed.Event) {
	if ev.Book != nil && !ev.Book.Valid() {
		xb.Invalidate()
		return
	}
	d := ev.Decoded
	if d == nil {
		return
	}
	switch d.Type {
	case venue.EventSnapshot:
		copyBook(xb, ev.Book)
	case venue.EventLevel:
		if err := xb.Set(d.Side, d.Price, d.Size, d.Count); err != nil {
			xb.Invalidate()
		}
	}
}

// xbook is the book the simulated exchange matches against: the engine's
// own copy on a tradable venue, the feed's otherwise.
func (in *Instrument) xbook() *book.Book {
	if in.xb != nil {
		return in.xb
	}
	return in.Book
}

func (e *Engine) unrest(in *Instrument, o *Order) {
	if i := slices.Index(in.open, o); i >= 0 {
		in.open = slices.Delete(in.open, i, i+1)
		e.reserved -= buyHold(in, o)
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
	o.Status, o.Reason, o.DoneNs = st, reason, e.xNs
	e.note(o)
}

// Notifications reach the strategy after the acknowledgement latency,
// counted from the exchange time of what they report.
type note struct {
	atNs int64
	seq  uint64
	kind noteKind
	snap orderSnap // the order as the exchange left it (order notes)
	fill int       // index in fills (fill notes)
	in   *Instrument
	cash int64 // cash change (account notes)
	pos  int64 // position change (account notes)
}

// orderSnap is what of an order the exchange can change after it was
// submitted (the rest is as the strategy sent it): a report carries these
// rather than the whole Order, which the notes' heap would move about.
type orderSnap struct {
	id                                    uint64
	price, size, filled, activeNs, doneNs int64
	reason                                string
	status                                Status
}

func snapOf(o *Order) orderSnap {
	return orderSnap{id: o.ID, price: o.Price, size: o.Size, filled: o.Filled, activeNs: o.ActiveNs, doneNs: o.DoneNs,
		reason: o.Reason, status: o.Status}
}

// apply makes the strategy's copy lo of an order what the report says.
func (s *orderSnap) apply(lo *Order) {
	lo.Price, lo.Size, lo.Filled, lo.ActiveNs, lo.DoneNs = s.price, s.size, s.filled, s.activeNs, s.doneNs
	lo.Reason, lo.Status = s.reason, s.status
}

type noteKind uint8

const (
	noteOrder noteKind = iota
	noteFill
	noteAccount // a settlement: cash and position change
	noteFunding // funding paid: cash is the payment (positive paid)
)

func (e *Engine) noteAt() int64 { return e.xNs + e.cfg.Latency.Ack() }

func (e *Engine) note(o *Order) { e.noteWith(o, "") }

// noteWith reports o's state; reason, when set, replaces its Reason in the
// report (a cancel the venue refused).
func (e *Engine) noteWith(o *Order, reason string) {
	e.seq++
	o.refs++
	n := note{atNs: e.noteAt(), seq: e.seq, kind: noteOrder, snap: snapOf(o)}
	if reason != "" {
		n.snap.reason = reason
	}
	e.notes.push(n)
}

func (e *Engine) noteAccount(kind noteKind, in *Instrument, cash, pos int64) {
	e.seq++
	e.notes.push(note{atNs: e.noteAt(), seq: e.seq, kind: kind, in: in, cash: cash, pos: pos})
}

// deliver hands the strategy every notification and timer due by the
// local clock, in time order; each updates the strategy's view (local
// orders, positions, cash, fills) as it arrives.
func (e *Engine) deliver() {
	if e.summaryOnly && len(e.view.fills) > 0 {
		e.view.fills = e.view.fills[:0] // Context.Fills: this event's reports only
		e.view.version++
	}
	for e.timers.len() > 0 || e.notes.len() > 0 {
		var useTimer bool
		switch {
		case e.notes.len() > 0 && e.notes.peek().atNs <= e.nowNs && (e.timers.len() == 0 || e.notes.peek().atNs <= e.timers.peek().atNs):
		case e.timers.len() > 0 && e.timers.peek().atNs <= e.nowNs:
			useTimer = true
		default:
			return
		}
		e.view.version++ // Context.ViewVersion: a report or a timer
		if useTimer {
			t := e.timers.pop()
			if h, ok := e.strat.(TimerHandler); ok && !e.stratDead {
				e.guard(&feed.Event{RecvNs: e.nowNs}, func() { h.OnTimer(&e.ctx, t.tag) })
			}
			continue
		}
		n := e.notes.pop()
		switch n.kind {
		case noteAccount:
			e.view.cash += n.cash
			n.in.Position += n.pos
		case noteFunding:
			e.view.cash -= n.cash
			n.in.Funding += n.cash
		case noteFill:
			f := &e.fills[n.fill-e.fillBase]
			e.view.fills = append(roomFor(e.view.fills), *f)
			i := e.orderIndex(f.OrderID)
			e.orders[i].refs--
			if lo := e.view.orders[i]; f.filled > lo.Filled {
				lo.Filled = f.filled
			}
			f.reported = e.summaryOnly
			e.view.cash += f.cashDelta
			if f.Side == Buy {
				n.in.Position += f.Size
			} else {
				n.in.Position -= f.Size
			}
			n.in.LastTrade = f.Price
			if f.Liquidity == Taker {
				opp := book.Ask
				if f.Side == Sell {
					opp = book.Bid
				}
				n.in.seeTaken(opp, f.Price, f.Size)
				if c := n.in.Complement; c != nil {
					c.seeTaken(1-opp, pow10(n.in.Scale.PriceDecimals)-f.Price, f.Size)
				}
			}
			if h, ok := e.strat.(FillHandler); ok && !e.stratDead {
				fc := new(Fill) // the strategy's own copy: only a handler's costs an allocation
				*fc = *f
				e.guard(&feed.Event{RecvNs: e.nowNs}, func() { h.OnFill(&e.ctx, fc) })
			}
		case noteOrder:
			i := e.orderIndex(n.snap.id)
			e.orders[i].refs--
			lo := e.view.orders[i]
			wasDone := lo.Status.Done()
			n.snap.apply(lo)
			if !wasDone && lo.Status.Done() {
				if in := e.instOf(lo); in != nil {
					in.view.drop(lo)
				}
			}
			if h, ok := e.strat.(OrderHandler); ok && !e.stratDead {
				e.guard(&feed.Event{RecvNs: e.nowNs}, func() { h.OnOrder(&e.ctx, lo) })
			}
		}
	}
}

type timer struct {
	atNs int64
	seq  uint64
	tag  int64
}

// venueList returns the engine's tradable venues in the order their first
// instrument was seen (deterministic, unlike the map).
func (e *Engine) venueList() []*venueRules {
	var l []*venueRules
	for _, in := range e.instList {
		if in.rules != nil && !slices.Contains(l, in.rules) {
			l = append(l, in.rules)
		}
	}
	return l
}
