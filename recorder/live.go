package recorder

import (
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/feed/engine"
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
// LiveStats). Decoding, routing, the digest, losses and subscriber
// isolation are the event core's (feed/engine), the one replayer.Replayer
// drives: because it sees exactly the records of the dataset in their order,
// a subscriber sees live what a replay of the recording delivers (same
// digest). What is the live engine's own is the hand-off, skipping to the
// next snapshot, lag, healing and publishing.

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
	// newDecoder builds a connection's decoder (nil: the driver's); tests
	// swap in one that panics.
	newDecoder func(venueName string, hashCheck bool) (venue.Decoder, error)
}

func defaultLiveOptions() liveOptions {
	return liveOptions{records: DefaultLiveQueueRecords, bytes: DefaultLiveQueueBytes,
		healMin: DefaultHealBackoffMin, healMax: DefaultHealBackoffMax, drainTimeout: DefaultLiveDrainTimeout,
	}
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
	// settle, when set, is no record: the engine writes what it holds
	// back and closes its done (see settle).
	settle *settleMark
}

// settleMark asks the live engine to write what it holds back, once it has
// processed every record queued before the mark: the findings of
// connection slot conn, or (conn 0) all of them and a lag episode.
type settleMark struct {
	done chan struct{}
	conn uint32
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

	// Engine-owned.
	eng        *engine.Engine
	rec        datasets.Record // the record being processed
	instBuf    []string
	heal       healer
	recordGate healer // spaces KindIntegrity records per (instrument, check)
	held       map[healKey]heldFindings
	lastSweep  time.Time
	rejBuf     []string
	lag        struct {
		n        uint64
		from, to int64
		recorded time.Time
	}

	// Published for the read API.
	pubMu   sync.Mutex
	pubs    []*livePub
	digestS string // digest at the end of the run
	stats   liveCounters
}

// liveCounters are the engine's counts, read by LiveStats from any goroutine.
type liveCounters struct {
	records, frames, decodeErrors, skipped, skipEpisodes, panics atomic.Uint64
	hashMismatch, topMismatch, crossed, stalls                   atomic.Uint64
	resubscribes, healDeferred                                   atomic.Uint64
	unrecorded                                                   atomic.Uint64
	held                                                         atomic.Int64
	lastSeq                                                      atomic.Uint64
	lastNs                                                       atomic.Int64
	subFailures                                                  atomic.Uint64
}

// liveConn is the live engine's own state of one connection slot, beside
// the core's (its Data): integrity bookkeeping (live_heal.go).
type liveConn struct {
	*engine.Conn
	seen  venue.Stats
	quals map[string]venue.Quality
}

// liveSub is one Subscribe call.
type liveSub struct {
	key feed.Key
	sub feed.Subscriber
}

// livePub is one instrument's published top of book (a route's Data).
type livePub struct {
	mu  sync.Mutex
	pub LiveBook
}

func newLiveEngine(r *Recorder) *liveEngine {
	o := r.o.live
	if o.newDecoder == nil {
		// The decoder replay uses (the venue driver's), so live and
		// replayed books are the same.
		o.newDecoder = func(_ string, hashCheck bool) (venue.Decoder, error) {
			return r.drv.NewDecoder(venue.DecoderOptions{HashCheck: hashCheck}), nil
		}
		r.o.live.newDecoder = o.newDecoder
	}
	l := &liveEngine{r: r, ch: make(chan liveRec, o.records), maxBytes: o.bytes, done: make(chan struct{}),
		heal: newHealer(r), recordGate: newHealer(r), held: map[healKey]heldFindings{}}
	l.eng = engine.New(engine.Config{
		Sources: []engine.Source{{Venue: r.spec.Venue, Driver: r.drv, NewDecoder: func() (venue.Decoder, error) {
			dec, err := o.newDecoder(r.spec.Venue, !o.noHashCheck)
			if err != nil {
				panic(err) // New checked the venue
			}
			return dec, nil
		}}},
		Failed:      l.failed,
		DecodeError: l.rejected,
		Checked:     func(c *engine.Conn, rec *datasets.Record) { l.check(l.liveConn(c), rec) },
		Invalidated: func(c *engine.Conn) { lc := l.liveConn(c); lc.seen = c.Dec.Stats() },
		NewRoute:    l.newRoute,
		TrackBooks:  true,
	})
	return l
}

// liveConn returns the live state of c, made on first use.
func (l *liveEngine) liveConn(c *engine.Conn) *liveConn {
	if lc, ok := c.Data.(*liveConn); ok {
		return lc
	}
	lc := &liveConn{Conn: c}
	c.Data = lc
	return lc
}

// newRoute publishes an instrument's route for LiveBooks.
func (l *liveEngine) newRoute(rt *engine.Route) {
	if rt.Instrument == "" {
		return
	}
	p := &livePub{}
	rt.Data = p
	l.pubMu.Lock()
	l.pubs = append(l.pubs, p)
	l.pubMu.Unlock()
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
		if m := lr.settle; m != nil {
			if m.conn == 0 {
				l.flushLag()
			}
			l.sweep(time.Now(), true, m.conn)
			close(m.done)
			continue
		}
		if l.abort.Load() { // shutting down with a backlog: skip the rest
			l.skip(lr.rec.WallNs)
			l.bytes.Add(-int64(len(lr.rec.Payload)))
			if lr.pooled {
				l.r.q.putBuf(lr.rec.Payload)
			}
			continue
		}
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
		l.rec = lr.rec // the core's hooks keep a pointer: not one escaping per record
		l.safely(&l.rec)
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
		if len(l.held) > 0 {
			if now := time.Now(); now.Sub(l.lastSweep) >= liveSweepEvery {
				l.sweep(now, false, 0)
			}
		}
	}
	if l.skipN > 0 { // the tail the writer could not hand over
		l.fellBehind(l.skipN, l.skipFrom, l.skipTo, time.Now())
	}
	l.flushLag()
	l.dropHeld() // found after settle (it timed out): the recording has ended
	l.eng.FlushAll()
	l.publish()
	l.pubMu.Lock()
	l.digestS = l.eng.Digest()
	l.pubMu.Unlock()
}

// safely processes one record; a panic in a decoder resets that
// connection's live decoder (its books are rebuilt from the next snapshot)
// and is recorded, and the engine goes on.
func (l *liveEngine) safely(rec *datasets.Record) {
	defer l.count()
	defer func() {
		if p := recover(); p != nil {
			l.stats.panics.Add(1)
			text := fmt.Sprintf("live decoder panicked on record %d (%s): %v; its connection's live books restart from the next snapshot", rec.Seq, rec.Kind, p)
			l.r.log.Error("live engine", "conn", rec.Conn, "panic", p, "stack", string(debug.Stack()))
			for _, c := range l.eng.Conns() {
				if c.ID != rec.Conn {
					continue
				}
				if dec, err := l.r.o.live.newDecoder(l.r.spec.Venue, !l.r.o.live.noHashCheck); err == nil {
					l.eng.Replace(c, dec)
					lc := l.liveConn(c)
					lc.seen, lc.quals = venue.Stats{}, nil
				}
			}
			l.record(rec.Conn, datasets.KindLiveLag, datasets.Control{FromNs: rec.WallNs, ToNs: rec.WallNs,
				Err: fmt.Sprint(p), Text: text})
		}
	}()
	if err := l.eng.Process(0, rec, true); err != nil {
		panic(err) // the core's hooks return no error here
	}
	l.publish()
}

// count copies the core's counts LiveStats reports.
func (l *liveEngine) count() {
	n := &l.eng.Counts
	l.stats.records.Store(n.Records)
	l.stats.frames.Store(n.Frames)
	l.stats.decodeErrors.Store(n.DecodeErrors)
}

// fellBehind restarts every live book from its next snapshot after skipped
// records, and records the skip: at once for the first skip in a while,
// later ones gathered into one record per liveLagEvery.
func (l *liveEngine) fellBehind(n uint64, from, to int64, now time.Time) {
	l.stats.skipped.Add(n)
	l.r.lm.skipped.Add(float64(n))
	for _, c := range l.eng.Conns() {
		l.eng.Drop(c)
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
	for _, c := range l.eng.Conns() {
		l.instBuf = c.Dec.Instruments(l.instBuf[:0])
		insts = append(insts, l.instBuf...)
		for _, inst := range l.instBuf {
			l.heal.request(c.ID, inst, healLag, "live engine fell behind")
		}
	}
	l.record(0, datasets.KindLiveLag, datasets.Control{Dropped: n, FromNs: l.lag.from, ToNs: l.lag.to, Instruments: insts,
		Text: fmt.Sprintf("live engine fell behind: skipped %d records (kept in the recording); live books invalid until their next snapshot", n)})
	l.lag.n, l.lag.from, l.lag.to = 0, 0, 0
}

// record writes one of the engine's own records into the recording (it
// comes back to the engine through the writer, in Seq order). Once the
// recording has ended (the last records of the engine come after the
// queue closed) it cannot: the log says what was not written, and it
// reports false.
func (l *liveEngine) record(conn uint32, k datasets.Kind, c datasets.Control) bool {
	r := l.r
	if !r.q.push(r.wctx, entry{rec: datasets.Record{Kind: k, Conn: conn, Payload: datasets.EncodeControl(c)}}) {
		r.log.Warn("live engine record not written: the recording has ended", "kind", k.String(), "conn", conn,
			"instruments", len(c.Instruments), "dropped", c.Dropped, "text", c.Text)
		return false
	}
	return true
}

// settle has the engine write what it holds back (findings spaced by
// their backoff, a lag episode) while the recording still takes records:
// Run calls it (conn 0: everything) once the connections have stopped,
// before it closes the writer's queue, and a connection's graceful shutdown
// calls it for its slot before the connection's clean close, after which
// the dataset format allows nothing more on that slot (FORMAT.md: a replay
// takes what follows as a new session after a gap, and invalidates the
// connection's books). A marker goes through the queue behind every record
// already in it, so the engine writes after it processed them (findings
// of the connection's last frames included); settle waits for that at most
// the drain timeout (then the engine counts what it still holds as
// unrecorded at its end).
func (l *liveEngine) settle(conn uint32) {
	if l == nil {
		return
	}
	m := &settleMark{done: make(chan struct{}), conn: conn}
	if !l.r.q.push(l.r.wctx, entry{settle: m}) {
		return
	}
	t := time.NewTimer(l.r.o.live.drainTimeout)
	defer t.Stop()
	select {
	case <-m.done:
	case <-t.C:
	}
}

// handSettle passes the settle marker from the writer to the engine,
// waiting for room at most the drain timeout.
func (l *liveEngine) handSettle(m *settleMark) {
	if l == nil {
		return
	}
	t := time.NewTimer(l.r.o.live.drainTimeout)
	defer t.Stop()
	select {
	case l.ch <- liveRec{settle: m}:
	case <-t.C:
	}
}

// failed logs and records a subscriber the core isolated.
func (l *liveEngine) failed(f *engine.Failure) bool {
	l.stats.subFailures.Add(1)
	l.r.log.Error("live subscriber failed; it receives nothing more", "subscriber", f.Subscriber, "seq", f.Event.Seq, "err", f.Err)
	l.record(0, datasets.KindNote, datasets.Control{Err: f.Err.Error(),
		Text: fmt.Sprintf("live subscriber %d failed at record %d and receives nothing more", f.Subscriber, f.Event.Seq)})
	return false
}

// publish copies the top of every book changed by the last record to its
// route's published LiveBook.
func (l *liveEngine) publish() {
	for _, rt := range l.eng.Dirty() {
		c, lp := rt.Conn, rt.Data.(*livePub)
		lp.mu.Lock()
		p := &lp.pub
		p.Venue, p.Conn, p.Instrument, p.UpdatedNs, p.Seq = c.Venue, c.ID, rt.Instrument, rt.UpdatedNs, rt.Seq
		p.Scale = c.Scale
		p.Quality = c.Dec.Quality(rt.Instrument)
		p.Bids, p.Asks = p.Bids[:0], p.Asks[:0]
		p.Valid, p.Crossed = false, false
		if bk := rt.Book; bk != nil {
			p.Valid, p.Crossed = bk.Valid(), bk.Crossed()
			p.Bids = bk.Top(book.Bid, p.Bids, liveDepth)
			p.Asks = bk.Top(book.Ask, p.Asks, liveDepth)
		}
		lp.mu.Unlock()
	}
	l.eng.ClearDirty()
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
	for _, lp := range pubs {
		lp.mu.Lock()
		if lp.pub.Instrument != "" {
			b := lp.pub
			b.Bids, b.Asks = slices.Clone(b.Bids), slices.Clone(b.Asks)
			out = append(out, b)
		}
		lp.mu.Unlock()
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
	// DecodeErrors are frames the decoder rejected (books untouched), each
	// a finding of check datasets.CheckRejected.
	DecodeErrors uint64 `json:"decode_errors"`
	// Skipped are records the engine fell behind on (kept in the
	// recording), in SkipEpisodes KindLiveLag records.
	Skipped      uint64 `json:"skipped"`
	SkipEpisodes uint64 `json:"skip_episodes"`
	Panics       uint64 `json:"panics"`
	// Integrity findings, each a KindIntegrity record or counted in one's
	// Dropped (stalls: KindStall).
	HashMismatches uint64 `json:"hash_mismatches"`
	TopMismatches  uint64 `json:"top_mismatches"`
	CrossedBooks   uint64 `json:"crossed_books"`
	Stalls         uint64 `json:"instrument_stalls"`
	// IntegrityHeld are findings
	// held back by the spacing of integrity records, to be written with
	// the next record of their instrument and check (at the latest before
	// a clean shutdown ends the recording); IntegrityUnrecorded those no
	// record holds (found once the recording had ended; the
	// tapedeck_capture_integrity_unrecorded_total metric says why).
	IntegrityHeld       uint64 `json:"integrity_held"`
	IntegrityUnrecorded uint64 `json:"integrity_unrecorded"`
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
		SubscriberFailures: s.subFailures.Load(), Backlog: len(l.ch), LastSeq: s.lastSeq.Load(), LastNs: s.lastNs.Load(),
		IntegrityHeld: uint64(max(s.held.Load(), 0)), IntegrityUnrecorded: s.unrecorded.Load()}
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
	defer r.liveSubMu.Unlock()
	r.liveSubs = append(r.liveSubs, liveSub{key: k, sub: s})
	if r.live != nil {
		r.live.eng.Subscribe(k, s)
	}
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
	for _, s := range r.liveSubs {
		l.eng.Subscribe(s.key, s.sub)
	}
	r.live = l
	r.liveSubMu.Unlock()
	go l.run()
	return l
}
