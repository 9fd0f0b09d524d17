package polymarket

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/tapedeck/tapedeck/book"
)

// HashFields are the parts of a Polymarket book hash that are not levels.
// Every string is written verbatim between quotes, so it must be plain text as
// the server sends it (ids and decimals need no JSON escaping).
type HashFields struct {
	Market       string // condition id, "0x…"
	AssetID      string // token id
	Timestamp    string // the book's timestamp in ms, as decimal text
	MinOrderSize string // as the REST /book summary gives it, e.g. "5"
	TickSize     string // e.g. "0.01"
	NegRisk      bool
	// LastTradePrice, when not empty or when LastTradePricePresent is set,
	// is appended as "last_trade_price": the form the server has used since
	// about 2025-12. Empty without LastTradePricePresent selects the older
	// nine-field form.
	LastTradePrice string
	// LastTradePricePresent writes the tenth field even when LastTradePrice
	// is empty: an asset that never traded has "last_trade_price":"", and
	// the venue hashes it so (fixture nautilus_rest_book_empty_ltp_2026-08).
	LastTradePricePresent bool
}

// BookHash appends the Polymarket hash of book b with fields f to dst: 40
// lowercase hex digits of the SHA-1 of the compact JSON
//
//	{"market":…,"asset_id":…,"timestamp":"…","hash":"","bids":[{"price":…,"size":…},…],
//	 "asks":[…],"min_order_size":…,"tick_size":…,"neg_risk":false[,"last_trade_price":…]}
//
// with bids in ascending and asks in descending price order (best level last,
// as on the wire) and prices and sizes as plain decimals without trailing
// zeros. This reproduces the server's REST /book and WebSocket hashes
// (PROTOCOLS.md §3.1). It allocates only if dst lacks room for 40 bytes.
func BookHash(dst []byte, f HashFields, b *book.Book) []byte {
	var tmp []book.Level
	buf := appendHashHead(nil, f.Market, f.AssetID, []byte(f.Timestamp), b, &tmp)
	buf = append(buf, f.MinOrderSize...)
	buf = append(buf, `","tick_size":"`...)
	buf = append(buf, f.TickSize...)
	withLtp := f.LastTradePrice != "" || f.LastTradePricePresent
	buf = appendHashTail(buf, f.NegRisk, withLtp)
	if withLtp {
		buf = append(buf, f.LastTradePrice...)
		buf = append(buf, `"}`...)
	}
	sum := sha1.Sum(buf)
	return hex.AppendEncode(dst, sum[:])
}

// appendHashHead appends the hash input up to and including the opening quote
// of min_order_size's value. tmp is scratch for the levels, reused by callers.
func appendHashHead(dst []byte, market, asset string, ts []byte, b *book.Book, tmp *[]book.Level) []byte {
	sc := b.Scale()
	dst = append(dst, `{"market":"`...)
	dst = append(dst, market...)
	dst = append(dst, `","asset_id":"`...)
	dst = append(dst, asset...)
	dst = append(dst, `","timestamp":"`...)
	dst = append(dst, ts...)
	dst = append(dst, `","hash":"","bids":[`...)
	dst = appendHashSide(dst, b, book.Bid, sc, tmp)
	dst = append(dst, `],"asks":[`...)
	dst = appendHashSide(dst, b, book.Ask, sc, tmp)
	dst = append(dst, `],"min_order_size":"`...)
	return dst
}

// appendHashSide writes one side worst level first: Top hands levels out best
// first, so walk them backwards.
func appendHashSide(dst []byte, b *book.Book, side book.Side, sc book.Scale, tmp *[]book.Level) []byte {
	lv := b.Top(side, (*tmp)[:0], -1)
	*tmp = lv
	for i := len(lv) - 1; i >= 0; i-- {
		dst = append(dst, `{"price":"`...)
		dst = appendDecimal(dst, lv[i].Price, sc.PriceDecimals)
		dst = append(dst, `","size":"`...)
		dst = appendDecimal(dst, lv[i].Size, sc.SizeDecimals)
		dst = append(dst, `"}`...)
		if i > 0 {
			dst = append(dst, ',')
		}
	}
	return dst
}

// appendDecimal is book.AppendDecimal (same text) made fast for this
// package's two scales, whose constant divisors compile to multiplications:
// formatting was a third of a hash check.
func appendDecimal(dst []byte, v int64, dec uint8) []byte {
	var ip, fp uint64
	var width int
	switch {
	case v < 0:
		return book.AppendDecimal(dst, v, dec)
	case dec == priceDecimals:
		ip, fp, width = uint64(v)/1e4, uint64(v)%1e4, priceDecimals
	case dec == sizeDecimals:
		ip, fp, width = uint64(v)/1e6, uint64(v)%1e6, sizeDecimals
	default:
		return book.AppendDecimal(dst, v, dec)
	}
	if fp == 0 {
		return strconv.AppendUint(dst, ip, 10)
	}
	for fp%10 == 0 {
		fp /= 10
		width--
	}
	return appendFixed(dst, ip, fp, width)
}

// appendFixed appends ip, a point and fp as width digits (width ≤ 7).
func appendFixed(dst []byte, ip, fp uint64, width int) []byte {
	dst = strconv.AppendUint(dst, ip, 10)
	var buf [8]byte
	buf[0] = '.'
	for k := width; k > 0; k-- {
		buf[k] = byte('0' + fp%10)
		fp /= 10
	}
	return append(dst, buf[:width+1]...)
}

// appendLtp appends last trade price p (price scale) as the venue writes it
// in a hash: with pad, at least three decimals ("0.500", "0.490", "0.4905"),
// the form of every real last_trade_price text seen since 2025-12
// (NOTES.md, "Hash verdicts"); without, as appendDecimal ("0.5").
func appendLtp(dst []byte, p int64, pad bool) []byte {
	if !pad || p <= 0 {
		return appendDecimal(dst, p, priceDecimals)
	}
	if fp := uint64(p) % 1e4; fp%10 != 0 {
		return appendFixed(dst, uint64(p)/1e4, fp, 4)
	}
	return appendFixed(dst, uint64(p)/1e4, uint64(p)%1e4/10, 3)
}

// ltpTextForm tells which form a last_trade_price text has: 1 padded (three
// decimals or more, the last a zero: "0.500"), -1 not ("0.5", "0.49"), 0 it
// cannot tell ("0.123" is both).
func ltpTextForm(t []byte) int8 {
	dot := bytes.IndexByte(t, '.')
	switch {
	case dot < 0 || len(t)-dot-1 < 3:
		return -1
	case t[len(t)-1] == '0':
		return 1
	}
	return 0
}

// appendHashTail closes tick_size and writes neg_risk; with ltp it leaves the
// last_trade_price value open for the caller, else it closes the object.
func appendHashTail(dst []byte, negRisk, ltp bool) []byte {
	if negRisk {
		dst = append(dst, `","neg_risk":true`...)
	} else {
		dst = append(dst, `","neg_risk":false`...)
	}
	if ltp {
		return append(dst, `,"last_trade_price":"`...)
	}
	return append(dst, '}')
}

// hexVal maps a byte to its hex digit's value, 0xff if it is not one.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
	}
	return t
}()

// decodeHash40 decodes h into sum if h looks like a real book hash: 40 hex
// digits, either case. Placeholders such as "0xabc" in synthetic frames are
// not checked. Decoding once lets a check compare two arrays.
func decodeHash40(sum *[sha1.Size]byte, h []byte) bool {
	if len(h) != 2*sha1.Size {
		return false
	}
	var bad byte
	for i := range sum {
		hi, lo := hexVal[h[2*i]], hexVal[h[2*i+1]]
		bad |= hi | lo
		sum[i] = hi<<4 | lo&15
	}
	return bad&0xf0 == 0
}

// sideCache holds one book side as it appears in the hash input, kept in step
// with the book so that a hash check re-serializes nothing but the level a
// price change touched: formatting every level of both sides was half the
// cost of a check. Entries are `{"price":"…","size":"…"},` worst level first
// (the book's storage order), each with its trailing comma so that any one can
// be replaced, inserted or deleted alone; the hash input drops the last comma.
type sideCache struct {
	buf    []byte
	prices []int64 // price of each entry, in buf's order
	sizes  []int64 // size of each entry
	ends   []int32 // ends[i] is the offset just past entry i in buf
}

// hashCache is an instrument's serialized book sides. It is valid for the
// book generation gen only: any mutation it did not see (Replace, Invalidate,
// Clear, a Set by someone else) changes the generation and forces a rebuild.
type hashCache struct {
	valid bool
	gen   uint64 // book.Generation the sides reflect
	ver   uint64 // changes whenever the serialized bytes may have changed
	side  [2]sideCache
	spare sideCache // scratch for a rebuild: the entries past the unchanged ones

	// The hash input after the asks and the fields it was written from.
	tail    []byte
	tailKey tailKey
	tailOK  bool

	// The SHA-1 state after the input's constant prefix, up to the
	// timestamp, for market midMarket.
	mid       []byte
	midMarket string
	midOK     bool

	// The last computed hash and what it was computed from: a check of the
	// same input (same sides, market, timestamp and tail) needs no SHA-1.
	// A book snapshot repeating the state of the last price change does that.
	memoOK     bool
	memoVer    uint64
	memoMarket string
	memoTs     []byte
	memoTail   tailKey
	memoSum    [sha1.Size]byte
}

// tailKey is what the hash input after the asks is made of.
type tailKey struct {
	minOrder, tick, ltp   int64 // ltp is 0 in the form without it
	negRisk, withLtp, pad bool  // pad: ltp written as appendLtp pads it
}

// sync brings c up to date with b, rebuilding both sides if b changed behind
// its back. tmp is scratch for the levels.
func (c *hashCache) sync(b *book.Book, tmp *[]book.Level) {
	if c.valid && c.gen == b.Generation() {
		return
	}
	changed := !c.valid
	for s := book.Bid; s <= book.Ask; s++ {
		if c.side[s].refill(b, s, tmp, &c.spare) {
			changed = true
		}
	}
	if changed {
		c.ver++
	}
	c.valid, c.gen = true, b.Generation()
}

// afterSet updates c for b.Set(side, price, size) having moved b's
// generation from g0 to b.Generation(): a cache that was in step is spliced,
// anything else is left for sync to rebuild.
func (c *hashCache) afterSet(b *book.Book, g0 uint64, side book.Side, price, size int64) {
	g1 := b.Generation()
	if !c.valid || c.gen != g0 || g1 != g0+1 {
		c.valid = c.valid && c.gen == g1
		return
	}
	s := &c.side[side]
	s.set(side == book.Bid, price, size)
	// The splice mirrors book.Set; a disagreement would be a bug, and costs
	// only a rebuild rather than a false mismatch.
	c.valid = len(s.prices) == b.Len(side)
	c.gen = g1
	c.ver++
}

// refill brings s, a serialization of some earlier state of side, up to
// date with b, and reports whether its bytes changed. Entries are in storage
// order (bids ascending, asks descending: worst first), and between two checks
// a book mostly changes near its top, so the entries before the first level
// that differs stay where they are (about three quarters of a side on the
// shipped sample); the rest are moved to scratch and merged with b's levels,
// copying the entries of unchanged levels instead of formatting them again
// (a snapshot mostly repeats the book it replaces).
func (s *sideCache) refill(b *book.Book, side book.Side, tmp *[]book.Level, scratch *sideCache) bool {
	lv := b.Top(side, (*tmp)[:0], -1) // best first
	*tmp = lv
	k := 0
	for k < len(lv) && k < len(s.prices) && lv[len(lv)-1-k].Price == s.prices[k] && lv[len(lv)-1-k].Size == s.sizes[k] {
		k++
	}
	if k == len(lv) && k == len(s.prices) {
		return false
	}
	if cap(s.prices) < len(lv) {
		// Room for the levels and some to insert, in one allocation per
		// slice: growing by appends cost a replay of the shipped sample
		// 0.05 allocations per frame.
		n := len(lv) + len(lv)/4 + 8
		s.grow(n)
		scratch.grow(n)
	}
	var from int32
	if k > 0 {
		from = s.ends[k-1]
	}
	scratch.buf = append(scratch.buf[:0], s.buf[from:]...)
	scratch.prices = append(scratch.prices[:0], s.prices[k:]...)
	scratch.sizes = append(scratch.sizes[:0], s.sizes[k:]...)
	scratch.ends = append(scratch.ends[:0], s.ends[k:]...)
	for e := scratch.ends; len(e) > 0; e = e[1:] {
		e[0] -= from
	}
	s.buf, s.prices, s.sizes, s.ends = s.buf[:from], s.prices[:k], s.sizes[:k], s.ends[:k]
	s.merge(lv[:len(lv)-k], side == book.Bid, scratch)
	return true
}

// grow makes room for n entries.
func (s *sideCache) grow(n int) {
	s.buf = slices.Grow(s.buf, n*entryBytes-len(s.buf))
	s.prices = slices.Grow(s.prices, n-len(s.prices))
	s.sizes = slices.Grow(s.sizes, n-len(s.sizes))
	s.ends = slices.Grow(s.ends, n-len(s.ends))
}

// merge appends lv's levels (best first) in storage order, copying the
// entries old holds with the same price and size: both are in storage order,
// so one walk finds every reusable entry, and consecutive ones go in one copy.
func (s *sideCache) merge(lv []book.Level, bid bool, old *sideCache) {
	j := 0          // the first entry of old not yet passed
	run, lo := 0, 0 // old[lo:lo+run] matches the entries last met, not copied yet
	for i := len(lv) - 1; i >= 0; i-- {
		p, z := lv[i].Price, lv[i].Size
		for j < len(old.prices) && (bid && old.prices[j] < p || !bid && old.prices[j] > p) {
			j++
		}
		if j < len(old.prices) && old.prices[j] == p && old.sizes[j] == z {
			if run > 0 && lo+run == j {
				run++
				continue
			}
			s.copyRun(old, lo, run)
			run, lo = 1, j
			continue
		}
		s.copyRun(old, lo, run)
		run = 0
		s.buf = appendEntry(s.buf, p, z)
		s.prices = append(s.prices, p)
		s.sizes = append(s.sizes, z)
		s.ends = append(s.ends, int32(len(s.buf)))
	}
	s.copyRun(old, lo, run)
}

// copyRun appends old's entries lo to lo+n, all at once: between two checks
// of a sampled book most levels are unchanged, in a few long runs, and
// copying them entry by entry was most of a rebuild.
func (s *sideCache) copyRun(old *sideCache, lo, n int) {
	if n == 0 {
		return
	}
	var from int32
	if lo > 0 {
		from = old.ends[lo-1]
	}
	shift := int32(len(s.buf)) - from
	s.buf = append(s.buf, old.buf[from:old.ends[lo+n-1]]...)
	s.prices = append(s.prices, old.prices[lo:lo+n]...)
	s.sizes = append(s.sizes, old.sizes[lo:lo+n]...)
	k := len(s.ends)
	s.ends = append(s.ends, old.ends[lo:lo+n]...)
	for e := s.ends[k:]; len(e) > 0; e = e[1:] {
		e[0] += shift
	}
}

// entryBytes is the length of a typical entry, `{"price":"0.52","size":"1234.5"},`.
const entryBytes = 40

// appendEntry appends one level's hash-input entry with its trailing comma.
func appendEntry(dst []byte, price, size int64) []byte {
	dst = append(dst, `{"price":"`...)
	dst = appendDecimal(dst, price, priceDecimals)
	dst = append(dst, `","size":"`...)
	dst = appendDecimal(dst, size, sizeDecimals)
	return append(dst, `"},`...)
}

// set applies book.Set's rule to the serialized side: size 0 deletes the
// level at price (absent: no-op), else the level is replaced or inserted.
func (s *sideCache) set(bid bool, price, size int64) {
	// Find the first entry not worse than price, scanning from the best end
	// where nearly every change lands.
	i := len(s.prices)
	if bid {
		for i > 0 && s.prices[i-1] >= price {
			i--
		}
	} else {
		for i > 0 && s.prices[i-1] <= price {
			i--
		}
	}
	found := i < len(s.prices) && s.prices[i] == price
	if !found && size == 0 {
		return
	}
	lo := int32(0)
	if i > 0 {
		lo = s.ends[i-1]
	}
	hi := lo
	if found {
		hi = s.ends[i]
	}
	var tmp [96]byte // an entry of two int64 decimals fits
	var entry []byte
	if size > 0 {
		entry = appendEntry(tmp[:0], price, size)
	}
	delta := int32(len(entry)) - (hi - lo)
	n := int32(len(s.buf))
	if delta > 0 {
		s.buf = append(s.buf, entry[:delta]...) // grow; overwritten below
	}
	copy(s.buf[hi+delta:], s.buf[hi:n])
	copy(s.buf[lo:], entry)
	s.buf = s.buf[:n+delta]
	switch {
	case size == 0:
		s.prices = slices.Delete(s.prices, i, i+1)
		s.sizes = slices.Delete(s.sizes, i, i+1)
		s.ends = slices.Delete(s.ends, i, i+1)
	case found:
		s.sizes[i] = size
	default:
		s.prices = slices.Insert(s.prices, i, price)
		s.sizes = slices.Insert(s.sizes, i, size)
		s.ends = slices.Insert(s.ends, i, lo+int32(len(entry))-delta)
	}
	if delta != 0 {
		for k := i; k < len(s.ends); k++ {
			s.ends[k] += delta
		}
	}
}

// input returns the serialized side without its last comma.
func (s *sideCache) input() []byte {
	if len(s.buf) == 0 {
		return nil
	}
	return s.buf[:len(s.buf)-1]
}
