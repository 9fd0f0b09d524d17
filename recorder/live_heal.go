package recorder

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// Live integrity and self-healing: after every record the live engine
// compares the decoder's quality counters with what it saw before; a new
// confirmed hash mismatch (never a pending or unverifiable hash: venue/
// polymarket NOTES.md, "Hash verdicts"), top-of-book mismatch after a batch
// or book still crossed after its batch is written as a
// KindIntegrity record naming the instrument, counted in
// tapedeck_capture_integrity_total{check}, and (unless WithHeal(false)) the
// instrument is resubscribed on its connection for a fresh snapshot — the
// KindResubscribe record and the frames sent are in the recording — at most
// once per per-instrument backoff, so a permanently bad instrument cannot
// storm the venue.

// Defaults of the per-instrument heal backoff.
const (
	DefaultHealBackoffMin = time.Second
	DefaultHealBackoffMax = 10 * time.Minute
)

// WithHeal turns self-healing on (the default) or off. Off, integrity
// findings are still recorded and counted, but nothing is resubscribed, and
// an instrument stall replaces the connection as without a live engine.
func WithHeal(on bool) Option {
	return func(o *options) error { o.live.noHeal = !on; return nil }
}

// WithHealBackoff sets the per-instrument resubscribe backoff: the first
// resubscribe of an instrument goes out at once, the next ones no sooner
// than min after the previous, doubling up to max; an instrument healthy for
// max starts again from min (defaults DefaultHealBackoffMin,
// DefaultHealBackoffMax).
func WithHealBackoff(min, max time.Duration) Option {
	return func(o *options) error {
		if min <= 0 || max < min {
			return fmt.Errorf("%w: heal backoff %v..%v, want 0 < min <= max", ErrOption, min, max)
		}
		o.live.healMin, o.live.healMax = min, max
		return nil
	}
}

// liveMetrics are the live engine's Prometheus series.
type liveMetrics struct {
	integrity    *prometheus.CounterVec
	resubscribes *prometheus.CounterVec
	deferred     prometheus.Counter
	skipped      prometheus.Counter
	unrecorded   *prometheus.CounterVec
}

func newLiveMetrics(reg prometheus.Registerer, venueName string) (*liveMetrics, error) {
	labels := prometheus.Labels{"venue": venueName}
	co := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: "tapedeck", Subsystem: "capture", Name: name, Help: help, ConstLabels: labels}
	}
	m := &liveMetrics{
		integrity: prometheus.NewCounterVec(co("integrity_total",
			"Books the live engine found wrong, by check (hash_mismatch, top_mismatch, crossed, rejected, stall): an integrity record each, or counted in the Dropped of one, or in integrity_unrecorded_total (stalls: a stall record)."), []string{"check"}),
		resubscribes: prometheus.NewCounterVec(co("resubscribes_total",
			"Instruments resubscribed to heal their book, by the check that asked."), []string{"check"}),
		deferred: prometheus.NewCounter(co("heal_deferred_total",
			"Heal requests held back by the per-instrument backoff.")),
		skipped: prometheus.NewCounter(co("live_skipped_records_total",
			"Records the live engine fell behind on (kept in the recording; live books restarted).")),
		unrecorded: prometheus.NewCounterVec(co("integrity_unrecorded_total",
			"Findings (counted in integrity_total) that no integrity record holds, by check and reason (recording_ended: found after the recording ended)."), []string{"check", "reason"}),
	}
	for _, c := range []prometheus.Collector{m.integrity, m.resubscribes, m.deferred, m.skipped, m.unrecorded} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// check looks for integrity findings the last record produced on c.
func (l *liveEngine) check(c *liveConn, rec *datasets.Record) {
	st := c.Dec.Stats()
	old := c.seen
	c.seen = st
	want := (st.HashMismatch - old.HashMismatch) + (st.TopMismatch - old.TopMismatch) +
		(st.CrossedBatches - old.CrossedBatches)
	if want == 0 {
		return
	}
	// Rare: find which instruments moved, first among the record's events
	// (a hash or batch check concerns the instrument of the message that
	// ran it), then, for checks a flush ran, among all.
	if c.quals == nil {
		c.quals = map[string]venue.Quality{}
	}
	var found uint64
	for i := range c.Frame.Events {
		if inst := c.Frame.Events[i].Instrument; inst != "" {
			found += l.checkInstrument(c, rec, inst)
		}
	}
	if found >= want {
		return
	}
	l.instBuf = c.Dec.Instruments(l.instBuf[:0])
	for _, inst := range l.instBuf {
		l.checkInstrument(c, rec, inst)
	}
}

// checkInstrument compares inst's quality with the last one seen and
// reports each new finding; it returns how many there were.
func (l *liveEngine) checkInstrument(c *liveConn, rec *datasets.Record, inst string) uint64 {
	q := c.Dec.Quality(inst)
	p := c.quals[inst]
	if q == p {
		return 0
	}
	c.quals[inst] = q
	var n uint64
	// Only confirmed mismatches: a hash waiting for its trade's last trade
	// price (pending) or one no trade came to decide (unverifiable) says
	// nothing against the book.
	if q.HashMismatch > p.HashMismatch {
		d := q.HashMismatch - p.HashMismatch
		n += d
		l.stats.hashMismatch.Add(d)
		l.finding(c, rec, inst, datasets.CheckHashMismatch, func() string {
			return fmt.Sprintf(
				"book hash mismatch confirmed at record %d: the venue's hash differs from the rebuilt book's with every last trade price known (%d mismatch, %d ok, %d unverifiable so far); rebuilt top %s",
				rec.Seq, q.HashMismatch, q.HashOK, q.HashUnverifiable, l.topText(c, inst))
		})
	}
	if q.TopMismatch > p.TopMismatch {
		n += q.TopMismatch - p.TopMismatch
		l.stats.topMismatch.Add(q.TopMismatch - p.TopMismatch)
		l.finding(c, rec, inst, datasets.CheckTopMismatch, func() string {
			return fmt.Sprintf(
				"best bid/ask differ from the rebuilt book after its batch (by record %d; %d of %d checks so far); rebuilt top %s",
				rec.Seq, q.TopMismatch, q.TopChecked, l.topText(c, inst))
		})
	}
	if q.CrossedBatch > p.CrossedBatch {
		n += q.CrossedBatch - p.CrossedBatch
		l.stats.crossed.Add(q.CrossedBatch - p.CrossedBatch)
		l.finding(c, rec, inst, datasets.CheckCrossed, func() string {
			return fmt.Sprintf(
				"book still crossed after its batch (by record %d; %d batches so far); rebuilt top %s",
				rec.Seq, q.CrossedBatch, l.topText(c, inst))
		})
	}
	return n
}

// topText prints an instrument's rebuilt best bid and ask.
func (l *liveEngine) topText(c *liveConn, inst string) string {
	bk := c.Dec.Book(inst)
	if bk == nil {
		return "none"
	}
	sc := c.Scale
	side := func(s book.Side) string {
		lv, ok := bk.Best(s)
		if !ok {
			return "-"
		}
		return book.FormatDecimal(lv.Size, sc.SizeDecimals) + "@" + book.FormatDecimal(lv.Price, sc.PriceDecimals)
	}
	return side(book.Bid) + " / " + side(book.Ask)
}

// Heal reasons that are not integrity checks.
const (
	healLag   = datasets.CheckLiveLag
	healStall = datasets.CheckStall
)

// healer rate-limits resubscribes per instrument. Safe for concurrent use:
// the live engine and the connections' watchdogs ask.
type healer struct {
	r        *Recorder
	min, max time.Duration
	now      func() time.Time

	mu    sync.Mutex
	state map[healKey]*healState
}

// healKey is what one backoff applies to: an instrument (or, without one, a
// connection slot), for one purpose.
type healKey struct {
	what, inst string
	conn       uint32
}

type healState struct {
	attempts int
	last     time.Time
	next     time.Time
}

func newHealer(r *Recorder) healer {
	return healer{r: r, min: r.o.live.healMin, max: r.o.live.healMax, now: time.Now, state: map[healKey]*healState{}}
}

// allow reports whether k may act now, and counts the attempt.
func (h *healer) allow(k healKey) (attempt int, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	s := h.state[k]
	if s == nil {
		s = &healState{}
		h.state[k] = s
	}
	if s.attempts > 0 && now.Sub(s.last) >= h.max+s.next.Sub(s.last) {
		s.attempts = 0 // healthy for a whole backoff window: start over
	}
	if s.attempts > 0 && now.Before(s.next) {
		return s.attempts, false
	}
	d := h.min
	for i := 0; i < s.attempts && d < h.max; i++ {
		d *= 2
	}
	s.attempts++
	s.last, s.next = now, now.Add(min(d, h.max))
	return s.attempts, true
}

// request resubscribes inst on connection slot conn when healing is on and
// its backoff allows; it reports whether a resubscribe was queued.
func (h *healer) request(conn uint32, inst, reason, text string) bool {
	r := h.r
	if r.o.live.noHeal || inst == "" {
		return false
	}
	s := r.slotByID(conn)
	if s == nil {
		return false
	}
	items := s.itemsOf(inst)
	if len(items) == 0 {
		return false
	}
	attempt, ok := h.allow(healKey{what: "resubscribe", inst: inst})
	if !ok {
		if l := r.liveEngine(); l != nil {
			l.stats.healDeferred.Add(1)
		}
		r.lm.deferred.Inc()
		return false
	}
	op := slotOp{resub: items, reason: reason, attempt: attempt, text: text}
	select {
	case s.ctl <- op:
		return true
	default: // the slot is busy: the next finding asks again
		return false
	}
}

func (r *Recorder) slotByID(id uint32) *slot {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id == 0 || int(id) > len(r.slots) {
		return nil
	}
	return r.slots[id-1]
}

// itemsOf returns the slot's items that carry inst's book: the Polymarket
// token itself, the Hyperliquid steady (l2Book) subscriptions of the coin.
func (s *slot) itemsOf(inst string) []string {
	var out []string
	for _, it := range s.snapshotItems() {
		if ch, in, steady := s.r.p.WatchKey(it); in == inst && (steady || ch == "") {
			out = append(out, it)
		}
	}
	return out
}

// resubscribe sends the unsubscribe and subscribe frames of op.resub on the
// open connection, after the KindResubscribe record that says why.
func (s *slot) resubscribe(ctx context.Context, conn *websocket.Conn, op slotOp) error {
	r := s.r
	cur := s.snapshotItems()
	var items []string
	for _, it := range op.resub {
		for _, c := range cur {
			if c == it {
				items = append(items, it)
			}
		}
	}
	if len(items) == 0 {
		return nil
	}
	r.control(s.id, datasets.KindResubscribe, datasets.Control{Instruments: items, Reason: op.reason,
		Attempt: op.attempt, Text: op.text})
	r.lm.resubscribes.WithLabelValues(op.reason).Inc()
	if l := r.liveEngine(); l != nil {
		l.stats.resubscribes.Add(1)
	}
	r.log.Info("resubscribing to heal a book", "conn", s.id, "items", items, "reason", op.reason, "attempt", op.attempt)
	for _, f := range r.p.RemoveFrames(items) {
		f.Items = nil
		if err := s.send(ctx, conn, f); err != nil {
			return err
		}
	}
	for _, f := range r.p.AddFrames(items) {
		if err := s.send(ctx, conn, f); err != nil {
			return err
		}
	}
	return nil
}

// healStall resubscribes the instruments an instrument-level stall names
// instead of replacing the connection, when healing is on and each one's
// backoff allows. It reports whether it did (the connection stays).
func (s *slot) healStall(c datasets.Control) bool {
	r := s.r
	if r.o.live.off || r.o.live.noHeal {
		return false
	}
	if time.Duration(s.mono()-s.lastData.Load()) >= r.o.stallTimeout {
		return false // the whole connection is silent: replace it
	}
	l := r.liveEngine()
	if l == nil {
		return false
	}
	var items []string
	attempt := 0
	for _, it := range c.Instruments {
		if a, ok := l.heal.allow(healKey{what: healStall, inst: it}); ok {
			items = append(items, it)
			attempt = max(attempt, a)
		}
	}
	if len(items) < len(c.Instruments) {
		return false // some are beyond their backoff: let the reconnect handle them
	}
	l.stats.stalls.Add(uint64(len(items)))
	r.lm.integrity.WithLabelValues(datasets.CheckStall).Add(float64(len(items)))
	select {
	case s.ctl <- slotOp{resub: items, reason: healStall, attempt: attempt, text: c.Text}:
	default:
		return false
	}
	s.buildWatch() // the stalled items get a fresh stall window
	return true
}
