// Package feed holds what live capture and replay share: the routed Event a
// subscriber receives, the Key that routes it and the Subscriber interface.
// It sits below both recorder and replayer, so a strategy or sink written
// against replay runs unchanged on a live capture, and neither of those two
// packages imports the other.
package feed

import (
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// Channel selects events by what they carry.
type Channel uint8

// Channels. ChannelAll in a Key matches every channel.
const (
	ChannelAll     Channel = iota
	ChannelBook            // snapshots, level changes, rejected messages (venue.EventReject: the book they invalidated)
	ChannelTrades          // trades
	ChannelQuotes          // best bid/ask messages
	ChannelControl         // connection and loss records: connect, disconnect, gap, stall, overload, …
	ChannelOther           // everything else a decoder yields (tick size, mids, markets, acks)
)

// Key routes events to a subscriber. An empty Venue or Instrument, or
// ChannelAll, matches any value.
type Key struct {
	Venue      string
	Instrument string
	Channel    Channel
}

// Event is what a subscriber receives: one decoded venue event, or one control
// record of the dataset. It and everything it points to are borrowed for the
// duration of the call; Book is read-only and owned by the engine.
type Event struct {
	Dataset    int    // index of the dataset among the replay's inputs (0 live)
	Venue      string // the dataset's venue
	Conn       uint32 // connection slot
	Seq        uint64 // record sequence number within the dataset
	RecvNs     int64  // receive time, wall clock, ns since the epoch
	Kind       datasets.Kind
	Channel    Channel
	Instrument string // the instrument the event concerns; "" for connection-wide records

	// Venue event, for Kind == KindFrame, and for KindRESTResponse when the
	// venue decoder takes the body (a Polymarket /book summary is a
	// snapshot); nil otherwise.
	Decoded *venue.Event
	// Control payload (ChannelControl), for every kind but frames; nil when
	// Decoded is set. Every REST record is also delivered once this way,
	// with an empty Control and the body in Payload. A loss record
	// (Kind.IsLoss) is delivered once per instrument it invalidates, with
	// Instrument and Book set, and once with Instrument "" for connection-wide
	// listeners.
	Control *datasets.Control
	// Payload is the record's raw payload: the frame byte-identical for
	// frames, the sent bytes for KindSent, the HTTP body for
	// KindRESTResponse, the control JSON otherwise. Borrowed for the call.
	Payload []byte

	Book    *book.Book    // the instrument's book after the event; nil if none
	Scale   book.Scale    // scale of every fixed-point value in the event
	Quality venue.Quality // of the instrument's book after the event

	// Driver is the dataset's venue driver, resolved once per dataset:
	// what its data carries (Capabilities), its trading rules, how to read
	// its messages (Instruments). Nil for a decoder without one (tests).
	Driver venue.Driver
}

// Subscriber receives routed events. An error or a panic isolates the
// subscriber: it receives nothing more, the error is reported, and the
// engine and every other subscriber go on (unless the engine was told to
// stop at the first subscriber error).
type Subscriber interface {
	OnEvent(e *Event) error
}

// SubscriberFunc adapts a function to Subscriber.
type SubscriberFunc func(e *Event) error

// OnEvent calls f(e).
func (f SubscriberFunc) OnEvent(e *Event) error { return f(e) }
