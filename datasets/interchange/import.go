package interchange

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
)

// ImportOption configures an Importer.
type ImportOption func(*importConfig) error

type importConfig struct {
	startNs int64
	stepNs  int64
	maxLine int
	conn    uint32

	merge      bool                                // ImportFiles only
	writerOpts []datasets.WriterOption             // ImportFiles only
	progress   func(path string, read, size int64) // ImportFiles only
}

// Defaults of the import options.
const (
	DefaultAssignedStep = time.Millisecond // between assigned receive times
	DefaultMaxLineSize  = 64 << 20         // longest accepted line, bytes
)

func defaultImportConfig() importConfig {
	return importConfig{stepNs: int64(DefaultAssignedStep), maxLine: DefaultMaxLineSize}
}

// WithStartNs sets the first assigned receive time (ns since the epoch) for
// NDJSON lines without one. Default 0.
func WithStartNs(ns int64) ImportOption {
	return func(c *importConfig) error {
		if ns < 0 {
			return fmt.Errorf("interchange: negative start time %d", ns)
		}
		c.startNs = ns
		return nil
	}
}

// WithAssignedStep sets the spacing of assigned receive times. Default 1 ms.
func WithAssignedStep(d time.Duration) ImportOption {
	return func(c *importConfig) error {
		if d <= 0 {
			return fmt.Errorf("interchange: assigned time step %v must be positive", d)
		}
		c.stepNs = int64(d)
		return nil
	}
}

// WithMaxLineSize bounds the length of one line, so a file without line
// breaks cannot exhaust memory. Default 64 MiB.
func WithMaxLineSize(n int) ImportOption {
	return func(c *importConfig) error {
		if n < 1 {
			return fmt.Errorf("interchange: max line size %d must be positive", n)
		}
		c.maxLine = n
		return nil
	}
}

// WithConn sets the connection slot of the imported records (default 0);
// wrapper lines with a "conn" key keep theirs.
func WithConn(conn uint32) ImportOption {
	return func(c *importConfig) error { c.conn = conn; return nil }
}

// ImportStats counts what an Importer did.
type ImportStats struct {
	Files       int
	Lines       int64 // lines read, empty ones included
	Records     int64 // records appended
	Frames      int64 // of those, KindFrame
	Disconnects int64 // KindDisconnect records (Tardis empty lines, wrapper records)
	Skipped     int64 // empty lines that carry nothing (NDJSON, hftbacktest)
	Bytes       int64 // payload bytes appended
	// TimesAssigned is true when some receive times were assigned (NDJSON
	// without times), not read from the input.
	TimesAssigned bool
	// Backwards counts records whose receive time is earlier than the one
	// before; their wall time is kept, their monotonic time is held at the
	// previous value so that the dataset's monotonic clock never goes back.
	Backwards int64
	// BackwardsInFile counts those of them earlier than the record before
	// them in the same file: a file not in receive order, which merging
	// files (WithMerge) does not change.
	BackwardsInFile int64
	FirstNs         int64 // wall time of the first record, ns
	LastNs          int64 // wall time of the last record, ns
}

// Importer streams interchange files into an Appender. Files are appended in
// the order they are imported (Import, ImportFile) or interleaved by receive
// time (ImportMerged); receive times come from the input or are assigned
// (NDJSON without times). An Importer is not safe for concurrent use; Close
// releases its decompressors.
type Importer struct {
	format Format
	dst    Appender
	cfg    importConfig

	seq stream // the stream of sequential imports; its state spans files
	rec datasets.Record

	nextAssigned int64
	monoBase     int64
	lastWall     int64
	lastMono     int64
	started      bool
	stats        ImportStats
}

// stream is one input being read: its decompressor, lines and the state
// of its line form.
type stream struct {
	name    string
	dec     decompressor
	lr      lineReader
	w       wrapper
	scratch []byte
	form    int // NDJSON: 0 undecided, 1 plain, 2 wrapper (per file)

	// Tardis: an empty line marks a disconnect; it takes the time of the
	// frame before it, or, at the start, of the frame after it.
	started     bool
	lastNs      int64
	prevEmpty   bool
	pendingDisc bool

	prevWall int64 // of the stream's last record, for BackwardsInFile
	havePrev bool

	queued bool      // next holds a frame read behind a pending disconnect
	next   parsedRec // the record read ahead
	has    bool      // next is valid (merge)
}

// parsedRec is a record read from a line; payload aliases the line reader
// or the stream's scratch until the stream reads again.
type parsedRec struct {
	kind    datasets.Kind
	flags   uint8
	conn    uint32
	ns      int64
	payload []byte
}

// NewImporter returns an Importer writing records in format's form to dst.
func NewImporter(format Format, dst Appender, opts ...ImportOption) (*Importer, error) {
	if format < NDJSON || format > HFTBacktest {
		return nil, fmt.Errorf("%w %d", ErrFormat, format)
	}
	if dst == nil {
		return nil, errors.New("interchange: nil Appender")
	}
	cfg := defaultImportConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	im := &Importer{format: format, dst: dst, cfg: cfg, nextAssigned: cfg.startNs}
	im.seq.lr.max = cfg.maxLine
	return im, nil
}

// Stats returns the counts so far.
func (im *Importer) Stats() ImportStats { return im.stats }

// Close releases the decompressors. It does not close the Appender.
func (im *Importer) Close() error {
	im.seq.dec.close()
	return nil
}

// ImportFile imports one file ("-" is standard input), detecting gzip and
// zstd compression. Errors are *LineError values naming the file and line.
func (im *Importer) ImportFile(path string) error {
	if path == "-" {
		return im.Import("<stdin>", os.Stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		return &LineError{File: path, Err: fmt.Errorf("open: %w", err)}
	}
	defer f.Close()
	return im.Import(path, f)
}

// Import imports one stream after those imported before; name is used in
// errors. Records before an error have been appended already.
func (im *Importer) Import(name string, r io.Reader) error {
	s := &im.seq
	if err := im.open(s, name, r); err != nil {
		return err
	}
	for {
		rec, ok, err := im.read(s)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := im.emit(s, &rec); err != nil {
			return &LineError{File: s.name, Line: s.lr.line, Err: err}
		}
	}
}

// ImportMerged imports several streams at once, interleaving their records
// by receive time: a k-way merge holding one line per stream, for inputs
// such as hftbacktest's one file per symbol. Equal times keep the order of
// names. Every stream must carry receive times (not plain NDJSON:
// ErrMerge). names label the streams in errors.
func (im *Importer) ImportMerged(names []string, rs []io.Reader) error {
	if len(names) != len(rs) {
		return errors.New("interchange: ImportMerged: names and readers differ in number")
	}
	ss := make([]*stream, len(rs))
	defer func() {
		for _, s := range ss {
			if s != nil {
				s.dec.close()
			}
		}
	}()
	for i, r := range rs {
		s := &stream{}
		s.lr.max = im.cfg.maxLine
		ss[i] = s
		if err := im.open(s, names[i], r); err != nil {
			return err
		}
		if err := im.advance(s); err != nil {
			return err
		}
	}
	for {
		var min *stream
		for _, s := range ss {
			if s.has && (min == nil || s.next.ns < min.next.ns) {
				min = s
			}
		}
		if min == nil {
			return nil
		}
		rec := min.next
		if rec.flags&datasets.FlagAssigned != 0 && rec.ns < im.lastWall {
			// An inferred disconnect time may trail what other streams
			// delivered meanwhile; keep the merged order.
			rec.ns = im.lastWall
		}
		if err := im.emit(min, &rec); err != nil {
			return &LineError{File: min.name, Line: min.lr.line, Err: err}
		}
		if err := im.advance(min); err != nil {
			return err
		}
	}
}

func (im *Importer) advance(s *stream) error {
	rec, ok, err := im.read(s)
	if err != nil {
		return err
	}
	if ok && s.form == 1 {
		return &LineError{File: s.name, Line: s.lr.line, Err: ErrMerge}
	}
	s.next, s.has = rec, ok
	return nil
}

func (im *Importer) open(s *stream, name string, r io.Reader) error {
	im.stats.Files++
	s.name = name
	s.form = 0
	s.havePrev = false // BackwardsInFile compares within one file
	src, _, err := s.dec.open(r)
	if err != nil {
		return &LineError{File: name, Err: err}
	}
	if s.lr.br == nil {
		s.lr.br = bufio.NewReaderSize(src, 256<<10)
	} else {
		s.lr.br.Reset(src)
	}
	s.lr.line = 0
	return nil
}

// read returns the stream's next record, false at its end.
func (im *Importer) read(s *stream) (parsedRec, bool, error) {
	if s.queued {
		s.queued = false
		return s.next, true, nil
	}
	for {
		line, err := s.lr.next()
		if err == io.EOF {
			return parsedRec{}, false, nil
		}
		if err != nil {
			if errors.Is(err, ErrLineSize) {
				return parsedRec{}, false, &LineError{File: s.name, Line: s.lr.line, Err: fmt.Errorf("%w (%d bytes)", ErrLineSize, im.cfg.maxLine)}
			}
			return parsedRec{}, false, &LineError{File: s.name, Line: s.lr.line + 1, Err: fmt.Errorf("read: %w", err)}
		}
		im.stats.Lines++
		rec, ok, err := im.parseLine(s, line)
		if err != nil {
			return parsedRec{}, false, &LineError{File: s.name, Line: s.lr.line, Err: err}
		}
		if ok {
			return rec, true, nil
		}
	}
}

// parseLine turns one line into a record; ok is false for a line that
// yields none (empty lines, a disconnect still waiting for its time).
func (im *Importer) parseLine(s *stream, line []byte) (rec parsedRec, ok bool, err error) {
	switch im.format {
	case NDJSON:
		if len(line) == 0 {
			im.stats.Skipped++
			return rec, false, nil
		}
		wrapped := isWrapper(line)
		if s.form == 0 {
			s.form = 1
			if wrapped {
				s.form = 2
			}
		}
		if s.form == 1 {
			if wrapped {
				return rec, false, fmt.Errorf("%w: a wrapper line in a file of plain frames", ErrMixedForm)
			}
			rec = parsedRec{kind: datasets.KindFrame, flags: datasets.FlagAssigned, conn: im.cfg.conn,
				ns: im.nextAssigned, payload: line}
			im.nextAssigned += im.cfg.stepNs
			im.stats.TimesAssigned = true
			return rec, true, nil
		}
		if !wrapped {
			return rec, false, fmt.Errorf("%w: a plain frame in a file of wrapper lines", ErrMixedForm)
		}
		if s.scratch, err = parseWrapper(line, &s.w, s.scratch); err != nil {
			return rec, false, err
		}
		// An empty frame in a wrapper is explicit (a venue may send an empty
		// message, and export writes it so): kept, as received.
		w := &s.w
		rec = parsedRec{kind: w.kind, conn: im.cfg.conn, ns: w.recvNs, payload: w.payload}
		if w.assigned {
			rec.flags |= datasets.FlagAssigned
			im.stats.TimesAssigned = true
		}
		if w.binary {
			rec.flags |= datasets.FlagBinary
		}
		if w.conn != 0 {
			rec.conn = w.conn
		}
		return rec, true, nil
	case Tardis:
		if len(line) == 0 {
			if s.prevEmpty {
				// tardis-node yields one disconnect for a run of empty lines.
				im.stats.Skipped++
				return rec, false, nil
			}
			s.prevEmpty = true
			if !s.started {
				s.pendingDisc = true
				return rec, false, nil
			}
			// The empty line carries no time: the disconnect was noticed
			// after the last frame, so it takes that frame's time.
			return parsedRec{kind: datasets.KindDisconnect, flags: datasets.FlagAssigned, conn: im.cfg.conn,
				ns: s.lastNs, payload: disconnectPayload}, true, nil
		}
		s.prevEmpty = false
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 {
			return rec, false, fmt.Errorf("%w: no space between time and frame", ErrSyntax)
		}
		ns, err := parseISO(line[:sp])
		if err != nil {
			return rec, false, err
		}
		frame := line[sp+1:]
		if len(frame) == 0 {
			return rec, false, ErrEmpty
		}
		s.started, s.lastNs = true, ns
		rec = parsedRec{kind: datasets.KindFrame, conn: im.cfg.conn, ns: ns, payload: frame}
		if s.pendingDisc {
			s.pendingDisc = false
			s.next, s.queued = rec, true
			return parsedRec{kind: datasets.KindDisconnect, flags: datasets.FlagAssigned, conn: im.cfg.conn,
				ns: ns, payload: disconnectPayload}, true, nil
		}
		return rec, true, nil
	default: // HFTBacktest
		if len(line) == 0 {
			im.stats.Skipped++
			return rec, false, nil
		}
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 {
			return rec, false, fmt.Errorf("%w: want `<receive ns> <frame>`", ErrSyntax)
		}
		var ns int64
		for _, c := range line[:sp] {
			d := c - '0'
			if d > 9 || ns > (1<<63-1-int64(d))/10 {
				return rec, false, fmt.Errorf("%w: %.40q is not a count of ns", ErrTime, line[:sp])
			}
			ns = ns*10 + int64(d)
		}
		frame := line[sp+1:]
		if len(frame) == 0 {
			return rec, false, ErrEmpty
		}
		return parsedRec{kind: datasets.KindFrame, conn: im.cfg.conn, ns: ns, payload: frame}, true, nil
	}
}

// disconnectPayload is the control payload of a disconnect read from an
// empty Tardis line.
var disconnectPayload = datasets.EncodeControl(datasets.Control{Reason: "tardis: empty line (disconnect)"})

func (im *Importer) emit(s *stream, p *parsedRec) error {
	wallNs := p.ns
	if !im.started {
		im.started = true
		im.monoBase = wallNs
		im.stats.FirstNs = wallNs
		im.lastWall = wallNs
	}
	mono := wallNs - im.monoBase
	if wallNs < im.lastWall {
		im.stats.Backwards++
	}
	if s.havePrev && wallNs < s.prevWall {
		im.stats.BackwardsInFile++
	}
	s.prevWall, s.havePrev = wallNs, true
	if mono < im.lastMono {
		mono = im.lastMono
	}
	im.lastWall, im.lastMono = wallNs, mono
	im.rec = datasets.Record{Kind: p.kind, Flags: p.flags, Conn: p.conn, WallNs: wallNs, MonoNs: mono, Payload: p.payload}
	if _, err := im.dst.Append(&im.rec); err != nil {
		return fmt.Errorf("append: %w", err)
	}
	im.stats.Records++
	im.stats.LastNs = wallNs
	im.stats.Bytes += int64(len(p.payload))
	switch p.kind {
	case datasets.KindFrame:
		im.stats.Frames++
	case datasets.KindDisconnect:
		im.stats.Disconnects++
	}
	return nil
}

// MonoBaseWallNs returns the wall time the imported monotonic times count
// from (the first record's wall time): a dataset holding these records
// should have Manifest.MonoBaseWallNs set to it.
func (im *Importer) MonoBaseWallNs() int64 { return im.monoBase }
