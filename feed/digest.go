package feed

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// Digest item sizes and tags.
const (
	digestRecordItem = 32 // one per delivered record
	digestEventItem  = 72 // one per emitted event
	digestQuoteItem  = 32 // after the event item of a quote event

	digestTagRecord = 'R'
	digestTagEvent  = 'E'
)

// Digest flags, byte 3 of an event item.
const (
	digestHasBook = 1 << 0
	digestValid   = 1 << 1
	digestCrossed = 1 << 2
	digestAsk     = 1 << 3 // Side == book.Ask
	digestHasBid  = 1 << 4
	digestHasAsk  = 1 << 5
)

// Digester hashes a stream of delivered events: replay computes its
// Summary.Digest with it and live capture its live digest, so one recording
// gives one digest whether it was watched live or replayed. The encoding is
// documented in package replayer ("Determinism and the digest"); this code
// must match it byte for byte. A Digester is not safe for concurrent use.
type Digester struct {
	h   *xxhash.Digest
	buf [8192]byte // batches small items into large hash writes
	n   int
}

// NewDigester returns an empty Digester.
func NewDigester() *Digester { return &Digester{h: xxhash.New()} }

// room makes room for an item of n bytes in buf, hashing what it holds
// when it is full; the item then starts at buf[d.n].
func (d *Digester) room(n int) {
	if d.n > len(d.buf)-n {
		d.flush()
	}
}

// flush hashes what buf holds and empties it.
func (d *Digester) flush() {
	d.h.Write(d.buf[:d.n])
	d.n = 0
}

var le = binary.LittleEndian

// Record adds the record item of e (one per delivered record, before its
// events).
func (d *Digester) Record(e *Event) {
	d.room(digestRecordItem)
	b := (*[digestRecordItem]byte)(d.buf[d.n:]) // fixed size: no bounds check per field
	d.n += digestRecordItem
	b[0], b[1], b[2], b[3] = digestTagRecord, byte(e.Kind), 0, 0
	le.PutUint32(b[4:], uint32(e.Dataset))
	le.PutUint32(b[8:], e.Conn)
	le.PutUint32(b[12:], 0)
	le.PutUint64(b[16:], e.Seq)
	le.PutUint64(b[24:], uint64(e.RecvNs))
}

// Event adds e's event item; v is e.Decoded (nil for control records),
// instKey is DigestKey(e.Instrument) and third is the venue event's
// ExchangeNs, or for control events the XXH64 of the record's payload.
func (d *Digester) Event(e *Event, v *venue.Event, instKey uint64, third int64) {
	d.room(digestEventItem)
	b := (*[digestEventItem]byte)(d.buf[d.n:])
	d.n += digestEventItem
	var flags byte
	var bbp, bbs, bap, bas int64
	if bk := e.Book; bk != nil {
		flags |= digestHasBook
		if bk.Valid() {
			flags |= digestValid
		}
		bl, okb := bk.Best(book.Bid)
		al, oka := bk.Best(book.Ask)
		if okb {
			bbp, bbs = bl.Price, bl.Size
		}
		if oka {
			bap, bas = al.Price, al.Size
		}
		if okb && oka && bbp > bap { // book.Crossed, without looking the levels up again
			flags |= digestCrossed
		}
	}
	var typ byte
	var count int32
	var price, size int64
	if v != nil {
		typ, count, price, size = byte(v.Type), v.Count, v.Price, v.Size
		if v.Side == book.Ask {
			flags |= digestAsk
		}
		if v.HasBid {
			flags |= digestHasBid
		}
		if v.HasAsk {
			flags |= digestHasAsk
		}
	}
	b[0], b[1], b[2], b[3] = digestTagEvent, byte(e.Channel), typ, flags
	le.PutUint32(b[4:], uint32(count))
	le.PutUint64(b[8:], instKey)
	le.PutUint64(b[16:], uint64(third))
	le.PutUint64(b[24:], uint64(price))
	le.PutUint64(b[32:], uint64(size))
	le.PutUint64(b[40:], uint64(bbp))
	le.PutUint64(b[48:], uint64(bbs))
	le.PutUint64(b[56:], uint64(bap))
	le.PutUint64(b[64:], uint64(bas))
	if v != nil && v.Type == venue.EventQuote {
		d.room(digestQuoteItem)
		q := (*[digestQuoteItem]byte)(d.buf[d.n:])
		d.n += digestQuoteItem
		le.PutUint64(q[0:], uint64(v.BidPrice))
		le.PutUint64(q[8:], uint64(v.BidSize))
		le.PutUint64(q[16:], uint64(v.AskPrice))
		le.PutUint64(q[24:], uint64(v.AskSize))
	}
}

// Sum returns the digest of everything added so far ("xxh64:" and 16 hex
// digits). Adding more afterwards goes on from there.
func (d *Digester) Sum() string {
	d.flush()
	return fmt.Sprintf("xxh64:%016x", d.h.Sum64())
}

// DigestKey is the digest's instrument key: XXH64 of the id, 0 for "".
func DigestKey(s string) uint64 {
	if s == "" {
		return 0
	}
	return xxhash.Sum64String(s)
}
