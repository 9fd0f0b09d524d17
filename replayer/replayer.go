package replayer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed/engine"
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
	drivers   []venue.Driver // per dataset, resolved once
	opts      options
	clock     *Clock

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
		var d venue.Driver
		if o.newDecoder == nil {
			if d, err = venueDriver(m.Venue); err != nil {
				return nil, fmt.Errorf("replayer: dataset %s: %w", p, err)
			}
		} else if _, err := o.newDecoder(m.Venue, o.decoderOptions()); err != nil {
			return nil, fmt.Errorf("replayer: dataset %s: %w", p, err)
		}
		r.manifests = append(r.manifests, m)
		r.drivers = append(r.drivers, d)
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
	r.run.eng = r.newEngine()
	return r, nil
}

// Drivers returns each dataset's venue driver, in input order (resolved
// once, by New; the drivers events carry as Event.Driver). The slice is the
// caller's.
func (r *Replayer) Drivers() []venue.Driver { return slices.Clone(r.drivers) }

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
	r.run.eng.Subscribe(k, s)
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

// runState is the mutable state of Run.
type runState struct {
	eng      *engine.Engine
	retired  venue.Stats // counters of decoders dropped by a backward seek
	open     []int       // connection slots made per dataset (WithLimits), since the last reset
	failures []SubscriberFailure
	stopErr  *SubscriberFailure // the first failure, under WithStopOnSubscriberError

	firstErrors, firstRESTErrors []DecodeError
	seeks                        int
	truncated                    []string
	readers                      []*datasets.Reader // the current pass's
	fetched                      []int64            // bytes earlier passes' readers read, per dataset
}

// instrumentCheckMask sets how often (in frames of one connection) the
// instrument bound is checked: counting walks every book, so not per frame.
var instrumentCheckMask uint32 = 1<<16 - 1

// newEngine makes the event core of a replay: one source per dataset, the
// limits, shard and stop-on-failure options as its hooks.
func (r *Replayer) newEngine() *engine.Engine {
	srcs := make([]engine.Source, len(r.paths))
	for i := range srcs {
		v, path, d := r.manifests[i].Venue, r.paths[i], r.drivers[i]
		srcs[i] = engine.Source{Venue: v, Driver: d, NewDecoder: func() (venue.Decoder, error) {
			if d != nil {
				return d.NewDecoder(r.opts.decoderOptions()), nil
			}
			dec, err := r.opts.newDecoder(v, r.opts.decoderOptions())
			if err != nil {
				return nil, fmt.Errorf("replayer: dataset %s: %w", path, err)
			}
			return dec, nil
		}}
	}
	r.run.open = make([]int, len(r.paths))
	cfg := engine.Config{Sources: srcs, InstrumentCheckMask: instrumentCheckMask,
		Open: func(ds int, c uint32, open int) error {
			if open >= r.opts.maxConns {
				return fmt.Errorf("%w: dataset %s uses more than %d connection slots (conn %d at this record; WithLimits raises the bound)",
					ErrLimit, r.paths[ds], r.opts.maxConns, c)
			}
			return nil
		},
		Instruments: func(ds, n int) error {
			if n > r.opts.maxInstruments {
				return fmt.Errorf("%w: dataset %s has more than %d instruments (%d so far; WithLimits raises the bound)",
					ErrLimit, r.paths[ds], r.opts.maxInstruments, n)
			}
			return nil
		},
		Failed:      r.failed,
		DecodeError: r.decodeError,
	}
	if !r.opts.shard.Whole() {
		cfg.Owns = r.opts.shard.Owns
	}
	return engine.New(cfg)
}

// decodeError keeps the first decode errors of frames and REST bodies.
func (r *Replayer) decodeError(c *engine.Conn, rec *datasets.Record, err error) {
	st := &r.run
	first := &st.firstErrors
	if rec.Kind == datasets.KindRESTResponse {
		first = &st.firstRESTErrors
	}
	if len(*first) < maxDecodeErrors {
		*first = append(*first, DecodeError{
			Dataset: c.Dataset, Conn: rec.Conn, Seq: rec.Seq, RecvNs: rec.WallNs, Err: err.Error(), Cause: err})
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
	for _, c := range st.eng.Conns() {
		addStats(&st.retired, c.Dec.Stats())
	}
	st.eng.Reset()
	clear(st.open)
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
	st.truncated = make([]string, len(r.paths))

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
		if err := st.eng.Process(ds, rec, live); err != nil {
			return r.summary(start), err
		}
		if !live && rec.Kind == datasets.KindRESTResponse && r.opts.warmupREST != nil {
			r.opts.warmupREST(r.manifests[ds].Venue, rec)
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
		st.eng.Counts.UnknownKinds += rd.SkippedUnknown()
	}
	st.eng.FlushAll()
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

// summary builds the Summary of what Run did so far.
func (r *Replayer) summary(start time.Time) *Summary {
	st := &r.run
	n := &st.eng.Counts
	wall := time.Since(start)
	s := &Summary{
		Records: n.Records, Frames: n.Frames, Bytes: n.Bytes, WarmupFrames: n.Warmup,
		Events: eventCounts(&n.Events), Controls: n.Controls, UnknownKinds: n.UnknownKinds,
		DecodeErrors: n.DecodeErrors, FirstDecodeErrors: st.firstErrors, ControlErrors: n.ControlErrors,
		RESTUndecoded: n.RESTUndecoded, FirstRESTErrors: st.firstRESTErrors,
		Losses: lossCounts(&n.Losses), SubscriberFailures: st.failures, Seeks: st.seeks,
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
	var buf []string
	for _, c := range st.eng.Conns() {
		addStats(&stats, c.Dec.Stats())
		buf = c.Dec.Instruments(buf[:0])
		for _, in := range buf {
			seen[vi{c.Venue, in}] = true
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
		s.FramesPerSec = float64(n.Frames) / sec
		s.MBPerSec = float64(n.Bytes) / 1e6 / sec
	}
	if r.opts.speed != SpeedMax {
		l := r.clock.Lateness()
		s.Lateness = &l
		if sk := r.clock.Skipped(); sk != (Skipped{}) {
			s.Skipped = &sk
		}
	}
	s.Digest = st.eng.Digest()
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
	for _, c := range r.run.eng.Conns() {
		buf = c.Dec.Instruments(buf[:0])
		for _, in := range buf {
			bk := c.Dec.Book(in)
			if bk == nil {
				continue
			}
			out = append(out, BookState{Dataset: c.Dataset, Conn: c.ID, Venue: c.Venue,
				Instrument: in, Book: bk, Scale: c.Scale, Quality: c.Dec.Quality(in)})
		}
	}
	slices.SortFunc(out, func(a, b BookState) int {
		return cmp.Or(cmp.Compare(a.Venue, b.Venue), cmp.Compare(a.Instrument, b.Instrument),
			cmp.Compare(a.Dataset, b.Dataset), cmp.Compare(a.Conn, b.Conn))
	})
	return out
}
