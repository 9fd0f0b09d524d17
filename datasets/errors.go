package datasets

import (
	"errors"
	"fmt"
)

// Sentinel errors, wrapped by CorruptionError or by the failed action.
var (
	ErrBadMagic      = errors.New("datasets: bad magic number")
	ErrShortHeader   = errors.New("datasets: short header")
	ErrBadHeader     = errors.New("datasets: invalid header")
	ErrChecksum      = errors.New("datasets: checksum mismatch")
	ErrVersion       = errors.New("datasets: unsupported format version")
	ErrFraming       = errors.New("datasets: bad record framing")
	ErrTruncated     = errors.New("datasets: truncated block")
	ErrExists        = errors.New("datasets: dataset already exists")
	ErrNotDataset    = errors.New("datasets: not a dataset (no manifest.json)")
	ErrClosed        = errors.New("datasets: writer closed")
	ErrPayloadSize   = errors.New("datasets: payload too large")
	ErrPendingFull   = errors.New("datasets: write backlog full; record not accepted")
	ErrSeqOrder      = errors.New("datasets: sequence not strictly increasing")
	ErrTimeBackwards = errors.New("datasets: monotonic receive time went backwards")
	ErrLocked        = errors.New("datasets: dataset is open for writing")
	// ErrNotRegular means a dataset file is a FIFO, a device, a directory
	// or a socket: refused before it is opened, so no read can hang on it.
	ErrNotRegular = errors.New("datasets: not a regular file")
	// ErrTooLarge means a file is larger than its format allows (a
	// manifest over MaxManifestSize, an index over its segment's bound).
	ErrTooLarge = errors.New("datasets: file larger than its format allows")
)

// CorruptionError reports damaged data: the file, the byte offset of the
// structure that failed, and what was wrong (wrapping one of the sentinels).
type CorruptionError struct {
	File   string // path of the damaged file
	Offset int64  // byte offset of the damaged structure in File
	Err    error
}

// Error returns the message: what failed and where.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("datasets: corruption in %s at offset %d: %v", e.File, e.Offset, e.Err)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *CorruptionError) Unwrap() error { return e.Err }
