package export

import (
	"fmt"
	"time"

	"github.com/tapedeck/tapedeck/book"
)

// Option configures a Sink. Every option validates its argument and states
// its default; defaults live in defaultConfig.
type Option func(*config) error

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

// MaxLevels bounds WithLevels: a wide row of 4 columns per level and side
// beyond this is a mistake, not a table.
const MaxLevels = 1000

type config struct {
	levels      int
	intervalNs  int64 // 0 = every event
	exact       bool
	compression Compression
	batchRows   int
	quality     bool // CSV: append quality columns after the Tardis layout
	venue       string
	scale       book.Scale
	haveScale   bool
	datasets    []string
}

func defaultConfig() config {
	return config{levels: 25} // batchRows 0: sized from the row width at start
}

// WithLevels sets the number of levels per side of the depth table (default
// 25, Tardis' book_snapshot_25). 1 ≤ n ≤ MaxLevels.
func WithLevels(n int) Option {
	return func(c *config) error {
		if n < 1 || n > MaxLevels {
			return fmt.Errorf("%w: levels %d not in 1..%d", ErrOption, n, MaxLevels)
		}
		c.levels = n
		return nil
	}
}

// WithInterval samples the depth table: one row per instrument at the end of
// every bucket [k·d, (k+1)·d) of receive time in which its book changed, with
// local_ts_ns the bucket's end and the book as it was after the bucket's last
// event. d > 0; the default is a row for every book change (WithEveryEvent).
func WithInterval(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: interval %v must be positive", ErrOption, d)
		}
		c.intervalNs = int64(d)
		return nil
	}
}

// WithEveryEvent makes the depth table emit a row on every book change (the
// default).
func WithEveryEvent() Option {
	return func(c *config) error { c.intervalNs = 0; return nil }
}

// WithExact writes prices and sizes as Arrow decimal128(38, scale) at the
// venue's scale instead of float64 (the nearest double of the exact decimal).
// CSV is always exact decimal text, so the option does not change it.
func WithExact() Option {
	return func(c *config) error { c.exact = true; return nil }
}

// WithCompression sets the codec: Parquet pages (default Snappy) or Arrow IPC
// record batch buffers (default Uncompressed; Snappy is rejected, IPC has
// only LZ4 and Zstd). CSV ignores it: compress the writer (.csv.gz).
func WithCompression(cmp Compression) Option {
	return func(c *config) error {
		if cmp < Zstd || cmp > Uncompressed {
			return fmt.Errorf("%w: compression %d", ErrOption, cmp)
		}
		c.compression = cmp
		return nil
	}
}

// WithBatchRows sets how many rows are buffered before a batch is written:
// a Parquet row group or an Arrow record batch. It bounds the memory a Sink
// holds. The default fills about 24 MiB (65536 rows of a narrow table such as
// trades, about 13000 of a 25-level depth table). 1 ≤ n ≤ 1<<24.
func WithBatchRows(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1<<24 {
			return fmt.Errorf("%w: batch rows %d not in 1..%d", ErrOption, n, 1<<24)
		}
		c.batchRows = n
		return nil
	}
}

// WithQualityColumns appends tapedeck's quality columns (book_valid,
// after_gap, crossed, hash_checked, hash_ok, estimated; quotes: book_valid,
// source, with the venue's own quote rows; trades: backfill, with the
// backfill trades the plain layout leaves out) after the Tardis layout of a
// CSV depth, quotes or trades table. Parquet and Arrow always carry them;
// Tardis loaders ignore trailing columns they do not know only if they select
// by name, so the default (false) is the exact Tardis layout.
func WithQualityColumns() Option {
	return func(c *config) error { c.quality = true; return nil }
}

// WithSource declares the venue and fixed-point scale of the events,
// recorded in the schema metadata and used for decimal columns. Without it
// the venue and scale are taken from the first event, and an empty export
// has scale 0/0. An event of another scale is ErrMixedScale.
func WithSource(venue string, scale book.Scale) Option {
	return func(c *config) error {
		if scale.PriceDecimals > book.MaxDecimals || scale.SizeDecimals > book.MaxDecimals {
			return fmt.Errorf("%w: scale %d/%d beyond %d decimals", ErrOption,
				scale.PriceDecimals, scale.SizeDecimals, book.MaxDecimals)
		}
		c.venue = venue
		c.scale = scale
		c.haveScale = true
		return nil
	}
}

// WithDatasets records the paths of the source datasets in the schema
// metadata (MetaDatasets), in replay input order. Default: none.
func WithDatasets(paths ...string) Option {
	return func(c *config) error {
		c.datasets = append([]string(nil), paths...)
		return nil
	}
}
