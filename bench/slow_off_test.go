//go:build !benchslow

package bench

import "github.com/tapedeck/tapedeck/venue"

// slowed returns d: only a benchslow build slows decoders (see slow_on_test.go).
func slowed(d venue.Decoder) venue.Decoder { return d }
