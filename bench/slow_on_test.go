//go:build benchslow

package bench

import "github.com/tapedeck/tapedeck/venue"

// slowed wraps d in a decoder that does extra work on every frame: a
// deliberately slowed build (go test -tags benchslow), used to show the gate
// failing on a real slowdown (testdata/reports/slowed.json).
func slowed(d venue.Decoder) venue.Decoder { return &slowDecoder{Decoder: d} }

type slowDecoder struct {
	venue.Decoder
	sink uint64
}

// Decode hashes every fourth byte of the frame (FNV-1a) before decoding
// it: a slowdown of roughly a third to two thirds, growing with frame size.
func (s *slowDecoder) Decode(frame []byte, recvNs int64, out *venue.Frame) error {
	h := uint64(14695981039346656037)
	for i := 0; i < len(frame); i += 4 {
		h ^= uint64(frame[i])
		h *= 1099511628211
	}
	s.sink += h
	return s.Decoder.Decode(frame, recvNs, out)
}
