package export

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
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
	w      io.Writer

	impl    tableImpl
	cw      *columnar.Writer // once started
	b       *columnar.Batch  // cw's: the row being set
	started bool
	err     error // sticky: the failure to start
	closed  bool
}

// tableImpl is one table: it declares its columns and turns events into rows.
type tableImpl interface {
	// columns adds the table's columns to b once the venue is known: which
	// columns there are follows from what its data carries.
	columns(b *columnar.Batch, caps venue.Capabilities)
	// onEvent appends the rows for e, calling s.endRow after each.
	onEvent(s *Sink, e *replayer.Event) error
	// finish appends rows still pending at the end (sampled depth buckets).
	finish(s *Sink) error
	// csvFields is the FormatTardis layout: Tardis' columns.
	csvFields(quality bool) []columnar.CSVField
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
	if f == FormatArrow && cfg.out.Compression == columnar.Snappy {
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
	s := &Sink{cfg: cfg, table: t, format: f, w: w}
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
	if err := s.failure(); err != nil {
		return err
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
	if err := s.failure(); err != nil {
		return err
	}
	if !s.started {
		if err := s.start(); err != nil {
			return err
		}
	}
	if err := s.impl.finish(s); err != nil {
		return err
	}
	// The file is done: the writer lets its buffers go (a Split closes
	// thousands of sinks).
	return s.cw.Close()
}

// failure returns the sticky error: the failure to start or to write.
func (s *Sink) failure() error {
	if s.err == nil && s.cw != nil {
		return s.cw.Err()
	}
	return s.err
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
func (s *Sink) Rows() uint64 {
	if s.cw == nil {
		return 0
	}
	return s.cw.Rows()
}

func (s *Sink) start() error {
	s.started = true
	var b columnar.Batch
	s.impl.columns(&b, s.cfg.caps)
	f, lay := columnar.CSV, columnar.Layout{Table: s.table.String(), FormatName: s.format.String(),
		Metadata: s.metadata(), Scale: s.cfg.scale, Exact: s.cfg.exact, Shared: s.cfg.shared}
	switch s.format {
	case FormatParquet:
		f = columnar.Parquet
	case FormatArrow:
		f = columnar.Arrow
	case FormatTardis:
		lay.CSV = s.tardisFields()
	}
	cw, err := columnar.NewWriter(s.w, b, f, s.cfg.out, lay)
	if err != nil {
		s.err = err
		return err
	}
	s.cw, s.b = cw, cw.Batch()
	return nil
}

// metadata is the schema metadata of the Sink's table.
func (s *Sink) metadata() []columnar.KeyValue {
	kv := func(k, v string) columnar.KeyValue { return columnar.KeyValue{Key: k, Value: v} }
	return []columnar.KeyValue{kv(MetaTable, s.table.String()), kv(MetaVenue, s.cfg.venue),
		kv(MetaPriceDecimals, strconv.Itoa(int(s.cfg.scale.PriceDecimals))),
		kv(MetaSizeDecimals, strconv.Itoa(int(s.cfg.scale.SizeDecimals))),
		kv(MetaDatasets, columnar.DatasetsJSON(s.cfg.out.Datasets)), kv(MetaLevels, strconv.Itoa(s.cfg.levels)),
		kv(MetaIntervalNs, strconv.FormatInt(s.cfg.intervalNs, 10)), kv(MetaExact, strconv.FormatBool(s.cfg.exact))}
}

// tardisFields is the FormatTardis CSV layout of the table: Tardis'
// columns, under WithTardisExchange's name if given, symbols quoted.
func (s *Sink) tardisFields() []columnar.CSVField {
	fields := s.impl.csvFields(s.cfg.quality)
	for i := range fields {
		switch fields[i].Header {
		case "exchange":
			if s.cfg.tardisExchange != "" {
				fields[i] = columnar.CSVField{Header: "exchange", How: columnar.CSVConst, Text: s.cfg.tardisExchange, Alt: -1}
			}
		case "symbol":
			fields[i].How = columnar.CSVQuoted
		}
	}
	return fields
}

// endRow completes a row and writes the batch once it is full.
func (s *Sink) endRow() error { return s.cw.EndRow() }

// heldBytes estimates the memory of the Sink's buffered batch.
func (s *Sink) heldBytes() int {
	if s.cw == nil {
		return 0
	}
	return s.cw.HeldBytes()
}

// spill writes the buffered rows (a row group of their own) and gives back
// the batch's memory: a Split or Partitioned over its memory budget spills
// its sinks.
func (s *Sink) spill() error {
	if s.err != nil || !s.started || s.closed {
		return s.err
	}
	return s.cw.Spill()
}
