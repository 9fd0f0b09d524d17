package backtest

import (
	"sync"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// shared is the bookkeeping every engine of a RunMany would do alike on an
// event, done once per event by the fanout (begin before the engines see
// the event, end after the last one has) instead of once per engine: what
// depends on the recording alone, never on an engine's Config or strategy.
//
//   - The event's instrument is interned: each engine finds its own
//     Instrument at the slot the fanout gives it, with no hashing of a
//     77-digit token id.
//   - The exchange-side books (Instrument.xb, clock.go) are one copy for
//     all engines. Every engine keeps the book of an instrument of a
//     tradable venue from the same event (its first, or its pairing with
//     a tracked complement), copied from the same feed book and then
//     updated by every event of the instrument, whatever its latency or
//     strategy: the copies are identical. But within an event an engine
//     reads the book before it (advance: actions due before the event)
//     then after it (market: resting orders against the event), and the
//     engines step through an event one after another (or side by side on
//     workers): so the book is kept twice, pre (without the event) and
//     post (with it). begin applies the event to post, end to pre; between
//     events the two are equal. An engine points its Instrument.xb at pre
//     until the place where it would have applied the event itself, then
//     at post (Engine.OnEvent).
//   - The fee rate a recorded trade states (venue.Trading.TradeFeeRate, a
//     scan of the raw message) is read once.
//
// Engines create an instrument's shared books when they first track it
// (under mu: engines on workers may get there at the same time); the
// first one makes them, the others find them.
type shared struct {
	mu   sync.Mutex
	inst map[string]*sharedInst // by instrument id
	ev   *feed.Event            // the event between begin and end
	cur  *sharedInst            // its instrument, as Engine.OnEvent finds it; nil none

	// The fee rate ev states, when it is a trade of a venue whose trading
	// rules read one (feeOf is those rules; nil: not read).
	feeOf   *venue.Trading
	feeRate float64
	feeOK   bool
	feeErr  error
}

// sharedInst is an instrument as the engines of a RunMany all see it.
type sharedInst struct {
	slot      int        // index in Engine.bySlot
	pre, post *book.Book // the exchange-side book without and with the current event; nil until tracked
}

func newShared() *shared { return &shared{inst: map[string]*sharedInst{}} }

// eventInstrument is the id of the instrument Engine.OnEvent finds for ev:
// the decoded event's, else a loss record's whose book it invalidates.
func eventInstrument(ev *feed.Event) string {
	if d := ev.Decoded; d != nil && d.Instrument != "" {
		return d.Instrument
	}
	if ev.Instrument != "" && ev.Book != nil {
		return ev.Instrument
	}
	return ""
}

// begin works out ev's shared part before the engines step through it.
func (s *shared) begin(ev *feed.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ev, s.cur, s.feeOf = ev, nil, nil
	if id := eventInstrument(ev); id != "" {
		si := s.inst[id]
		if si == nil {
			si = &sharedInst{slot: len(s.inst)}
			s.inst[id] = si
		}
		s.cur = si
		if si.post != nil {
			followBook(si.post, ev)
		}
	}
	if d := ev.Decoded; d != nil && d.Type == venue.EventTrade && ev.Driver != nil {
		if t := ev.Driver.Capabilities().Trading; t != nil && t.TradeFeeRate != nil {
			s.feeOf = t
			s.feeRate, s.feeOK, s.feeErr = t.TradeFeeRate(d.Raw)
		}
	}
}

// end brings the books without the event up to the books with it, once
// every engine has stepped through it.
func (s *shared) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if si := s.cur; si != nil && si.pre != nil {
		followBook(si.pre, s.ev)
	}
	s.ev, s.cur = nil, nil
}

// books returns in's shared exchange-side books, making them if no engine
// has yet: both a copy of the feed's book (as Engine.track), and, when in
// is the current event's instrument, post with the event applied (as
// Engine.follow would right after).
func (s *shared) books(in *Instrument) *sharedInst {
	s.mu.Lock()
	defer s.mu.Unlock()
	si := s.inst[in.ID]
	if si == nil {
		si = &sharedInst{slot: len(s.inst)}
		s.inst[in.ID] = si
	}
	if si.pre == nil {
		si.pre, si.post = newXBook(in), newXBook(in)
		if si == s.cur {
			followBook(si.post, s.ev)
		}
	}
	return si
}

// at returns the engine's instrument for the current event, when it has
// been found before; nil otherwise.
func (e *Engine) at(si *sharedInst) *Instrument {
	if si.slot < len(e.bySlot) {
		return e.bySlot[si.slot]
	}
	return nil
}

// remember keeps in at the current event's slot for the next events.
func (e *Engine) remember(si *sharedInst, in *Instrument) {
	for len(e.bySlot) <= si.slot {
		e.bySlot = append(e.bySlot, nil)
	}
	e.bySlot[si.slot] = in
}
