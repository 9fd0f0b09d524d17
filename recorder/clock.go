package recorder

import "time"

// WithClock sets where the recorder reads the time it stamps records with
// (receive times, control records, the dataset's clock base, watchdog
// ages); default time.Now. A record a received frame causes, such as an
// acknowledgement's KindSubscribed, carries that frame's receive time.
// Timers, pacing, retries and the times inside write-error and live-lag
// records still run on the real clock. The sample generator drives a
// recording with it, so that a generated session recorded through the real
// recorder has the generated receive times.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			now = time.Now
		}
		o.now = now
		return nil
	}
}

// now is the recorder's clock.
func (r *Recorder) now() time.Time { return r.o.now() }
