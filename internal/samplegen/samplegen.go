// Package samplegen generates deterministic, realistic market-data sessions
// for Polymarket and Hyperliquid from real frames: real instrument ids, real
// books and price grids (testdata/, see PROVENANCE.md), stretched by a seeded
// walk into a multi-minute session with matches, trades, re-snapshots,
// heartbeats and a disconnect with reconnect snapshots. It builds the shipped
// samples in datasets/samples (Record: the session played by the loopback
// test exchange and recorded by the real recorder) and feeds benchmarks of
// any size (Generate: streams into an Appender with bounded memory).
//
// The output depends only on the venue and Options: the same inputs give the
// same records on every machine and Go release (integer arithmetic and a
// private PRNG, no math/rand and no floating point).
package samplegen

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
)

// Appender receives generated records; *datasets.Writer satisfies it. The
// generator reuses the Record and its Payload after Append returns.
type Appender interface {
	Append(r *datasets.Record) (seq uint64, err error)
}

// Options says what to generate. The zero Options generates the default
// ten-minute session with seed 0 over every instrument.
type Options struct {
	// Seed selects the walk; the shipped samples use seed 1.
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
	// Instruments restricts the session: Polymarket token ids or condition
	// ids (a market is kept when any of its ids is listed), Hyperliquid
	// coins. Empty means all of Instruments(venue).
	Instruments []string
	// FastHashes replaces the Polymarket book hashes (SHA-1 of the whole
	// book per change) by random hex of the same shape, which makes
	// generation several times faster (about 0.5 µs a frame instead of 3 µs
	// or more), for very large benchmark inputs.
	FastHashes bool

	// corruptAfter, when positive, makes the generated Polymarket venue add
	// a level to its first token's book that no message tells, that long
	// into the session: a client's book is then wrong until the next
	// snapshot (tests of what catches it).
	corruptAfter time.Duration
}

// ShippedSeed is the seed of the samples shipped in datasets/samples
// (regenerate them with `go run ./cmd/samplegen --force`).
const ShippedSeed = 1

//go:generate go run ../../cmd/samplegen --force --out ../../datasets/samples

// DefaultDuration is the session length when Options sets neither Duration
// nor Frames.
const DefaultDuration = 10 * time.Minute

// DefaultStartNs is the start of both venues' sessions,
// 2025-10-23T00:38:00Z: the day of the real polypy Polymarket book, and one
// window for both samples so that they replay merged.
const DefaultStartNs = 1761179880000 * int64(time.Millisecond)

// Endpoints recorded in the generated manifests.
const (
	PolymarketEndpoint  = "wss://ws-subscriptions-clob.polymarket.com/ws/market"
	HyperliquidEndpoint = "wss://api.hyperliquid.xyz/ws"
)

// ErrVenue means the venue is neither "polymarket" nor "hyperliquid".
var ErrVenue = errors.New("samplegen: unknown venue")

// ErrInstrument means Options.Instruments names an instrument the generator
// does not have.
var ErrInstrument = errors.New("samplegen: unknown instrument")

// Summary says what Generate produced.
type Summary struct {
	Records int64 // records appended, every kind
	Frames  int64 // of those, received frames (KindFrame)
	Bytes   int64 // payload bytes of all records
	StartNs int64 // wall time of the first record
	EndNs   int64 // wall time of the last record
}

// Instruments returns the instruments the generator knows for venue, in
// session order: Polymarket token ids, Hyperliquid coins. It returns nil for
// an unknown venue.
func Instruments(venue string) []string {
	switch venue {
	case "polymarket":
		var ids []string
		for _, m := range pmMarketSpecs() {
			ids = append(ids, m.tokens...)
		}
		return ids
	case "hyperliquid":
		var coins []string
		for _, c := range hlCoinSpecs() {
			coins = append(coins, c.coin)
		}
		return coins
	}
	return nil
}

// Manifest returns the manifest a dataset of this session should be created
// with: venue, endpoint, subscriptions, instruments, start and monotonic base
// (the generator's monotonic clock starts at 0 at StartNs), and notes saying
// what is real and what is generated.
func Manifest(venue string, opts Options) (datasets.Manifest, error) {
	start := opts.startNs()
	m := datasets.Manifest{
		Venue:          venue,
		ToolVersion:    "samplegen",
		Host:           "generated",
		StartNs:        start,
		MonoBaseWallNs: start,
		Source:         fmt.Sprintf("samplegen:seed=%d", opts.Seed),
	}
	switch venue {
	case "polymarket":
		ms, err := selectPM(opts.Instruments)
		if err != nil {
			return m, err
		}
		m.Endpoint = PolymarketEndpoint
		m.Subscriptions = []string{"market"}
		for _, s := range ms {
			m.Instruments = append(m.Instruments, s.tokens...)
		}
		m.Notes = pmNotes
	case "hyperliquid":
		cs, err := selectHL(opts.Instruments)
		if err != nil {
			return m, err
		}
		m.Endpoint = HyperliquidEndpoint
		for _, c := range cs {
			m.Instruments = append(m.Instruments, c.coin)
		}
		for _, t := range []string{"l2Book", "bbo", "trades", "activeAssetCtx"} {
			for _, c := range cs {
				m.Subscriptions = append(m.Subscriptions, t+"@"+c.coin) // the recorder's form, read back by hyperliquid.ParseSubscription
			}
		}
		m.Subscriptions = append(m.Subscriptions, "allMids")
		m.Notes = hlNotes
	default:
		return m, fmt.Errorf("%w %q", ErrVenue, venue)
	}
	return m, nil
}

// Generate appends the session's records to w in receive order and returns
// what it wrote. It stops at the first Append error. Memory stays bounded
// whatever the Duration or Frames.
func Generate(venue string, opts Options, w Appender) (*Summary, error) {
	if opts.Duration < 0 || opts.Frames < 0 {
		return nil, errors.New("samplegen: negative Duration or Frames")
	}
	e := NewSession(opts, venue, w)
	var err error
	switch venue {
	case "polymarket":
		var ms []pmMarketSpec
		if ms, err = selectPM(opts.Instruments); err == nil {
			err = runPM(e, ms, opts)
		}
	case "hyperliquid":
		var cs []hlCoinSpec
		if cs, err = selectHL(opts.Instruments); err == nil {
			err = runHL(e, cs)
		}
	default:
		err = fmt.Errorf("%w %q", ErrVenue, venue)
	}
	if err != nil {
		return nil, err
	}
	return &e.sum, nil
}

func (o Options) startNs() int64 {
	if o.StartNs != 0 {
		return o.StartNs
	}
	return DefaultStartNs
}

func selectPM(ids []string) ([]pmMarketSpec, error) {
	all := pmMarketSpecs()
	if len(ids) == 0 {
		return all, nil
	}
	var out []pmMarketSpec
	used := map[string]bool{}
	for _, m := range all {
		keep := slices.Contains(ids, m.cond)
		used[m.cond] = true
		for _, t := range m.tokens {
			keep = keep || slices.Contains(ids, t)
			used[t] = true
		}
		if keep {
			out = append(out, m)
		}
	}
	for _, id := range ids {
		if !used[id] {
			return nil, fmt.Errorf("%w %q (polymarket has %v)", ErrInstrument, id, Instruments("polymarket"))
		}
	}
	return out, nil
}

func selectHL(coins []string) ([]hlCoinSpec, error) {
	all := hlCoinSpecs()
	if len(coins) == 0 {
		return all, nil
	}
	var out []hlCoinSpec
	for _, c := range all {
		if slices.Contains(coins, c.coin) {
			out = append(out, c)
		}
	}
	for _, c := range coins {
		if !slices.ContainsFunc(all, func(s hlCoinSpec) bool { return s.coin == c }) {
			return nil, fmt.Errorf("%w %q (hyperliquid has %v)", ErrInstrument, c, Instruments("hyperliquid"))
		}
	}
	return out, nil
}

var _ Appender = (*datasets.Writer)(nil)
