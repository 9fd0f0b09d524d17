package export

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/replayer"
)

// PartitionField is one level of a Hive-partitioned table tree.
type PartitionField uint8

// Partition fields: the directory levels venue=…, date=YYYY-MM-DD, hour=HH
// (UTC, of the receive time of the events that made the rows) and
// instrument=….
const (
	PartVenue PartitionField = iota + 1
	PartDate
	PartHour
	PartInstrument
)

var partNames = map[PartitionField]string{PartVenue: "venue", PartDate: "date", PartHour: "hour", PartInstrument: "instrument"}

// String returns the field's column name.
func (p PartitionField) String() string { return partNames[p] }

// ParsePartitionBy parses a comma-separated list of venue, date, hour and
// instrument (each once; hour needs date) into directory levels, in order.
func ParsePartitionBy(s string) ([]PartitionField, error) {
	var out []PartitionField
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		var f PartitionField
		for k, v := range partNames {
			if v == name {
				f = k
			}
		}
		if f == 0 {
			return nil, fmt.Errorf("%w: partition field %q (want venue, date, hour, instrument)", ErrOption, name)
		}
		if slices.Contains(out, f) {
			return nil, fmt.Errorf("%w: partition field %s given twice", ErrOption, name)
		}
		out = append(out, f)
	}
	if slices.Contains(out, PartHour) && !slices.Contains(out, PartDate) {
		return nil, fmt.Errorf("%w: partition by hour needs date too (date=…/hour=…)", ErrOption)
	}
	return out, nil
}

// HiveEscape escapes a partition value as Hive and Spark do: the bytes a
// path or a key=value pair cannot hold become %XX.
func HiveEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	if b.Len() == 0 {
		return "__HIVE_DEFAULT_PARTITION__"
	}
	return b.String()
}

// maxName is the most bytes of a name (a split file's instrument, a
// partition's value) put in a path: file systems take 255 bytes a path
// component, and the temporary file beside it adds a few.
const maxName = 160

// fitName returns s, or when it is longer than maxName its first bytes and
// a hash of the whole ("~" and 16 hex digits), so that one venue-supplied
// name of thousands of characters neither fails the export nor shares a
// file with another.
func fitName(s string) string {
	if len(s) <= maxName {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	cut := maxName - 17
	for cut > 0 && (!utf8.RuneStart(s[cut]) || s[cut-1] == '%' || cut > 1 && s[cut-2] == '%') {
		cut-- // not inside a character or a %XX escape
	}
	return s[:cut] + "~" + hex.EncodeToString(sum[:8])
}

// Partitioned writes a table as a Hive-partitioned tree: one file
// PART/…/part-N.EXT per partition (N is the part number given, e.g. the
// shard, so shards write side by side), each a complete table of the
// format (Parquet TIMESTAMP(NANOS) times, the schema of the unsplit
// table). The partition columns are in the paths (venue=…/date=…/…) as
// hive_partitioning readers expect; the files keep their own venue and
// instrument columns.
//
// Events arrive in time order, so when the date (or hour) moves on, the
// files of the earlier ones are finished at once (done is called with each
// path): memory holds the open partitions of one period. With instrument
// among the fields, events of no instrument are not needed (as for Split)
// and the events table is refused.
type Partitioned struct {
	open  func(path string) (io.Writer, error)
	done  func(path string) error
	table Table
	fmt   Format
	by    []PartitionField
	name  string // part-N.ext
	opts  []Option
	cfg   config

	sinks    map[string]*Sink // by relative path
	order    []string
	period   string // the date/hour key of the open files
	paths    []string
	written  []string
	err      error
	buf      []byte
	doneRows uint64
	held     heldRows
}

// NewPartitioned returns a Partitioned writer of table t in format f.
// open creates the file at a relative path (slash-separated); done, when
// not nil, is called once the file at path is complete and will not be
// written again.
func NewPartitioned(open func(path string) (io.Writer, error), done func(path string) error, t Table, f Format,
	by []PartitionField, part int, opts ...Option) (*Partitioned, error) {
	if len(by) == 0 {
		return nil, fmt.Errorf("%w: no partition field", ErrOption)
	}
	if t == TableEvents && slices.Contains(by, PartInstrument) {
		return nil, fmt.Errorf("%w: the events table has no instrument to partition by", ErrOption)
	}
	if t == TableInstruments {
		// Its rows come from REST bodies of no instrument and are written
		// at the end: a partition of it would be wrong, and it is small.
		return nil, fmt.Errorf("%w: the instruments table is not partitioned", ErrOption)
	}
	cfg, opts, err := manySinkOptions(t, f, opts)
	if err != nil {
		return nil, err
	}
	ext := map[Format]string{FormatParquet: "parquet", FormatArrow: "arrow", FormatCSV: "csv", FormatTardis: "csv"}[f]
	return &Partitioned{open: open, done: done, table: t, fmt: f, by: by, name: fmt.Sprintf("part-%d.%s", part, ext),
		opts: opts, cfg: cfg, sinks: map[string]*Sink{}}, nil
}

// path builds the relative path of e's partition and its period key.
func (p *Partitioned) path(e *replayer.Event) (path, period string) {
	t := time.Unix(0, e.RecvNs).UTC()
	b := p.buf[:0]
	for _, f := range p.by {
		b = append(b, f.String()...)
		b = append(b, '=')
		switch f {
		case PartVenue:
			b = append(b, fitName(HiveEscape(e.Venue))...)
		case PartDate:
			b = t.AppendFormat(b, "2006-01-02")
		case PartHour:
			b = t.AppendFormat(b, "15")
		case PartInstrument:
			b = append(b, fitName(HiveEscape(e.Instrument))...)
		}
		b = append(b, '/')
	}
	p.buf = b
	if slices.Contains(p.by, PartHour) {
		period = t.Format("2006-01-02T15")
	} else if slices.Contains(p.by, PartDate) {
		period = t.Format("2006-01-02")
	}
	return string(b) + p.name, period
}

// OnEvent hands e to its partition's Sink, creating the file on its first
// row-bearing event and finishing the files of a period that has ended.
func (p *Partitioned) OnEvent(e *replayer.Event) error {
	if p.err != nil {
		return p.err
	}
	if e.Instrument == "" && slices.Contains(p.by, PartInstrument) {
		return nil
	}
	if p.cfg.instruments != nil && e.Instrument != "" && !p.cfg.wanted(e) {
		return nil
	}
	if !p.cfg.owned(e) {
		return nil
	}
	path, period := p.path(e)
	if period != p.period {
		if err := p.closeAll(); err != nil {
			p.err = err
			return err
		}
		p.period = period
	}
	s := p.sinks[path]
	if s == nil {
		w, err := p.open(path)
		if err != nil {
			p.err = err
			return err
		}
		if s, err = New(w, p.table, p.fmt, p.opts...); err != nil {
			p.err = err
			return err
		}
		p.sinks[path] = s
		p.order = append(p.order, path)
		p.paths = append(p.paths, path)
	}
	if err := p.held.onEvent(s, e, p.order, p.sinks); err != nil {
		p.err = err
		return err
	}
	return nil
}

// closeAll finishes every open file, in the order they were opened.
func (p *Partitioned) closeAll() error {
	var errs []error
	for _, path := range p.order {
		err := p.sinks[path].Close()
		p.doneRows += p.sinks[path].Rows()
		if err == nil && p.done != nil {
			err = p.done(path)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		p.written = append(p.written, path)
	}
	clear(p.sinks)
	p.order = p.order[:0]
	p.held.bytes = 0
	return errors.Join(errs...)
}

// Close finishes the open files and returns the first error.
func (p *Partitioned) Close() error {
	err := p.closeAll()
	if p.err != nil {
		return errors.Join(p.err, err)
	}
	return err
}

// Paths returns the relative paths of every file opened, in order.
func (p *Partitioned) Paths() []string { return slices.Clone(p.paths) }

// Rows returns the rows written so far over every file.
func (p *Partitioned) Rows() uint64 {
	var n uint64
	for _, s := range p.sinks {
		n += s.Rows()
	}
	return n + p.doneRows
}
