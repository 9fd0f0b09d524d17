package recorder

import (
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// The live engine runs the recording through the venue decoders and books
// replay uses, while it is being written. The writer hands it every record
// the sink accepted, in Seq order, with the Seq the dataset gave it, through
// a bounded channel it never waits on: when the engine falls behind, the
// records that do not fit are skipped (the recording keeps them), the live
// books become invalid until their next snapshot, and a KindLiveLag record
// says so. Its goroutine does everything else: decoding, books, integrity
// checks (live_heal.go), subscribers and the read API (LiveBooks,
// LiveStats). Because it sees exactly the records of the dataset in their
// order and delivers them as replayer.Replayer does, a subscriber sees live
// what a replay of the recording delivers (same feed.Digester digest).

// Defaults of the live engine's hand-off from the writer.
const (
	DefaultLiveQueueRecords = 1 << 14
	DefaultLiveQueueBytes   = 64 << 20
)

// liveOptions configure the live engine (WithLive, WithHeal, WithLiveQueue,
// WithHealBackoff).
type liveOptions struct {
	off          bool
	noHeal       bool
	noHashCheck  bool
	records      int
	bytes        int64
	healMin      time.Duration
	healMax      time.Duration
	drainTimeout time.Duration
	// newDecoder builds a connection's decoder; tests swap in one that panics.
	newDecoder func(venueName string, hashCheck bool) (venue.Decoder, error)
}

func defaultLiveOptions() liveOptions {
	return liveOptions{records: DefaultLiveQueueRecords, bytes: DefaultLiveQueueBytes,
		healMin: DefaultHealBackoffMin, healMax: DefaultHealBackoffMax, drainTimeout: DefaultLiveDrainTimeout,
		newDecoder: liveDecoder}
}

// WithLive turns the live engine on (the default) or off. Off, nothing is
// decoded while recording: no live books, integrity checks, healing or
// subscribers.
func WithLive(on bool) Option {
	return func(o *options) error { o.live.off = !on; return nil }
}

// WithLiveHashCheck turns the live verification of venue book hashes on (the
// default) or off. Live, every hash is checked (a replay's --hash-check=all):
// at a live frame rate that costs little, and a mismatch is seen, and healed,
// at the frame that shows it rather than up to a sampling interval later. A
// replay meant to match a live subscriber's Quality counts exactly uses
// replayer.WithHashCheck(true) (replayer.HashAll).
func WithLiveHashCheck(on bool) Option {
	return func(o *options) error { o.live.noHashCheck = !on; return nil }
}

// WithLiveQueue bounds the hand-off from the writer to the live engine to
// records records and bytes payload bytes (defaults DefaultLiveQueueRecords,
// DefaultLiveQueueBytes). Records that do not fit are skipped by the live
// engine only (see KindLiveLag); the recording keeps them.
func WithLiveQueue(records int, bytes int64) Option {
	return func(o *options) error {
		if records < 1 || bytes < 1 {
			return fmt.Errorf("%w: live queue %d records, %d bytes, want both > 0", ErrOption, records, bytes)
		}
		o.live.records, o.live.bytes = records, bytes
		return nil
	}
}

// liveRec is one record on its way to the live engine. The engine returns a
// pooled payload to the queue's pool once decoded.
type liveRec struct {
	rec    datasets.Record
	pooled bool
	// skipped counts the records the writer could not hand over just before
	// this one, received between skipFrom and skipTo (wall ns).
	skipped          uint64
	skipFrom, skipTo int64
}

// liveEngine is the live engine of one Run.
type liveEngine struct {
	r        *Recorder
	ch       chan liveRec
	bytes    atomic.Int64
	maxBytes int64
	done     chan struct{}
	abort    atomic.Bool // close gave up waiting: skip what is left

	// Writer-owned: records skipped since the last one handed over.
	skipN            uint64
	skipFrom, skipTo int64

	// Subscriptions (any goroutine adds; the engine resolves).
	subMu  sync.Mutex
	subs   []*liveSub
	subGen atomic.Uint64

	// Engine-owned.
	conns      map[uint32]*liveConn
	order      []*liveConn // creation order, as replay's
	cur        []*liveSub
	gen        uint64
	digest     *feed.Digester
	ev         feed.Event
	instBuf    []string
	dirty      []*liveRoute
	heal       healer
	recordGate healer // spaces KindIntegrity records per (instrument, check)
	held       map[healKey]heldFindings
	lag        struct {
		n        uint64
		from, to int64
		recorded time.Time
	}

	// Published for the read API.
	pubMu   sync.Mutex
	pubs    []*liveRoute
	digestS string // digest at the end of the run
	stats   liveCounters
}

// liveCounters are the engine's counts, read by LiveStats from any goroutine.
type liveCounters struct {
	records, frames, decodeErrors, skipped, skipEpisodes, panics atomic.Uint64
	controls, restUndecoded                                      atomic.Uint64
	hashMismatch, topMismatch, crossed, stalls                   atomic.Uint64
	resubscribes, healDeferred                                   atomic.Uint64
	lastSeq                                                      atomic.Uint64
	lastNs                                                       atomic.Int64
	subFailures                                                  atomic.Uint64
}

// liveConn is one connection slot's decoder and routes, as replay's connState.
type liveConn struct {
	conn    uint32
	dec     venue.Decoder
	scale   book.Scale
	frame   venue.Frame
	routes  map[string]*liveRoute
	last    *liveRoute
	prev    *liveRoute
	lastSeq uint64
	lastNs  int64
	closed  bool // as replay's: the last record was the connection's clean close
	// Integrity bookkeeping (live_heal.go).
	seen  venue.Stats
	quals map[string]venue.Quality
}

// liveSub is one Subscribe call.
type liveSub struct {
	index  int
	key    feed.Key
	sub    feed.Subscriber
	failed bool // engine-owned
}

// liveRoute is one (connection, instrument): its subscribers per channel,
// its book, digest key and the published top of book.
type liveRoute struct {
	instrument string
	conn       uint32
	key        uint64
	book       *book.Book
	bookAsked  bool
	gen        uint64
	subs       [feed.NumChannels][]*liveSub
	isDirty    bool
	updatedNs  int64
	seq        uint64

	mu  sync.Mutex // guards pub
	pub LiveBook
}

func newLiveEngine(r *Recorder) *liveEngine {
	o := r.o.live
	return &liveEngine{r: r, ch: make(chan liveRec, o.records), maxBytes: o.bytes, done: make(chan struct{}),
		conns: map[uint32]*liveConn{}, digest: feed.NewDigester(), heal: newHealer(r),
		recordGate: newHealer(r), held: map[healKey]heldFindings{}}
}

// offer hands a record the sink accepted (seq) to the engine without
// waiting. It reports whether the engine took the pooled payload, which it
// then returns to the pool itself. Called by the writer goroutine only; a nil
// engine takes nothing.
func (l *liveEngine) offer(rec *datasets.Record, seq uint64, pooled bool) bool {
	if l == nil {
		return false
	}
	n := int64(len(rec.Payload))
	if nb := l.bytes.Add(n); nb > l.maxBytes && nb != n {
		l.bytes.Add(-n)
		l.skip(rec.WallNs)
		return false
	}
	lr := liveRec{rec: *rec, pooled: pooled, skipped: l.skipN, skipFrom: l.skipFrom, skipTo: l.skipTo}
	lr.rec.Seq = seq
	select {
	case l.ch <- lr:
		l.skipN = 0
		return pooled
	default:
		l.bytes.Add(-n)
		l.skip(rec.WallNs)
		return false
	}
}

func (l *liveEngine) skip(wallNs int64) {
	if l.skipN == 0 {
		l.skipFrom = wallNs
	}
	l.skipN++
	l.skipTo = wallNs
}

// DefaultLiveDrainTimeout bounds how long a shutdown waits for the live
// engine to work through its backlog (a slow subscriber): after it, the rest
// is skipped.
const DefaultLiveDrainTimeout = 5 * time.Second

// close ends the hand-off once the writer is gone and waits for the engine
// to drain it, at most the drain timeout before it makes the engine skip the
// rest.
func (l *liveEngine) close() {
	if l == nil {
		return
	}
	close(l.ch)
	t := time.NewTimer(l.r.o.live.drainTimeout)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
		l.abort.Store(true)
		<-l.done
	}
}

// While behind (records were skipped in the last liveBehindFor), the engine
// spends at most liveBehindDuty of one core: decoding a flood it cannot keep
// up with would take the CPU the socket readers and the writer need, and the
// recording comes first. It then skips more, and says so, at most one
// KindLiveLag record per liveLagEvery.
const (
	liveBehindFor  = time.Second
	liveBehindDuty = 0.1
	liveLagEvery   = time.Second
)

// run is the engine's goroutine.
func (l *liveEngine) run() {
	defer close(l.done)
	var behindUntil time.Time
	var credit time.Duration // processing time left in the behind budget
	var last time.Time
	for lr := range l.ch {
		if l.abort.Load() { // shutting down with a backlog: skip the rest
			l.skip(lr.rec.WallNs)
			l.bytes.Add(-int64(len(lr.rec.Payload)))
			if lr.pooled {
				l.r.q.putBuf(lr.rec.Payload)
			}
			continue
		}
		l.refreshSubs()
		var t0 time.Time
		if lr.skipped > 0 || !behindUntil.IsZero() {
			t0 = time.Now()
			if lr.skipped > 0 {
				l.fellBehind(lr.skipped, lr.skipFrom, lr.skipTo, t0)
				if behindUntil.IsZero() {
					credit, last = 0, t0
				}
				behindUntil = t0.Add(liveBehindFor)
			}
		}
		l.safely(&lr.rec)
		if !t0.IsZero() {
			now := time.Now()
			credit += time.Duration(float64(now.Sub(last))*liveBehindDuty) - now.Sub(t0)
			last = now
			if credit < 0 {
				time.Sleep(time.Duration(float64(-credit) / liveBehindDuty))
				credit, last = 0, time.Now()
			}
			credit = min(credit, 10*time.Millisecond)
			if now.After(behindUntil) {
				behindUntil = time.Time{}
				l.flushLag()
			}
		}
		l.bytes.Add(-int64(len(lr.rec.Payload)))
		if lr.pooled {
			l.r.q.putBuf(lr.rec.Payload)
		}
		l.stats.lastSeq.Store(lr.rec.Seq)
		l.stats.lastNs.Store(lr.rec.WallNs)
	}
	if l.skipN > 0 { // the tail the writer could not hand over
		l.fellBehind(l.skipN, l.skipFrom, l.skipTo, time.Now())
	}
	l.flushLag()
	l.refreshSubs()
	for _, c := range l.order {
		c.frame.Events = c.frame.Events[:0]
		c.dec.Flush(&c.frame)
		l.emitFrame(c, datasets.KindFrame, c.lastSeq, c.lastNs, nil)
	}
	l.publish()
	l.pubMu.Lock()
	l.digestS = l.digest.Sum()
	l.pubMu.Unlock()
}

// safely processes one record; a panic in a decoder resets that
// connection's live decoder (its books are rebuilt from the next snapshot)
// and is recorded, and the engine goes on.
func (l *liveEngine) safely(rec *datasets.Record) {
	defer func() {
		if p := recover(); p != nil {
			l.stats.panics.Add(1)
			text := fmt.Sprintf("live decoder panicked on record %d (%s): %v; its connection's live books restart from the next snapshot", rec.Seq, rec.Kind, p)
			l.r.log.Error("live engine", "conn", rec.Conn, "panic", p, "stack", string(debug.Stack()))
			if c := l.conns[rec.Conn]; c != nil {
				if dec, err := l.r.o.live.newDecoder(l.r.spec.Venue, !l.r.o.live.noHashCheck); err == nil {
					c.dec, c.seen, c.quals = dec, venue.Stats{}, nil
					for _, rt := range c.routes {
						rt.book, rt.bookAsked = nil, false
					}
				}
			}
			l.record(rec.Conn, datasets.KindLiveLag, datasets.Control{FromNs: rec.WallNs, ToNs: rec.WallNs,
				Err: fmt.Sprint(p), Text: text})
		}
	}()
	l.process(rec)
	l.publish()
}

// fellBehind restarts every live book from its next snapshot after skipped
// records, and records the skip: at once for the first skip in a while,
// later ones gathered into one record per liveLagEvery.
func (l *liveEngine) fellBehind(n uint64, from, to int64, now time.Time) {
	l.stats.skipped.Add(n)
	l.r.lm.skipped.Add(float64(n))
	for _, c := range l.order {
		c.frame.Events = c.frame.Events[:0]
		c.dec.Flush(&c.frame)
		c.dec.Invalidate()
		c.seen = c.dec.Stats()
	}
	if l.lag.n == 0 {
		l.lag.from = from
	}
	l.lag.n += n
	l.lag.to = to
	if now.Sub(l.lag.recorded) >= liveLagEvery {
		l.flushLag()
		l.lag.recorded = now
	}
}

// flushLag writes the KindLiveLag record of the skips gathered so far, and
// asks for fresh snapshots where healing is on.
func (l *liveEngine) flushLag() {
	n := l.lag.n
	if n == 0 {
		return
	}
	l.stats.skipEpisodes.Add(1)
	l.r.log.Warn("live engine fell behind; skipped records (the recording has them)", "records", n)
	var insts []string
	for _, c := range l.order {
		l.instBuf = c.dec.Instruments(l.instBuf[:0])
		insts = append(insts, l.instBuf...)
		for _, inst := range l.instBuf {
			l.heal.request(c.conn, inst, healLag, "live engine fell behind")
		}
	}
	l.record(0, datasets.KindLiveLag, datasets.Control{Dropped: n, FromNs: l.lag.from, ToNs: l.lag.to, Instruments: insts,
		Text: fmt.Sprintf("live engine fell behind: skipped %d records (kept in the recording); live books invalid until their next snapshot", n)})
	l.lag.n, l.lag.from, l.lag.to = 0, 0, 0
}

func (l *liveEngine) refreshSubs() {
	if g := l.subGen.Load(); g != l.gen {
		l.subMu.Lock()
		l.cur = append(l.cur[:0], l.subs...)
		l.gen = l.subGen.Load()
		l.subMu.Unlock()
	}
}

// conn returns the state of a connection slot, creating its decoder on first
// use.
func (l *liveEngine) conn(id uint32) *liveConn {
	if c := l.conns[id]; c != nil {
		return c
	}
	dec, err := l.r.o.live.newDecoder(l.r.spec.Venue, !l.r.o.live.noHashCheck)
	if err != nil {
		panic(err) // New checked the venue
	}
	c := &liveConn{conn: id, dec: dec, scale: dec.Scale(), routes: map[string]*liveRoute{}}
	l.conns[id] = c
	l.order = append(l.order, c)
	return c
}

func (l *liveEngine) route(c *liveConn, inst string) *liveRoute {
	rt := c.last
	if rt == nil || rt.instrument != inst {
		rt = c.prev
		if rt == nil || rt.instrument != inst {
			rt = c.routes[inst]
			if rt == nil {
				rt = &liveRoute{instrument: inst, conn: c.conn, key: feed.DigestKey(inst)}
				l.resolve(rt)
				c.routes[inst] = rt
				if inst != "" {
					l.pubMu.Lock()
					l.pubs = append(l.pubs, rt)
					l.pubMu.Unlock()
				}
			}
		}
		c.prev, c.last = c.last, rt
	}
	if rt.gen != l.gen {
		l.resolve(rt)
	}
	return rt
}

func (l *liveEngine) resolve(rt *liveRoute) {
	v := l.r.spec.Venue
	for ch := range rt.subs {
		rt.subs[ch] = rt.subs[ch][:0]
		if ch == int(feed.ChannelAll) {
			continue
		}
		for _, s := range l.cur {
			k := s.key
			if (k.Venue == "" || k.Venue == v) && (k.Instrument == "" || k.Instrument == rt.instrument) &&
				(k.Channel == feed.ChannelAll || k.Channel == feed.Channel(ch)) {
				rt.subs[ch] = append(rt.subs[ch], s)
			}
		}
	}
	rt.gen = l.gen
}

// process applies one record as replay does (replayer.Replayer.process, with
// every record delivered).
func (l *liveEngine) process(rec *datasets.Record) {
	l.stats.records.Add(1)
	if c := l.conns[rec.Conn]; c != nil && c.closed {
		c.closed = false
		c.frame.Events = c.frame.Events[:0]
		c.dec.Flush(&c.frame)
		c.dec.Invalidate()
		c.seen = c.dec.Stats()
	}
	switch k := rec.Kind; {
	case k == datasets.KindFrame:
		c := l.conn(rec.Conn)
		c.lastSeq, c.lastNs = rec.Seq, rec.WallNs
		l.stats.frames.Add(1)
		if err := c.dec.Decode(rec.Payload, rec.WallNs, &c.frame); err != nil {
			// As in replay: the messages that applied and the rejected
			// ones (venue.EventReject, with the books they invalidated)
			// are still delivered.
			l.stats.decodeErrors.Add(1)
		}
		l.emitFrame(c, datasets.KindFrame, rec.Seq, rec.WallNs, rec.Payload)
		l.check(c, rec)
	case k.IsLoss():
		if rec.Conn == datasets.ConnAll {
			for _, c := range l.order {
				l.loss(c, rec)
			}
			return
		}
		l.loss(l.conn(rec.Conn), rec)
	case k == datasets.KindRESTResponse:
		c := l.conn(rec.Conn)
		decErr := c.dec.Decode(rec.Payload, rec.WallNs, &c.frame)
		if decErr != nil {
			l.stats.restUndecoded.Add(1)
		}
		l.controlRecord(c, rec)
		l.emitControl(c, rec, decodeLiveControl(rec), l.route(c, ""), nil)
		if len(c.frame.Events) > 0 { // a /books body applies summary by summary
			l.emitFrame(c, datasets.KindRESTResponse, rec.Seq, rec.WallNs, rec.Payload)
		}
		if decErr == nil {
			l.check(c, rec)
		}
	case k == datasets.KindSent || k.IsControl():
		c := l.conn(rec.Conn)
		if so, ok := c.dec.(venue.SentObserver); k == datasets.KindSent && ok {
			so.Sent(rec.Payload, rec.WallNs)
		}
		l.controlRecord(c, rec)
		l.emitControl(c, rec, decodeLiveControl(rec), l.route(c, ""), nil)
		c.closed = k == datasets.KindCleanClose && rec.Conn != 0
	}
}

// record writes one of the engine's own records into the recording (it
// comes back to the engine through the writer, in Seq order). Once the
// recording has ended (the last records of the engine come after the
// queue closed) it cannot: the log says what was not written.
func (l *liveEngine) record(conn uint32, k datasets.Kind, c datasets.Control) {
	r := l.r
	if !r.q.push(r.wctx, entry{rec: datasets.Record{Kind: k, Conn: conn, Payload: datasets.EncodeControl(c)}}) {
		r.log.Warn("live engine record not written: the recording has ended", "kind", k.String(), "conn", conn,
			"instruments", len(c.Instruments), "dropped", c.Dropped, "text", c.Text)
	}
}

// decodeLiveControl returns the record's Control (empty for sent and REST
// payloads). Control records are rare: this allocates.
func decodeLiveControl(rec *datasets.Record) *datasets.Control {
	ctl := new(datasets.Control)
	if rec.Kind == datasets.KindSent || rec.Kind == datasets.KindRESTResponse || len(rec.Payload) == 0 {
		return ctl
	}
	if c, err := datasets.DecodeControl(rec.Payload); err == nil {
		*ctl = c
	}
	return ctl
}

func (l *liveEngine) emitFrame(c *liveConn, kind datasets.Kind, seq uint64, recvNs int64, payload []byte) {
	evs := c.frame.Events
	if payload == nil && len(evs) == 0 {
		return
	}
	e := &l.ev
	e.Dataset, e.Venue, e.Conn, e.Seq, e.RecvNs = 0, l.r.spec.Venue, c.conn, seq, recvNs
	e.Kind, e.Control, e.Payload, e.Scale = kind, nil, payload, c.scale
	l.digest.Record(e)
	for i := range evs {
		v := &evs[i]
		rt := l.route(c, v.Instrument)
		bk := v.Book
		if bk != nil {
			rt.book = bk
		} else if v.Instrument != "" {
			if rt.book == nil && !rt.bookAsked {
				rt.book, rt.bookAsked = c.dec.Book(v.Instrument), true
			}
			bk = rt.book
		}
		ch := feed.ChannelOf(v.Type)
		e.Channel, e.Instrument, e.Decoded, e.Book = ch, v.Instrument, v, bk
		l.digest.Event(e, v, rt.key, v.ExchangeNs)
		if bk != nil && v.Instrument != "" {
			rt.updatedNs, rt.seq = recvNs, seq
			if !rt.isDirty {
				rt.isDirty = true
				l.dirty = append(l.dirty, rt)
			}
		}
		list := rt.subs[ch]
		if len(list) == 0 {
			continue
		}
		e.Quality = venue.Quality{}
		if bk != nil {
			e.Quality = c.dec.Quality(v.Instrument)
		}
		for _, s := range list {
			if !s.failed {
				l.call(s, e)
			}
		}
	}
}

func (l *liveEngine) loss(c *liveConn, rec *datasets.Record) {
	c.frame.Events = c.frame.Events[:0]
	c.dec.Flush(&c.frame)
	l.emitFrame(c, datasets.KindFrame, rec.Seq, rec.WallNs, nil)
	l.check(c, rec)
	c.dec.Invalidate()
	c.seen = c.dec.Stats()
	ctl := decodeLiveControl(rec)
	l.controlRecord(c, rec)
	l.instBuf = c.dec.Instruments(l.instBuf[:0])
	for _, inst := range l.instBuf {
		rt := l.route(c, inst)
		l.emitControl(c, rec, ctl, rt, c.dec.Book(inst))
		l.markDirty(rt)
	}
	l.emitControl(c, rec, ctl, l.route(c, ""), nil)
}

func (l *liveEngine) markDirty(rt *liveRoute) {
	if !rt.isDirty {
		rt.isDirty = true
		l.dirty = append(l.dirty, rt)
	}
}

func (l *liveEngine) controlRecord(c *liveConn, rec *datasets.Record) {
	e := &l.ev
	e.Dataset, e.Venue, e.Conn, e.Seq, e.RecvNs = 0, l.r.spec.Venue, c.conn, rec.Seq, rec.WallNs
	e.Kind, e.Channel, e.Decoded, e.Payload, e.Scale = rec.Kind, feed.ChannelControl, nil, rec.Payload, c.scale
	l.digest.Record(e)
}

func (l *liveEngine) emitControl(c *liveConn, rec *datasets.Record, ctl *datasets.Control, rt *liveRoute, bk *book.Book) {
	l.stats.controls.Add(1)
	e := &l.ev
	e.Instrument, e.Control, e.Book, e.Quality = rt.instrument, ctl, bk, venue.Quality{}
	if rt.instrument != "" {
		e.Quality = c.dec.Quality(rt.instrument)
	}
	l.digest.Event(e, nil, rt.key, int64(xxhash.Sum64(rec.Payload)))
	for _, s := range rt.subs[feed.ChannelControl] {
		if !s.failed {
			l.call(s, e)
		}
	}
}

// call delivers e to s, isolating errors and panics as replay does.
func (l *liveEngine) call(s *liveSub, e *feed.Event) {
	defer func() {
		if p := recover(); p != nil {
			l.fail(s, e, fmt.Errorf("panic: %v", p))
		}
	}()
	if err := s.sub.OnEvent(e); err != nil {
		l.fail(s, e, err)
	}
}

func (l *liveEngine) fail(s *liveSub, e *feed.Event, err error) {
	s.failed = true
	l.stats.subFailures.Add(1)
	l.r.log.Error("live subscriber failed; it receives nothing more", "subscriber", s.index, "seq", e.Seq, "err", err)
	l.record(0, datasets.KindNote, datasets.Control{Err: err.Error(),
		Text: fmt.Sprintf("live subscriber %d failed at record %d and receives nothing more", s.index, e.Seq)})
}

// publish copies the top of every book changed by the last record to its
// route's published LiveBook.
func (l *liveEngine) publish() {
	for _, rt := range l.dirty {
		rt.isDirty = false
		c := l.conns[rt.conn]
		rt.mu.Lock()
		p := &rt.pub
		p.Venue, p.Conn, p.Instrument, p.UpdatedNs, p.Seq = l.r.spec.Venue, rt.conn, rt.instrument, rt.updatedNs, rt.seq
		p.Scale = c.scale
		p.Quality = c.dec.Quality(rt.instrument)
		p.Bids, p.Asks = p.Bids[:0], p.Asks[:0]
		p.Valid, p.Crossed = false, false
		if bk := rt.book; bk != nil {
			p.Valid, p.Crossed = bk.Valid(), bk.Crossed()
			p.Bids = bk.Top(book.Bid, p.Bids, liveDepth)
			p.Asks = bk.Top(book.Ask, p.Asks, liveDepth)
		}
		rt.mu.Unlock()
	}
	l.dirty = l.dirty[:0]
}

// liveDepth is how many levels per side LiveBooks keeps.
const liveDepth = 10

// LiveBook is one instrument's book as the live engine has it: the top
// levels, flags and what the decoder knows of its quality. Prices and sizes
// are fixed-point at Scale (book.FormatDecimal prints them).
type LiveBook struct {
	Venue      string        `json:"venue"`
	Conn       uint32        `json:"conn"`
	Instrument string        `json:"instrument"`
	Valid      bool          `json:"valid"`
	Crossed    bool          `json:"crossed"`
	Bids       []book.Level  `json:"bids"` // best first, up to 10 levels
	Asks       []book.Level  `json:"asks"`
	Scale      book.Scale    `json:"scale"`
	Quality    venue.Quality `json:"quality"`
	// UpdatedNs is the receive time (wall ns) of the last record that
	// changed the book or its validity, Seq that record's dataset Seq.
	UpdatedNs int64  `json:"updated_ns"`
	Seq       uint64 `json:"seq"`
}

// Best returns the best bid and ask levels and whether each side has one.
func (b *LiveBook) Best() (bid, ask book.Level, hasBid, hasAsk bool) {
	if len(b.Bids) > 0 {
		bid, hasBid = b.Bids[0], true
	}
	if len(b.Asks) > 0 {
		ask, hasAsk = b.Asks[0], true
	}
	return
}

// LiveBooks returns a copy of every live book, sorted by instrument and
// connection slot; nil when the live engine is off or Run has not started.
// Safe from any goroutine while Run is in progress, and after it.
func (r *Recorder) LiveBooks() []LiveBook {
	l := r.liveEngine()
	if l == nil {
		return nil
	}
	l.pubMu.Lock()
	pubs := slices.Clone(l.pubs)
	l.pubMu.Unlock()
	out := make([]LiveBook, 0, len(pubs))
	for _, rt := range pubs {
		rt.mu.Lock()
		if rt.pub.Instrument != "" {
			b := rt.pub
			b.Bids, b.Asks = slices.Clone(b.Bids), slices.Clone(b.Asks)
			out = append(out, b)
		}
		rt.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b LiveBook) int {
		if a.Instrument != b.Instrument {
			if a.Instrument < b.Instrument {
				return -1
			}
			return 1
		}
		return int(a.Conn) - int(b.Conn)
	})
	return out
}

// LiveBook returns the live book of one instrument (the first connection
// slot carrying it), and false when there is none yet.
func (r *Recorder) LiveBook(instrument string) (LiveBook, bool) {
	for _, b := range r.LiveBooks() {
		if b.Instrument == instrument {
			return b, true
		}
	}
	return LiveBook{}, false
}

// LiveStats are the live engine's counts.
type LiveStats struct {
	On      bool   `json:"on"`
	Records uint64 `json:"records"` // records decoded or delivered
	Frames  uint64 `json:"frames"`
	// DecodeErrors are frames the decoder rejected (books untouched).
	DecodeErrors uint64 `json:"decode_errors"`
	// Skipped are records the engine fell behind on (kept in the
	// recording), in SkipEpisodes KindLiveLag records.
	Skipped      uint64 `json:"skipped"`
	SkipEpisodes uint64 `json:"skip_episodes"`
	Panics       uint64 `json:"panics"`
	// Integrity findings, each a KindIntegrity record (stalls: KindStall).
	HashMismatches uint64 `json:"hash_mismatches"`
	TopMismatches  uint64 `json:"top_mismatches"`
	CrossedBooks   uint64 `json:"crossed_books"`
	Stalls         uint64 `json:"instrument_stalls"`
	// Resubscribes sent to heal a book, and requests the per-instrument
	// backoff held back.
	Resubscribes uint64 `json:"resubscribes"`
	HealDeferred uint64 `json:"heal_deferred"`
	// SubscriberFailures counts subscribers isolated after an error or panic.
	SubscriberFailures uint64 `json:"subscriber_failures"`
	// Backlog is how many records wait for the engine; LastSeq and LastNs
	// are the dataset Seq and receive time of the last one it processed.
	Backlog int    `json:"backlog"`
	LastSeq uint64 `json:"last_seq"`
	LastNs  int64  `json:"last_ns"`
	// Digest is the feed.Digester digest of everything the engine delivered,
	// set once Run has returned: a replay of the recording gives the same
	// Summary.Digest unless records were skipped.
	Digest string `json:"digest,omitempty"`
}

// LiveStats returns the live engine's counts so far (On false when it is
// off). Safe from any goroutine.
func (r *Recorder) LiveStats() LiveStats {
	l := r.liveEngine()
	if l == nil {
		return LiveStats{}
	}
	s := &l.stats
	st := LiveStats{On: true, Records: s.records.Load(), Frames: s.frames.Load(), DecodeErrors: s.decodeErrors.Load(),
		Skipped: s.skipped.Load(), SkipEpisodes: s.skipEpisodes.Load(), Panics: s.panics.Load(),
		HashMismatches: s.hashMismatch.Load(), TopMismatches: s.topMismatch.Load(), CrossedBooks: s.crossed.Load(),
		Stalls: s.stalls.Load(), Resubscribes: s.resubscribes.Load(), HealDeferred: s.healDeferred.Load(),
		SubscriberFailures: s.subFailures.Load(), Backlog: len(l.ch), LastSeq: s.lastSeq.Load(), LastNs: s.lastNs.Load()}
	l.pubMu.Lock()
	st.Digest = l.digestS
	l.pubMu.Unlock()
	return st
}

// Subscribe registers s for the live events matching k, as
// replayer.Replayer.Subscribe does for a replay: the same Event values in the
// same order, so a strategy written against replay runs unchanged live.
// Subscribers are called on the live engine's goroutine, never on the write
// path; a slow one makes the engine fall behind (see KindLiveLag), never the
// recording. An error or panic isolates the subscriber (it receives nothing
// more; a KindNote records it). Safe from any goroutine, before or during
// Run; events from before the call are not replayed to it. With the live
// engine off it never receives anything. A nil s panics.
func (r *Recorder) Subscribe(k feed.Key, s feed.Subscriber) {
	if s == nil {
		panic("recorder: Subscribe with nil Subscriber")
	}
	r.liveSubMu.Lock()
	r.liveSubs = append(r.liveSubs, &liveSub{index: len(r.liveSubs), key: k, sub: s})
	l := r.live
	r.liveSubMu.Unlock()
	if l != nil {
		l.addSubs(r)
	}
}

// addSubs makes the engine pick up the recorder's subscriptions.
func (l *liveEngine) addSubs(r *Recorder) {
	r.liveSubMu.Lock()
	subs := slices.Clone(r.liveSubs)
	r.liveSubMu.Unlock()
	l.subMu.Lock()
	l.subs = subs
	l.subGen.Add(1)
	l.subMu.Unlock()
}

func (r *Recorder) liveEngine() *liveEngine {
	r.liveSubMu.Lock()
	defer r.liveSubMu.Unlock()
	return r.live
}

// startLive creates and starts the live engine of a Run, unless it is off.
func (r *Recorder) startLive() *liveEngine {
	if r.o.live.off {
		return nil
	}
	l := newLiveEngine(r)
	r.liveSubMu.Lock()
	r.live = l
	r.liveSubMu.Unlock()
	l.addSubs(r)
	go l.run()
	return l
}
