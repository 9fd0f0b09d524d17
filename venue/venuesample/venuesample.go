// Package venuesample is what a venue's sample generator is written
// against: the Generator a driver offers (probed by type assertion, see Of),
// the Options and Spec of a generated session, and the Session engine that
// orders its records by receive time, with a private seeded PRNG, quantile
// tables, outages and a few wire helpers. internal/samplegen finds a venue's
// generator through the registry, and records its sessions through the real
// recorder into the shipped samples (datasets/samples) or streams them into
// benchmarks of any size.
//
// A session depends only on the venue and Options: the same inputs give the
// same records on every machine and Go release (integer arithmetic and a
// private PRNG, no math/rand and no floating point).
package venuesample

import (
	"errors"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// Generator makes one venue's synthetic sessions from its real frames: real
// instrument ids, books and price grids, stretched by a seeded walk into a
// session with the venue's messages, heartbeats and a disconnect. A driver
// offers one with a method
//
//	SampleGenerator() venuesample.Generator
//
// (see Of); a venue without it has no samples. Its methods are safe for
// concurrent use.
type Generator interface {
	// Instruments returns every instrument the generator knows, in session
	// order (the ids the venue's events name).
	Instruments() []string
	// Spec describes the session of instruments (every one when empty):
	// an error wrapping ErrInstrument names one the generator does not
	// know.
	Spec(instruments []string) (Spec, error)
	// Run generates the session s was started with (Session.Options) into
	// s, from its first connect to Session.Loop's end.
	Run(s *Session) error
}

// Spec is what a generated session is, beyond its records: what its
// manifest says, what a recorder of it subscribes, and the REST listings a
// test exchange serves it.
type Spec struct {
	Endpoint      string   // the venue's WebSocket URL the manifest names
	Instruments   []string // the session's, in session order
	Subscriptions []string // the manifest's subscriptions
	// Channels are what a recorder subscribes (recorder.Spec.Channels);
	// nil means the driver's default.
	Channels []string
	// Notes say what is real and what is generated (the manifest's notes).
	Notes string
	// Listings are the REST listing documents the test exchange serves, by
	// the name the driver asks for (venue.RESTDocs.Listing); nil for none.
	Listings map[string][]byte
}

// Of returns the sample generator of d's venue, nil when it has none.
func Of(d venue.Driver) Generator {
	if s, ok := d.(interface{ SampleGenerator() Generator }); ok {
		return s.SampleGenerator()
	}
	return nil
}

// Appender receives generated records; *datasets.Writer satisfies it. The
// generator reuses the Record and its Payload after Append returns.
type Appender interface {
	Append(r *datasets.Record) (seq uint64, err error)
}

// Options says what to generate. The zero Options generates the default
// ten-minute session with seed 0 over every instrument.
type Options struct {
	// Seed selects the walk; the shipped samples use ShippedSeed.
	Seed uint64
	// StartNs is the wall-clock start (ns since the epoch); 0 means
	// DefaultStartNs.
	StartNs int64
	// Duration is the length of the session in generated time. When both
	// Duration and Frames are 0, DefaultDuration is used.
	Duration time.Duration
	// Frames stops the session after this many received frames (KindFrame
	// records); 0 means no limit. With Duration also set, whichever comes
	// first ends the session.
	Frames int64
	// Instruments restricts the session (the Generator says which ids
	// select what); empty means all of its Instruments.
	Instruments []string
	// FastHashes replaces book hashes the venue computes over the whole
	// book (Polymarket's SHA-1 per change) by random hex of the same shape,
	// which makes generation several times faster, for very large
	// benchmark inputs. A venue without book hashes ignores it.
	FastHashes bool
	// CorruptAfter, when positive, makes the generated venue's book of its
	// first instrument gain a level no message tells, that long into the
	// session: a client's book is then wrong until the next snapshot
	// (tests of what catches it). A generator that cannot ignores it.
	CorruptAfter time.Duration
}

// WallStart returns StartNs, or DefaultStartNs when it is 0.
func (o Options) WallStart() int64 {
	if o.StartNs != 0 {
		return o.StartNs
	}
	return DefaultStartNs
}

// ShippedSeed is the seed of the samples shipped in datasets/samples
// (regenerate them with `go run ./cmd/samplegen --force`).
const ShippedSeed = 1

// DefaultDuration is the session length when Options sets neither Duration
// nor Frames.
const DefaultDuration = 10 * time.Minute

// DefaultStartNs is the start of every venue's session,
// 2025-10-23T00:38:00Z: the day of the real polypy Polymarket book, and one
// window for all samples so that they replay merged.
const DefaultStartNs = 1761179880000 * int64(time.Millisecond)

// ErrInstrument means Options.Instruments names an instrument the generator
// does not have.
var ErrInstrument = errors.New("venuesample: unknown instrument")

// Summary says what a session appended.
type Summary struct {
	Records int64 // records appended, every kind
	Frames  int64 // of those, received frames (KindFrame)
	Bytes   int64 // payload bytes of all records
	StartNs int64 // wall time of the first record
	EndNs   int64 // wall time of the last record
}

var _ Appender = (*datasets.Writer)(nil)
