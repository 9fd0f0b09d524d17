package export

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tapedeck/tapedeck/replayer"
)

// Sink writes one table in one format. It implements replayer.Subscriber;
// subscribe it with a Key matching every channel (replayer.Key{}) so that it
// sees the book, trade and control events it needs and, for sampled depth,
// the passage of time.
//
// A Sink is not safe for concurrent use: the replayer calls OnEvent from one
// goroutine. It never closes w. With WithEncoders(1) it writes to w only from
// OnEvent and Close and holds one batch of rows (WithBatchRows) in memory; by
// default (more than one core) it writes a full batch on other goroutines
// while OnEvent fills the next, so it holds two, and every write to w has
// ended when Close returns.
type Sink struct {
	cfg    config
	table  Table
	format Format
	w      *stickyWriter

	impl     tableImpl
	b        batch
	rowBytes int // b.rowBytes(), once the columns are known
	out      formatWriter
	started  bool
	rows     uint64
	err      error // sticky: the first write failure
	closed   bool

	// Writing on other goroutines (WithEncoders > 1): spare is the batch a
	// goroutine is writing while pending, or the empty one to fill next;
	// the write's result arrives on wrote, and failed is set as soon as it
	// fails.
	spare   batch
	pending bool
	wrote   chan error
	failed  atomic.Bool
}

// tableImpl is one table: it declares its columns and turns events into rows.
type tableImpl interface {
	// columns adds the table's columns to b once the venue is known.
	columns(b *batch, venue string, counts bool)
	// onEvent appends the rows for e, calling s.endRow after each.
	onEvent(s *Sink, e *replayer.Event) error
	// finish appends rows still pending at the end (sampled depth buckets).
	finish(s *Sink) error
	// csvFields is the FormatTardis layout: Tardis' columns.
	csvFields(quality bool) []csvField
}

// formatWriter is one file format over a batch.
type formatWriter interface {
	write(b *batch) error
	close() error
}

// New returns a Sink writing table t in format f to w. Options are checked
// here (ErrOption); nothing is written until the first row or Close, so that
// the schema can take the venue and scale from the first event when
// WithSource is not given.
func New(w io.Writer, t Table, f Format, opts ...Option) (*Sink, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if t < TableDepth || t > TableInstruments {
		return nil, fmt.Errorf("%w: table %d", ErrOption, t)
	}
	if f < FormatParquet || f > FormatTardis {
		return nil, fmt.Errorf("%w: format %d", ErrOption, f)
	}
	if f == FormatArrow && cfg.compression == Snappy {
		return nil, fmt.Errorf("%w: Arrow IPC has no snappy compression (use zstd or none)", ErrOption)
	}
	if cfg.nautilus != 0 {
		return nil, fmt.Errorf("%w: a Nautilus precision applies to NewNautilus only", ErrOption)
	}
	if cfg.intervalNs != 0 && t != TableDepth {
		return nil, fmt.Errorf("%w: an interval applies to the depth table only, not %s", ErrOption, t)
	}
	if cfg.bucket != 0 && cfg.intervalNs == 0 {
		return nil, fmt.Errorf("%w: a bucket time applies to an interval depth table only", ErrOption)
	}
	if cfg.bucket == 0 {
		cfg.bucket = BucketLocal
		if f == FormatTardis {
			cfg.bucket = BucketExchange // Tardis' book_snapshot convention
		}
	}
	if cfg.snapshots == 0 {
		cfg.snapshots = SnapshotsFull
	}
	if cfg.tardisExchange != "" && f != FormatTardis {
		return nil, fmt.Errorf("%w: a Tardis exchange name applies to FormatTardis only, not %s", ErrOption, f)
	}
	if f == FormatTardis && (t == TableEvents || t == TableInstruments) {
		return nil, fmt.Errorf("%w: the %s table has no Tardis layout (use csv)", ErrOption, t)
	}
	if (cfg.fromNs != 0 || cfg.toNs != 0) && t != TableInstruments {
		return nil, fmt.Errorf("%w: a window option applies to the instruments table only, not %s (window the replay)", ErrOption, t)
	}
	s := &Sink{cfg: cfg, table: t, format: f, w: &stickyWriter{w: w}}
	switch t {
	case TableDepth:
		s.impl = newDepthTable(cfg.levels, cfg.intervalNs, cfg.bucket == BucketExchange)
	case TableBookChanges:
		s.impl = &changesTable{full: cfg.snapshots == SnapshotsFull}
	case TableTrades:
		s.impl = &tradesTable{}
	case TableQuotes:
		s.impl = newQuotesTable()
	case TableEvents:
		s.impl = &eventsTable{}
	case TableInstruments:
		s.impl = newInstrumentsTable()
	}
	return s, nil
}

// OnEvent appends the rows e produces and writes a batch when it fills. It
// returns ErrMixedScale for an event at another scale than the table's, a
// *WriteError when the output fails (sticky), and ErrClosed after Close.
func (s *Sink) OnEvent(e *replayer.Event) error {
	if s.closed {
		return ErrClosed
	}
	if s.err != nil {
		return s.err
	}
	if s.failed.Load() {
		return s.wait()
	}
	if !s.started {
		if !s.cfg.haveScale {
			s.cfg.venue, s.cfg.scale, s.cfg.haveScale = e.Venue, e.Scale, true
			if e.Driver != nil {
				s.cfg.caps = e.Driver.Capabilities()
			}
		}
		if err := s.start(); err != nil {
			return err
		}
	}
	if s.cfg.instruments != nil && e.Instrument != "" && !s.cfg.wanted(e) {
		return nil
	}
	if !s.cfg.owned(e) {
		return nil
	}
	if carriesValues(e) && e.Scale != s.cfg.scale {
		return fmt.Errorf("%w: %s %d/%d after %d/%d", ErrMixedScale, e.Venue,
			e.Scale.PriceDecimals, e.Scale.SizeDecimals, s.cfg.scale.PriceDecimals, s.cfg.scale.SizeDecimals)
	}
	return s.impl.onEvent(s, e)
}

// wanted reports whether e's instrument is one WithInstruments asked for,
// by its id or its market; an instrument once matched by its market stays
// matched for the events that name no market (losses).
func (c *config) wanted(e *replayer.Event) bool {
	if c.instruments[e.Instrument] {
		return true
	}
	if d := e.Decoded; d != nil && d.Market != "" && c.instruments[d.Market] {
		c.instruments[strings.Clone(e.Instrument)] = true
		return true
	}
	return false
}

// carriesValues reports whether e holds fixed-point values (a decoded event
// or a book); control records without a book carry none.
func carriesValues(e *replayer.Event) bool { return e.Decoded != nil || e.Book != nil }

// Close appends pending rows, writes the last batch and the file footer, and
// returns the first error met. It does not close the underlying writer.
// Close on a Sink that saw no events writes a valid, empty table.
func (s *Sink) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	if s.err != nil {
		return s.err
	}
	if !s.started {
		if err := s.start(); err != nil {
			return err
		}
	}
	if err := s.impl.finish(s); err != nil {
		return err
	}
	if err := s.wait(); err != nil {
		return err
	}
	if s.b.rows > 0 {
		if err := s.writeBatch(&s.b); err != nil {
			s.err = err
			return err
		}
	}
	err := s.out.close()
	if err == nil {
		err = s.w.err
	}
	if err != nil {
		s.err = &WriteError{Table: s.table, Format: s.format, Err: err}
		return s.err
	}
	// The file is done: its buffers go (a Split closes thousands of sinks).
	s.b.free()
	s.spare, s.out = batch{}, nil
	return nil
}

// stickyWriter keeps the first write error and reports success to the format
// library: Arrow's Parquet writer panics on some write failures, and a Sink
// must return an error instead. The Sink checks err after every batch.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return len(p), nil
	}
	if _, err := s.w.Write(p); err != nil {
		s.err = err
	}
	return len(p), nil
}

// Problems returns what the instruments table could not read: one line per
// message whose instrument facts (some or all) did not parse, naming the
// dataset, the record and the element, at most 20 and then a count of the
// rest. The facts it could read are in the table. Nil for other tables.
func (s *Sink) Problems() []string {
	t, ok := s.impl.(*instrumentsTable)
	if !ok || len(t.problems) == 0 {
		return nil
	}
	p := slices.Clone(t.problems)
	if t.dropped > 0 {
		p = append(p, fmt.Sprintf("and %d more", t.dropped))
	}
	return p
}

// Rows returns the number of rows appended so far (written or buffered).
func (s *Sink) Rows() uint64 { return s.rows }

func (s *Sink) start() error {
	s.started = true
	s.impl.columns(&s.b, s.cfg.venue, s.cfg.caps.LevelCounts)
	if s.cfg.batchRows == 0 {
		// Default: about batchBytes of rows, so a wide depth table holds as
		// little memory as a narrow trades table; within [minBatch, maxBatch].
		s.cfg.batchRows = min(maxBatch, max(minBatch, batchBytes/s.b.rowBytes()))
	}
	if s.cfg.many {
		s.b.grow(min(manyFirstRows, s.cfg.batchRows))
	} else {
		s.b.grow(s.cfg.batchRows)
	}
	s.rowBytes = s.b.rowBytes()
	if s.encoders() > 1 {
		s.wrote = make(chan error, 1)
	}
	var err error
	switch s.format {
	case FormatParquet:
		s.out, err = newParquetWriter(s.w, s)
	case FormatArrow:
		s.out, err = newIPCWriter(s.w, s)
	case FormatCSV, FormatTardis:
		s.out, err = newCSVWriter(s.w, s)
	}
	if err == nil {
		err = s.w.err
	}
	if err != nil {
		s.err = &WriteError{Table: s.table, Format: s.format, Err: err}
		return s.err
	}
	return nil
}

// Default batch sizing (WithBatchRows overrides it).
const (
	batchBytes = 24 << 20
	minBatch   = 4096
	maxBatch   = 1 << 16
)

// manyFirstRows is the room for rows a Sink among many starts with.
const manyFirstRows = 4

// endRow completes a row and writes the batch once it is full.
func (s *Sink) endRow() error {
	s.b.rows++
	s.rows++
	if s.b.rows >= s.cfg.batchRows {
		return s.flush()
	}
	if s.b.rows == s.b.capRows {
		s.b.regrow(min(2*s.b.capRows, s.cfg.batchRows))
	}
	return nil
}

// heldBytes estimates the memory of the Sink's buffered batch.
func (s *Sink) heldBytes() int { return s.b.capRows * s.rowBytes }

// spill writes the buffered rows (a row group of their own) and gives back
// the batch's memory: a Split or Partitioned over its memory budget spills
// its sinks. Only for a Sink among many (one encoder).
func (s *Sink) spill() error {
	if s.err != nil || !s.started || s.closed {
		return s.err
	}
	if s.b.rows > 0 {
		if err := s.writeBatch(&s.b); err != nil {
			s.err = err
			return err
		}
	}
	if s.b.capRows > manyFirstRows {
		s.b.grow(manyFirstRows)
	}
	if r, ok := s.out.(interface{ release() }); ok {
		r.release()
	}
	return nil
}

// flush writes the full batch: at once with one encoder, else on another
// goroutine once the batch before it is written, OnEvent going on with the
// other batch meanwhile.
func (s *Sink) flush() error {
	if s.wrote == nil {
		if err := s.writeBatch(&s.b); err != nil {
			s.err = err
			return err
		}
		return nil
	}
	if err := s.wait(); err != nil {
		return err
	}
	if s.spare.cols == nil {
		s.spare = s.b.emptyLike(s.cfg.batchRows)
	}
	s.b, s.spare = s.spare, s.b
	s.pending = true
	go func(b *batch) {
		err := s.writeBatch(b)
		if err != nil {
			s.failed.Store(true)
		}
		s.wrote <- err
	}(&s.spare)
	return nil
}

// wait waits for the batch being written, if any, and returns (and keeps)
// the write's error.
func (s *Sink) wait() error {
	if !s.pending {
		return s.err
	}
	s.pending = false
	if err := <-s.wrote; err != nil {
		s.err = err
	}
	return s.err
}

// writeBatch writes b with the format writer and empties it. The format
// writer and w are used by one writeBatch at a time.
func (s *Sink) writeBatch(b *batch) error {
	err := s.out.write(b)
	if err == nil {
		err = s.w.err
	}
	if err != nil {
		return &WriteError{Table: s.table, Format: s.format, Err: err}
	}
	b.reset()
	return nil
}

// encoders is the number of goroutines writing batches (WithEncoders); a
// Sink among many writes on the caller's goroutine (one batch in memory).
func (s *Sink) encoders() int {
	if s.cfg.many {
		return 1
	}
	if s.cfg.encoders > 0 {
		return s.cfg.encoders
	}
	return min(runtime.GOMAXPROCS(0), MaxEncoders)
}
