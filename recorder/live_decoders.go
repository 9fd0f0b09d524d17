package recorder

import (
	"fmt"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// liveDecoder returns a fresh decoder for one connection slot of the live
// engine: the decoder replay uses (replayer's venueDecoder), so live and
// replayed books are the same.
func liveDecoder(name string, hashCheck bool) (venue.Decoder, error) {
	switch name {
	case venue.Polymarket:
		return polymarket.NewDecoder(polymarket.WithHashCheck(hashCheck)), nil
	case venue.Hyperliquid:
		return hyperliquid.NewDecoder(), nil
	}
	return nil, fmt.Errorf("recorder: no decoder for venue %q", name)
}
