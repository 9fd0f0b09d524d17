// Package samplegen makes the sample datasets of every venue whose driver
// offers a sample generator (venuesample.Of; venue/<name>/sample): it finds
// the generator through the registry, builds the shipped samples in
// datasets/samples (Record: the session played by the loopback test
// exchange and recorded by the real recorder) and feeds benchmarks of any
// size (Generate: streams into an Appender with bounded memory).
//
// The output depends only on the venue and Options: the same inputs give the
// same records on every machine and Go release.
package samplegen

import (
	"errors"
	"fmt"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/registry"
	"github.com/tapedeck/tapedeck/venue/venuesample"
)

// Options, Summary and Appender are venuesample's: what to generate, what
// was generated, where it goes.
type (
	Options  = venuesample.Options
	Summary  = venuesample.Summary
	Appender = venuesample.Appender
)

// ShippedSeed is the seed of the samples shipped in datasets/samples
// (regenerate them with `go run ./cmd/samplegen --force`).
const ShippedSeed = venuesample.ShippedSeed

//go:generate go run ../../cmd/samplegen --force --out ../../datasets/samples

// DefaultDuration is the session length when Options sets neither Duration
// nor Frames.
const DefaultDuration = venuesample.DefaultDuration

// ErrVenue means the venue is not in the registry or has no sample
// generator.
var ErrVenue = errors.New("samplegen: no sample generator for venue")

// ErrInstrument means Options.Instruments names an instrument the generator
// does not have.
var ErrInstrument = venuesample.ErrInstrument

// Venues returns the names of the registry's venues that have a sample
// generator, in registry order.
func Venues() []string {
	var out []string
	for _, d := range registry.All() {
		if venuesample.Of(d) != nil {
			out = append(out, d.Name())
		}
	}
	return out
}

// generator returns the driver and sample generator of the named venue.
func generator(name string) (venue.Driver, venuesample.Generator, error) {
	d, err := registry.Lookup(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %w", ErrVenue, name, err)
	}
	g := venuesample.Of(d)
	if g == nil {
		return nil, nil, fmt.Errorf("%w %q (venues with one: %v)", ErrVenue, name, Venues())
	}
	return d, g, nil
}

// Instruments returns the instruments the venue's generator knows, in
// session order. It returns nil for a venue without a generator.
func Instruments(venueName string) []string {
	_, g, err := generator(venueName)
	if err != nil {
		return nil
	}
	return g.Instruments()
}

// Manifest returns the manifest a dataset of this session should be created
// with: venue, endpoint, subscriptions, instruments, start and monotonic base
// (the generator's monotonic clock starts at 0 at the start), and notes
// saying what is real and what is generated.
func Manifest(venueName string, opts Options) (datasets.Manifest, error) {
	m, _, err := manifest(venueName, opts)
	return m, err
}

func manifest(venueName string, opts Options) (datasets.Manifest, venuesample.Spec, error) {
	start := opts.WallStart()
	m := datasets.Manifest{
		Venue:          venueName,
		ToolVersion:    "samplegen",
		Host:           "generated",
		StartNs:        start,
		MonoBaseWallNs: start,
		Source:         fmt.Sprintf("samplegen:seed=%d", opts.Seed),
	}
	_, g, err := generator(venueName)
	if err != nil {
		return m, venuesample.Spec{}, err
	}
	sp, err := g.Spec(opts.Instruments)
	if err != nil {
		return m, sp, err
	}
	m.Endpoint, m.Subscriptions, m.Instruments, m.Notes = sp.Endpoint, sp.Subscriptions, sp.Instruments, sp.Notes
	return m, sp, nil
}

// Generate appends the session's records to w in receive order and returns
// what it wrote. It stops at the first Append error. Memory stays bounded
// whatever the Duration or Frames.
func Generate(venueName string, opts Options, w Appender) (*Summary, error) {
	if opts.Duration < 0 || opts.Frames < 0 {
		return nil, errors.New("samplegen: negative Duration or Frames")
	}
	_, g, err := generator(venueName)
	if err != nil {
		return nil, err
	}
	s := venuesample.NewSession(opts, venueName, w)
	if err := g.Run(s); err != nil {
		return nil, err
	}
	sum := s.Summary()
	return &sum, nil
}
