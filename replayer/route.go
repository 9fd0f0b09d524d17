package replayer

import (
	"fmt"
	"runtime/debug"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// numChannels sizes per-channel tables indexed by Channel.
const numChannels = feed.NumChannels

// ParseChannel is the inverse of Channel.String.
func ParseChannel(s string) (Channel, bool) { return feed.ParseChannel(s) }

// channelOf maps a decoded event type to the channel it is routed on.
func channelOf(t venue.EventType) Channel { return feed.ChannelOf(t) }

// subscription is one Subscribe call.
type subscription struct {
	index  int // position among Subscribe calls: delivery order within a route
	key    Key
	sub    Subscriber
	failed bool // set by the run goroutine only
}

// matches reports whether s receives events of (venueName, instrument, ch).
func (s *subscription) matches(venueName, instrument string, ch Channel) bool {
	k := s.key
	return (k.Venue == "" || k.Venue == venueName) &&
		(k.Instrument == "" || k.Instrument == instrument) &&
		(k.Channel == ChannelAll || k.Channel == ch)
}

// instRoute is everything resolved once per (connection, instrument): the
// subscribers of each channel, the book, and the digest key, so a frame for
// one instrument touches only that instrument's subscribers.
type instRoute struct {
	instrument string
	key        uint64 // digest key of the instrument
	book       *book.Book
	bookAsked  bool   // the decoder was asked for book and had none
	gen        uint64 // subscription generation the lists were resolved at
	subs       [numChannels][]*subscription
}

// resolve fills r's subscriber lists from subs for one venue.
func (rt *instRoute) resolve(subs []*subscription, venueName string, gen uint64) {
	for ch := range rt.subs {
		rt.subs[ch] = rt.subs[ch][:0]
		if ch == int(ChannelAll) {
			continue
		}
		for _, s := range subs {
			if s.matches(venueName, rt.instrument, Channel(ch)) {
				rt.subs[ch] = append(rt.subs[ch], s)
			}
		}
	}
	rt.gen = gen
}

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

// call delivers e to s, isolating errors and panics.
func (r *Replayer) call(s *subscription, e *Event) {
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("panic: %v", p)
			if pe, ok := p.(error); ok {
				err = fmt.Errorf("panic: %w", pe)
			}
			r.fail(s, e, err, true, string(debug.Stack()))
		}
	}()
	if err := s.sub.OnEvent(e); err != nil {
		r.fail(s, e, err, false, "")
	}
}

func (r *Replayer) fail(s *subscription, e *Event, err error, panicked bool, stack string) {
	s.failed = true
	f := SubscriberFailure{
		Subscriber: s.index, Key: s.key, Dataset: e.Dataset, Seq: e.Seq, RecvNs: e.RecvNs,
		Panic: panicked, Err: err.Error(), Stack: stack, Cause: err,
	}
	r.run.failures = append(r.run.failures, f)
	if r.opts.stopOnSubErr && r.run.stopErr == nil {
		r.run.stopErr = &f
	}
}
