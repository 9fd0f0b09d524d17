package replayer

import (
	"fmt"

	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/feed/engine"
)

// ParseChannel is the inverse of Channel.String.
func ParseChannel(s string) (Channel, bool) { return feed.ParseChannel(s) }

// SubscriberFailure reports a subscriber that returned an error or panicked.
// It received nothing after the failing event. It is an error that wraps
// the subscriber's own (Cause), so errors.As finds the subscriber's error
// type through it (an export *WriteError, say): Run returns it as is under
// WithStopOnSubscriberError.
type SubscriberFailure struct {
	Subscriber int    `json:"subscriber"` // index among the Subscribe calls, from 0
	Key        Key    `json:"key"`
	Dataset    int    `json:"dataset"`
	Seq        uint64 `json:"seq"`
	RecvNs     int64  `json:"recv_ns"`
	Panic      bool   `json:"panic"`
	Err        string `json:"error"`
	Stack      string `json:"stack,omitempty"` // goroutine stack of a panic
	// Cause is the error the subscriber returned, or one describing its
	// panic (wrapping the panic value when that is an error).
	Cause error `json:"-"`
}

// Error says which subscriber failed where, and why.
func (f *SubscriberFailure) Error() string {
	what := "failed"
	if f.Panic {
		what = "panicked"
	}
	return fmt.Sprintf("replayer: subscriber %d %s at dataset %d seq %d: %s", f.Subscriber, what, f.Dataset, f.Seq, f.Err)
}

// Unwrap returns Cause.
func (f *SubscriberFailure) Unwrap() error { return f.Cause }

// failed records a subscriber failure the engine isolated, and stops the
// replay at the first one under WithStopOnSubscriberError.
func (r *Replayer) failed(ef *engine.Failure) bool {
	e := ef.Event
	f := SubscriberFailure{
		Subscriber: ef.Subscriber, Key: ef.Key, Dataset: e.Dataset, Seq: e.Seq, RecvNs: e.RecvNs,
		Panic: ef.Panic, Err: ef.Err.Error(), Stack: ef.Stack, Cause: ef.Err,
	}
	r.run.failures = append(r.run.failures, f)
	if r.opts.stopOnSubErr && r.run.stopErr == nil {
		r.run.stopErr = &f
		return true
	}
	return false
}
