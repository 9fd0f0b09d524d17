package venue

import (
	"time"

	"github.com/tapedeck/tapedeck/book"
)

// Driver is everything tapedeck knows about one venue, in one place: the
// decoder and its scale, what its data can carry, where it lives, how to
// recognise its frames. Each venue package exports one Driver; the
// venue/registry package lists them and is the only place that chooses a
// venue by name. A Driver is immutable and safe for concurrent use.
type Driver interface {
	// Name is the venue's name as stored in dataset manifests
	// ("polymarket"), lower case.
	Name() string
	// Scale is the fixed-point scale of every price and size its decoders
	// yield.
	Scale() book.Scale
	// NewDecoder returns a decoder with no books for one recorded
	// connection.
	NewDecoder(DecoderOptions) Decoder
	// Capabilities says what the venue's data carries.
	Capabilities() Capabilities
	// Endpoints are the venue's public URLs and the defaults a capture uses.
	Endpoints() Endpoints
	// Sniff reports whether a raw frame carries this venue's envelope. It
	// is a cheap byte test for telling venues apart in an import, not a
	// validation: Decode is the judge of a frame.
	Sniff(frame []byte) bool
	// Client is the venue's protocol as a capture speaks it.
	Client() ClientProtocol
	// Server is the venue's protocol as its server speaks it, for replay
	// serve and the test exchange.
	Server() ServerProtocol
	// Instruments returns what one recorded message says about instruments:
	// a REST body (a discovery listing, a book summary) or one WebSocket
	// message (the Raw of a decoded event). A message that carries no
	// instrument facts gives nil and no error. For a message of a kind it
	// knows that does not read, the error names the element and the field,
	// and the facts of its other elements are returned beside it (an
	// element whose fee schedule alone does not read keeps its other facts,
	// its fees unstated). Values are at Scale.
	Instruments(msg []byte) ([]Instrument, error)
}

// DecoderOptions configure a Driver's decoder. The zero value is a decoder
// that trusts the data (no hash check).
type DecoderOptions struct {
	// HashCheck verifies the venue's book hashes where it publishes them
	// (Polymarket), counting results in Quality and Stats. A mismatch never
	// rejects data.
	HashCheck bool
	// HashEvery, with HashCheck, samples the checks: per instrument at most
	// one per HashEvery of the venue's own time, always the newest hash a
	// frame left, and always the pending one before a snapshot replaces the
	// book (unless the snapshot equals it, which confirms the levels), before
	// a loss and at the end (Flush). A book that diverges stays diverged
	// until one of those, so every divergence is still caught, a little
	// later. 0 checks every hash.
	HashEvery time.Duration
	// HashWindow is how long, in the venue's time, a hash that the known
	// last trade price does not explain waits for a trade that may (a
	// pending verdict); 0 is the venue's default (Polymarket: 1 s).
	HashWindow time.Duration
}

// Capabilities are what a venue's data carries, for code that shapes its
// output by venue (export columns, reports) without naming venues.
type Capabilities struct {
	// LevelCounts: book levels carry the number of resting orders
	// (Event.Count), so depth tables have bid_count_i/ask_count_i columns.
	LevelCounts bool
	// BookHashes: book frames carry a hash of the venue's book that a
	// decoder can verify (DecoderOptions.HashCheck).
	BookHashes bool
	// TopOfBook: data frames carry the venue's best bid/ask, checked
	// against the local book after each batch (Quality.TopChecked).
	TopOfBook bool
	// Markets: instruments belong to markets (Event.Market is set).
	Markets bool
	// Trading is the venue's order rules for the backtester's simulated
	// exchange; nil when it cannot be traded in a backtest.
	Trading *Trading
}

// Endpoints are a venue's public URLs. Tests and mirrors override them.
type Endpoints struct {
	// WebSocket is the market-data WebSocket URL a capture connects to.
	WebSocket string
	// Discovery is the REST base a capture lists instruments from.
	Discovery string
	// Books is the REST base a capture fetches book snapshots from before
	// every connect (ClientProtocol.BookRequests), "" when the venue needs
	// none.
	Books string
	// ServePath is the URL path clients of the venue connect to ("/ws");
	// a replay server accepts any path and prints this one.
	ServePath string
}

// Locator is implemented by every decoder's rejection error: the path of the
// offending field ("bids[3].price"; "" for the frame as a whole) and the
// byte offset in the frame where the problem was found. venuetest checks it
// of every driver.
type Locator interface {
	Where() (field string, offset int)
}

// DecoderOptions returns the options that use every check the capabilities
// allow (HashCheck where the venue publishes book hashes).
func (c Capabilities) DecoderOptions() DecoderOptions { return DecoderOptions{HashCheck: c.BookHashes} }
