package hyperliquid

import (
	"bytes"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid/sample"
	"github.com/tapedeck/tapedeck/venue/venuesample"
)

// Driver is the Hyperliquid WebSocket API as the rest of tapedeck sees it;
// venue/registry lists it.
var Driver venue.Driver = driver{}

type driver struct{}

func (driver) Name() string      { return venue.Hyperliquid }
func (driver) Scale() book.Scale { return Scale }

// NewDecoder returns a decoder with the default bounds; Hyperliquid
// publishes no book hashes, so HashCheck changes nothing.
func (driver) NewDecoder(venue.DecoderOptions) venue.Decoder { return NewDecoder() }

func (driver) Capabilities() venue.Capabilities {
	return venue.Capabilities{LevelCounts: true, Trading: tradingRules}
}

// SampleGenerator makes the venue's synthetic sessions (the shipped
// samples, benchmark inputs); cmd/samplegen finds it with venuesample.Of.
func (driver) SampleGenerator() venuesample.Generator { return sample.Generator }

func (driver) Endpoints() venue.Endpoints {
	return venue.Endpoints{WebSocket: wsEndpoint, Discovery: infoEndpoint, ServePath: "/ws"}
}

var sniffChannel = []byte(`"channel"`)

// Sniff reports whether frame carries the WebSocket envelope: a "channel" key.
func (driver) Sniff(frame []byte) bool { return bytes.Contains(frame, sniffChannel) }

// Where returns the offending field's path and the byte offset in the frame
// (venue.Locator).
func (e *DecodeError) Where() (string, int) { return e.Field, e.Offset }
