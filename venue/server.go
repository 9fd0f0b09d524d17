package venue

import (
	"context"
	"net/http"
)

// ServerProtocol is a venue's WebSocket protocol as the venue's own server
// speaks it, for the two servers tapedeck runs: replay serve (recorded
// frames to a client written for the venue) and the test exchange (fixture
// frames to the recorder). One session per client connection holds what it
// subscribed to.
type ServerProtocol interface {
	// NewSession returns the state of one fresh client connection.
	NewSession() ServerSession
	// REST returns the venue's REST API as a test exchange serves it
	// (discovery listings, book snapshots), answering from docs. The
	// handler is mounted at the exchange's root.
	REST(docs RESTDocs) http.Handler
}

// RESTDocs is what a test exchange's REST API answers from. The functions
// are called per request and must be safe for concurrent use; a nil one
// answers as if it returned nothing.
type RESTDocs struct {
	// Listing returns the venue's listing document of that name, nil if
	// none: "markets" (Polymarket's Gamma market array), "meta" and
	// "spotMeta" (Hyperliquid's info universes).
	Listing func(name string) []byte
	// Book returns the REST book snapshot of an instrument (Polymarket's
	// book summary), nil if it has none.
	Book func(instrument string) []byte
	// BookRequest is called with the instruments of every book-snapshot
	// request before it is answered. A non-zero status fails the request
	// with that HTTP status; it may block (a slow venue) until ctx ends.
	BookRequest func(ctx context.Context, instruments []string) (status int)
}

// ServerSession is one client connection of a venue server. It is not safe
// for concurrent use: a connection calls it under its own lock.
type ServerSession interface {
	// Handle reads one client frame (binary for a binary message) and
	// returns what the venue does about it: its answers, the subscriptions
	// it made or ended, and whether it closes the socket.
	Handle(msg []byte, binary bool) ServerReply
	// Wants reports whether a frame the venue sends (a recorded frame)
	// goes to this client given its subscriptions. Answers to someone
	// else's requests (acks, pongs, post replies) never do.
	Wants(frame []byte) bool
}

// ServerReply is what a venue server does about one client frame.
type ServerReply struct {
	// Answers are the text frames to send at once, in order (acks, pongs,
	// errors). They are the session's and valid until the next Handle.
	Answers [][]byte
	// Added and Removed are the subscriptions the frame made and ended.
	Added, Removed []Topic
	// Close: the venue drops the connection without a close frame (a
	// subscribe frame over its limits). Answers are then empty.
	Close bool
}

// Topic is one subscription a client made: the channel and instrument whose
// data it selects, and the key it is known by (Polymarket: the asset id;
// Hyperliquid: "type@coin").
type Topic struct {
	Channel, Instrument, Key string
}
