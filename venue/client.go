package venue

import (
	"context"
	"time"
)

// ClientProtocol is a venue's WebSocket protocol as a client (capture) speaks
// it: what a connection carries, the frames that subscribe and unsubscribe
// it, the heartbeat, the per-connection limits and pacing, and the
// classification of received frames for watchdogs. The recorder holds the
// connections; everything it must know of the venue comes from here. What
// only some venues have is an optional interface the protocol may also
// implement, probed by type assertion: Acker, Discoverer, ListingWatcher,
// BookFetcher, Conflicter, Mirrorer, ItemMapper, Watcher.
//
// An item is what one connection subscribes to, in the venue's own textual
// form: a Polymarket token id, a Hyperliquid subscription spec
// ("l2Book+fast@BTC"). Items are strings so that plans, records and manifests
// can carry them unchanged. Without ItemMapper an item is an instrument.
type ClientProtocol interface {
	// Facts are the protocol's fixed limits and timings.
	Facts() ClientFacts
	// Channels checks the channel specs of a capture and returns those to
	// record: the venue's defaults for none. The error names the bad one.
	Channels(specs []string) ([]string, error)
	// Plan spreads the items for channels × instruments over connections.
	Plan(PlanRequest) ([]ConnPlan, error)
	// SubscribeFrames returns the frames that subscribe items on a fresh
	// connection, each with the items it names, in send order.
	SubscribeFrames(items []string) []SendFrame
	// AddFrames and RemoveFrames change the items of an open connection.
	AddFrames(items []string) []SendFrame
	RemoveFrames(items []string) []SendFrame
	// Scan classifies a received frame and calls touch once per (channel,
	// instrument) it carries data for. exNs is the venue's timestamp in ns
	// (0 if none). It must not allocate for data frames or retain frame.
	Scan(frame []byte, touch func(channel, instrument []byte)) (c FrameClass, exNs int64)
}

// Acker is a ClientProtocol whose venue acknowledges every subscription, in
// order (FrameAck); without it the first data frame is the only sign.
type Acker interface {
	// AckItem returns the item a FrameAck acknowledges.
	AckItem(frame []byte) (string, bool)
}

// Discoverer is a ClientProtocol that resolves instruments through the
// venue's REST listing.
type Discoverer interface {
	// NeedsDiscovery reports whether instruments must be resolved through
	// the listing (a market slug rather than a token id).
	NeedsDiscovery(instruments []string) bool
	// Discover resolves instruments (and, with all, every listed one)
	// through the listing at base, fetching with fetch (which stores every
	// response it returns). The result is deduplicated, in order. Errors
	// name the instrument or the request.
	Discover(ctx context.Context, fetch Fetch, base string, instruments []string, all bool) ([]string, error)
}

// ListingWatcher is a ClientProtocol whose feed announces listing changes
// (Polymarket new_market / market_resolved).
type ListingWatcher interface {
	// Listing returns the items a frame adds to or removes from the
	// listing, nil for most frames. An error means a listing frame that
	// could not be read.
	Listing(frame []byte) (added, removed []string, err error)
}

// BookFetcher is a ClientProtocol whose capture stores REST book snapshots
// before every connect of a connection carrying items, so that a replay
// learns what the WebSocket books lack (Polymarket: the book summaries'
// hash fields).
type BookFetcher interface {
	// BookRequests returns the requests against base (Endpoints.Books when
	// the user gave none).
	BookRequests(base string, items []string) []Request
	// BookResponse reads one of those bodies and returns the items of the
	// request it has no book for.
	BookResponse(req Request, body []byte) (missing []string, err error)
}

// Mirrorer is a ClientProtocol whose REST API a host other than the public
// one can serve (a test exchange, a replay server, a private gateway).
type Mirrorer interface {
	// Mirror returns the REST bases (Discovery, Books) of such a host:
	// origin is its scheme (http or https), host and port, wsPath the
	// WebSocket URL's path.
	Mirror(origin, wsPath string) Endpoints
}

// ChannelItems is a ClientProtocol whose items are channel subscriptions
// of instruments rather than the instruments themselves (Hyperliquid: a
// channel and a coin). Without it an item is an instrument: instruments are
// the items, a manifest records the channels as subscribed, data is routed
// by instrument, nothing flows steadily and any items share a connection.
type ChannelItems interface {
	// Items returns the items that carry instruments on channels, for
	// instruments added to a running capture.
	Items(channels, instruments []string) ([]string, error)
	// Subscriptions lists what a manifest records as subscribed.
	Subscriptions(channels, items []string) []string
	// WatchKey returns the (channel, instrument) an item's data is routed
	// by (as Scan reports it), and whether it flows steadily enough for the
	// instrument watchdog to expect it.
	WatchKey(item string) (channel, instrument string, steady bool)
	// Conflicts reports whether item cannot share a connection with items
	// (two variants of one channel and instrument).
	Conflicts(items []string, item string) bool
}

// ClientFacts are a client protocol's fixed limits and timings.
type ClientFacts struct {
	// PingInterval is how often the client sends PingFrame, the
	// heartbeat, as a text frame; 0 when the venue wants no application
	// heartbeat (the WebSocket's own ping/pong keeps the connection).
	PingInterval  time.Duration
	PingFrame     []byte
	MaxFrameBytes int64  // the largest frame the venue sends
	Pacing        Pacing // client sends across all connections

	// MaxConns is the most connections per IP (0 = no limit).
	MaxConns int
	// MaxConnItems is the most items one connection carries.
	MaxConnItems int
	// DefaultConnItems is how many items a plan puts on a connection when
	// ShardByItems and the user chose none.
	DefaultConnItems int
	// ShardByItems: a plan cuts connections by a number of items per
	// connection (capture --assets-per-conn); otherwise it spreads items
	// over a number of connections (capture --conns).
	ShardByItems bool
	// SteadyFeeds: some items flow on a fixed clock even when nothing
	// changes, so an instrument watchdog is on by default.
	SteadyFeeds bool
	// DiscoverForRun: a capture always reads the listing before it
	// connects, to check the instruments (an unknown one would close the
	// socket) and store the listing.
	DiscoverForRun bool
	// UncheckedNote says what a plan made without discovery has not
	// checked; BooksOffNote what a capture loses without BookRequests.
	UncheckedNote, BooksOffNote string
}

// Pacing bounds a client's sends across all its connections: at most Burst
// frames per Window and PerMinute per minute. The zero value is unpaced.
type Pacing struct {
	Burst     int
	Window    time.Duration
	PerMinute int
}

// FrameClass is what a client protocol's Scan learned of a received frame.
type FrameClass uint8

// Frame classes.
const (
	FrameData  FrameClass = iota // market data for instruments
	FramePong                    // heartbeat answer
	FrameAck                     // subscription acknowledged
	FrameError                   // the venue reported an error (the socket stays up)
	FrameOther                   // greeting, non-JSON text, lifecycle-only frames
)

// SendFrame is a frame a client sends and the items it subscribes.
type SendFrame struct {
	Data  []byte
	Items []string
}

// PlanRequest is what a capture asks a plan for.
type PlanRequest struct {
	Channels    []string // as returned by Channels
	Instruments []string
	ConnItems   int // items per connection (ShardByItems; 0 = DefaultConnItems)
	Conns       int // connections (!ShardByItems; 0 = as few as possible)
}

// ConnPlan is one planned connection: the instruments it carries and the
// items that carry them.
type ConnPlan struct {
	Instruments []string
	Items       []string
}

// Request is one REST request a client protocol wants made.
type Request struct {
	Method string
	URL    string
	Body   []byte   // nil for GET
	Items  []string // what it is about
}

// Fetch does one REST request and returns its body; a non-200 answer or a
// transport failure is an error. The caller of a ClientProtocol method
// keeps what it fetched (a capture stores every response).
type Fetch func(ctx context.Context, method, url string, body []byte) ([]byte, error)

// Dedupe returns s without repeated values, in first-seen order, in a new
// slice.
func Dedupe(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := s[:0:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
