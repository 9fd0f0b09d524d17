package export

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/replayer"
)

// Split writes one table per instrument: a Sink for each instrument the
// events carry, created on the instrument's first event with the writer
// open returns for it. Hftbacktest's and NautilusTrader's Tardis loaders
// assume one instrument per file; a file of several converts without error
// into one meaningless merged book. The events table, which has no
// instrument, cannot be split (ErrOption).
//
// Each Sink gets the options given to NewSplit (WithInstruments selects
// which instruments get a file) and, unless WithBatchRows is among them,
// batches of SplitBatchRows rows; each starts with room for a few rows and
// grows as its instrument's rows come, and past a budget over all (see
// manyBudget) every Sink writes what it holds, so that memory does not grow
// with the number of instruments by a batch each. Like a Sink, a Split is
// not safe for concurrent use; it never closes the writers.
type Split struct {
	open  func(venue, instrument string) (io.Writer, error)
	table Table
	fmt   Format
	opts  []Option
	cfg   config
	sinks map[string]*Sink
	order []string // instruments in the order their sinks were made
	err   error
	held  heldRows
}

// manyBudget is the memory the buffered rows of a Split's or a
// Partitioned's sinks may take together (heldBytes): past it every sink
// writes what it holds and gives the memory back (heldRows.spill), so that
// memory does not grow with the number of instruments. Each file's rows
// are the same; only where the budget is reached (more than about a
// hundred busy instruments of a wide depth table) do its row groups
// (Parquet) or record batches (Arrow) end earlier.
const manyBudget = 128 << 20

// heldRows accounts for the memory of many sinks' buffered rows.
type heldRows struct {
	bytes  int
	budget int // 0: manyBudget
}

// onEvent hands e to s and, once the budget is exceeded, spills every sink
// (named by order, in that order).
func (h *heldRows) onEvent(s *Sink, e *replayer.Event, order []string, sinks map[string]*Sink) error {
	before := s.heldBytes()
	if err := s.OnEvent(e); err != nil {
		return err
	}
	h.bytes += s.heldBytes() - before
	budget := h.budget
	if budget == 0 {
		budget = manyBudget
	}
	if h.bytes <= budget {
		return nil
	}
	h.bytes = 0
	for _, name := range order {
		s := sinks[name]
		if err := s.spill(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		h.bytes += s.heldBytes()
	}
	return nil
}

// SplitBatchRows is the batch size of a Split's sinks unless WithBatchRows
// says otherwise.
const SplitBatchRows = 1024

// NewSplit returns a Split writing table t in format f, one Sink per
// instrument, each to the writer open returns (called once per instrument,
// from OnEvent). Options are checked here.
func NewSplit(open func(venue, instrument string) (io.Writer, error), t Table, f Format, opts ...Option) (*Split, error) {
	if t == TableEvents || t == TableInstruments {
		return nil, fmt.Errorf("%w: the %s table is not split by instrument", ErrOption, t)
	}
	cfg, opts, err := manySinkOptions(t, f, opts)
	if err != nil {
		return nil, err
	}
	return &Split{open: open, table: t, fmt: f, opts: opts, cfg: cfg, sinks: map[string]*Sink{}}, nil
}

// OnEvent hands e to its instrument's Sink, creating it first. Events of no
// instrument (connection-wide records) are not needed by the per-instrument
// tables: each loss also arrives once per instrument it invalidates.
func (p *Split) OnEvent(e *replayer.Event) error {
	if p.err != nil {
		return p.err
	}
	if e.Instrument == "" {
		return nil
	}
	s := p.sinks[e.Instrument]
	if s == nil {
		if p.cfg.instruments != nil && !p.cfg.wanted(e) {
			return nil
		}
		w, err := p.open(e.Venue, e.Instrument)
		if err != nil {
			p.err = err
			return err
		}
		if s, err = New(w, p.table, p.fmt, p.opts...); err != nil {
			p.err = err
			return err
		}
		inst := strings.Clone(e.Instrument)
		p.sinks[inst] = s
		p.order = append(p.order, inst)
	}
	if err := p.held.onEvent(s, e, p.order, p.sinks); err != nil {
		p.err = err
		return err
	}
	return nil
}

// Close closes every Sink, in the order they were made, and returns the
// first error.
func (p *Split) Close() error {
	var errs []error
	for _, inst := range p.order {
		if err := p.sinks[inst].Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", inst, err))
		}
	}
	if p.err != nil {
		errs = append([]error{p.err}, errs...)
	}
	return errors.Join(errs...)
}

// Instruments returns the instruments that got a file, in the order their
// files were opened.
func (p *Split) Instruments() []string { return append([]string(nil), p.order...) }

// Rows returns the rows appended so far over every instrument.
func (p *Split) Rows() uint64 {
	var n uint64
	for _, s := range p.sinks {
		n += s.Rows()
	}
	return n
}

// manySinkOptions checks the options of a writer of many sinks (Split,
// Partitioned) and adds small batches unless WithBatchRows is among them.
func manySinkOptions(t Table, f Format, opts []Option) (config, []Option, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return cfg, nil, err
		}
	}
	sh := &columnar.Shared{}
	opts = append(opts[:len(opts):len(opts)], func(c *config) error { c.shared = sh; return nil })
	if cfg.out.BatchRows == 0 {
		opts = append(opts, WithBatchRows(SplitBatchRows))
	}
	// One probe validates the combination before any file is opened.
	if _, err := New(io.Discard, t, f, opts...); err != nil {
		return cfg, nil, err
	}
	return cfg, opts, nil
}
