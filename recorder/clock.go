package recorder

import "time"

// Clock is where a recorder reads the time and what times its heartbeats
// (WithClock). Its methods must be safe for concurrent use.
type Clock interface {
	// Now is the time records are stamped with.
	Now() time.Time
	// NewTicker delivers a time on c every d of this clock until stop is
	// called, dropping ticks a slow reader misses, as time.Ticker does.
	NewTicker(d time.Duration) (c <-chan time.Time, stop func())
}

// RealClock is the default Clock: time.Now and time.NewTicker.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// NewTicker returns a time.Ticker's channel and Stop.
func (RealClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// WithClock sets the clock the recorder stamps records with (receive
// times, control records, the dataset's clock base, watchdog ages) and
// times its heartbeats by (default RealClock). A record a received frame
// causes, such as an acknowledgement's KindSubscribed, carries that frame's
// receive time. The watchdog's and the writer's tickers, pacing, retries
// and the times inside write-error and live-lag records stay on the real
// clock. The sample generator drives a recording with it, so that a
// generated session recorded through the real recorder has the generated
// receive times and heartbeats at generated times.
func WithClock(c Clock) Option {
	return func(o *options) error {
		if c == nil {
			c = RealClock{}
		}
		o.clock, o.now = c, c.Now
		return nil
	}
}

// now is the recorder's clock.
func (r *Recorder) now() time.Time { return r.o.now() }
