package recorder

import (
	"errors"
	"fmt"
	"github.com/tapedeck/tapedeck/venue"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the options, in one place.
const (
	DefaultQueueFrames      = 1 << 16
	DefaultQueueBytes       = 256 << 20
	DefaultFlushInterval    = time.Second
	DefaultStallTimeout     = 2 * time.Minute
	DefaultBackoffMin       = 250 * time.Millisecond
	DefaultBackoffMax       = 30 * time.Second
	DefaultSuspectWindow    = 2 * time.Second
	DefaultRefreshInterval  = 15 * time.Minute
	DefaultDialTimeout      = 10 * time.Second
	DefaultRESTBooksTimeout = 10 * time.Second
)

// ErrOption reports an invalid option value.
var ErrOption = errors.New("recorder: invalid option")

// Option configures New.
type Option func(*options) error

type options struct {
	driver           venue.Driver // nil: the registry's, by Spec.Venue
	queueFrames      int
	queueBytes       int64
	flushInterval    time.Duration
	stallTimeout     time.Duration
	instStall        time.Duration
	instStallSet     bool
	backoffMin       time.Duration
	backoffMax       time.Duration
	suspectWindow    time.Duration
	suspectRetryMin  time.Duration
	suspectRetryMax  time.Duration
	refreshInterval  time.Duration
	pingInterval     time.Duration
	dialTimeout      time.Duration
	restBooksTimeout time.Duration
	maxFrameBytes    int64
	httpClient       *http.Client
	dialer           *websocket.Dialer
	logger           *slog.Logger
	registerer       prometheus.Registerer
	subscribePace    *pacerConfig
	dialPace         pacerConfig
	live             liveOptions      // live.go
	clock            Clock            // clock.go
	now              func() time.Time // clock.Now
}

func defaultOptions() options {
	return options{
		queueFrames:      DefaultQueueFrames,
		queueBytes:       DefaultQueueBytes,
		flushInterval:    DefaultFlushInterval,
		stallTimeout:     DefaultStallTimeout,
		backoffMin:       DefaultBackoffMin,
		backoffMax:       DefaultBackoffMax,
		suspectWindow:    DefaultSuspectWindow,
		suspectRetryMin:  DefaultSuspectRetryMin,
		suspectRetryMax:  DefaultSuspectRetryMax,
		refreshInterval:  DefaultRefreshInterval,
		dialTimeout:      DefaultDialTimeout,
		restBooksTimeout: DefaultRESTBooksTimeout,
		httpClient:       &http.Client{Timeout: 30 * time.Second},
		logger:           slog.New(slog.DiscardHandler),
		// At most 15 new connections per 30 s: within Hyperliquid's 30 per
		// minute, and gentle enough to avoid Polymarket's 429 on bursts.
		dialPace: pacerConfig{burst: 15, window: 30 * time.Second, perMinute: 30},
		live:     defaultLiveOptions(),
		clock:    RealClock{},
		now:      time.Now,
	}
}

func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: %s %v, want > 0", ErrOption, name, d)
	}
	return nil
}

// WithQueue bounds the queue between the socket readers and the dataset
// writer to frames records and bytes payload bytes (defaults
// DefaultQueueFrames, DefaultQueueBytes). A frame that does not fit is
// dropped, counted and reported by a KindOverload record.
func WithQueue(frames int, bytes int64) Option {
	return func(o *options) error {
		if frames < 1 || bytes < 1 {
			return fmt.Errorf("%w: queue %d frames, %d bytes, want both > 0", ErrOption, frames, bytes)
		}
		o.queueFrames, o.queueBytes = frames, bytes
		return nil
	}
}

// WithFlushInterval sets how often the recorder flushes the sink (default
// DefaultFlushInterval): a killed process loses at most this much, and it is
// the unit of the read-to-disk latency the recorder measures.
func WithFlushInterval(d time.Duration) Option {
	return func(o *options) error { o.flushInterval = d; return positive("flush interval", d) }
}

// WithStallTimeout sets how long a connection may go without a data frame
// (pongs do not count) before it is declared stalled: a KindStall record is
// written and the connection is replaced (default DefaultStallTimeout).
func WithStallTimeout(d time.Duration) Option {
	return func(o *options) error { o.stallTimeout = d; return positive("stall timeout", d) }
}

// WithInstrumentStallTimeout sets how long one instrument may go without a
// frame while its connection still carries data for others before the
// connection is declared stalled for it. The time counts on the frames the
// connection's reader processed for other instruments: a stretch in which it
// processed none (a silent socket, or a recorder starved of CPU) blames no
// instrument; the stall timeout covers it. 0 disables the check. The default is
// the stall timeout for Hyperliquid l2Book coins (pushed every few seconds
// even when unchanged) and off for Polymarket, whose quiet markets can send
// nothing for hours.
func WithInstrumentStallTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("%w: instrument stall timeout %v, want >= 0", ErrOption, d)
		}
		o.instStall, o.instStallSet = d, true
		return nil
	}
}

// WithBackoff sets the reconnect backoff: the delay starts at min, doubles
// per failed attempt up to max, each draw jittered in [d/2, d] (defaults
// DefaultBackoffMin, DefaultBackoffMax). It starts over after a connection
// that carried data and lived at least max (10 s at most); a shorter-lived
// one counts as a failed attempt.
func WithBackoff(min, max time.Duration) Option {
	return func(o *options) error {
		if min <= 0 || max < min {
			return fmt.Errorf("%w: backoff %v..%v", ErrOption, min, max)
		}
		o.backoffMin, o.backoffMax = min, max
		return nil
	}
}

// WithSuspectWindow sets how soon after a subscribe frame a connection must
// die for that subscription to be named suspect in the disconnect record
// (Hyperliquid closes with 1006 and no message on an unknown coin).
func WithSuspectWindow(d time.Duration) Option {
	return func(o *options) error { o.suspectWindow = d; return positive("suspect window", d) }
}

// WithRefreshInterval sets how often discovery (--all-markets) is re-run to
// follow listings (default DefaultRefreshInterval).
func WithRefreshInterval(d time.Duration) Option {
	return func(o *options) error { o.refreshInterval = d; return positive("refresh interval", d) }
}

// WithRESTBooksTimeout bounds the Polymarket REST book-summary requests made
// before one connect, all batches together (default
// DefaultRESTBooksTimeout). Requests still unanswered then are recorded as
// failed and the connection goes ahead without them: the summaries never
// delay a connect by more than this.
func WithRESTBooksTimeout(d time.Duration) Option {
	return func(o *options) error { o.restBooksTimeout = d; return positive("rest books timeout", d) }
}

// WithDriver records with d, a venue the registry does not list (or a
// variant of one), instead of the registry's driver named by Spec.Venue;
// Spec.Venue must then be d's name or empty.
func WithDriver(d venue.Driver) Option {
	return func(o *options) error {
		if d == nil {
			return fmt.Errorf("%w: nil driver", ErrOption)
		}
		o.driver = d
		return nil
	}
}

// WithPingInterval overrides the venue's heartbeat interval (tests).
func WithPingInterval(d time.Duration) Option {
	return func(o *options) error { o.pingInterval = d; return positive("ping interval", d) }
}

// WithMaxFrameBytes overrides the venue's per-frame read limit. A larger
// frame ends the connection (close 1009) and is recorded as a disconnect.
func WithMaxFrameBytes(n int64) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("%w: max frame bytes %d", ErrOption, n)
		}
		o.maxFrameBytes = n
		return nil
	}
}

// WithSubscribePacing overrides the send budget shared by all connections:
// at most burst messages per window and perMinute per minute (defaults: the
// venue's limits; Hyperliquid 20 per 100 ms and 2000 per minute).
func WithSubscribePacing(burst int, window time.Duration, perMinute int) Option {
	return func(o *options) error {
		if burst < 1 || window <= 0 || perMinute < 2 {
			return fmt.Errorf("%w: pacing %d per %v, %d per minute", ErrOption, burst, window, perMinute)
		}
		o.subscribePace = &pacerConfig{burst: burst, window: window, perMinute: perMinute}
		return nil
	}
}

// WithDialPacing bounds new connections across the session: at most burst
// per window and perMinute per minute (default 15 per 30 s and 30 per
// minute, Hyperliquid's limit).
func WithDialPacing(burst int, window time.Duration, perMinute int) Option {
	return func(o *options) error {
		if burst < 1 || window <= 0 || perMinute < 2 {
			return fmt.Errorf("%w: dial pacing %d per %v, %d per minute", ErrOption, burst, window, perMinute)
		}
		o.dialPace = pacerConfig{burst: burst, window: window, perMinute: perMinute}
		return nil
	}
}

// WithHTTPClient sets the client used for REST discovery.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("%w: nil http client", ErrOption)
		}
		o.httpClient = c
		return nil
	}
}

// WithDialer sets the WebSocket dialer (default: websocket.DefaultDialer
// settings with a DefaultDialTimeout handshake timeout).
func WithDialer(d *websocket.Dialer) Option {
	return func(o *options) error {
		if d == nil {
			return fmt.Errorf("%w: nil dialer", ErrOption)
		}
		o.dialer = d
		return nil
	}
}

// WithLogger sets the structured logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrOption)
		}
		o.logger = l
		return nil
	}
}

// WithMetrics registers the recorder's Prometheus metrics with reg (default:
// a private registry, see Recorder.Gatherer).
func WithMetrics(reg prometheus.Registerer) Option {
	return func(o *options) error {
		if reg == nil {
			return fmt.Errorf("%w: nil registerer", ErrOption)
		}
		o.registerer = reg
		return nil
	}
}
