package replayer

import (
	"errors"
	"fmt"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// ErrVenue means a dataset's manifest names a venue the replayer has no decoder for.
var ErrVenue = errors.New("replayer: unsupported venue")

// venueDecoder returns a fresh decoder for one connection slot: the same
// decoder capture uses live, so replay and capture build identical books.
func venueDecoder(name string, hashCheck bool) (venue.Decoder, error) {
	switch name {
	case venue.Polymarket:
		return polymarket.NewDecoder(polymarket.WithHashCheck(hashCheck)), nil
	case venue.Hyperliquid:
		return hyperliquid.NewDecoder(), nil
	}
	return nil, fmt.Errorf("%w %q", ErrVenue, name)
}
