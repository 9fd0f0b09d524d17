// Package venue defines what every venue decoder offers the rest of tapedeck:
// one Decoder per recorded connection turns raw frames into book updates and
// typed events, with no JSON DOM and no allocation per frame in steady state.
// Each venue is a Driver (driver.go) in a package of its own under venue/;
// venue/registry lists them and picks one by name.
package venue

import "github.com/tapedeck/tapedeck/book"

// Names of the venues shipped, as stored in dataset manifests: a
// convenience for tests and tools. venue/registry is the list of venues; a
// new one needs no constant here.
const (
	Polymarket  = "polymarket"
	Hyperliquid = "hyperliquid"
)

// EventType says what a decoded Event carries.
type EventType uint8

// Event types. A decoder may yield several events for one frame (a Polymarket
// initial dump, a multi-entry price_change, a Hyperliquid trades array).
const (
	EventUnknown  EventType = iota // a well-formed message of a type we skip (counted in Stats)
	EventSnapshot                  // Book replaced from a snapshot
	EventLevel                     // one level set on Book: Side, Price, Size (0 = removed)
	EventTrade                     // a trade: Side (taker side), Price, Size
	EventQuote                     // best bid/ask message: BidPrice.. (PM best_bid_ask, HL bbo)
	EventTickSize                  // Polymarket tick_size_change: Price = new tick
	EventMids                      // Hyperliquid allMids: Size = number of mids
	EventAssetCtx                  // Hyperliquid activeAssetCtx
	EventCandle                    // Hyperliquid candle
	EventMarket                    // Polymarket new_market / market_resolved (Text = event_type)
	EventControl                   // acks, pong, error, post, greetings (Text = channel or text)
	EventReject                    // a rejected message (Text = the error); Book, when set, was invalidated by it
)

var eventTypeNames = [...]string{"unknown", "snapshot", "level", "trade", "quote",
	"tick_size", "mids", "asset_ctx", "candle", "market", "control", "rejected"}

// String returns a stable lower-case name used in summaries and exports.
func (t EventType) String() string {
	if int(t) < len(eventTypeNames) {
		return eventTypeNames[t]
	}
	return "invalid"
}

// NumEventTypes is the number of defined event types, for arrays indexed by EventType.
const NumEventTypes = int(EventReject) + 1

// Event is one decoded message. All fixed-point values are at the decoder's
// Scale. Strings are interned by the decoder and stay valid for its lifetime;
// Raw and Text are borrowed from the frame or decoder and valid only until the
// next Decode call.
type Event struct {
	Type       EventType
	Instrument string // asset id / coin; "" for connection-level events
	Market     string // Polymarket condition id; "" elsewhere
	ExchangeNs int64  // the venue's timestamp in ns since the epoch; 0 if none

	Side  book.Side
	Price int64
	Size  int64
	Count int32 // resting orders at a level, when the venue says

	BidPrice, BidSize, AskPrice, AskSize int64
	HasBid, HasAsk                       bool

	// Book is the instrument's book after the event, or nil when the event
	// does not touch a book. It is owned by the decoder.
	Book *book.Book

	// ID is the venue's own identifier of a trade as it appears in the
	// frame, nil if it sent none: Hyperliquid's tid (decimal digits, the
	// bare JSON number's text), Polymarket's transaction_hash of a
	// last_trade_price event (the only trade identifier that channel sends;
	// optional). Borrowed like Raw. Exports write it to the trades table's id
	// column.
	ID []byte
	// Backfill marks a trade the venue replayed from before the subscription
	// (Hyperliquid's first trades frame after a subscribe, per coin and
	// connection): history, not a live print. Anything that treats trades as
	// live (backtest fills, feed latency) skips it unless asked.
	Backfill bool

	Text []byte // event_type / channel name of Unknown, Market and Control events
	Raw  []byte // the bytes of this message inside the frame
}

// Frame collects the events of one Decode call. Callers reuse one Frame;
// Decode truncates Events before appending.
type Frame struct {
	Events []Event
}

// Quality is what a decoder knows about how far to trust one instrument's book.
type Quality struct {
	// Polymarket hash verdicts (venue/polymarket NOTES.md, "Hash
	// verdicts"): HashChecked = HashOK + HashMismatch + HashUnverifiable.
	HashChecked      uint64
	HashOK           uint64 // the venue's hash is the rebuilt book's
	HashMismatch     uint64 // confirmed: the book was wrong, and is not valid until its next snapshot or a matching hash
	HashUnverifiable uint64 // the data cannot decide: no known last trade price explains it and no trade came to
	HashPending      uint64 // hashes now waiting for a trade to decide them (not in HashChecked yet)
	TopChecked       uint64 // Polymarket: best_bid/best_ask compared after a timestamp batch
	TopMismatch      uint64 // of those, how many disagreed with the local book
	CrossedBatch     uint64 // timestamp batches that ended with a crossed book
	Crossed          bool   // crossed after the last completed batch
	AfterGap         bool   // invalidated since the last snapshot (still invalid) or first snapshot after a gap
	Estimated        bool   // Hyperliquid: book merged with bbo since the last l2Book
}

// Stats counts what a decoder has seen.
type Stats struct {
	Frames           uint64
	Errors           uint64 // frames Decode returned an error for (wholly or some of their messages)
	Rejected         uint64 // messages rejected (one frame may reject several and apply others)
	Invalidated      uint64 // books invalidated by a rejected message that would have changed them
	Unsnapshotted    uint64 // level changes for an instrument that never had a snapshot (applied to its invalid book)
	Events           [NumEventTypes]uint64
	UnknownTypes     uint64 // messages of an event type or channel we skip
	NonJSON          uint64 // PING/PONG and other text that is not JSON
	HashChecked      uint64 // verdicts: HashOK + HashMismatch + HashUnverifiable (see Quality)
	HashSeen         uint64 // batch and snapshot hashes on checkable books: judged, pending, or passed over by sampling (DecoderOptions.HashEvery)
	HashOK           uint64
	HashMismatch     uint64
	HashUnverifiable uint64
	HashPending      uint64 // waiting for a trade now
	TopChecked       uint64
	TopMismatch      uint64
	CrossedBatches   uint64
}

// Decoder applies the frames of one recorded connection to the books it owns.
// Its venue's name and scale are its Driver's. It is not safe for concurrent
// use.
type Decoder interface {
	// Decode parses one raw frame received at recvNs (wall clock, ns) and
	// applies it. It truncates out.Events and appends the frame's events.
	// Independent messages of one frame (the books of an initial dump, the
	// summaries of a REST /books body) are applied or rejected each on its
	// own, each atomically. A rejected message changes no level; a book it
	// would have changed becomes invalid until its next snapshot (all the
	// connection's books when its instrument cannot be told), and it yields
	// EventReject events (one per book invalidated, else one with no
	// Instrument). The error names what and where (offset) in the frame; the
	// events of the messages that did apply are in out.Events beside it.
	Decode(frame []byte, recvNs int64, out *Frame) error
	// Flush completes any pending timestamp batch (crossed-book and top-of-book
	// checks); the replayer calls it at the end of a stream and before a gap.
	Flush(out *Frame)
	// Invalidate marks every book invalid until its next snapshot (disconnect,
	// gap, writer overload) and closes pending batches.
	Invalidate()
	// Book returns the instrument's book, or nil if it was never seen.
	Book(instrument string) *book.Book
	// Instruments appends the ids of every instrument seen, sorted, to dst.
	Instruments(dst []string) []string
	// Quality returns what is known of an instrument's book.
	Quality(instrument string) Quality
	// Stats returns the counters so far.
	Stats() Stats
}

// SentObserver is implemented by decoders that learn from what the client
// sent on their connection (a KindSent record: subscribe and unsubscribe
// frames). Hyperliquid's marks the first trades frame after a trades
// subscribe as backfill. Replay and live capture call Sent for every sent
// frame of the connection, in order with its received frames, whether or not
// events are being delivered.
type SentObserver interface {
	Sent(frame []byte, sentNs int64)
}
