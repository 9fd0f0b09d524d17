package polymarket

import (
	"encoding/binary"
	"math/bits"
)

// Hints find the instrument (or market) a string in a frame probably names
// from its first 16 bytes, before the string is scanned for its end: a
// recording interleaves many markets, so the last two instruments looked up
// (knownID) miss most price_changes entries, and scanning a 77-digit id then
// hashing it for the map cost more than the rest of the entry. A hint is only
// a candidate: it is taken when the frame holds exactly its id followed by
// the closing quote (idAt), as knownID takes the last instrument, so a stale,
// colliding or hostile hint costs a comparison and nothing else. Ids shorter
// than 16 bytes get no hint and take the scan and the map.

// hintBits sizes the direct-mapped tables: 1024 slots keep collisions rare
// for the hundreds of assets of a connection; a colliding pair still works,
// the loser through the map.
const hintBits = 10

// idKey is the first 16 bytes of an id.
type idKey struct{ w0, w1 uint64 }

// keyAt returns the key of the string contents starting at b[j], if 16 bytes
// are there.
func keyAt(b []byte, j int) (idKey, bool) {
	if j < 0 || len(b)-j < 16 {
		return idKey{}, false
	}
	return idKey{binary.LittleEndian.Uint64(b[j:]), binary.LittleEndian.Uint64(b[j+8:])}, true
}

// keyOf is keyAt for a whole id.
func keyOf(id []byte) (idKey, bool) {
	if len(id) < 16 {
		return idKey{}, false
	}
	return keyAt(id, 0)
}

func (k idKey) slot() uint {
	return uint(((k.w0 ^ bits.RotateLeft64(k.w1, 29)) * 0x9e3779b97f4a7c15) >> (64 - hintBits))
}

type instHint struct {
	k  idKey
	in *instrument
}

type marketHint struct {
	k idKey
	s string
}

// hintInstrument makes in the hint for its id's key.
func (d *Decoder) hintInstrument(in *instrument) {
	if k, ok := keyOf([]byte(in.id)); ok {
		in.key, in.long = k, true
		d.instHints[k.slot()] = instHint{k, in}
	}
}

// hintMarket makes market the hint for its key.
func (d *Decoder) hintMarket(market string) {
	if k, ok := keyOf([]byte(market)); ok {
		d.marketHints[k.slot()] = marketHint{k, market}
	}
}

// hintedMarket is hintedID for a known market; it returns its length.
func (d *Decoder) hintedMarket(b []byte, j int) (int, bool) {
	k, ok := keyAt(b, j)
	if !ok {
		return 0, false
	}
	if h := &d.marketHints[k.slot()]; h.s != "" && h.k == k && idAt(b, j, h.s) {
		return len(h.s), true
	}
	return 0, false
}
