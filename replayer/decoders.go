package replayer

import (
	"errors"
	"fmt"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// ErrVenue means a dataset's manifest names a venue the replayer has no decoder for.
var ErrVenue = errors.New("replayer: unsupported venue")

// venueDecoder returns a fresh decoder for one connection slot from the
// venue's driver.
func venueDecoder(name string, o venue.DecoderOptions) (venue.Decoder, error) {
	d, err := registry.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrVenue, name)
	}
	return d.NewDecoder(o), nil
}
