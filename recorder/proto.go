package recorder

import (
	"github.com/tapedeck/tapedeck/venue"
)

// The venue's client protocol (venue.ClientProtocol, from its driver) is all
// a session knows of the venue: items, frames, limits, pacing and the
// classification of received frames.

// pacingOf turns a venue's pacing into the pacer's, nil for unpaced.
func pacingOf(p venue.Pacing) *pacerConfig {
	if p.Burst == 0 {
		return nil
	}
	return &pacerConfig{burst: p.Burst, window: p.Window, perMinute: p.PerMinute}
}
