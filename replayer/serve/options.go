package serve

import (
	"fmt"
	"time"

	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// Option configures a Server. Options validate their arguments;
// NewServer returns the first error, which wraps ErrOption.
type Option func(*options) error

type options struct {
	driver       venue.Driver // nil: the registry's, by the manifests' venue
	speed        replayer.Speed
	queue        int
	window       time.Duration
	writeTimeout time.Duration
	closeAtEnd   bool
	exitAtEnd    bool
	sleeper      replayer.Sleeper
	maxGap       time.Duration
	maxSubs      int
	maxIn        int64
	maxQueued    int64
	trading      *tradingOpts
}

// tradingOpts is WithTrading's choice.
type tradingOpts struct {
	hub trading.Options
	api tradeapi.TradingOptions
}

// Serve defaults.
const (
	// DefaultSendQueue is the frames a client may fall behind by before it is
	// disconnected as slow: about 12 s of a busy Hyperliquid socket (fast
	// books and bbo, ~670 frames/s) at wire speed, about 13 MB of book frames.
	DefaultSendQueue = 8192
	// DefaultSubscribeWindow is how long after a client's first subscribe its
	// replay starts, to gather the subscribe frames a client sends in a burst.
	DefaultSubscribeWindow = 250 * time.Millisecond
	// DefaultWriteTimeout bounds one write to a client that has stopped reading.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxSubscriptions is the most subscriptions one client may hold
	// (ten times Hyperliquid's 1000 per IP; twenty Polymarket connections of
	// 500 assets).
	DefaultMaxSubscriptions = 10_000
	// DefaultMaxClientBytes is the most bytes of frames one client may send
	// over its connection (a day of pings and resubscriptions is well under
	// 1 MiB).
	DefaultMaxClientBytes = 64 << 20
	// DefaultMaxQueuedBytes bounds the bytes of recorded frames waiting for
	// one client; past it the client is too slow, as past the send queue.
	DefaultMaxQueuedBytes = 64 << 20
)

func defaults() options {
	return options{speed: 1, queue: DefaultSendQueue, window: DefaultSubscribeWindow,
		writeTimeout: DefaultWriteTimeout, maxGap: replayer.DefaultMaxGap,
		maxSubs: DefaultMaxSubscriptions, maxIn: DefaultMaxClientBytes, maxQueued: DefaultMaxQueuedBytes}
}

// WithSpeed sets the pacing of every connection's replay (see
// replayer.Speed): replayer.SpeedMax or a factor within [replayer.MinSpeed,
// replayer.MaxSpeed]. Default: 1x, wire speed, as a live venue would send.
// A paced replay skips the recorded time around loss records at once and
// cuts other idle stretches to the max gap (WithMaxGap).
func WithSpeed(s replayer.Speed) Option {
	return func(o *options) error {
		if s != s || !s.Valid() {
			return fmt.Errorf("%w: speed %v (want max, or %v to %v)", ErrOption, float64(s), replayer.MinSpeed, replayer.MaxSpeed)
		}
		o.speed = s
		return nil
	}
}

// WithMaxGap caps the recorded idle stretches a paced replay waits out at d
// of recorded time (default replayer.DefaultMaxGap; 0 waits every stretch
// out, as the recording was live).
func WithMaxGap(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("%w: max gap %v", ErrOption, d)
		}
		o.maxGap = d
		return nil
	}
}

// WithClientLimits bounds what one client may make the server hold: at most
// subs subscriptions at a time and in bytes of client frames over its
// connection (defaults DefaultMaxSubscriptions, DefaultMaxClientBytes). A
// client over either is closed with code 1008 and a reason naming the limit.
func WithClientLimits(subs int, in int64) Option {
	return func(o *options) error {
		if subs < 1 || in < 1 {
			return fmt.Errorf("%w: client limits %d subscriptions, %d bytes (want ≥ 1)", ErrOption, subs, in)
		}
		o.maxSubs, o.maxIn = subs, in
		return nil
	}
}

// WithMaxQueuedBytes bounds the bytes of recorded frames waiting for one
// client (default DefaultMaxQueuedBytes); past it the client is disconnected
// as slow (1008), like past the send queue.
func WithMaxQueuedBytes(n int64) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("%w: max queued bytes %d (want ≥ 1)", ErrOption, n)
		}
		o.maxQueued = n
		return nil
	}
}

// WithSendQueue sets how many messages may wait for one client before it is
// disconnected as slow (close code 1008). n must be at least 1. Default:
// DefaultSendQueue. The memory held is at most n frames per client; at
// replayer.SpeedMax, where the replay waits for the client instead, at most 256.
func WithSendQueue(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("%w: send queue %d (want ≥ 1)", ErrOption, n)
		}
		o.queue = n
		return nil
	}
}

// WithSubscribeWindow sets how long after a client's first subscribe its
// replay starts (0: at once). Default: DefaultSubscribeWindow.
func WithSubscribeWindow(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("%w: subscribe window %v", ErrOption, d)
		}
		o.window = d
		return nil
	}
}

// WithWriteTimeout bounds each write to a client; a client that reads nothing
// for that long is cut off. d must be positive. Default: DefaultWriteTimeout.
func WithWriteTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: write timeout %v", ErrOption, d)
		}
		o.writeTimeout = d
		return nil
	}
}

// WithCloseAtEnd makes the server close each connection with code 1000
// ("end of recording") once its replay has sent the last frame. Default: the
// connection stays open. (A reconnecting SDK would then start the replay
// again from the beginning.)
func WithCloseAtEnd() Option {
	return func(o *options) error { o.closeAtEnd = true; return nil }
}

// WithExitAtEnd makes Serve of a trading server (WithTrading) return, as if
// its context had ended, once the shared replay has ended; the accounts'
// results (Hub.Results) are then complete. Default: serve until the context
// ends. Without WithTrading it does nothing: each connection has a replay of
// its own.
func WithExitAtEnd() Option {
	return func(o *options) error { o.exitAtEnd = true; return nil }
}

// WithSleeper sets the time source the replays are paced with. Default:
// the monotonic clock. Every connection's clock uses it, so it must be safe
// for concurrent use. Tests use it to check schedules without real waiting.
func WithSleeper(s replayer.Sleeper) Option {
	return func(o *options) error {
		if s == nil {
			return fmt.Errorf("%w: nil Sleeper", ErrOption)
		}
		o.sleeper = s
		return nil
	}
}

// WithDriver serves recordings of d's venue with d, a venue the registry
// does not list (or a variant of one), instead of the registry's driver
// named by the manifests.
func WithDriver(d venue.Driver) Option {
	return func(o *options) error {
		if d == nil {
			return fmt.Errorf("%w: nil driver", ErrOption)
		}
		o.driver = d
		return nil
	}
}

// WithTrading serves the venue's trading API beside the market data, on the
// same address (see Server): one shared replay (paced by hub.Speed, or by
// the bots with hub.Deterministic) drives a simulated exchange per account
// (package replayer/serve/trading); the venue's REST paths answer from it,
// and WebSocket clients get the recorded frames of that shared replay from
// the point it has reached, with the venue's user channels. The venue's
// driver must implement tradeapi.TradingServer. WithSpeed and WithMaxGap do
// not apply to it (hub.Speed, hub.MaxGap do).
func WithTrading(hub trading.Options, api tradeapi.TradingOptions) Option {
	return func(o *options) error {
		if hub.Speed != 0 && (hub.Speed != hub.Speed || !hub.Speed.Valid()) {
			return fmt.Errorf("%w: speed %v", ErrOption, float64(hub.Speed))
		}
		if hub.Settle < 0 || hub.MaxAccounts < 0 || hub.MaxOrders < 0 {
			return fmt.Errorf("%w: trading settle %v, accounts %d, orders %d", ErrOption, hub.Settle, hub.MaxAccounts, hub.MaxOrders)
		}
		o.trading = &tradingOpts{hub: hub, api: api}
		return nil
	}
}
