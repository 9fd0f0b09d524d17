package recorder

import (
	"fmt"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// liveDecoder returns a fresh decoder for one connection slot of the live
// engine: the decoder replay uses (the venue driver's), so live and
// replayed books are the same.
func liveDecoder(name string, hashCheck bool) (venue.Decoder, error) {
	d, err := registry.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("recorder: no decoder: %w", err)
	}
	return d.NewDecoder(venue.DecoderOptions{HashCheck: hashCheck}), nil
}
