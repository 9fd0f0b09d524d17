// Package serve replays recordings as a WebSocket server speaking the
// recorded venue's own protocol (see Server), so that a client written for
// the live venue — an SDK, a trading bot — runs against a recording
// unchanged. The protocol comes from the venue's driver
// (venue.Driver.Server); the recording is read with package replayer's
// merge and clock. It backs the replay serve command.
package serve

import "github.com/tapedeck/tapedeck/replayer"

// Errors New returns, shared with package replayer so that errors.Is works
// across both.
var (
	// ErrNoDatasets means New was given no datasets.
	ErrNoDatasets = replayer.ErrNoDatasets
	// ErrVenue means a dataset's venue has no driver, or the datasets mix venues.
	ErrVenue = replayer.ErrVenue
	// ErrOption means an option was given an invalid value.
	ErrOption = replayer.ErrOption
)

// Sleeper is the time source replays are paced with (replayer.Sleeper).
type Sleeper = replayer.Sleeper
