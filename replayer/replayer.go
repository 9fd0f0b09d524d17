package replayer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// ErrNoDatasets means New was given no paths.
var ErrNoDatasets = errors.New("replayer: no datasets")

// ErrDamaged means a dataset was damaged (see Summary.Damaged): Run stepped
// over the damage, delivered a gap record for it and replayed the rest, but
// the result lacks what was lost. WithSkipDamaged(true) tolerates it.
var ErrDamaged = errors.New("replayer: damaged data skipped")

// ErrReused means Run was called a second time; a Replayer runs once.
var ErrReused = errors.New("replayer: Run already called")

// Replayer replays one or more datasets through their venue decoders and
// calls subscribers with every event. Build it with New, add subscribers,
// then call Run once.
//
// Subscribe, Pause, Resume, SeekTo and Position are safe from any goroutine,
// also while Run is in progress; Books and the returned Summary are for after
// Run returns.
type Replayer struct {
	paths     []string
	manifests []datasets.Manifest
	opts      options
	clock     *Clock

	subMu  sync.Mutex
	subs   []*subscription
	subGen atomic.Uint64

	seekMu      sync.Mutex
	seekTo      int64
	seekPending atomic.Bool

	started atomic.Bool
	pos     atomic.Int64

	run runState // owned by the Run goroutine
}

// New opens the datasets at paths to read their manifests and checks that
// every venue has a decoder; the data is read by Run. A dataset's index in
// paths is its Event.Dataset and decides ties in the order.
func New(paths []string, opts ...Option) (*Replayer, error) {
	if len(paths) == 0 {
		return nil, ErrNoDatasets
	}
	o := defaults()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}

	r := &Replayer{paths: slices.Clone(paths), opts: o}
	for _, p := range paths {
		m, err := datasets.ReadManifest(p)
		if err != nil {
			return nil, fmt.Errorf("replayer: open %s: %w", p, err)
		}
		if _, err := o.newDecoder(m.Venue, o.decoderOptions()); err != nil {
			return nil, fmt.Errorf("replayer: dataset %s: %w", p, err)
		}
		r.manifests = append(r.manifests, m)
	}
	if r.opts.warmup == WarmupAuto {
		r.opts.warmup = WarmupFull
		for _, p := range paths {
			if datasets.IsRemote(p) {
				r.opts.warmup = WarmupNone
			}
		}
	}
	r.clock = newClock(o.speed, o.sleeper, true)
	r.clock.SetMaxGap(o.maxGap)
	return r, nil
}

// Manifests returns the manifests of the datasets, in input order. The slice
// is the caller's.
func (r *Replayer) Manifests() []datasets.Manifest { return slices.Clone(r.manifests) }

// Subscribe registers s for events matching k (see Key). Subscribers
// matching one event are called in Subscribe order, on the Run goroutine.
// A nil s panics.
func (r *Replayer) Subscribe(k Key, s Subscriber) {
	if s == nil {
		panic("replayer: Subscribe with nil Subscriber")
	}
	r.subMu.Lock()
	r.subs = append(r.subs, &subscription{index: len(r.subs), key: k, sub: s})
	r.subGen.Add(1)
	r.subMu.Unlock()
}

// Pause stops a paced or unpaced replay before its next record; Resume
// continues it, keeping the recorded gaps.
func (r *Replayer) Pause() { r.clock.Pause() }

// Resume continues after Pause.
func (r *Replayer) Resume() { r.clock.Resume() }

// SeekTo moves a running replay so that delivery continues with the first
// record at or after wallNs, with every book exactly as a replay from the
// start would have it there: forward, the records in between are applied
// silently; backward, the datasets are reread from the start with fresh
// decoders. Pacing restarts from that record. Called before Run, it sets
// where delivery starts.
func (r *Replayer) SeekTo(wallNs int64) {
	r.seekMu.Lock()
	r.seekTo = wallNs
	r.seekPending.Store(true)
	r.seekMu.Unlock()
	r.clock.interrupt()
}

// Position returns the wall time (ns) of a recent record Run processed, for
// progress display; 0 before the first. Unpaced, it lags by up to 256 records.
func (r *Replayer) Position() int64 { return r.pos.Load() }

// StartNs returns the earliest manifest start time (wall ns) of the inputs.
func (r *Replayer) StartNs() int64 {
	s := r.manifests[0].StartNs
	for _, m := range r.manifests[1:] {
		if m.StartNs != 0 && (s == 0 || m.StartNs < s) {
			s = m.StartNs
		}
	}
	return s
}

// EndNs returns the latest manifest end time (wall ns) of the inputs, or 0
// when one of them is still open (no end recorded).
func (r *Replayer) EndNs() int64 {
	var e int64
	for _, m := range r.manifests {
		if m.EndNs == 0 {
			return 0
		}
		e = max(e, m.EndNs)
	}
	return e
}

// connState is one (dataset, connection slot): its decoder and routes.
type connState struct {
	ds      int
	conn    uint32
	venue   string
	dec     venue.Decoder
	scale   book.Scale
	frame   venue.Frame
	routes  map[string]*instRoute
	last    *instRoute // the route used last, and the one before
	prev    *instRoute
	hints   [routeHints]*instRoute // by routeSlot: a candidate, checked against the id
	byPtr   *[ptrSlots]*instRoute  // by ptrSlot: a candidate, checked against the id's address; nil below ptrTableRoutes routes
	lastSeq uint64
	lastNs  int64
	nframes uint32 // frames decoded, for the periodic instrument bound check
	// closed: the connection's last record was its clean close; anything
	// after it on this slot follows a gap.
	closed bool
}

// runState is the mutable state of Run.
type runState struct {
	conns    []*connState // creation order: deterministic, used for flush and Books
	byDS     []map[uint32]*connState
	lastConn *connState  // the state found last (find): most records follow one of the same slot
	retired  venue.Stats // counters of decoders dropped by a backward seek
	subs     []*subscription
	gen      uint64
	digest   *feed.Digester
	ev       Event
	instBuf  []string
	failures []SubscriberFailure
	stopErr  *SubscriberFailure // the first failure, under WithStopOnSubscriberError

	records, frames, bytes, warmup, controls, unknownKinds uint64
	decodeErrors, controlErrors, restUndecoded             uint64
	firstErrors, firstRESTErrors                           []DecodeError
	events                                                 [venue.NumEventTypes]uint64
	losses                                                 [256]uint64
	seeks                                                  int
	truncated                                              []string
	readers                                                []*datasets.Reader // the current pass's
	fetched                                                []int64            // bytes earlier passes' readers read, per dataset
}

// find returns the state of (ds, c), or nil before its first record.
func (st *runState) find(ds int, c uint32) *connState {
	if cs := st.lastConn; cs != nil && cs.conn == c && cs.ds == ds {
		return cs
	}
	cs := st.byDS[ds][c]
	if cs != nil {
		st.lastConn = cs
	}
	return cs
}

// conn returns the state of (ds, c), creating its decoder on first use.
func (r *Replayer) conn(ds int, c uint32) (*connState, error) {
	st := &r.run
	if cs := st.find(ds, c); cs != nil {
		return cs, nil
	}
	if len(st.byDS[ds]) >= r.opts.maxConns {
		return nil, fmt.Errorf("%w: dataset %s uses more than %d connection slots (conn %d at this record; WithLimits raises the bound)",
			ErrLimit, r.paths[ds], r.opts.maxConns, c)
	}
	v := r.manifests[ds].Venue
	dec, err := r.opts.newDecoder(v, r.opts.decoderOptions())
	if err != nil {
		return nil, fmt.Errorf("replayer: dataset %s: %w", r.paths[ds], err)
	}
	cs := &connState{ds: ds, conn: c, venue: v, dec: dec, scale: dec.Scale(), routes: make(map[string]*instRoute)}
	st.byDS[ds][c] = cs
	st.conns = append(st.conns, cs)
	return cs, nil
}

// instrumentCheckMask sets how often (in frames of one connection) the
// instrument bound is checked: counting walks every book, so not per frame.
var instrumentCheckMask uint32 = 1<<16 - 1

// checkInstruments enforces the instrument bound on dataset ds.
func (r *Replayer) checkInstruments(ds int) error {
	st := &r.run
	n := 0
	for _, cs := range st.byDS[ds] {
		st.instBuf = cs.dec.Instruments(st.instBuf[:0])
		n += len(st.instBuf)
	}
	if n > r.opts.maxInstruments {
		return fmt.Errorf("%w: dataset %s has more than %d instruments (%d so far; WithLimits raises the bound)",
			ErrLimit, r.paths[ds], r.opts.maxInstruments, n)
	}
	return nil
}

// route returns the resolved route of an instrument on cs.
func (r *Replayer) route(cs *connState, inst string) *instRoute {
	if rt := cs.cachedRoute(inst); rt != nil {
		return rt
	}
	return r.routeMiss(cs, inst)
}

// cachedRoute returns the resolved route of inst from the address table, or
// nil. Decoders intern instrument ids, so the same instrument comes back as
// the same string: a route whose id is that very string (same bytes in
// memory, same length, kept alive by the route) is the route, found with no
// byte of the id compared. The table holds resolved routes only:
// refreshSubs empties it when the subscriptions change.
func (cs *connState) cachedRoute(inst string) *instRoute {
	t := cs.byPtr
	if t == nil {
		return nil
	}
	rt := t[ptrSlot(inst)]
	if rt != nil && unsafe.StringData(rt.instrument) == unsafe.StringData(inst) && len(rt.instrument) == len(inst) {
		return rt
	}
	return nil
}

// routeMiss is route once cachedRoute has found nothing: the route by id,
// kept in the address table (made once the connection has enough routes).
func (r *Replayer) routeMiss(cs *connState, inst string) *instRoute {
	rt := r.routeByID(cs, inst)
	switch {
	case cs.byPtr != nil:
		cs.byPtr[ptrSlot(inst)] = rt
	case len(cs.routes) >= ptrTableRoutes:
		cs.byPtr = new([ptrSlots]*instRoute)
	}
	if rt.gen != r.run.gen {
		r.resolve(rt, cs.venue)
	}
	return rt
}

// routeByID finds or makes the route of inst on cs by the id's bytes.
func (r *Replayer) routeByID(cs *connState, inst string) *instRoute {
	// Two cached routes catch the common alternations (a binary market's two
	// tokens in one price_change) without hashing a 77-digit id.
	rt := cs.last
	if rt == nil || rt.instrument != inst {
		rt = cs.prev
		if rt == nil || rt.instrument != inst {
			// Then the route the id's first bytes hint at (most misses of
			// the two above, when many markets interleave), then the map.
			slot, hinted := routeSlot(inst)
			if rt = cs.hints[slot]; !hinted || rt == nil || rt.instrument != inst {
				rt = cs.routes[inst]
				if rt == nil {
					rt = &instRoute{instrument: inst, key: feed.DigestKey(inst)}
					r.resolve(rt, cs.venue)
					cs.routes[inst] = rt
				}
				if hinted {
					cs.hints[slot] = rt
				}
			}
		}
		cs.prev, cs.last = cs.last, rt
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
// instrument another shard owns (WithShard).
func (r *Replayer) resolve(rt *instRoute, venueName string) {
	st := &r.run
	if rt.instrument == "" || r.opts.shard.Owns(venueName, rt.instrument) {
		rt.resolve(st.subs, venueName, st.gen)
		return
	}
	rt.resolve(nil, venueName, st.gen)
}

// refreshSubs picks up Subscribe calls made since the last record.
func (r *Replayer) refreshSubs() {
	if g := r.subGen.Load(); g != r.run.gen {
		r.subMu.Lock()
		r.run.subs = append(r.run.subs[:0], r.subs...)
		r.run.gen = r.subGen.Load()
		r.subMu.Unlock()
		for _, cs := range r.run.conns {
			if cs.byPtr != nil {
				clear(cs.byPtr[:]) // its routes resolve again on their next event
			}
		}
	}
}

// openAll opens every dataset and returns the readers and their merger.
func (r *Replayer) openAll() ([]*datasets.Reader, *Merger, error) {
	rds := make([]*datasets.Reader, 0, len(r.paths))
	if r.run.fetched == nil {
		r.run.fetched = make([]int64, len(r.paths))
	}
	for i, rd := range r.run.readers {
		r.run.fetched[i] += rd.Fetched()
	}
	from := r.opts.fromNs
	if r.run.seeks > 0 {
		from = 0 // a backward seek rereads from the start
	}
	for _, p := range r.paths {
		opts := []datasets.ReaderOption{datasets.WithSkipDamaged(), datasets.WithReadAhead(r.opts.readAhead)}
		if r.opts.toNs > 0 {
			opts = append(opts, datasets.WithReadUntil(r.opts.toNs))
		}
		rd, err := datasets.Open(p, opts...)
		if err == nil && from > 0 && r.opts.warmup == WarmupNone {
			err = rd.SeekTime(from)
		}
		if err != nil {
			if rd != nil {
				rd.Close()
			}
			closeAll(rds)
			return nil, nil, fmt.Errorf("replayer: open %s: %w", p, err)
		}
		rds = append(rds, rd)
	}
	r.run.readers = rds
	return rds, NewMerger(rds), nil
}

func closeAll(rds []*datasets.Reader) {
	for _, rd := range rds {
		rd.Close()
	}
}

// resetDecoders drops every connection state (a backward seek): the next
// record of each slot gets a fresh decoder.
func (r *Replayer) resetDecoders() {
	st := &r.run
	for _, cs := range st.conns {
		addStats(&st.retired, cs.dec.Stats())
	}
	st.conns, st.lastConn = st.conns[:0], nil
	for i := range st.byDS {
		st.byDS[i] = make(map[uint32]*connState)
	}
}

func addStats(dst *venue.Stats, s venue.Stats) {
	dst.Frames += s.Frames
	dst.Errors += s.Errors
	for i := range s.Events {
		dst.Events[i] += s.Events[i]
	}
	dst.UnknownTypes += s.UnknownTypes
	dst.NonJSON += s.NonJSON
	addCheckStats(dst, &s)
	dst.Rejected += s.Rejected
	dst.Invalidated += s.Invalidated
	dst.Unsnapshotted += s.Unsnapshotted
}

// Run replays every record in order, calling subscribers, until the end of
// the inputs or of the window, then flushes every decoder and returns the
// Summary. A read error stops the replay and is returned with the Summary so
// far; so is ctx's error when ctx ends first. Decode errors do not stop it,
// nor do subscriber failures unless WithStopOnSubscriberError: they are in
// the Summary. With that option the first failure (a *SubscriberFailure,
// wrapping the subscriber's error) ends the replay at once and is returned
// with the Summary so far; no subscriber gets another event.
func (r *Replayer) Run(ctx context.Context) (*Summary, error) {
	if !r.started.CompareAndSwap(false, true) {
		return nil, ErrReused
	}
	st := &r.run
	st.digest = feed.NewDigester()
	st.byDS = make([]map[uint32]*connState, len(r.paths))
	for i := range st.byDS {
		st.byDS[i] = make(map[uint32]*connState)
	}
	st.truncated = make([]string, len(r.paths))
	r.refreshSubs()

	start := time.Now()
	rds, m, err := r.openAll()
	if err != nil {
		return r.summary(start), err
	}
	defer func() { closeAll(rds) }()

	silentUntil := r.opts.fromNs
	paced := r.opts.speed != SpeedMax
	var lastNs int64
	var n uint64
	// seek acts on a pending SeekTo; a backward one reopens the inputs.
	seek := func() error {
		restart, target := r.takeSeek(lastNs)
		silentUntil = target
		r.clock.Reset()
		if !restart {
			return nil
		}
		closeAll(rds)
		rds = nil
		r.resetDecoders()
		var err error
		rds, m, err = r.openAll()
		lastNs = 0
		return err
	}
	for {
		if r.seekPending.Load() {
			if err := seek(); err != nil {
				return r.summary(start), err
			}
		}
		if !m.Next() {
			if m.Err() == nil && r.seekPending.Load() {
				continue // a seek from the last record's subscriber
			}
			break
		}
		ds, rec := m.Record()
		if r.opts.toNs > 0 && rec.WallNs >= r.opts.toNs {
			break
		}
		n++
		if n&255 == 0 || paced {
			r.pos.Store(rec.WallNs)
			if n&1023 == 0 && ctx.Err() != nil {
				return r.summary(start), ctx.Err()
			}
		}
		live := rec.WallNs >= silentUntil
		if live {
			if paced && rec.Kind.IsLoss() {
				r.clock.Loss(rec.WallNs) // nobody saw data around it: no wait
			}
			err := r.clock.wait(ctx, rec.WallNs)
			if err == errInterrupted && r.seekPending.Load() {
				// A seek cut the wait short: act on it before this record.
				restartsFrom := lastNs
				if err := seek(); err != nil {
					return r.summary(start), err
				}
				if restartsFrom != 0 && lastNs == 0 {
					continue // reopened: this record is from the old pass
				}
				live = rec.WallNs >= silentUntil
				err = nil
				if live {
					err = r.clock.wait(ctx, rec.WallNs)
				}
			}
			if err != nil && err != errInterrupted {
				return r.summary(start), err
			}
		}
		if err := r.process(ds, rec, live); err != nil {
			return r.summary(start), err
		}
		if st.stopErr != nil {
			return r.summary(start), st.stopErr
		}
		lastNs = rec.WallNs
	}
	if err := m.Err(); err != nil {
		return r.summary(start), err
	}
	for i, rd := range rds {
		if t := rd.Truncated(); t != nil {
			st.truncated[i] = t.String()
		}
		st.unknownKinds += rd.SkippedUnknown()
	}
	r.flushAll()
	if st.stopErr != nil {
		return r.summary(start), st.stopErr
	}
	s := r.summary(start)
	if d := s.Damaged; d != nil && !r.opts.skipDamaged {
		return s, fmt.Errorf("%w: %s", ErrDamaged, d)
	}
	return s, nil
}

// takeSeek consumes a pending seek and says whether it goes backward from
// lastNs, the wall time of the last processed record.
func (r *Replayer) takeSeek(lastNs int64) (restart bool, target int64) {
	r.seekMu.Lock()
	target = r.seekTo
	r.seekPending.Store(false)
	r.seekMu.Unlock()
	r.run.seeks++
	return lastNs != 0 && target <= lastNs, target
}

// process applies one record and, when live, delivers its events.
func (r *Replayer) process(ds int, rec *datasets.Record, live bool) error {
	st := &r.run
	st.records++
	if live {
		r.refreshSubs()
	}
	if cs := st.find(ds, rec.Conn); cs != nil && cs.closed {
		// A clean close left the books valid; what follows it on the same
		// slot (a later session appended, datasets merged) comes after a
		// time nobody recorded.
		cs.closed = false
		cs.frame.Events = cs.frame.Events[:0]
		cs.dec.Flush(&cs.frame)
		cs.dec.Invalidate()
	}
	switch k := rec.Kind; {
	case k == datasets.KindFrame:
		cs, err := r.conn(ds, rec.Conn)
		if err != nil {
			return err
		}
		cs.lastSeq, cs.lastNs = rec.Seq, rec.WallNs
		if cs.nframes++; cs.nframes&instrumentCheckMask == 0 {
			if err := r.checkInstruments(ds); err != nil {
				return err
			}
		}
		st.frames++
		st.bytes += uint64(len(rec.Payload))
		if !live {
			st.warmup++
		}
		if err := cs.dec.Decode(rec.Payload, rec.WallNs, &cs.frame); err != nil {
			// The frame's messages that did apply, and the rejected ones
			// (venue.EventReject, with the books they invalidated), are
			// still delivered below.
			st.decodeErrors++
			if len(st.firstErrors) < maxDecodeErrors {
				st.firstErrors = append(st.firstErrors, DecodeError{
					Dataset: ds, Conn: rec.Conn, Seq: rec.Seq, RecvNs: rec.WallNs, Err: err.Error(), Cause: err})
			}
		}
		if live {
			r.emitFrame(cs, ds, datasets.KindFrame, rec.Seq, rec.WallNs, rec.Payload)
		}
	case k.IsLoss():
		if live {
			st.losses[k]++
		}
		if rec.Conn == datasets.ConnAll {
			// Repair's stand-in for a damaged block: the data of every
			// connection of the dataset may be missing.
			for _, cs := range st.conns {
				if cs.ds == ds {
					r.loss(cs, ds, rec, live)
				}
			}
			return nil
		}
		cs, err := r.conn(ds, rec.Conn)
		if err != nil {
			return err
		}
		r.loss(cs, ds, rec, live)
	case k == datasets.KindRESTResponse:
		// A REST body goes to the connection's decoder too: a Polymarket
		// /book summary is a snapshot carrying the hash fields (min_order_size,
		// neg_risk) WebSocket books lack. Bodies a decoder does not take are
		// only counted.
		cs, err := r.conn(ds, rec.Conn)
		if err != nil {
			return err
		}
		decErr := cs.dec.Decode(rec.Payload, rec.WallNs, &cs.frame)
		if decErr != nil {
			st.restUndecoded++
			if len(st.firstRESTErrors) < maxDecodeErrors {
				st.firstRESTErrors = append(st.firstRESTErrors, DecodeError{
					Dataset: ds, Conn: rec.Conn, Seq: rec.Seq, RecvNs: rec.WallNs, Err: decErr.Error(), Cause: decErr})
			}
		}
		if !live {
			if f := r.opts.warmupREST; f != nil {
				f(cs.venue, rec)
			}
			return nil
		}
		r.controlRecord(cs, ds, rec)
		r.emitControl(cs, rec, r.decodeControl(rec), r.route(cs, ""), nil)
		// A /books body applies summary by summary: what applied is
		// delivered even when another summary was rejected.
		if len(cs.frame.Events) > 0 {
			r.emitFrame(cs, ds, datasets.KindRESTResponse, rec.Seq, rec.WallNs, rec.Payload)
		}
	case k == datasets.KindSent || isControlKind(k):
		if k == datasets.KindCleanClose && rec.Conn != 0 {
			if cs := st.find(ds, rec.Conn); cs != nil {
				cs.closed = true
			}
		}
		if k == datasets.KindSent {
			// Decoders that learn from subscribes see every sent frame,
			// delivered or not, so the books and flags do not depend on
			// the window.
			cs, err := r.conn(ds, rec.Conn)
			if err != nil {
				return err
			}
			if so, ok := cs.dec.(venue.SentObserver); ok {
				so.Sent(rec.Payload, rec.WallNs)
			}
		}
		if !live {
			return nil
		}
		cs, err := r.conn(ds, rec.Conn)
		if err != nil {
			return err
		}
		ctl := r.decodeControl(rec)
		r.controlRecord(cs, ds, rec)
		r.emitControl(cs, rec, ctl, r.route(cs, ""), nil)
		cs.closed = k == datasets.KindCleanClose && rec.Conn != 0
	default:
		st.unknownKinds++
	}
	return nil
}

// isControlKind reports the non-loss kinds whose payload is a Control.
func isControlKind(k datasets.Kind) bool { return k.IsControl() && !k.IsLoss() }

// decodeControl returns the record's Control; Sent and REST payloads are raw
// bytes, so theirs is empty. Control records are rare: this allocates.
func (r *Replayer) decodeControl(rec *datasets.Record) *datasets.Control {
	ctl := new(datasets.Control)
	if rec.Kind == datasets.KindSent || rec.Kind == datasets.KindRESTResponse || len(rec.Payload) == 0 {
		return ctl
	}
	c, err := datasets.DecodeControl(rec.Payload)
	if err != nil {
		r.run.controlErrors++
		return ctl
	}
	*ctl = c
	return ctl
}

// emitFrame delivers the events in cs.frame, produced by the record (kind,
// seq, recvNs); payload is the record's, or nil for events a Flush yielded.
func (r *Replayer) emitFrame(cs *connState, ds int, kind datasets.Kind, seq uint64, recvNs int64, payload []byte) {
	st := &r.run
	evs := cs.frame.Events
	if payload == nil && len(evs) == 0 {
		return
	}
	e := &st.ev
	e.Dataset, e.Venue, e.Conn, e.Seq, e.RecvNs = ds, cs.venue, cs.conn, seq, recvNs
	e.Kind, e.Control, e.Payload, e.Scale = kind, nil, payload, cs.scale
	st.digest.Record(e)
	for i := range evs {
		v := &evs[i]
		rt := cs.cachedRoute(v.Instrument)
		if rt == nil {
			rt = r.routeMiss(cs, v.Instrument)
		}
		bk := v.Book
		if bk != nil {
			rt.book = bk
		} else if v.Instrument != "" {
			// Events that do not touch the book (trades, quotes) get the
			// instrument's book too. The decoder is asked once: a book it
			// creates later arrives on the snapshot event that fills it.
			if rt.book == nil && !rt.bookAsked {
				rt.book, rt.bookAsked = cs.dec.Book(v.Instrument), true
			}
			bk = rt.book
		}
		ch := channelOf(v.Type)
		e.Channel, e.Instrument, e.Decoded, e.Book = ch, v.Instrument, v, bk
		st.events[v.Type]++
		st.digest.Event(e, v, rt.key, v.ExchangeNs)
		list := rt.subs[ch]
		if len(list) == 0 {
			continue
		}
		// Quality is read only for delivery (the digest does not use it),
		// and only where there is a book to qualify.
		e.Quality = venue.Quality{}
		if bk != nil {
			e.Quality = cs.dec.Quality(v.Instrument)
		}
		for _, s := range list {
			if !s.failed && st.stopErr == nil {
				r.call(s, e)
			}
		}
	}
}

// loss completes the connection's pending batch, invalidates its books and,
// when live, delivers the loss record.
func (r *Replayer) loss(cs *connState, ds int, rec *datasets.Record, live bool) {
	cs.frame.Events = cs.frame.Events[:0] // Flush appends, and may append nothing
	cs.dec.Flush(&cs.frame)
	if live {
		r.emitFrame(cs, ds, datasets.KindFrame, rec.Seq, rec.WallNs, nil)
	}
	cs.dec.Invalidate()
	if live {
		r.emitLoss(cs, ds, rec)
	}
}

// emitLoss delivers a loss record once per instrument of the connection,
// with its (now invalid) book, and once connection-wide.
func (r *Replayer) emitLoss(cs *connState, ds int, rec *datasets.Record) {
	st := &r.run
	ctl := r.decodeControl(rec)
	r.controlRecord(cs, ds, rec)
	st.instBuf = cs.dec.Instruments(st.instBuf[:0])
	for _, inst := range st.instBuf {
		r.emitControl(cs, rec, ctl, r.route(cs, inst), cs.dec.Book(inst))
	}
	r.emitControl(cs, rec, ctl, r.route(cs, ""), nil)
}

// controlRecord starts the delivery of a non-frame record.
func (r *Replayer) controlRecord(cs *connState, ds int, rec *datasets.Record) {
	e := &r.run.ev
	e.Dataset, e.Venue, e.Conn, e.Seq, e.RecvNs = ds, cs.venue, cs.conn, rec.Seq, rec.WallNs
	e.Kind, e.Channel, e.Decoded, e.Payload, e.Scale = rec.Kind, ChannelControl, nil, rec.Payload, cs.scale
	r.run.digest.Record(e)
}

// emitControl delivers one control event on rt's ChannelControl list, after
// controlRecord.
func (r *Replayer) emitControl(cs *connState, rec *datasets.Record, ctl *datasets.Control, rt *instRoute, bk *book.Book) {
	st := &r.run
	st.controls++
	e := &st.ev
	e.Instrument, e.Control, e.Book, e.Quality = rt.instrument, ctl, bk, venue.Quality{}
	if rt.instrument != "" {
		e.Quality = cs.dec.Quality(rt.instrument)
	}
	st.digest.Event(e, nil, rt.key, int64(xxhash.Sum64(rec.Payload)))
	for _, s := range rt.subs[ChannelControl] {
		if !s.failed && st.stopErr == nil {
			r.call(s, e)
		}
	}
}

// flushAll completes every decoder's pending batch at the end of the replay
// and delivers what that yields.
func (r *Replayer) flushAll() {
	r.refreshSubs()
	for _, cs := range r.run.conns {
		cs.frame.Events = cs.frame.Events[:0]
		cs.dec.Flush(&cs.frame)
		r.emitFrame(cs, cs.ds, datasets.KindFrame, cs.lastSeq, cs.lastNs, nil)
	}
}

// summary builds the Summary of what Run did so far.
func (r *Replayer) summary(start time.Time) *Summary {
	st := &r.run
	wall := time.Since(start)
	s := &Summary{
		Records: st.records, Frames: st.frames, Bytes: st.bytes, WarmupFrames: st.warmup,
		Events: eventCounts(&st.events), Controls: st.controls, UnknownKinds: st.unknownKinds,
		DecodeErrors: st.decodeErrors, FirstDecodeErrors: st.firstErrors, ControlErrors: st.controlErrors,
		RESTUndecoded: st.restUndecoded, FirstRESTErrors: st.firstRESTErrors,
		Losses: lossCounts(&st.losses), SubscriberFailures: st.failures, Seeks: st.seeks,
		WallNs: int64(wall), Speed: r.opts.speed.String(),
	}
	if r.opts.fromNs > 0 {
		s.Warmup = r.opts.warmup.String()
	}
	for i, p := range r.paths {
		d := DatasetSummary{Path: p, Venue: r.manifests[i].Venue}
		if i < len(st.truncated) {
			d.Truncated = st.truncated[i]
		}
		if i < len(st.readers) {
			d.Damage = st.readers[i].Damaged()
			s.Damaged = s.Damaged.add(d.Damage)
			d.BytesFetched = st.readers[i].Fetched()
		}
		if i < len(st.fetched) {
			d.BytesFetched += st.fetched[i]
		}
		s.BytesFetched += d.BytesFetched
		s.Datasets = append(s.Datasets, d)
	}
	stats := st.retired
	type vi struct{ v, i string }
	seen := make(map[vi]bool)
	for _, cs := range st.conns {
		addStats(&stats, cs.dec.Stats())
		st.instBuf = cs.dec.Instruments(st.instBuf[:0])
		for _, in := range st.instBuf {
			seen[vi{cs.venue, in}] = true
		}
	}
	s.Instruments = len(seen)
	s.setChecks(&stats)
	s.HashMode = r.opts.hashMode.String()
	if r.opts.hashMode == HashSampled {
		s.HashEvery = r.opts.hashEvery.String()
	}
	s.RejectedMessages, s.BooksInvalidated = stats.Rejected, stats.Invalidated
	s.Unsnapshotted = stats.Unsnapshotted
	if sec := wall.Seconds(); sec > 0 {
		s.FramesPerSec = float64(st.frames) / sec
		s.MBPerSec = float64(st.bytes) / 1e6 / sec
	}
	if r.opts.speed != SpeedMax {
		l := r.clock.Lateness()
		s.Lateness = &l
		if sk := r.clock.Skipped(); sk != (Skipped{}) {
			s.Skipped = &sk
		}
	}
	if st.digest != nil {
		s.Digest = st.digest.Sum()
	}
	return s
}

// BookState is one reconstructed book after Run.
type BookState struct {
	Dataset    int
	Conn       uint32
	Venue      string
	Instrument string
	// Book is owned by the replayer's decoder; read it, do not change it.
	Book    *book.Book
	Scale   book.Scale
	Quality venue.Quality
}

// Books returns every instrument's book as Run left it (at the end of the
// window or the inputs), sorted by venue, instrument, dataset and connection
// slot. Call it after Run returns; the slice is the caller's.
func (r *Replayer) Books() []BookState {
	var out []BookState
	var buf []string
	for _, cs := range r.run.conns {
		buf = cs.dec.Instruments(buf[:0])
		for _, in := range buf {
			bk := cs.dec.Book(in)
			if bk == nil {
				continue
			}
			out = append(out, BookState{Dataset: cs.ds, Conn: cs.conn, Venue: cs.venue,
				Instrument: in, Book: bk, Scale: cs.scale, Quality: cs.dec.Quality(in)})
		}
	}
	slices.SortFunc(out, func(a, b BookState) int {
		return cmp.Or(cmp.Compare(a.Venue, b.Venue), cmp.Compare(a.Instrument, b.Instrument),
			cmp.Compare(a.Dataset, b.Dataset), cmp.Compare(a.Conn, b.Conn))
	})
	return out
}
