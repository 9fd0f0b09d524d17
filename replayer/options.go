package replayer

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// Option configures a Replayer. Options validate their arguments; New
// returns the first error.
type Option func(*options) error

// ErrOption means an option was given an invalid value.
var ErrOption = errors.New("replayer: invalid option")

type options struct {
	fromNs, toNs int64 // 0 = unbounded
	warmup       Warmup
	shard        Shard
	speed        Speed
	maxGap       time.Duration
	sleeper      Sleeper
	// newDecoder, when set (tests' fakes), builds the decoder of one
	// connection slot from the manifest's venue instead of its driver.
	newDecoder func(venueName string, o venue.DecoderOptions) (venue.Decoder, error)
	hashMode   HashMode
	hashEvery  time.Duration
	hashWindow time.Duration // 0: the venue's default
	// skipDamaged makes damage stepped over a warning instead of Run's error.
	skipDamaged bool
	// Bounds on per-dataset state (WithLimits).
	maxConns, maxInstruments int
	// stopOnSubErr ends Run at the first subscriber failure.
	stopOnSubErr bool
	// readAhead is the blocks each dataset reader decompresses ahead.
	readAhead int
	// warmupREST sees the REST responses read before the window.
	warmupREST func(venue string, rec *datasets.Record)
}

// defaults are the options of a Replayer with none given.
func defaults() options {
	return options{speed: SpeedMax, maxGap: DefaultMaxGap, hashEvery: DefaultHashEvery,
		maxConns: DefaultMaxConns, maxInstruments: DefaultMaxInstruments, readAhead: datasets.DefaultReadAhead}
}

// WithWindow limits delivery to records with fromNs ≤ WallNs < toNs (wall ns
// since the epoch); 0 leaves that end open. Records before fromNs are still
// applied to the books, silently, so the first delivered event sees exactly
// the book a replay from the start would; the merge stops at the first record
// at or after toNs. Default: the whole recording.
func WithWindow(fromNs, toNs int64) Option {
	return func(o *options) error {
		if fromNs < 0 || toNs < 0 || (toNs > 0 && toNs <= fromNs) {
			return fmt.Errorf("%w: window [%d, %d) is empty or negative", ErrOption, fromNs, toNs)
		}
		o.fromNs, o.toNs = fromNs, toNs
		return nil
	}
}

// Warmup says where a replay with a window start (WithWindow) begins to read.
type Warmup int

const (
	// WarmupAuto is WarmupFull for local datasets and WarmupNone when any
	// dataset is remote (s3://…), where reading from the start would fetch
	// what the window does not need.
	WarmupAuto Warmup = iota
	// WarmupFull reads every dataset from its start and applies the records
	// before the window to the books without delivering them: the books are
	// exact from the first delivered event.
	WarmupFull
	// WarmupNone starts reading at the block holding the window start (found
	// through the index): the books start empty and each becomes valid at
	// its instrument's next snapshot (the decoders count the updates before
	// it as unsnapshotted). The Summary says so (Warmup "none").
	WarmupNone
)

// String returns auto, full or none.
func (w Warmup) String() string {
	switch w {
	case WarmupFull:
		return "full"
	case WarmupNone:
		return "none"
	}
	return "auto"
}

// ParseWarmup parses auto, full or none.
func ParseWarmup(s string) (Warmup, error) {
	switch s {
	case "", "auto":
		return WarmupAuto, nil
	case "full":
		return WarmupFull, nil
	case "none":
		return WarmupNone, nil
	}
	return 0, fmt.Errorf("%w: warmup %q (want auto, full or none)", ErrOption, s)
}

// WithWarmupREST hands f every REST response a windowed replay reads
// before its window (the warmup, which delivers nothing), with the venue of
// its dataset, so that what such a body states (a discovery listing's
// fees, a book summary's tick size) can hold from before the window, as it
// did when recorded. f runs on the replay's goroutine, in record order,
// before the window's first event; rec and its payload are valid only
// during the call. WarmupNone reads nothing before the window.
func WithWarmupREST(f func(venue string, rec *datasets.Record)) Option {
	return func(o *options) error {
		o.warmupREST = f
		return nil
	}
}

// WithWarmup sets where a windowed replay begins to read (see Warmup).
// Default: WarmupAuto.
func WithWarmup(w Warmup) Option {
	return func(o *options) error {
		if w < WarmupAuto || w > WarmupNone {
			return fmt.Errorf("%w: warmup %d", ErrOption, w)
		}
		o.warmup = w
		return nil
	}
}

// WithShard delivers only the events of the instruments shard s owns (see
// Shard) and the connection-wide ones: N replays given 1/N … N/N split the
// instruments between them, for jobs (a backtest per instrument) that fan
// out over a job array. Records are still all read and decoded, so every
// book is what an unsharded replay has. Default: every instrument.
func WithShard(s Shard) Option {
	return func(o *options) error {
		if !s.Whole() && (s.K < 1 || s.K > s.N) {
			return fmt.Errorf("%w: shard %d/%d", ErrOption, s.K, s.N)
		}
		o.shard = s
		return nil
	}
}

// WithSpeed sets the pacing (see Speed): SpeedMax or a factor within
// [MinSpeed, MaxSpeed]. Default: SpeedMax. A paced replay skips the recorded
// time around loss records at once and cuts other idle stretches to the max
// gap (WithMaxGap); Summary.Skipped says how much.
func WithSpeed(s Speed) Option {
	return func(o *options) error {
		if math.IsNaN(float64(s)) || !s.Valid() {
			return fmt.Errorf("%w: speed %v (want max, or %v to %v)", ErrOption, float64(s), MinSpeed, MaxSpeed)
		}
		o.speed = s
		return nil
	}
}

// WithMaxGap caps the recorded idle stretches a paced replay waits out at d
// of recorded time (default DefaultMaxGap; 0 waits every stretch out).
func WithMaxGap(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("%w: max gap %v", ErrOption, d)
		}
		o.maxGap = d
		return nil
	}
}

// WithSleeper sets the time source paced replays wait on. Default: the
// monotonic clock, with the last 1.2 ms of each wait spent spinning (yielding
// to other goroutines) because Go timers wake up to a millisecond late. Tests
// use it to check schedules without real waiting.
func WithSleeper(s Sleeper) Option {
	return func(o *options) error {
		o.sleeper = s
		return nil
	}
}

// HashMode says which venue book hashes a replay verifies (Polymarket
// publishes one per book and per price change; other venues none).
type HashMode uint8

// Hash modes. The zero value is the default.
const (
	// HashSampled verifies, per instrument, at most one hash per interval of
	// the venue's time (WithHashMode; DefaultHashEvery), always the newest
	// one a frame left, and always the pending one before a snapshot
	// replaces the book (unless the snapshot equals the book, which confirms
	// its levels), before a loss and at the end. A book that diverges stays
	// diverged until one of those, so every divergence is still reported,
	// at most an interval of venue time later.
	HashSampled HashMode = iota
	// HashAll verifies every hash.
	HashAll
	// HashOff verifies none.
	HashOff
)

// DefaultHashEvery is HashSampled's interval.
const DefaultHashEvery = 2 * time.Second

var hashModeNames = [...]string{"sampled", "all", "off"}

// String returns "sampled", "all" or "off".
func (m HashMode) String() string {
	if int(m) < len(hashModeNames) {
		return hashModeNames[m]
	}
	return fmt.Sprintf("HashMode(%d)", uint8(m))
}

// ParseHashMode reads "all", "sampled" or "off"; "true" and "false", the
// values of the boolean flag it replaced, mean all and off.
func ParseHashMode(s string) (HashMode, error) {
	switch s {
	case "all", "true":
		return HashAll, nil
	case "sampled":
		return HashSampled, nil
	case "off", "false":
		return HashOff, nil
	}
	return 0, fmt.Errorf("%w: hash check %q (want all, sampled or off)", ErrOption, s)
}

// WithHashMode sets which venue book hashes are verified (default
// HashSampled at DefaultHashEvery); every is HashSampled's interval of the
// venue's time, ignored by the other modes. Books are the same in every
// mode: only the Quality and Summary hash counters differ, and the digest
// does not cover them. Polymarket hashes are SHA-1 over the whole book, most
// of the decoding time where they can be checked.
func WithHashMode(m HashMode, every time.Duration) Option {
	return func(o *options) error {
		if int(m) >= len(hashModeNames) || (m == HashSampled && every <= 0) {
			return fmt.Errorf("%w: hash check %v every %v", ErrOption, m, every)
		}
		o.hashMode, o.hashEvery = m, every
		return nil
	}
}

// WithHashWindow sets how long, in the venue's time, a hash that the known
// last trade price does not explain waits for a trade that may (Polymarket:
// a trade's hash is sent before its last_trade_price; venue/polymarket
// NOTES.md, "Hash verdicts"): then ok, mismatch, or unverifiable if no trade
// came. Default (0): the venue's, 1 s for Polymarket. Negative is
// ErrOption.
func WithHashWindow(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("%w: hash window %v", ErrOption, d)
		}
		o.hashWindow = d
		return nil
	}
}

// WithHashCheck is WithHashMode(HashAll) when on, HashOff when off.
func WithHashCheck(on bool) Option {
	return func(o *options) error {
		o.hashMode = HashOff
		if on {
			o.hashMode = HashAll
		}
		return nil
	}
}

// decoderOptions are the venue decoder options the hash mode implies.
func (o *options) decoderOptions() venue.DecoderOptions {
	d := venue.DecoderOptions{HashCheck: o.hashMode != HashOff, HashWindow: o.hashWindow}
	if o.hashMode == HashSampled {
		d.HashEvery = o.hashEvery
	}
	return d
}

// withDecoders replaces the venue decoder factory (tests).
func withDecoders(f func(venueName string) (venue.Decoder, error)) Option {
	return func(o *options) error {
		o.newDecoder = func(name string, _ venue.DecoderOptions) (venue.Decoder, error) { return f(name) }
		return nil
	}
}

// WithSkipDamaged sets whether damage in a dataset (a bad block, a missing
// segment) is tolerated. Either way the reader steps over it to the next
// intact block, the loss reaches subscribers as a gap record (every book of
// that dataset invalid until its next snapshot) and the Summary lists what
// was skipped; without it (the default) Run then returns an error wrapping
// ErrDamaged with that Summary.
func WithSkipDamaged(on bool) Option {
	return func(o *options) error {
		o.skipDamaged = on
		return nil
	}
}

// Default bounds of WithLimits. A real capture uses a few dozen connection
// slots and at most tens of thousands of instruments; the bounds keep a
// crafted dataset from growing the replay's memory without end.
const (
	DefaultMaxConns       = 4096
	DefaultMaxInstruments = 1 << 18
)

// ErrLimit means a dataset needs more state than WithLimits allows: more
// connection slots or instruments. Run stops with it (and the Summary so far).
var ErrLimit = errors.New("replayer: dataset exceeds a limit")

// WithLimits bounds the connection slots (each has its own decoder) and the
// instruments (each has a book) one dataset may use; past either, Run stops
// with an error wrapping ErrLimit that names the dataset and the bound.
// Instruments are counted every 65,536 frames of a connection, so a dataset
// may pass the bound by at most that many books before it is caught.
// Defaults: DefaultMaxConns, DefaultMaxInstruments.
func WithLimits(conns, instruments int) Option {
	return func(o *options) error {
		if conns < 1 || instruments < 1 {
			return fmt.Errorf("%w: limits %d connections, %d instruments", ErrOption, conns, instruments)
		}
		o.maxConns, o.maxInstruments = conns, instruments
		return nil
	}
}

// WithStopOnSubscriberError makes the first subscriber error or panic end
// the replay at once: Run returns it, a *SubscriberFailure wrapping the
// subscriber's error (errors.As finds the subscriber's own error type), with
// the Summary so far, and no subscriber receives another event. Use it when
// a subscriber's failure makes the whole run worthless (an export that can
// no longer write). Default: a failing subscriber is isolated and the replay
// goes on for the others.
func WithStopOnSubscriberError() Option {
	return func(o *options) error { o.stopOnSubErr = true; return nil }
}

// WithReadAhead sets how many blocks of each dataset are read, checked and
// decompressed ahead on a second goroutine while Run decodes, applies and
// routes the current one: the replay then uses two cores. 0 reads
// sequentially on Run's goroutine. Events, books, losses, the Summary and
// the digest are the same either way (see datasets.WithReadAhead); memory
// grows by n decoded blocks per dataset. Default: datasets.DefaultReadAhead.
func WithReadAhead(n int) Option {
	return func(o *options) error {
		if n < 0 || n > 64 {
			return fmt.Errorf("%w: read-ahead %d blocks (0 to 64)", ErrOption, n)
		}
		o.readAhead = n
		return nil
	}
}
