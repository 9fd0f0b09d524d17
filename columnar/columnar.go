// Package columnar writes tables column by column as Parquet, Arrow IPC or
// CSV: the format layer under tapedeck's exports. Rows are set into a Batch
// (plain Go slices per column), and a Writer writes each full batch as a
// Parquet row group (its own V2 pages, dictionaries and statistics, with
// Arrow's schema and metadata), an Arrow IPC record batch or CSV lines,
// encoding on other goroutines while the next batch fills. Memory is bounded
// by the batch size, and output is deterministic: the same rows and options
// give byte-identical files.
//
// The replayed event tables (replayer/export) declare their columns on a
// Batch and drive a Writer; tables of caller-declared typed columns (a
// backtest's orders, fills, positions, equity) use TypedTable, and
// ReadTyped reads such a table back, from any of the three formats, so that
// tables can be joined and written again by the same writer (a sharded
// sweep's tables, merged). The package
// knows no venue and no event: it depends on book for fixed-point decimals
// only.
package columnar

import (
	"errors"
	"fmt"
)

// Format is a file format of this package.
type Format uint8

// The formats.
const (
	// Parquet writes one row group per batch: the schema and metadata
	// pqarrow writes for the same Arrow schema (stored as ARROW:schema),
	// with V2 data pages the Writer encodes itself.
	Parquet Format = iota + 1
	// Arrow writes an Arrow IPC file, one record batch per batch.
	Arrow
	// CSV writes a header line, then one line per row; see CSVField for
	// how a column is printed. Compression is the caller's business (wrap
	// the writer).
	CSV
)

var formatNames = [...]string{Parquet: "parquet", Arrow: "arrow", CSV: "csv"}

// String returns the format's name.
func (f Format) String() string {
	if int(f) < len(formatNames) && formatNames[f] != "" {
		return formatNames[f]
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// ParseFormat parses "parquet", "arrow" or "csv".
func ParseFormat(s string) (Format, error) {
	for f, n := range formatNames {
		if n != "" && n == s {
			return Format(f), nil
		}
	}
	return 0, fmt.Errorf("columnar: unknown format %q (want parquet, arrow, csv)", s)
}

// Compression is the codec of Parquet pages (and of Arrow IPC buffers).
type Compression uint8

// Codecs. The zero Compression is each format's default: Snappy for Parquet
// (pyarrow's default too) and Uncompressed for Arrow IPC, whose readers do
// not all carry a Zstd codec (Apache Arrow JS has none built in) and which is
// meant to be memory-mapped. Zstd gives Parquet files about a third smaller
// but, with Arrow v15's writer, which builds a new zstd encoder for every
// page, exports at about a third of the speed.
const (
	Zstd Compression = iota + 1
	Snappy
	Uncompressed
)

// ParseCompression parses "zstd", "snappy" or "none".
func ParseCompression(s string) (Compression, error) {
	switch s {
	case "zstd":
		return Zstd, nil
	case "snappy":
		return Snappy, nil
	case "none":
		return Uncompressed, nil
	}
	return 0, fmt.Errorf("export: unknown compression %q (want zstd, snappy, none)", s)
}

// Metadata keys every Arrow and Parquet table of this package carries.
const (
	MetaTable    = "tapedeck.table"
	MetaDatasets = "tapedeck.datasets" // JSON array of the source dataset paths
	MetaExact    = "tapedeck.exact"    // "true": prices and sizes are decimal128
)

// Options are how a table is written; the zero Options are the defaults.
type Options struct {
	// Compression is the codec: Parquet pages (default Snappy) or Arrow IPC
	// record batch buffers (default Uncompressed; Snappy is refused, IPC has
	// only LZ4 and Zstd). CSV ignores it.
	Compression Compression
	// BatchRows is how many rows are buffered before a batch is written (a
	// Parquet row group, an Arrow record batch), at most MaxBatchRows. It
	// bounds the memory a Writer holds (twice that while a batch is written
	// on other goroutines, see Encoders). The default (0) fills about 24 MiB
	// (65536 rows of a narrow table, about 13000 of a 25-level depth table).
	BatchRows int
	// Encoders is how many goroutines write batches, at most MaxEncoders
	// (default 0: runtime.GOMAXPROCS(0)). With 1 the Writer is sequential: a
	// full batch is encoded, compressed and written inside the EndRow call
	// that filled it. With n > 1 a full batch is written on other
	// goroutines while the next one fills (two batches in memory, not one),
	// and a Parquet batch's columns are encoded and compressed by up to n
	// goroutines at once. The file is byte for byte the same whatever n. A
	// write error is returned by the first call after the failed write, then
	// by every call; no row is written after it.
	Encoders int
	// Datasets are the paths of the source datasets, recorded in the schema
	// metadata (MetaDatasets) in order.
	Datasets []string
}

// Bounds of Options.
const (
	MaxBatchRows = 1 << 24
	MaxEncoders  = 256
)

// Check returns an error wrapping ErrOption for an option out of its range.
func (o *Options) Check() error {
	switch {
	case o.Compression > Uncompressed:
		return fmt.Errorf("%w: compression %d", ErrOption, o.Compression)
	case o.BatchRows < 0 || o.BatchRows > MaxBatchRows:
		return fmt.Errorf("%w: batch rows %d not in 1..%d", ErrOption, o.BatchRows, MaxBatchRows)
	case o.Encoders < 0 || o.Encoders > MaxEncoders:
		return fmt.Errorf("%w: encoders %d not in 1..%d", ErrOption, o.Encoders, MaxEncoders)
	}
	return nil
}

// ErrClosed means a write was asked of a closed table.
var ErrClosed = errors.New("export: sink closed")

// ErrOption means an option, schema or combination of them is invalid.
var ErrOption = errors.New("export: invalid option")

// WriteError is a failure to write the output; every later call returns it,
// since the file is incomplete.
type WriteError struct {
	Table  string // the table's name
	Format string // the format's name
	Err    error
}

// Error names the table, the format and the failure.
func (e *WriteError) Error() string {
	return fmt.Sprintf("export: write %s %s: %v", e.Table, e.Format, e.Err)
}

// Unwrap returns the underlying error.
func (e *WriteError) Unwrap() error { return e.Err }
