// Package registry lists every venue driver tapedeck has, and is the one
// place that picks a venue by name. Adding a venue is a folder under venue/
// that exports a venue.Driver, and one line in drivers below.
package registry

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// ErrUnknown means no driver is registered under a venue name.
var ErrUnknown = errors.New("registry: unknown venue")

// drivers is every venue, one line each, in the order help texts list them.
var drivers = []venue.Driver{
	polymarket.Driver,
	hyperliquid.Driver,
}

// Lookup returns the driver named name (as in dataset manifests), or an
// error wrapping ErrUnknown that lists the known names.
func Lookup(name string) (venue.Driver, error) {
	for _, d := range drivers {
		if d.Name() == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, joined())
}

// Names returns the names of every venue, in registry order.
func Names() []string {
	out := make([]string, len(drivers))
	for i, d := range drivers {
		out[i] = d.Name()
	}
	return out
}

// All returns every driver, in registry order. The slice is a copy.
func All() []venue.Driver { return append([]venue.Driver(nil), drivers...) }

// Sniff returns the driver whose envelope most of frames carry, or nil when
// none does (or two tie). Import uses it to catch a file labelled with the
// wrong venue.
func Sniff(frames [][]byte) venue.Driver {
	votes := make([]int, len(drivers))
	for _, f := range frames {
		for i, d := range drivers {
			if d.Sniff(f) {
				votes[i]++
			}
		}
	}
	best, n, tie := -1, 0, false
	for i, v := range votes {
		switch {
		case v > n:
			best, n, tie = i, v, false
		case v == n && v > 0:
			tie = true
		}
	}
	if best < 0 || tie {
		return nil
	}
	return drivers[best]
}

// Choice lists the venue names for a message: "a, b or c".
func Choice() string {
	n := Names()
	if len(n) < 2 {
		return strings.Join(n, "")
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

func joined() string { return strings.Join(Names(), ", ") }
