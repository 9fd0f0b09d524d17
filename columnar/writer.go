package columnar

import (
	"fmt"
	"io"
	"runtime"
	"sync/atomic"

	"github.com/tapedeck/tapedeck/book"
)

// Layout is what a Writer writes besides the rows and Options: the names
// its errors give, the schema metadata, the scale of Price and Size columns
// and the CSV columns.
type Layout struct {
	// Table and FormatName name the table and its format in a WriteError
	// (FormatName defaults to the Format's name).
	Table      string
	FormatName string
	// Metadata is the Arrow and Parquet schema metadata, in order.
	Metadata []KeyValue
	// Scale gives the decimals of Price and Size columns; Exact writes them
	// as decimal128(DecimalPrecision, decimals), else float64.
	Scale book.Scale
	Exact bool
	// CSV is the layout of a CSV file; nil writes every column, in order,
	// under its own name.
	CSV []CSVField
	// Shared, when set, makes the Writer one of many files of the same
	// schema (one per instrument, per partition): it starts with room for
	// a few rows and grows up to its batch, writes on the caller's
	// goroutine, buffers CSV little, and builds its Parquet schema once
	// with the others that share it.
	Shared *Shared
}

// KeyValue is one schema metadata entry.
type KeyValue struct{ Key, Value string }

// Shared is what the files of many writers of one schema share, built by
// the first. Its zero value is ready to use.
type Shared struct {
	pq *pqShared
}

// Writer writes the rows of a Batch in one format. Rows are set through
// Batch (every column once) and ended by EndRow; a full batch is written
// (on other goroutines, see Options.Encoders) while the next one fills.
// A Writer is not safe for concurrent use; it never closes its io.Writer.
type Writer struct {
	opts     Options
	lay      Layout
	format   Format
	w        *stickyWriter
	b        Batch
	rowBytes int // b.rowBytes(), once the columns are known
	out      formatWriter
	rows     uint64
	err      error // sticky: the first write failure
	closed   bool

	// Writing on other goroutines (Encoders > 1): spare is the batch a
	// goroutine is writing while pending, or the empty one to fill next;
	// the write's result arrives on wrote, and failed is set as soon as it
	// fails.
	spare   Batch
	pending bool
	wrote   chan error
	failed  atomic.Bool
}

// formatWriter is one file format over a batch.
type formatWriter interface {
	write(b *Batch) error
	close() error
}

// NewWriter returns a Writer of the columns declared on b (which it takes
// over: set rows through Batch) in format f to w, and writes the file's
// header (Parquet magic, CSV header line). It refuses (ErrOption) options
// out of range and Snappy for Arrow IPC.
func NewWriter(w io.Writer, b Batch, f Format, o Options, l Layout) (*Writer, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if f < Parquet || f > CSV {
		return nil, fmt.Errorf("%w: format %d", ErrOption, f)
	}
	if f == Arrow && o.Compression == Snappy {
		return nil, fmt.Errorf("%w: Arrow IPC has no snappy compression (use zstd or none)", ErrOption)
	}
	if l.FormatName == "" {
		l.FormatName = f.String()
	}
	cw := &Writer{opts: o, lay: l, format: f, w: &stickyWriter{w: w}, b: b}
	if cw.opts.BatchRows == 0 {
		// Default: about batchBytes of rows, so a wide depth table holds as
		// little memory as a narrow trades table; within [minBatch, maxBatch].
		cw.opts.BatchRows = min(maxBatch, max(minBatch, batchBytes/cw.b.rowBytes()))
	}
	if l.Shared != nil {
		cw.b.grow(min(manyFirstRows, cw.opts.BatchRows))
	} else {
		cw.b.grow(cw.opts.BatchRows)
	}
	cw.rowBytes = cw.b.rowBytes()
	if cw.encoders() > 1 {
		cw.wrote = make(chan error, 1)
	}
	var err error
	switch f {
	case Parquet:
		cw.out, err = newParquetWriter(cw.w, cw)
	case Arrow:
		cw.out, err = newIPCWriter(cw.w, cw)
	case CSV:
		cw.out, err = newCSVWriter(cw.w, cw)
	}
	if err == nil {
		err = cw.w.err
	}
	if err != nil {
		return nil, cw.writeError(err)
	}
	return cw, nil
}

// writeError wraps a write failure.
func (cw *Writer) writeError(err error) error {
	return &WriteError{Table: cw.lay.Table, Format: cw.lay.FormatName, Err: err}
}

// Batch returns the batch the next row is set in. It stays the same
// pointer for the Writer's life.
func (cw *Writer) Batch() *Batch { return &cw.b }

// Rows returns the number of rows ended so far (written or buffered).
func (cw *Writer) Rows() uint64 { return cw.rows }

// Err returns the first write failure, waiting for a batch written on
// another goroutine only when that write has already failed.
func (cw *Writer) Err() error {
	if cw.err == nil && cw.failed.Load() {
		return cw.wait()
	}
	return cw.err
}

// Default batch sizing (Options.BatchRows overrides it).
const (
	batchBytes = 24 << 20
	minBatch   = 4096
	maxBatch   = 1 << 16
)

// manyFirstRows is the room for rows a Writer among many starts with.
const manyFirstRows = 4

// EndRow completes the row set in Batch and writes the batch once it is
// full. After a write failure it returns that *WriteError.
func (cw *Writer) EndRow() error {
	if cw.closed {
		return ErrClosed
	}
	cw.b.rows++
	cw.rows++
	if cw.b.rows >= cw.opts.BatchRows {
		return cw.flush()
	}
	if cw.b.rows == cw.b.capRows {
		cw.b.regrow(min(2*cw.b.capRows, cw.opts.BatchRows))
	}
	return nil
}

// HeldBytes estimates the memory of the buffered batch.
func (cw *Writer) HeldBytes() int { return cw.b.capRows * cw.rowBytes }

// Spill writes the buffered rows (a row group of their own) and gives back
// the batch's memory: a caller of many Writers (Layout.Shared) over its
// memory budget spills them.
func (cw *Writer) Spill() error {
	if cw.err != nil || cw.closed {
		return cw.err
	}
	if cw.b.rows > 0 {
		if err := cw.writeBatch(&cw.b); err != nil {
			cw.err = err
			return err
		}
	}
	if cw.b.capRows > manyFirstRows {
		cw.b.grow(manyFirstRows)
	}
	if r, ok := cw.out.(interface{ release() }); ok {
		r.release()
	}
	return nil
}

// Close writes the buffered rows and the file footer and returns the first
// error met. It does not close the underlying writer. A Writer with no rows
// writes a valid, empty table.
func (cw *Writer) Close() error {
	if cw.closed {
		return ErrClosed
	}
	cw.closed = true
	if err := cw.wait(); err != nil {
		return err
	}
	if cw.b.rows > 0 {
		if err := cw.writeBatch(&cw.b); err != nil {
			cw.err = err
			return err
		}
	}
	err := cw.out.close()
	if err == nil {
		err = cw.w.err
	}
	if err != nil {
		cw.err = cw.writeError(err)
		return cw.err
	}
	// The file is done: its buffers go (a caller may close thousands).
	cw.b.free()
	cw.spare, cw.out = Batch{}, nil
	return nil
}

// flush writes the full batch: at once with one encoder, else on another
// goroutine once the batch before it is written, the caller going on with
// the other batch meanwhile.
func (cw *Writer) flush() error {
	if cw.wrote == nil {
		if err := cw.writeBatch(&cw.b); err != nil {
			cw.err = err
			return err
		}
		return nil
	}
	if err := cw.wait(); err != nil {
		return err
	}
	if cw.spare.cols == nil {
		cw.spare = cw.b.emptyLike(cw.opts.BatchRows)
	}
	cw.b, cw.spare = cw.spare, cw.b
	cw.pending = true
	go func(b *Batch) {
		err := cw.writeBatch(b)
		if err != nil {
			cw.failed.Store(true)
		}
		cw.wrote <- err
	}(&cw.spare)
	return nil
}

// Wait waits for the batch being written on another goroutine, if any, and
// returns the first write failure.
func (cw *Writer) Wait() error { return cw.wait() }

// wait waits for the batch being written, if any, and returns (and keeps)
// the write's error.
func (cw *Writer) wait() error {
	if !cw.pending {
		return cw.err
	}
	cw.pending = false
	if err := <-cw.wrote; err != nil {
		cw.err = err
	}
	return cw.err
}

// writeBatch writes b with the format writer and empties it. The format
// writer and w are used by one writeBatch at a time.
func (cw *Writer) writeBatch(b *Batch) error {
	err := cw.out.write(b)
	if err == nil {
		err = cw.w.err
	}
	if err != nil {
		return cw.writeError(err)
	}
	b.reset()
	return nil
}

// encoders is the number of goroutines writing batches (Options.Encoders);
// a Writer among many writes on the caller's goroutine (one batch in
// memory).
func (cw *Writer) encoders() int {
	if cw.lay.Shared != nil {
		return 1
	}
	if cw.opts.Encoders > 0 {
		return cw.opts.Encoders
	}
	return min(runtime.GOMAXPROCS(0), MaxEncoders)
}

// stickyWriter keeps the first write error and reports success to the format
// library: Arrow's Parquet writer panics on some write failures, and a Writer
// must return an error instead. The Writer checks err after every batch.
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
