package export

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// Option configures a Sink. Every option validates its argument and states
// its default; defaults live in defaultConfig.
type Option func(*config) error

// Snapshots is how the book_changes table writes a venue snapshot that
// follows earlier rows of the same book.
type Snapshots uint8

const (
	// SnapshotsFull (the default) writes every venue snapshot as a full
	// is_snapshot=true block, as Tardis writes every Polymarket book and
	// Hyperliquid l2Book, followed by a size-0 row (is_snapshot=false) for
	// each level the rows so far gave that the snapshot no longer has. A
	// reader that resets on a snapshot block and one that clears only the
	// snapshot's price range (hftbacktest) both end with the venue's book.
	SnapshotsFull Snapshots = iota + 1
	// SnapshotsDiff writes a later snapshot as the difference from the book
	// the rows so far describe (changed levels, size 0 for removed ones);
	// only the first snapshot of a book and the first after a loss are
	// is_snapshot blocks. Fewer rows; only for readers that apply every row.
	SnapshotsDiff
)

// ParseSnapshots parses "full" or "diff".
func ParseSnapshots(s string) (Snapshots, error) {
	switch s {
	case "full":
		return SnapshotsFull, nil
	case "diff":
		return SnapshotsDiff, nil
	}
	return 0, fmt.Errorf("export: unknown snapshots mode %q (want full, diff)", s)
}

// WithNautilusPrecision sets the width of a Nautilus's fixed-point integers
// (default NautilusHigh). Only NewNautilus takes it.
func WithNautilusPrecision(p NautilusPrecision) Option {
	return func(c *config) error {
		if p != NautilusHigh && p != NautilusStandard {
			return fmt.Errorf("%w: nautilus precision %d", ErrOption, p)
		}
		c.nautilus = p
		return nil
	}
}

// WithSnapshots sets how book_changes writes venue snapshots (default
// SnapshotsFull).
func WithSnapshots(m Snapshots) Option {
	return func(c *config) error {
		if m != SnapshotsFull && m != SnapshotsDiff {
			return fmt.Errorf("%w: snapshots mode %d", ErrOption, m)
		}
		c.snapshots = m
		return nil
	}
}

// BucketTime is the clock WithInterval buckets the depth table by.
type BucketTime uint8

const (
	// BucketLocal buckets by receive time: local_ts_ns is the bucket's end
	// and exchange_ts_ns the venue time of the book's last event in it. The
	// default for every format but FormatTardis.
	BucketLocal BucketTime = iota + 1
	// BucketExchange buckets by the venue's time, as Tardis' book_snapshot
	// files do: exchange_ts_ns (Tardis' timestamp) is the bucket's end and
	// local_ts_ns the receive time of the book's last event in it. Events
	// without a venue time, or with one before the open bucket (venues'
	// clocks are not monotonic across instruments), count in the open
	// bucket. The default for FormatTardis.
	BucketExchange
)

// ParseBucketTime parses "exchange" or "local".
func ParseBucketTime(s string) (BucketTime, error) {
	switch s {
	case "local":
		return BucketLocal, nil
	case "exchange":
		return BucketExchange, nil
	}
	return 0, fmt.Errorf("export: unknown bucket time %q (want exchange, local)", s)
}

// WithBucketTime sets the clock of WithInterval buckets (default: exchange
// for FormatTardis, local otherwise).
func WithBucketTime(b BucketTime) Option {
	return func(c *config) error {
		if b != BucketLocal && b != BucketExchange {
			return fmt.Errorf("%w: bucket time %d", ErrOption, b)
		}
		c.bucket = b
		return nil
	}
}

// WithTardisExchange writes name in the exchange column of a FormatTardis
// table instead of the venue. Tardis loaders map that column to a venue from
// Tardis' fixed list of exchange ids, so name must be one of them
// (TardisExchanges; "nonsense" is ErrOption). Tardis has no Polymarket: a
// Polymarket table written under another exchange's id loads as that
// exchange's instruments, and NautilusTrader's loader still rejects its
// 66-character trade ids, so Polymarket goes to other tools natively.
func WithTardisExchange(name string) Option {
	return func(c *config) error {
		if _, ok := slices.BinarySearch(tardisExchanges, name); !ok {
			return fmt.Errorf("%w: tardis exchange %q is not a Tardis exchange id (%s)", ErrOption, name, strings.Join(tardisExchanges, ", "))
		}
		c.tardisExchange = name
		return nil
	}
}

// TardisExchanges returns the exchange ids of Tardis' data layout, sorted:
// what its CSV files carry in their exchange column and its loaders
// (NautilusTrader's TardisExchange, read at nautilus_trader a95c8042b0)
// accept.
func TardisExchanges() []string { return slices.Clone(tardisExchanges) }

var tardisExchanges = []string{
	"ascendex", "binance", "binance-delivery", "binance-dex", "binance-european-options", "binance-futures",
	"binance-jersey", "binance-options", "binance-us", "bitfinex", "bitfinex-derivatives", "bitflyer", "bitget",
	"bitget-futures", "bitmex", "bitnomial", "bitstamp", "blockchain-com", "bybit", "bybit-options", "bybit-spot",
	"coinbase", "coinbase-international", "coinflex", "crypto-com", "cryptofacilities", "delta", "deribit", "dydx",
	"dydx-v4", "ftx", "ftx-us", "gate-io", "gate-io-futures", "gemini", "hitbtc", "huobi", "huobi-dm",
	"huobi-dm-linear-swap", "huobi-dm-options", "huobi-dm-swap", "hyperliquid", "kraken", "kucoin", "kucoin-futures",
	"lighter", "mango", "okcoin", "okex", "okex-futures", "okex-options", "okex-spreads", "okex-swap", "phemex",
	"poloniex", "serum", "star-atlas", "upbit", "woo-x",
}

// WithInstruments keeps only the rows of the given instruments: an id
// matches an event's instrument (Polymarket token id, Hyperliquid coin) or
// its market (Polymarket condition id, which selects both outcomes).
// Connection-wide records (the events table, losses) are kept. Default:
// every instrument.
func WithInstruments(ids ...string) Option {
	return func(c *config) error {
		if len(ids) == 0 {
			c.instruments = nil
			return nil
		}
		c.instruments = make(map[string]bool, len(ids))
		for _, id := range ids {
			if id == "" {
				return fmt.Errorf("%w: empty instrument", ErrOption)
			}
			c.instruments[id] = true
		}
		return nil
	}
}

// MaxLevels bounds WithLevels: a wide row of 4 columns per level and side
// beyond this is a mistake, not a table.
const MaxLevels = 1000

type config struct {
	snapshots      Snapshots
	bucket         BucketTime
	tardisExchange string
	instruments    map[string]bool // nil: every instrument
	levels         int
	intervalNs     int64 // 0 = every event
	exact          bool
	out            columnar.Options // WithCompression, WithBatchRows, WithEncoders, WithDatasets
	quality        bool             // CSV: append quality columns after the Tardis layout
	nautilus       NautilusPrecision
	venue          string
	scale          book.Scale
	haveScale      bool
	caps           venue.Capabilities // the columns the venue's data has
	recorded       map[string]bool    // WithRecordedInstruments
	recordedList   []string
	fromNs, toNs   int64 // WithWindow (instruments table)
	shard          replayer.Shard
	shardOwns      map[string]bool  // instrument → owned by shard, as checked
	shared         *columnar.Shared // one Sink of many (Split, Partitioned): what their files share
}

func (c *config) isRecorded(id string) bool { return c.recorded[id] }

// windowed reports whether a row valid over [fromNs, untilNs) of receive
// time (untilNs 0: to the end) overlaps the WithWindow window.
func (c *config) windowed(fromNs, untilNs int64) bool {
	if c.toNs != 0 && fromNs >= c.toNs {
		return false
	}
	return untilNs == 0 || c.fromNs == 0 || untilNs > c.fromNs
}

// owned reports whether e's rows belong to the shard (WithShard).
func (c *config) owned(e *replayer.Event) bool {
	if c.shard.Whole() {
		return true
	}
	if e.Instrument == "" {
		return c.shard.K == 1
	}
	owns, ok := c.shardOwns[e.Instrument]
	if !ok {
		if c.shardOwns == nil {
			c.shardOwns = map[string]bool{}
		}
		owns = c.shard.Owns(e.Venue, e.Instrument)
		c.shardOwns[strings.Clone(e.Instrument)] = owns
	}
	return owns
}

// WithShard keeps only the rows of the instruments shard s owns (and, in
// shard 1, the rows of no instrument), so that the tables of 1/N … N/N
// together hold the rows of the unsharded table, each once.
func WithShard(s replayer.Shard) Option {
	return func(c *config) error {
		if !s.Whole() && (s.K < 1 || s.K > s.N) {
			return fmt.Errorf("%w: shard %d/%d", ErrOption, s.K, s.N)
		}
		c.shard = s
		return nil
	}
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
// only LZ4 and Zstd). CSV ignores it: compress the writer (replay export
// compresses a whole file of any format from .gz, .zst or --compress).
func WithCompression(cmp columnar.Compression) Option {
	return func(c *config) error {
		if cmp == 0 {
			return fmt.Errorf("%w: compression 0", ErrOption)
		}
		c.out.Compression = cmp
		return c.out.Check()
	}
}

// WithBatchRows sets how many rows are buffered before a batch is written:
// a Parquet row group or an Arrow record batch. It bounds the memory a Sink
// holds (twice that while a batch is written on other goroutines, see
// WithEncoders). The default fills about 24 MiB (65536 rows of a narrow table such as
// trades, about 13000 of a 25-level depth table). 1 ≤ n ≤
// columnar.MaxBatchRows.
func WithBatchRows(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: batch rows %d not in 1..%d", ErrOption, n, columnar.MaxBatchRows)
		}
		c.out.BatchRows = n
		return c.out.Check()
	}
}

// WithEncoders sets how many goroutines write batches (default
// runtime.GOMAXPROCS(0), at most columnar.MaxEncoders). With 1 the Sink is sequential:
// a full batch is encoded, compressed and written inside the OnEvent call
// that filled it. With n > 1 a full batch is written on other goroutines
// while OnEvent fills the next one (two batches in memory, not one), and a
// Parquet batch's columns are encoded and compressed by up to n goroutines
// at once. The file is byte for byte the same whatever n. A write error is
// returned by the first OnEvent after the failed write (and at the latest
// when the next batch fills, for a typed table), then by every call, as
// with n = 1; no row is written after it.
func WithEncoders(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: encoders %d not in 1..%d", ErrOption, n, columnar.MaxEncoders)
		}
		c.out.Encoders = n
		return c.out.Check()
	}
}

// WithQualityColumns appends tapedeck's quality columns (book_valid,
// after_gap, crossed, [hash_checked, hash_ok, hash_mismatch,
// hash_unverifiable where the venue has book hashes,] estimated; quotes: book_valid,
// source, with the venue's own quote rows; trades: backfill, with the
// backfill trades the plain layout leaves out) after the Tardis layout of a
// FormatTardis depth, quotes or trades table. Parquet, Arrow and FormatCSV
// always carry them;
// Tardis loaders ignore trailing columns they do not know only if they select
// by name, so the default (false) is the exact Tardis layout.
func WithQualityColumns() Option {
	return func(c *config) error { c.quality = true; return nil }
}

// WithSource declares the venue of the events by its driver: its name and
// fixed-point scale, recorded in the schema metadata and used for decimal
// columns, and what its data carries (Capabilities: the columns a table
// has). Without it they are taken from the first event (Event.Driver), and
// an empty export has scale 0/0. An event of another scale is
// ErrMixedScale.
func WithSource(d venue.Driver) Option {
	return func(c *config) error {
		if d == nil {
			return fmt.Errorf("%w: nil driver", ErrOption)
		}
		scale := d.Scale()
		if scale.PriceDecimals > book.MaxDecimals || scale.SizeDecimals > book.MaxDecimals {
			return fmt.Errorf("%w: scale %d/%d beyond %d decimals", ErrOption,
				scale.PriceDecimals, scale.SizeDecimals, book.MaxDecimals)
		}
		c.venue, c.scale, c.caps = d.Name(), scale, d.Capabilities()
		c.haveScale = true
		return nil
	}
}

// WithDatasets records the paths of the source datasets in the schema
// metadata (MetaDatasets), in replay input order. Default: none.
func WithDatasets(paths ...string) Option {
	return func(c *config) error {
		c.out.Datasets = append([]string(nil), paths...)
		return nil
	}
}

// WithRecordedInstruments names the instruments the datasets recorded (their
// manifests' instruments), so that the instruments table has a row for each
// even when no event named it. Instruments a venue listing describes but the
// recording neither names nor lists (the rest of Hyperliquid's universe)
// get no row. Other tables ignore it. Default: none beyond the events'.
func WithRecordedInstruments(ids ...string) Option {
	return func(c *config) error {
		c.recorded = make(map[string]bool, len(ids))
		c.recordedList = c.recordedList[:0]
		for _, id := range ids {
			if id != "" && !c.recorded[id] {
				c.recorded[id] = true
				c.recordedList = append(c.recordedList, id)
			}
		}
		return nil
	}
}

// WithWindow keeps the rows of the instruments table that were in effect at
// some time of [fromNs, toNs) of receive time (0: unbounded): the row
// current at fromNs and every change before toNs. The instruments table
// needs the whole recording (its facts come from the REST bodies stored at
// the start), so give the replay no window and this option instead; so does
// a Nautilus (NewNautilus), for its instruments' definitions. Other tables
// reject it (ErrOption): window their replay.
func WithWindow(fromNs, toNs int64) Option {
	return func(c *config) error {
		if fromNs < 0 || toNs < 0 || (toNs != 0 && toNs <= fromNs) {
			return fmt.Errorf("%w: window [%d, %d)", ErrOption, fromNs, toNs)
		}
		c.fromNs, c.toNs = fromNs, toNs
		return nil
	}
}
