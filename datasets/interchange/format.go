package interchange

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tapedeck/tapedeck/datasets"
)

// Format is an interchange line format.
type Format uint8

// Formats. The zero Format is invalid.
const (
	// NDJSON is one frame per line. On import a file whose first line is a
	// wrapper object with a receive time ({"recv_ns":…,"frame":…}, or
	// tardis-machine's {"localTimestamp":…,"message":…}) is read in that form;
	// otherwise every line is a frame byte for byte and receive times are
	// assigned in line order (FlagAssigned). On export NDJSON writes the
	// wrapper form, which keeps every record kind (see ExportFramesOnly).
	NDJSON Format = iota + 1
	// Tardis is a Tardis raw slice: `<ISO 8601 UTC time> <frame>` per line,
	// an empty line marking a disconnect.
	Tardis
	// HFTBacktest is an hftbacktest collector file: `<receive ns> <frame>`.
	HFTBacktest
)

var formatNames = [...]string{NDJSON: "ndjson", Tardis: "tardis", HFTBacktest: "hftbacktest"}

// String returns the format's flag name ("ndjson", "tardis", "hftbacktest").
func (f Format) String() string {
	if f >= NDJSON && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// ParseFormat is the inverse of Format.String. It fails with ErrFormat.
func ParseFormat(s string) (Format, error) {
	for f := NDJSON; int(f) < len(formatNames); f++ {
		if formatNames[f] == s {
			return f, nil
		}
	}
	return 0, fmt.Errorf("%w %q (want ndjson, tardis or hftbacktest)", ErrFormat, s)
}

// Compression is how an exported stream is compressed. Imports detect it from
// the magic bytes and need no flag.
type Compression uint8

// Compressions.
const (
	None Compression = iota
	Gzip             // gzip, default level (hftbacktest's choice)
	Zstd             // zstd, default level (Tardis's choice)
)

// String returns "none", "gzip" or "zstd".
func (c Compression) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// UnmarshalText sets c from its name: "gzip" (or "gz"), "zstd" (or "zst")
// or "none"; any other text is an error wrapping ErrFormat and leaves c
// unchanged.
func (c *Compression) UnmarshalText(text []byte) error {
	switch string(text) {
	case "gzip", "gz":
		*c = Gzip
	case "zstd", "zst":
		*c = Zstd
	case "none":
		*c = None
	default:
		return fmt.Errorf("%w: compression %q (want gzip, zstd or none)", ErrFormat, text)
	}
	return nil
}

// CompressionFromPath picks the compression a file name implies: ".gz" is
// Gzip, ".zst" or ".zstd" is Zstd, anything else None.
func CompressionFromPath(path string) Compression {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".gz", ".gzip":
		return Gzip
	case ".zst", ".zstd":
		return Zstd
	}
	return None
}

// Appender receives imported records; *datasets.Writer satisfies it. Append
// must copy what it keeps: the importer reuses r and its Payload.
type Appender interface {
	Append(r *datasets.Record) (seq uint64, err error)
}

// Source yields the records to export in order; *datasets.Reader satisfies
// it. Record is borrowed until the next call to Next.
type Source interface {
	Next() bool
	Record() *datasets.Record
	Err() error
}

// Errors. Parse errors come wrapped in a *LineError naming file and line.
var (
	ErrFormat    = errors.New("interchange: unknown format")
	ErrTime      = errors.New("interchange: bad receive time")
	ErrSyntax    = errors.New("interchange: malformed line")
	ErrEmpty     = errors.New("interchange: empty frame")
	ErrLineSize  = errors.New("interchange: line longer than the limit")
	ErrMixedForm = errors.New("interchange: NDJSON line form differs from the file's first line")
	ErrNewline   = errors.New("interchange: frame holds a line break and cannot be written as one line")
	ErrBinary    = errors.New("interchange: binary frame has no text form in this format")
	ErrMerge     = errors.New("interchange: cannot merge lines without receive times (plain NDJSON)")
)

// LineError is a failure at one line of an input file. Line is 1-based; 0
// means the failure was not inside a line (opening or decompressing).
type LineError struct {
	File string
	Line int64
	Err  error
}

// Error returns the message: what failed and where.
func (e *LineError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *LineError) Unwrap() error { return e.Err }

// ExportError is a record that could not be exported in the chosen format.
type ExportError struct {
	Seq  uint64
	Kind datasets.Kind
	Err  error
}

// Error returns the message: what failed and where.
func (e *ExportError) Error() string {
	return fmt.Sprintf("export record seq %d (%s): %v", e.Seq, e.Kind, e.Err)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *ExportError) Unwrap() error { return e.Err }

// The dataset writer and reader are what these interfaces are for.
var (
	_ Appender = (*datasets.Writer)(nil)
	_ Source   = (*datasets.Reader)(nil)
)
