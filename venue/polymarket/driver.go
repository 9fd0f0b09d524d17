package polymarket

import (
	"bytes"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/polymarket/sample"
	"github.com/tapedeck/tapedeck/venue/venuesample"
)

// Driver is the Polymarket CLOB market channel as the rest of tapedeck sees
// it; venue/registry lists it.
var Driver venue.Driver = driver{}

type driver struct{}

func (driver) Name() string      { return venue.Polymarket }
func (driver) Scale() book.Scale { return scale() }

func (driver) NewDecoder(o venue.DecoderOptions) venue.Decoder {
	opts := []Option{WithHashCheck(o.HashCheck), WithHashSampling(o.HashEvery)}
	if o.HashWindow > 0 {
		opts = append(opts, WithHashWindow(o.HashWindow))
	}
	return NewDecoder(opts...)
}

func (driver) Capabilities() venue.Capabilities {
	return venue.Capabilities{BookHashes: true, TopOfBook: true, Markets: true, Trading: tradingRules}
}

// SampleGenerator makes the venue's synthetic sessions (the shipped
// samples, benchmark inputs); cmd/samplegen finds it with venuesample.Of.
func (driver) SampleGenerator() venuesample.Generator { return sample.Generator }

func (driver) Endpoints() venue.Endpoints {
	return venue.Endpoints{WebSocket: marketEndpoint, Discovery: gammaEndpoint, Books: clobEndpoint, ServePath: "/ws/market"}
}

var (
	sniffEventType = []byte(`"event_type"`)
	sniffAssetID   = []byte(`"asset_id"`)
)

// Sniff reports whether frame carries a market-channel envelope: an
// "event_type" or "asset_id" key.
func (driver) Sniff(frame []byte) bool {
	return bytes.Contains(frame, sniffEventType) || bytes.Contains(frame, sniffAssetID)
}

// Where returns the offending field's path and the byte offset in the frame
// (venue.Locator).
func (e *DecodeError) Where() (string, int) { return e.Field, e.Offset }
