package datasets

import (
	"fmt"
	"os"
	"time"
)

// Defaults of the writer options, in one place.
const (
	DefaultFlushInterval   = time.Second
	DefaultSegmentDuration = time.Hour
	DefaultSegmentSize     = 256 << 20
	DefaultBlockSize       = 1 << 20
	DefaultMaxPending      = 64 << 20
	DefaultDictSize        = 64 << 10
	DefaultReserve         = 2 << 20
)

// FsyncPolicy says when the writer calls fsync.
type FsyncPolicy uint8

// Fsync policies. Sealed blocks reach the OS at once under every policy, so a
// killed process loses at most one flush interval; fsync only matters for
// power loss.
const (
	FsyncRotate FsyncPolicy = iota // on segment rotation and Close (default)
	FsyncBlock                     // after every sealed block
	FsyncNever                     // never, not even on Close
)

// SegmentFile is what the writer needs of a segment file; *os.File
// implements it. WithSegmentFile injects another implementation (tests use
// one that fails at byte N).
type SegmentFile interface {
	Write(p []byte) (int, error)
	Seek(offset int64, whence int) (int64, error)
	Truncate(size int64) error
	Sync() error
	Close() error
}

type writerOptions struct {
	segmentDone   func(num uint32)
	flushInterval time.Duration
	segDuration   time.Duration
	segSize       int64
	blockSize     int
	maxPending    int
	fsync         FsyncPolicy
	level         int
	dictSize      int
	compact       bool
	reserve       int64
	openFile      func(path string) (SegmentFile, error)
}

func defaultWriterOptions() writerOptions {
	return writerOptions{
		flushInterval: DefaultFlushInterval,
		segDuration:   DefaultSegmentDuration,
		segSize:       DefaultSegmentSize,
		blockSize:     DefaultBlockSize,
		maxPending:    DefaultMaxPending,
		fsync:         FsyncRotate,
		level:         2,
		dictSize:      DefaultDictSize,
		compact:       true,
		reserve:       DefaultReserve,
		openFile: func(path string) (SegmentFile, error) {
			return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		},
	}
}

// WriterOption configures Create.
type WriterOption func(*writerOptions) error

// WithFlushInterval sets how often a background ticker seals the pending
// block (default 1s); 0 disables the ticker, leaving sealing to size,
// rotation, Flush and Close.
func WithFlushInterval(d time.Duration) WriterOption {
	return func(o *writerOptions) error {
		if d < 0 {
			return fmt.Errorf("datasets: flush interval %v < 0", d)
		}
		o.flushInterval = d
		return nil
	}
}

// WithSegmentDuration rotates to a new segment once a record's WallNs is d or
// more after the segment's first record (default 1h).
func WithSegmentDuration(d time.Duration) WriterOption {
	return func(o *writerOptions) error {
		if d <= 0 {
			return fmt.Errorf("datasets: segment duration %v <= 0", d)
		}
		o.segDuration = d
		return nil
	}
}

// WithSegmentSize rotates to a new segment once the current one holds n bytes
// or more (default 256 MiB).
func WithSegmentSize(n int64) WriterOption {
	return func(o *writerOptions) error {
		if n < 1<<10 {
			return fmt.Errorf("datasets: segment size %d < 1 KiB", n)
		}
		o.segSize = n
		return nil
	}
}

// WithBlockSize seals a block once its raw content reaches n bytes (default
// 1 MiB). Larger blocks compress better; smaller ones seek finer.
func WithBlockSize(n int) WriterOption {
	return func(o *writerOptions) error {
		if n < 1<<10 || n > MaxBlockSize/2 {
			return fmt.Errorf("datasets: block size %d outside [1 KiB, %d]", n, MaxBlockSize/2)
		}
		o.blockSize = n
		return nil
	}
}

// WithMaxPending bounds the bytes of sealed blocks held in memory while
// writes fail (default 64 MiB); past it Append refuses records with
// ErrPendingFull.
func WithMaxPending(n int) WriterOption {
	return func(o *writerOptions) error {
		if n < 0 {
			return fmt.Errorf("datasets: max pending %d < 0", n)
		}
		o.maxPending = n
		return nil
	}
}

// WithFsync sets the fsync policy (default FsyncRotate).
func WithFsync(p FsyncPolicy) WriterOption {
	return func(o *writerOptions) error {
		if p > FsyncNever {
			return fmt.Errorf("datasets: unknown fsync policy %d", p)
		}
		o.fsync = p
		return nil
	}
}

// WithLevel sets the zstd encoder level (1 fastest, 2 default, 3 better,
// 4 best, as zstd.EncoderLevel), or 0 to store blocks uncompressed.
func WithLevel(l int) WriterOption {
	return func(o *writerOptions) error {
		if l < 0 || l > 4 {
			return fmt.Errorf("datasets: level %d outside 0..4", l)
		}
		o.level = l
		return nil
	}
}

// WithDictSize sets the size of each segment's zstd dictionary (default
// 64 KiB), or 0 for none. A segment's dictionary is the most recent n bytes
// of payload when its first block is sealed; it is stored (twice) at the
// segment's start, so every segment stays self-contained. It lets each
// block start with the context of the stream, which is what makes small,
// independently decodable blocks compress as well as one long stream. In
// blocks of the full block size it earns little (about 3% on a 1.35 M-frame
// Polymarket recording) and doubles the cost of decoding them, because
// klauspost/compress's assembly sequence decoder takes no dictionary: an
// import, whose blocks are full, and a compaction write none.
func WithDictSize(n int) WriterOption {
	return func(o *writerOptions) error {
		if n < 0 || n > MaxDictSize {
			return fmt.Errorf("datasets: dictionary size %d outside [0, %d]", n, MaxDictSize)
		}
		o.dictSize = n
		return nil
	}
}

// WithSegmentDone makes the writer call fn with the number of each segment
// it has finished for good: sealed, indexed and, when compacted, rewritten
// and re-indexed (or its compaction failed, leaving it as it was). Neither
// the segment nor its index changes after the call, so it is the moment to
// upload them. fn runs on a writer goroutine, possibly holding the writer's
// lock: it must not block nor call the Writer.
func WithSegmentDone(fn func(num uint32)) WriterOption {
	return func(o *writerOptions) error {
		o.segmentDone = fn
		return nil
	}
}

// WithCompaction says whether finished segments are rewritten (default
// true). The writer seals a block every flush interval, so that a crash
// loses little; at low data rates that means many small blocks, each
// compressed on its own. When a segment is finished (rotation, Close) it is
// rewritten once into blocks of the block size at a better zstd level,
// checked record by record against the original, and atomically swapped in:
// in the background after a rotation, before Close returns for the last one.
// Readers open meanwhile see the same records: one inside the segment keeps
// the old file, SeekTime notices the new one and re-reads its index.
func WithCompaction(on bool) WriterOption {
	return func(o *writerOptions) error {
		o.compact = on
		return nil
	}
}

// WithSegmentFile replaces how segment files are created (default: exclusive
// create with os.OpenFile). For fault injection.
func WithSegmentFile(open func(path string) (SegmentFile, error)) WriterOption {
	return func(o *writerOptions) error {
		if open == nil {
			return fmt.Errorf("datasets: nil segment file opener")
		}
		o.openFile = open
		return nil
	}
}

// WithReserve sets the size of the reserve file (ReserveName, default
// DefaultReserve; 0 for none) the writer holds from Create to Close. If the
// disk is full at Close, freeing it makes room for the gap record that
// replaces what could not be written, and for the manifest. It is created
// through the segment file opener (WithSegmentFile), best effort: a disk
// too full for it leaves the writer without one.
func WithReserve(n int64) WriterOption {
	return func(o *writerOptions) error {
		if n < 0 {
			return fmt.Errorf("datasets: reserve %d < 0", n)
		}
		o.reserve = n
		return nil
	}
}
