package replayer

import (
	"errors"
	"fmt"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// ErrVenue means a dataset's manifest names a venue the replayer has no decoder for.
var ErrVenue = errors.New("replayer: unsupported venue")

// venueDriver returns the driver of a manifest's venue: the one place the
// replayer picks a venue by name.
func venueDriver(name string) (venue.Driver, error) {
	d, err := registry.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrVenue, name)
	}
	return d, nil
}
