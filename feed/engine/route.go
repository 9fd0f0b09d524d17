package engine

import (
	"fmt"
	"math/bits"
	"runtime/debug"
	"unsafe"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/feed"
)

// subscription is one Subscribe call.
type subscription struct {
	index  int // position among Subscribe calls: delivery order within a route
	key    feed.Key
	sub    feed.Subscriber
	failed bool // set by the engine's goroutine only
}

// matches reports whether s receives events of (venueName, instrument, ch).
func (s *subscription) matches(venueName, instrument string, ch feed.Channel) bool {
	k := s.key
	return (k.Venue == "" || k.Venue == venueName) &&
		(k.Instrument == "" || k.Instrument == instrument) &&
		(k.Channel == feed.ChannelAll || k.Channel == ch)
}

// Route is everything resolved once per (connection, instrument): the
// subscribers of each channel, the book and the digest key, so a frame for
// one instrument touches only that instrument's subscribers. Its fields are
// the engine's; drivers read them.
type Route struct {
	Instrument string // "" for the connection-wide route of control records
	Conn       *Conn
	// Book is the instrument's book as its events last carried it (or the
	// decoder gave it), nil before it has one.
	Book *book.Book
	// UpdatedNs and Seq are the receive time and Seq of the last record
	// that changed the book or its validity (with Config.TrackBooks).
	UpdatedNs int64
	Seq       uint64
	// Data is the driver's own (the live engine's published book); the
	// engine never reads it.
	Data any

	key       uint64 // digest key of the instrument
	bookAsked bool   // the decoder was asked for a book and had none
	dirty     bool
	gen       uint64 // subscription generation the lists were resolved at
	subs      [feed.NumChannels][]*subscription
}

// resolve fills rt's subscriber lists from subs.
func (rt *Route) resolve(subs []*subscription, venueName string, gen uint64) {
	for ch := range rt.subs {
		rt.subs[ch] = rt.subs[ch][:0]
		if ch == int(feed.ChannelAll) {
			continue
		}
		for _, s := range subs {
			if s.matches(venueName, rt.Instrument, feed.Channel(ch)) {
				rt.subs[ch] = append(rt.subs[ch], s)
			}
		}
	}
	rt.gen = gen
}

// route returns the resolved route of an instrument on c.
func (e *Engine) route(c *Conn, inst string) *Route {
	if rt := c.cachedRoute(inst); rt != nil {
		return rt
	}
	return e.routeMiss(c, inst)
}

// cachedRoute returns the resolved route of inst from the address table, or
// nil. Decoders intern instrument ids, so the same instrument comes back as
// the same string: a route whose id is that very string (same bytes in
// memory, same length, kept alive by the route) is the route, found with no
// byte of the id compared. The table holds resolved routes only:
// refreshSubs empties it when the subscriptions change.
func (c *Conn) cachedRoute(inst string) *Route {
	t := c.byPtr
	if t == nil {
		return nil
	}
	rt := t[ptrSlot(inst)]
	if rt != nil && unsafe.StringData(rt.Instrument) == unsafe.StringData(inst) && len(rt.Instrument) == len(inst) {
		return rt
	}
	return nil
}

// routeMiss is route once cachedRoute has found nothing: the route by id,
// kept in the address table (made once the connection has enough routes).
func (e *Engine) routeMiss(c *Conn, inst string) *Route {
	rt := e.routeByID(c, inst)
	switch {
	case c.byPtr != nil:
		c.byPtr[ptrSlot(inst)] = rt
	case len(c.routes) >= ptrTableRoutes:
		c.byPtr = new([ptrSlots]*Route)
	}
	if rt.gen != e.gen {
		e.resolve(rt)
	}
	return rt
}

// routeByID finds or makes the route of inst on c by the id's bytes.
func (e *Engine) routeByID(c *Conn, inst string) *Route {
	// Two cached routes catch the common alternations (a binary market's two
	// tokens in one price_change) without hashing a 77-digit id.
	rt := c.last
	if rt == nil || rt.Instrument != inst {
		rt = c.prev
		if rt == nil || rt.Instrument != inst {
			// Then the route the id's first bytes hint at (most misses of
			// the two above, when many markets interleave), then the map.
			slot, hinted := routeSlot(inst)
			if rt = c.hints[slot]; !hinted || rt == nil || rt.Instrument != inst {
				rt = c.routes[inst]
				if rt == nil {
					rt = &Route{Instrument: inst, Conn: c, key: feed.DigestKey(inst)}
					e.resolve(rt)
					c.routes[inst] = rt
					if f := e.cfg.NewRoute; f != nil {
						f(rt)
					}
				}
				if hinted {
					c.hints[slot] = rt
				}
			}
		}
		c.prev, c.last = c.last, rt
	}
	return rt
}

// ptrSlot is the slot of the string s in a connection's byPtr table: a hash
// of where its bytes are.
func ptrSlot(s string) uint {
	return uint((uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))) * 0x9e3779b97f4a7c15) >> (64 - ptrSlotBits))
}

// A connection's address table: 2048 slots, so that few of a few hundred
// instruments share one (a shared slot costs a lookup by id at each
// alternation) while only the slots in use are read; made once the
// connection has ptrTableRoutes routes (with fewer, the two last routes and
// the hints serve), so connections with a handful of instruments, or a
// file of thousands of connections, do not hold 16 KiB each.
const (
	ptrSlotBits    = 11
	ptrSlots       = 1 << ptrSlotBits
	ptrTableRoutes = 4
)

// routeHints is the size of a connection's route hint table.
const (
	routeHintBits = 9
	routeHints    = 1 << routeHintBits
)

// routeSlot hashes the first 16 bytes of an instrument id (false for a
// shorter one): a cheap stand-in for hashing all 77 digits of a Polymarket
// token id, since the route found there is still compared with the id.
func routeSlot(inst string) (uint, bool) {
	if len(inst) < 16 {
		return 0, false
	}
	w0 := uint64(inst[0]) | uint64(inst[1])<<8 | uint64(inst[2])<<16 | uint64(inst[3])<<24 |
		uint64(inst[4])<<32 | uint64(inst[5])<<40 | uint64(inst[6])<<48 | uint64(inst[7])<<56
	w1 := uint64(inst[8]) | uint64(inst[9])<<8 | uint64(inst[10])<<16 | uint64(inst[11])<<24 |
		uint64(inst[12])<<32 | uint64(inst[13])<<40 | uint64(inst[14])<<48 | uint64(inst[15])<<56
	return uint(((w0 ^ bits.RotateLeft64(w1, 29)) * 0x9e3779b97f4a7c15) >> (64 - routeHintBits)), true
}

// resolve finds the subscribers of an instrument's route: none for an
// instrument Config.Owns disowns.
func (e *Engine) resolve(rt *Route) {
	v := rt.Conn.Venue
	if rt.Instrument == "" || e.cfg.Owns == nil || e.cfg.Owns(v, rt.Instrument) {
		rt.resolve(e.subs, v, e.gen)
		return
	}
	rt.resolve(nil, v, e.gen)
}

// Subscribe registers s for events matching k. Subscribers matching one
// event are called in Subscribe order. Safe from any goroutine, also from a
// subscriber; it takes effect at the next delivered record. A nil s panics.
func (e *Engine) Subscribe(k feed.Key, s feed.Subscriber) {
	if s == nil {
		panic("engine: Subscribe with nil Subscriber")
	}
	e.subMu.Lock()
	e.pending = append(e.pending, &subscription{index: len(e.pending), key: k, sub: s})
	e.subGen.Add(1)
	e.subMu.Unlock()
}

// refreshSubs picks up Subscribe calls made since the last record.
func (e *Engine) refreshSubs() {
	if g := e.subGen.Load(); g != e.gen {
		e.subMu.Lock()
		e.subs = append(e.subs[:0], e.pending...)
		e.gen = e.subGen.Load()
		e.subMu.Unlock()
		for _, c := range e.conns {
			if c.byPtr != nil {
				clear(c.byPtr[:]) // its routes resolve again on their next event
			}
		}
	}
}

// Failure is a subscriber that returned an error or panicked: it receives
// nothing after the failing event.
type Failure struct {
	Subscriber int // index among the Subscribe calls, from 0
	Key        feed.Key
	Event      *feed.Event // the failing event, borrowed for the Failed call
	Panic      bool
	Stack      string // goroutine stack of a panic
	// Err is the error the subscriber returned, or one describing its
	// panic (wrapping the panic value when that is an error).
	Err error
}

// call delivers ev to s, isolating errors and panics.
func (e *Engine) call(s *subscription, ev *feed.Event) {
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("panic: %v", p)
			if pe, ok := p.(error); ok {
				err = fmt.Errorf("panic: %w", pe)
			}
			e.fail(s, ev, err, true, string(debug.Stack()))
		}
	}()
	if err := s.sub.OnEvent(ev); err != nil {
		e.fail(s, ev, err, false, "")
	}
}

func (e *Engine) fail(s *subscription, ev *feed.Event, err error, panicked bool, stack string) {
	s.failed = true
	if f := e.cfg.Failed; f != nil {
		if f(&Failure{Subscriber: s.index, Key: s.key, Event: ev, Panic: panicked, Stack: stack, Err: err}) {
			e.stopped = true
		}
	}
}
