// Package engine is the one event core of replay and live capture: it
// applies dataset records to the venue decoders of their connection slots,
// routes the decoded events to subscribers (feed.Key), digests what it
// delivers (feed.Digester) and isolates a failing subscriber. replayer.Run
// drives it from the merger of its datasets, the recorder's live engine from
// the writer's hand-off; each keeps only what is its own (pacing and seeks,
// lag, healing, publishing), so one recording gives the same events and the
// same digest live and replayed.
//
// An Engine is driven from one goroutine; only Subscribe is safe from others.
package engine

import (
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// Source is what the engine knows of one dataset (its index is
// feed.Event.Dataset): the venue's name and a fresh decoder per connection
// slot.
type Source struct {
	Venue string
	// Driver is the venue's (Event.Driver, and the scale of its events);
	// nil leaves them zero.
	Driver     venue.Driver
	NewDecoder func() (venue.Decoder, error)
}

// Config is an Engine's sources and its driver's hooks; nil hooks do
// nothing.
type Config struct {
	Sources []Source
	// Open is called before a connection slot's decoder is made, with the
	// number of slots the dataset has so far; an error is Process's.
	Open func(ds int, conn uint32, open int) error
	// Instruments is called every InstrumentCheckMask+1 frames of a
	// connection with the number of instruments the dataset's decoders
	// hold; an error is Process's.
	Instruments         func(ds, n int) error
	InstrumentCheckMask uint32
	// Owns says whether events of an instrument are delivered (a shard's);
	// disowned ones are applied and digested only.
	Owns func(venueName, instrument string) bool
	// Failed is told of a subscriber failure; true stops every delivery.
	Failed func(f *Failure) (stop bool)
	// DecodeError is told of a frame or REST body (rec.Kind) the decoder
	// rejected.
	DecodeError func(c *Conn, rec *datasets.Record, err error)
	// Checked is called once a frame, a decoded REST body or the flush of
	// a loss has been delivered, with c.Frame still holding its events.
	Checked func(c *Conn, rec *datasets.Record)
	// Invalidated is called after the engine invalidated c's books.
	Invalidated func(c *Conn)
	// NewRoute is called when a route is made.
	NewRoute func(rt *Route)
	// TrackBooks keeps the routes whose book a record changed (Dirty).
	TrackBooks bool
}

// Counts are what the engine processed.
type Counts struct {
	Records, Frames, Bytes, Warmup, Controls, UnknownKinds uint64
	DecodeErrors, ControlErrors, RESTUndecoded             uint64
	Events                                                 [venue.NumEventTypes]uint64
	Losses                                                 [256]uint64 // delivered loss records by kind
}

// Conn is one (dataset, connection slot): its decoder and routes. Drivers
// read its fields; Data is theirs.
type Conn struct {
	Dataset int
	ID      uint32
	Venue   string
	Driver  venue.Driver
	Dec     venue.Decoder
	Scale   book.Scale
	Frame   venue.Frame // the events of the last record applied
	LastSeq uint64      // Seq and receive time of the last frame
	LastNs  int64
	Data    any

	routes  map[string]*Route
	last    *Route // the route used last, and the one before
	prev    *Route
	hints   [routeHints]*Route // by routeSlot: a candidate, checked against the id
	byPtr   *[ptrSlots]*Route  // by ptrSlot: a candidate, checked against the id's address; nil below ptrTableRoutes routes
	nframes uint32             // frames decoded, for the periodic instrument check
	// closed: the connection's last record was its clean close; anything
	// after it on this slot follows a gap.
	closed bool
}

// Engine applies records and delivers their events. Build it with New.
type Engine struct {
	cfg Config
	// Counts so far; read them on the engine's goroutine.
	Counts Counts

	subMu   sync.Mutex
	pending []*subscription
	subGen  atomic.Uint64

	conns    []*Conn // creation order: deterministic, used for flush and Books
	byDS     []map[uint32]*Conn
	lastConn *Conn // the state found last: most records follow one of the same slot
	subs     []*subscription
	gen      uint64
	stopped  bool
	digest   *feed.Digester
	ev       feed.Event
	instBuf  []string
	dirty    []*Route
}

// New returns an Engine for cfg's sources.
func New(cfg Config) *Engine {
	e := &Engine{cfg: cfg, digest: feed.NewDigester()}
	e.Reset()
	return e
}

// Reset drops every connection's state (a backward seek): each slot's next
// record gets a fresh decoder. Counts, subscriptions and the digest stay.
func (e *Engine) Reset() {
	e.conns, e.lastConn = e.conns[:0], nil
	e.byDS = make([]map[uint32]*Conn, len(e.cfg.Sources))
	for i := range e.byDS {
		e.byDS[i] = make(map[uint32]*Conn)
	}
}

// Conns returns the connections in the order their first records came; the
// slice is the engine's, valid until the next Process or Reset.
func (e *Engine) Conns() []*Conn { return e.conns }

// Digest returns the digest of everything delivered so far.
func (e *Engine) Digest() string { return e.digest.Sum() }

// Stopped reports whether Failed asked to stop delivering.
func (e *Engine) Stopped() bool { return e.stopped }

// find returns the state of (ds, c), or nil before its first record.
func (e *Engine) find(ds int, c uint32) *Conn {
	if cs := e.lastConn; cs != nil && cs.ID == c && cs.Dataset == ds {
		return cs
	}
	cs := e.byDS[ds][c]
	if cs != nil {
		e.lastConn = cs
	}
	return cs
}

// conn returns the state of (ds, id), creating its decoder on first use.
func (e *Engine) conn(ds int, id uint32) (*Conn, error) {
	if c := e.find(ds, id); c != nil {
		return c, nil
	}
	if f := e.cfg.Open; f != nil {
		if err := f(ds, id, len(e.byDS[ds])); err != nil {
			return nil, err
		}
	}
	src := &e.cfg.Sources[ds]
	dec, err := src.NewDecoder()
	if err != nil {
		return nil, err
	}
	c := &Conn{Dataset: ds, ID: id, Venue: src.Venue, Driver: src.Driver, Dec: dec, routes: make(map[string]*Route)}
	if src.Driver != nil {
		c.Scale = src.Driver.Scale()
	}
	e.byDS[ds][id] = c
	e.conns = append(e.conns, c)
	return c, nil
}

// Replace gives c a new decoder (the live engine's after a decoder
// panicked): its routes ask it for their books again.
func (e *Engine) Replace(c *Conn, dec venue.Decoder) {
	c.Dec = dec
	for _, rt := range c.routes {
		rt.Book, rt.bookAsked = nil, false
	}
}

// checkInstruments calls Config.Instruments for dataset ds.
func (e *Engine) checkInstruments(ds int) error {
	n := 0
	for _, c := range e.byDS[ds] {
		e.instBuf = c.Dec.Instruments(e.instBuf[:0])
		n += len(e.instBuf)
	}
	return e.cfg.Instruments(ds, n)
}

// Process applies one record of dataset ds and, when deliver, delivers its
// events (and picks up new subscriptions first); otherwise it only updates
// the books (a replay's warm-up). An error comes from a hook (Open,
// Instruments) or from making a decoder; decode errors are counted (and
// told to DecodeError), not returned.
func (e *Engine) Process(ds int, rec *datasets.Record, deliver bool) error {
	e.Counts.Records++
	if deliver {
		e.refreshSubs()
	}
	if c := e.find(ds, rec.Conn); c != nil && c.closed {
		// A clean close left the books valid; what follows it on the same
		// slot (a later session appended, datasets merged) comes after a
		// time nobody recorded.
		c.closed = false
		e.Drop(c)
	}
	switch k := rec.Kind; {
	case k == datasets.KindFrame:
		c, err := e.conn(ds, rec.Conn)
		if err != nil {
			return err
		}
		c.LastSeq, c.LastNs = rec.Seq, rec.WallNs
		if c.nframes++; c.nframes&e.cfg.InstrumentCheckMask == 0 && e.cfg.Instruments != nil {
			if err := e.checkInstruments(ds); err != nil {
				return err
			}
		}
		e.Counts.Frames++
		e.Counts.Bytes += uint64(len(rec.Payload))
		if !deliver {
			e.Counts.Warmup++
		}
		if err := c.Dec.Decode(rec.Payload, rec.WallNs, &c.Frame); err != nil {
			// The frame's messages that did apply, and the rejected ones
			// (venue.EventReject, with the books they invalidated), are
			// still delivered below.
			e.Counts.DecodeErrors++
			if f := e.cfg.DecodeError; f != nil {
				f(c, rec, err)
			}
		}
		if deliver {
			e.emitFrame(c, datasets.KindFrame, rec.Seq, rec.WallNs, rec.Payload)
		}
		if f := e.cfg.Checked; f != nil {
			f(c, rec)
		}
	case k.IsLoss():
		if deliver {
			e.Counts.Losses[k]++
		}
		if rec.Conn == datasets.ConnAll {
			// Repair's stand-in for a damaged block: the data of every
			// connection of the dataset may be missing.
			for _, c := range e.conns {
				if c.Dataset == ds {
					e.loss(c, rec, deliver)
				}
			}
			return nil
		}
		c, err := e.conn(ds, rec.Conn)
		if err != nil {
			return err
		}
		e.loss(c, rec, deliver)
	case k == datasets.KindRESTResponse:
		// A REST body goes to the connection's decoder too: a Polymarket
		// /book summary is a snapshot carrying the hash fields (min_order_size,
		// neg_risk) WebSocket books lack. Bodies a decoder does not take are
		// only counted.
		c, err := e.conn(ds, rec.Conn)
		if err != nil {
			return err
		}
		decErr := c.Dec.Decode(rec.Payload, rec.WallNs, &c.Frame)
		if decErr != nil {
			e.Counts.RESTUndecoded++
			if f := e.cfg.DecodeError; f != nil {
				f(c, rec, decErr)
			}
		}
		if !deliver {
			return nil
		}
		e.controlRecord(c, rec)
		e.emitControl(c, rec, e.decodeControl(rec), e.route(c, ""), nil)
		// A /books body applies summary by summary: what applied is
		// delivered even when another summary was rejected.
		if len(c.Frame.Events) > 0 {
			e.emitFrame(c, datasets.KindRESTResponse, rec.Seq, rec.WallNs, rec.Payload)
		}
		if f := e.cfg.Checked; f != nil && decErr == nil {
			f(c, rec)
		}
	case k == datasets.KindSent || k.IsControl():
		if k == datasets.KindCleanClose && rec.Conn != 0 {
			if c := e.find(ds, rec.Conn); c != nil {
				c.closed = true
			}
		}
		if k == datasets.KindSent {
			// Decoders that learn from subscribes see every sent frame,
			// delivered or not, so the books and flags do not depend on
			// the window.
			c, err := e.conn(ds, rec.Conn)
			if err != nil {
				return err
			}
			if so, ok := c.Dec.(venue.SentObserver); ok {
				so.Sent(rec.Payload, rec.WallNs)
			}
		}
		if !deliver {
			return nil
		}
		c, err := e.conn(ds, rec.Conn)
		if err != nil {
			return err
		}
		ctl := e.decodeControl(rec)
		e.controlRecord(c, rec)
		e.emitControl(c, rec, ctl, e.route(c, ""), nil)
		c.closed = k == datasets.KindCleanClose && rec.Conn != 0
	default:
		e.Counts.UnknownKinds++
	}
	return nil
}

// Drop discards c's pending batch undelivered and invalidates its books:
// they restart from their next snapshot.
func (e *Engine) Drop(c *Conn) {
	c.Frame.Events = c.Frame.Events[:0]
	c.Dec.Flush(&c.Frame)
	c.Dec.Invalidate()
	if f := e.cfg.Invalidated; f != nil {
		f(c)
	}
}

// FlushAll completes every decoder's pending batch (the end of a replay or
// of a capture) and delivers what that yields.
func (e *Engine) FlushAll() {
	e.refreshSubs()
	for _, c := range e.conns {
		c.Frame.Events = c.Frame.Events[:0]
		c.Dec.Flush(&c.Frame)
		e.emitFrame(c, datasets.KindFrame, c.LastSeq, c.LastNs, nil)
	}
}

// decodeControl returns the record's Control; Sent and REST payloads are raw
// bytes, so theirs is empty. Control records are rare: this allocates.
func (e *Engine) decodeControl(rec *datasets.Record) *datasets.Control {
	ctl := new(datasets.Control)
	if rec.Kind == datasets.KindSent || rec.Kind == datasets.KindRESTResponse || len(rec.Payload) == 0 {
		return ctl
	}
	c, err := datasets.DecodeControl(rec.Payload)
	if err != nil {
		e.Counts.ControlErrors++
		return ctl
	}
	*ctl = c
	return ctl
}

// emitFrame delivers the events in c.Frame, produced by the record (kind,
// seq, recvNs); payload is the record's, or nil for events a Flush yielded.
func (e *Engine) emitFrame(c *Conn, kind datasets.Kind, seq uint64, recvNs int64, payload []byte) {
	evs := c.Frame.Events
	if payload == nil && len(evs) == 0 {
		return
	}
	ev := &e.ev
	ev.Dataset, ev.Venue, ev.Conn, ev.Seq, ev.RecvNs = c.Dataset, c.Venue, c.ID, seq, recvNs
	ev.Kind, ev.Control, ev.Payload, ev.Scale, ev.Driver = kind, nil, payload, c.Scale, c.Driver
	e.digest.Record(ev)
	for i := range evs {
		v := &evs[i]
		rt := c.cachedRoute(v.Instrument)
		if rt == nil {
			rt = e.routeMiss(c, v.Instrument)
		}
		bk := v.Book
		if bk != nil {
			rt.Book = bk
		} else if v.Instrument != "" {
			// Events that do not touch the book (trades, quotes) get the
			// instrument's book too. The decoder is asked once: a book it
			// creates later arrives on the snapshot event that fills it.
			if rt.Book == nil && !rt.bookAsked {
				rt.Book, rt.bookAsked = c.Dec.Book(v.Instrument), true
			}
			bk = rt.Book
		}
		ch := feed.ChannelOf(v.Type)
		ev.Channel, ev.Instrument, ev.Decoded, ev.Book = ch, v.Instrument, v, bk
		e.Counts.Events[v.Type]++
		e.digest.Event(ev, v, rt.key, v.ExchangeNs)
		if e.cfg.TrackBooks && bk != nil && v.Instrument != "" {
			rt.UpdatedNs, rt.Seq = recvNs, seq
			e.markDirty(rt)
		}
		list := rt.subs[ch]
		if len(list) == 0 {
			continue
		}
		// Quality is read only for delivery (the digest does not use it),
		// and only where there is a book to qualify.
		ev.Quality = venue.Quality{}
		if bk != nil {
			ev.Quality = c.Dec.Quality(v.Instrument)
		}
		for _, s := range list {
			if !s.failed && !e.stopped {
				e.call(s, ev)
			}
		}
	}
}

// loss completes the connection's pending batch, invalidates its books and,
// when deliver, delivers the loss record.
func (e *Engine) loss(c *Conn, rec *datasets.Record, deliver bool) {
	c.Frame.Events = c.Frame.Events[:0] // Flush appends, and may append nothing
	c.Dec.Flush(&c.Frame)
	if deliver {
		e.emitFrame(c, datasets.KindFrame, rec.Seq, rec.WallNs, nil)
	}
	if f := e.cfg.Checked; f != nil {
		f(c, rec)
	}
	c.Dec.Invalidate()
	if f := e.cfg.Invalidated; f != nil {
		f(c)
	}
	if deliver {
		e.emitLoss(c, rec)
	}
}

// emitLoss delivers a loss record once per instrument of the connection,
// with its (now invalid) book, and once connection-wide.
func (e *Engine) emitLoss(c *Conn, rec *datasets.Record) {
	ctl := e.decodeControl(rec)
	e.controlRecord(c, rec)
	e.instBuf = c.Dec.Instruments(e.instBuf[:0])
	for _, inst := range e.instBuf {
		rt := e.route(c, inst)
		e.emitControl(c, rec, ctl, rt, c.Dec.Book(inst))
		if e.cfg.TrackBooks {
			e.markDirty(rt)
		}
	}
	e.emitControl(c, rec, ctl, e.route(c, ""), nil)
}

// controlRecord starts the delivery of a non-frame record.
func (e *Engine) controlRecord(c *Conn, rec *datasets.Record) {
	ev := &e.ev
	ev.Dataset, ev.Venue, ev.Conn, ev.Seq, ev.RecvNs = c.Dataset, c.Venue, c.ID, rec.Seq, rec.WallNs
	ev.Kind, ev.Channel, ev.Decoded, ev.Payload, ev.Scale, ev.Driver = rec.Kind, feed.ChannelControl, nil, rec.Payload, c.Scale, c.Driver
	e.digest.Record(ev)
}

// emitControl delivers one control event on rt's ChannelControl list, after
// controlRecord.
func (e *Engine) emitControl(c *Conn, rec *datasets.Record, ctl *datasets.Control, rt *Route, bk *book.Book) {
	e.Counts.Controls++
	ev := &e.ev
	ev.Instrument, ev.Control, ev.Book, ev.Quality = rt.Instrument, ctl, bk, venue.Quality{}
	if rt.Instrument != "" {
		ev.Quality = c.Dec.Quality(rt.Instrument)
	}
	e.digest.Event(ev, nil, rt.key, int64(xxhash.Sum64(rec.Payload)))
	for _, s := range rt.subs[feed.ChannelControl] {
		if !s.failed && !e.stopped {
			e.call(s, ev)
		}
	}
}

func (e *Engine) markDirty(rt *Route) {
	if !rt.dirty {
		rt.dirty = true
		e.dirty = append(e.dirty, rt)
	}
}

// Dirty returns the routes whose book changed since ClearDirty (with
// Config.TrackBooks); the slice is the engine's.
func (e *Engine) Dirty() []*Route { return e.dirty }

// ClearDirty empties Dirty.
func (e *Engine) ClearDirty() {
	for _, rt := range e.dirty {
		rt.dirty = false
	}
	e.dirty = e.dirty[:0]
}
