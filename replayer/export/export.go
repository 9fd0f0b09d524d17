// Package export owns tapedeck's tabular exports: Subscribers that turn a
// replay's events into Parquet, Arrow IPC or Tardis-layout CSV tables (depth
// snapshots, book changes, trades, quotes, control events) for notebooks,
// DuckDB and other backtesters.
//
// A Sink depends only on replayer.Event: whatever drives it (the replayer, a
// test feeding decoded events) sees the same rows. Rows are buffered into
// column batches of a bounded size and flushed to the writer as each batch
// fills, so memory does not grow with the input. Output is deterministic: the
// same events and options give byte-identical files (no wall-clock time is
// written anywhere).
//
// The file formats themselves (batches, Parquet pages, Arrow IPC, CSV) are
// package columnar's, which also writes the tables that do not come from
// events (a backtest's orders, fills, positions and equity).
package export

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tapedeck/tapedeck/columnar"
)

// Table names what a Sink writes.
type Table uint8

// The tables. Every table starts with exchange_ts_ns (the venue's time, null
// when it gives none) and local_ts_ns (receive time), both timestamps in ns
// since the epoch, UTC (Arrow timestamp[ns] and Parquet TIMESTAMP(NANOS)
// with no zone, which DuckDB, Polars and pandas read to the ns: see
// columnar.Timestamp; CSV the integer, 0 for null), then venue and instrument; prices and sizes are
// float64, or decimal128 with WithExact. One vocabulary per table: Parquet,
// Arrow and FormatCSV have the same columns; FormatTardis renames them to
// Tardis' (see FormatTardis).
const (
	// TableDepth is wide top-N book snapshots per instrument: on every book
	// change (WithEveryEvent) or the state at the end of every interval bucket
	// in which the book changed (WithInterval), like Tardis' book_snapshot_N.
	// Columns per level i (0 is the best): bid_price_i, bid_size_i,
	// [bid_count_i,] ask_price_i, ask_size_i, [ask_count_i] (counts where
	// the venue reports orders per level, venue.Capabilities.LevelCounts:
	// Hyperliquid; null where the side has no level i), then the flags
	// book_valid, after_gap, crossed (best bid above best ask in this very
	// state, which Polymarket books are briefly inside a match),
	// [hash_checked, hash_ok, hash_mismatch, hash_unverifiable] (only where
	// the venue's books carry hashes, venue.Capabilities.BookHashes:
	// Polymarket; a venue hash verdict was given since the previous row of
	// the book / every one was ok / one was a confirmed mismatch / one could
	// not be decided: see venue/polymarket NOTES.md, "Hash verdicts"),
	// estimated (Hyperliquid book merged with bbo since its last full
	// snapshot).
	TableDepth Table = iota + 1
	// TableBookChanges is one row per level change (is_snapshot, side "bid" or
	// "ask", price, size with 0 deleting the level, [count]): the shape of
	// Tardis' incremental_book_L2. See changesTable for how repeated venue
	// snapshots are written so that Tardis consumers rebuild the same books.
	TableBookChanges
	// TableTrades is one row per trade: id (the venue's trade id:
	// Hyperliquid tid, Polymarket's where it sends one; null otherwise),
	// side ("buy" or "sell", the taker's), price, size, backfill (a trade the
	// venue replayed from before the subscription, not a live print; the
	// Tardis layout leaves those rows out unless the quality columns are
	// asked for).
	TableTrades
	// TableQuotes is one row per change of a book's best bid or ask (price,
	// size or presence) or of its validity: bid_price, bid_size, ask_price,
	// ask_size (null for an empty side), book_valid, source "book"; and one
	// row per venue top-of-book message not merged into a book (Polymarket
	// best_bid_ask), source "venue" (CSV: with the quality columns only).
	TableQuotes
	// TableEvents is one row per control record of the datasets: connects,
	// subscriptions, disconnects, reconnects, stalls, gaps, overloads, write
	// errors, clock syncs, notes, REST responses, clean closes; one row
	// per message a decoder rejected (kind "rejected", error, instruments =
	// the book it invalidated); and one row per event after which a book's
	// venue hash verdicts grew by a confirmed mismatch or an unverifiable
	// hash (kind and reason "hash_mismatch" or "hash_unverifiable",
	// instruments = the book, text = its ok, mismatch and unverifiable
	// counts; venue/polymarket NOTES.md, "Hash verdicts"). Columns:
	// local_ts_ns, venue, dataset (input index), conn, seq, kind, and the
	// record's details (url, code, reason, error, attempt, instruments as a
	// comma-separated list, dropped, from_ns, to_ns, offset_ns, text), null
	// where the record has none.
	TableEvents
	// TableInstruments is what the recording says about each of its
	// instruments, one row per instrument and per change (a tick size
	// change, or any other field a later message contradicts), from the
	// venue's REST bodies (Polymarket Gamma /markets and CLOB book
	// summaries; Hyperliquid info meta and spotMeta) and the WebSocket
	// messages that carry instrument facts (tick_size_change, the initial
	// book's tick_size, new_market), read by the venue's driver
	// (venue.Driver.Instruments). Columns: exchange_ts_ns (the venue's time
	// of the change, null when the message carries none), local_ts_ns
	// (receive time of the message that began the row), valid_until_ns
	// (local_ts_ns of the instrument's next row, null for the last), venue,
	// instrument, type ("binary_option", "perpetual", "spot"), market
	// (condition id), slug, name (the question), outcome, outcome_index,
	// paired_instrument (the market's other outcome tokens, comma-separated:
	// from the listing, else the other instruments the recording places in
	// the same market),
	// base, quote (spot pairs), tick_size, price_decimals (Hyperliquid's most
	// decimals of a price: 6 − szDecimals perps, 8 − szDecimals spot),
	// min_order_size, size_increment (10^−szDecimals), sz_decimals,
	// max_leverage, neg_risk, active (listed and open), fees_enabled,
	// fee_type, taker_fee_rate, fee_exponent, maker_rebate_share (Polymarket
	// Gamma's feesEnabled, feeType, feeSchedule; decimals at 6), source (the message
	// kind that began the row: gamma_markets, book_summary, book, new_market,
	// tick_size_change, meta, spot_meta); null where nothing in the
	// recording says. Rows are sorted by venue, instrument, time; a fact
	// that only adds what was unknown fills in every row of its instrument,
	// and one older by the venue's clock than the row it contradicts (a
	// stale REST summary) starts none.
	// Only instruments of the recording get rows (see
	// WithRecordedInstruments); WithWindow keeps the rows in effect within a
	// window. No Tardis layout (ErrOption); no split.
	TableInstruments
)

var tableNames = [...]string{TableDepth: "depth", TableBookChanges: "book_changes",
	TableTrades: "trades", TableQuotes: "quotes", TableEvents: "events", TableInstruments: "instruments"}

// String returns the table's name as the CLI spells it.
func (t Table) String() string {
	if int(t) < len(tableNames) && tableNames[t] != "" {
		return tableNames[t]
	}
	return fmt.Sprintf("table(%d)", uint8(t))
}

// ParseTable is the inverse of Table.String. The error lists the valid names.
func ParseTable(s string) (Table, error) {
	for t, n := range tableNames {
		if n != "" && n == s {
			return Table(t), nil
		}
	}
	return 0, fmt.Errorf("export: unknown table %q (want %s)", s, strings.Join(tableNames[1:], ", "))
}

// Format is the file format a Sink writes.
type Format uint8

// The formats.
const (
	// FormatParquet writes one Parquet row group per batch: the table,
	// schema and metadata pqarrow writes for the same Arrow schema (stored as
	// ARROW:schema), with V2 data pages the Sink encodes itself.
	FormatParquet Format = iota + 1
	// FormatArrow writes an Arrow IPC file, one record batch per batch.
	FormatArrow
	// FormatCSV writes the table's own columns, the very names and order of
	// its Parquet and Arrow forms: times as integer ns since the epoch,
	// prices and sizes as exact decimal text, booleans true/false, null as an
	// empty field. Instrument ids are always quoted, but CSV readers that
	// guess types read a 77-digit Polymarket token id as a number anyway
	// (DuckDB: DOUBLE; Polars: a null Int64): name the column's type in the
	// read call (DuckDB types={'instrument': 'VARCHAR'}, Polars dtypes /
	// schema_overrides {"instrument": String}; symbol in the Tardis layout).
	// Compression is the caller's business (wrap the writer).
	FormatCSV
	// FormatTardis writes Tardis' CSV layouts, which hftbacktest's and
	// NautilusTrader's Tardis loaders read: incremental_book_L2 for
	// book_changes, book_snapshot_N for depth, trades and quotes, with µs
	// timestamps. The columns map from the table's as follows:
	//
	//	exchange_ts_ns  → timestamp (µs; local_ts_ns where the venue gave no time)
	//	local_ts_ns     → local_timestamp (µs)
	//	venue           → exchange (or WithTardisExchange's name)
	//	instrument      → symbol
	//	size            → amount (book_changes, trades)
	//	id              → id (trades)
	//	bid_price_i, bid_size_i, ask_price_i, ask_size_i
	//	                → bids[i].price, bids[i].amount, asks[i].price, asks[i].amount (depth)
	//	bid_price, bid_size, ask_price, ask_size
	//	                → bid_price, bid_amount, ask_price, ask_amount (quotes)
	//
	// Columns Tardis has no place for (counts, backfill, the quality flags)
	// are left out; WithQualityColumns appends the flags of depth and
	// quotes. The events table has no Tardis layout (ErrOption).
	FormatTardis
	// FormatHftBacktest is hftbacktest's native event arrays (.npz), depth
	// and trades together, one file per instrument and day: written by an
	// HftBacktest, not by a Sink (New refuses it).
	FormatHftBacktest
	// FormatNautilus is NautilusTrader's data catalog (ParquetDataCatalog):
	// order book deltas, quotes, trades and instrument definitions, files
	// per instrument under data/: written by a Nautilus, not by a Sink (New
	// refuses it).
	FormatNautilus
)

var formatNames = [...]string{FormatParquet: "parquet", FormatArrow: "arrow", FormatCSV: "csv", FormatTardis: "tardis",
	FormatHftBacktest: "hftbacktest", FormatNautilus: "nautilus"}

// String returns the format's name as the CLI spells it.
func (f Format) String() string {
	if int(f) < len(formatNames) && formatNames[f] != "" {
		return formatNames[f]
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// ParseFormat is the inverse of Format.String.
func ParseFormat(s string) (Format, error) {
	for f, n := range formatNames {
		if n != "" && n == s {
			return Format(f), nil
		}
	}
	return 0, fmt.Errorf("export: unknown format %q (want parquet, arrow, csv, tardis, hftbacktest, nautilus)", s)
}

// Metadata keys of every Arrow and Parquet table: enough to turn a float
// column back into the exact decimal and to find the data it came from.
const (
	MetaTable         = columnar.MetaTable
	MetaVenue         = "tapedeck.venue"
	MetaPriceDecimals = "tapedeck.price_decimals"
	MetaSizeDecimals  = "tapedeck.size_decimals"
	MetaDatasets      = columnar.MetaDatasets // JSON array of the source dataset paths
	MetaLevels        = "tapedeck.levels"
	MetaIntervalNs    = "tapedeck.interval_ns" // "0": a row per book change
	MetaExact         = columnar.MetaExact     // "true": prices and sizes are decimal128
)

// ErrClosed means OnEvent or Close was called on a closed Sink.
var ErrClosed = columnar.ErrClosed

// ErrMixedScale means events of two fixed-point scales reached one Sink; a
// column has one scale, so export each venue separately.
var ErrMixedScale = errors.New("export: events of different scales in one table")

// ErrOption means an option or combination of options is invalid (the
// columnar writer's ErrOption).
var ErrOption = columnar.ErrOption

// WriteError is a failure to write the output; Sink methods return it for
// every later call, since the file is incomplete.
type WriteError = columnar.WriteError
