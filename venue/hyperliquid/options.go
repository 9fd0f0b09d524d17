package hyperliquid

// Option configures a Decoder.
type Option func(*options)

// options holds every tunable of a Decoder; defaults live in defaultOptions.
type options struct {
	maxLevels      int
	maxTrades      int
	maxInstruments int
}

// Defaults. A real l2Book carries at most 20 levels per side (100 from a
// self-hosted order_book_server), and a socket at most 1000 subscriptions, so
// both bounds leave ample room while keeping hostile input from growing the
// decoder without limit.
const (
	defaultMaxLevels      = 4096
	defaultMaxTrades      = 65536
	defaultMaxInstruments = 100_000
)

func defaultOptions() options {
	return options{maxLevels: defaultMaxLevels, maxTrades: defaultMaxTrades, maxInstruments: defaultMaxInstruments}
}

// WithMaxLevels bounds the levels per side of one snapshot (default
// defaultMaxLevels); a frame with more is rejected with ErrTooManyLevels before
// any storage grows. n must be at least 1: a smaller n is a programming error
// and panics.
func WithMaxLevels(n int) Option {
	if n < 1 {
		panic("hyperliquid: WithMaxLevels needs n ≥ 1")
	}
	return func(o *options) { o.maxLevels = n }
}

// WithMaxTrades bounds the trades of one frame (default defaultMaxTrades), and
// so the events it appends to a Frame; a frame with more is rejected with
// ErrTooManyTrades. n must be at least 1: a smaller n is a programming error
// and panics.
func WithMaxTrades(n int) Option {
	if n < 1 {
		panic("hyperliquid: WithMaxTrades needs n ≥ 1")
	}
	return func(o *options) { o.maxTrades = n }
}

// WithMaxInstruments bounds how many distinct coins the decoder tracks
// (default defaultMaxInstruments); a frame that would add one more is rejected
// with ErrTooManyInstruments. n must be at least 1: a smaller n is a
// programming error and panics.
func WithMaxInstruments(n int) Option {
	if n < 1 {
		panic("hyperliquid: WithMaxInstruments needs n ≥ 1")
	}
	return func(o *options) { o.maxInstruments = n }
}
