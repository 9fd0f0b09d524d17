package polymarket

import (
	"encoding/binary"
	"math/bits"

	"github.com/tapedeck/tapedeck/book"
)

// Hand-written fast paths for the shapes that dominate real traffic. Each
// returns ok=false for anything unusual, and the caller re-reads the value
// with the generic scanner, which judges it exactly and names any error, so
// a fast path never has to be right about bad input, only about good input.

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// maxFastIntDigits keeps v·10^dec inside int64 for dec ≤ 6 without overflow checks.
const maxFastIntDigits = 12

// scanDec parses an unsigned plain decimal at b[i:] up to the first byte that
// is neither a digit nor the point, scaled by 10^dec, and returns the index of
// that byte. It fails on no digits, more than 12 integer digits, a non-zero
// digit beyond dec decimals, or a point with no digits after it. (Versions
// reading eight bytes at a time measured slower on the 1-to-8-digit values
// of real frames, twice: the multiplications that value the digits take
// longer than a well-predicted loop.)
func scanDec(b []byte, i int, dec int) (v int64, end int, ok bool) {
	start := i
	// Two digits per step: sizes carry up to 8 integer digits.
	for i+1 < len(b) {
		c0, c1 := b[i]-'0', b[i+1]-'0'
		if c0 > 9 {
			break
		}
		if c1 > 9 {
			v = v*10 + int64(c0)
			i++
			break
		}
		v = v*100 + int64(c0)*10 + int64(c1)
		i += 2
	}
	if i+1 >= len(b) {
		for i < len(b) && b[i]-'0' <= 9 {
			v = v*10 + int64(b[i]-'0')
			i++
		}
	}
	n := i - start
	if n > maxFastIntDigits {
		return 0, i, false
	}
	if i >= len(b) || b[i] != '.' {
		if n == 0 {
			return 0, i, false
		}
		return v * pow10[dec], i, true
	}
	// The fraction: up to dec digits valued, then only zeros.
	i++
	fs := i
	for lim := min(len(b), i+dec); i < lim; i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		v = v*10 + int64(c)
	}
	f := i - fs
	if f == dec {
		for i < len(b) && b[i] == '0' {
			i++
		}
		if i < len(b) && b[i]-'1' <= 8 {
			return 0, i, false
		}
	} else if f == 0 {
		return 0, i, false
	}
	return v * pow10[dec-f], i, true
}

const (
	levelPrice = `{"price":"`
	levelSize  = `"size":"`
)

// scanLevel parses the wire's level object {"price":"P","size":"S"} (with
// optional spaces after the comma, as some server paths write) at b[i:] and
// returns the index after its closing brace.
func (d *Decoder) scanLevel(b []byte, i int) (price, size int64, end int, ok bool) {
	if string(d.at16(b, i)[:len(levelPrice)]) != levelPrice {
		return 0, 0, 0, false
	}
	price, j, ok := scanDec(b, i+len(levelPrice), priceDecimals)
	if !ok || j+1 >= len(b) || b[j] != '"' || b[j+1] != ',' {
		return 0, 0, 0, false
	}
	j += 2
	for j < len(b) && b[j] == ' ' {
		j++
	}
	if string(d.at16(b, j)[:len(levelSize)]) != levelSize {
		return 0, 0, 0, false
	}
	size, j, ok = scanDec(b, j+len(levelSize), sizeDecimals)
	if !ok || j+1 >= len(b) || b[j] != '"' || b[j+1] != '}' {
		return 0, 0, 0, false
	}
	return price, size, j + 2, true
}

// fastString scans the JSON string whose opening quote is b[i] and returns
// the bounds of its contents. It reads eight bytes at a time and fails on an
// escape or a control character, which the generic scanner then judges. Ids
// of 66 to 78 bytes are most of a small frame's text.
func fastString(b []byte, i int) (lo, hi int, ok bool) {
	j := i + 1
	for j+8 <= len(b) {
		// A byte below '0' (the quote, a control character, or punctuation
		// that ids, hashes and markets do not have) or a backslash stops
		// the word: two tests a word, where the quote, the backslash and
		// control characters took three.
		w := binary.LittleEndian.Uint64(b[j:])
		if m := hasLess(w, '0') | hasZero(w^(ones*'\\')); m != 0 {
			j += bits.TrailingZeros64(m) >> 3
			switch c := b[j]; {
			case c == '"':
				return i + 1, j, true
			case c == '\\' || c < 0x20:
				return 0, 0, false
			}
			j++ // punctuation: read on
			continue
		}
		j += 8
	}
	for ; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return i + 1, j, true
		case c == '\\' || c < 0x20:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasZero sets the high bit of the first zero byte of w (and maybe of later
// bytes: only the lowest set bit is exact, which is all callers use).
func hasZero(w uint64) uint64 { return (w - ones) & ^w & highs }

// hasLess sets the high bit of the first byte of w below n (n ≤ 128).
func hasLess(w uint64, n uint64) uint64 { return (w - ones*n) & ^w & highs }

// isSpace reports JSON white space; the first comparison settles the usual
// case, a byte that is none.
func isSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

// nextKey is jscan's NextKey with a fast path for a plain key: it returns the
// raw key positioned at the value. Anything unusual (the closing brace, an
// escape, a syntax error) goes to the generic scanner.
func (d *Decoder) nextKey(first bool) ([]byte, bool, error) {
	b := d.frame
	i := d.s.Offset()
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if !first {
		if i >= len(b) || b[i] != ',' {
			return d.s.NextKey(first)
		}
		i++
		for i < len(b) && isSpace(b[i]) {
			i++
		}
	}
	if i >= len(b) || b[i] != '"' {
		return d.s.NextKey(first)
	}
	lo, hi, ok := fastString(b, i)
	if !ok {
		return d.s.NextKey(first)
	}
	j := hi + 1
	for j < len(b) && isSpace(b[j]) {
		j++
	}
	if j >= len(b) || b[j] != ':' {
		return d.s.NextKey(first)
	}
	d.s.SetOffset(j + 1)
	return b[lo:hi], true, nil
}

// str reads a string value with fastString, falling back to the scanner.
func (d *Decoder) str() ([]byte, error) {
	b := d.frame
	i := d.s.Offset()
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i < len(b) && b[i] == '"' {
		if lo, hi, ok := fastString(b, i); ok {
			d.s.SetOffset(hi + 1)
			return b[lo:hi], nil
		}
	}
	return d.s.String()
}

// The wire's price_changes entry, compact as in older frames, or with a
// space after each comma as live frames have it since 2025 (PROTOCOLS.md
// §1.9): each field's key with the separator before it, in both forms.
//
//	{"asset_id":"A","price":"P","size":"S","side":"BUY","hash":"H","best_bid":"B","best_ask":"A"}
//	{"asset_id":"A", "price":"P", "size":"S", "side":"BUY", "hash":"H", "best_bid":"B", "best_ask":"A"}
const (
	chAsset    = `{"asset_id":"`
	chPrice    = `","price":"`
	chSize     = `","size":"`
	chSide     = `","side":"`
	chHash     = `","hash":"`
	chBestBid  = `","best_bid":"`
	chBestAsk  = `","best_ask":"`
	chsPrice   = `", "price":"`
	chsSize    = `", "size":"`
	chsSide    = `", "side":"`
	chsHash    = `", "hash":"`
	chsBestBid = `", "best_bid":"`
	chsBestAsk = `", "best_ask":"`
)

// win returns b[i:i+n], or nil when that is not inside b. Callers compare
// string(win(b, i, len(lit))) == lit with lit a constant at the comparison
// itself: the compiler then emits a few wide loads and compares for a lit of
// up to 16 bytes. (A helper taking lit as a parameter, even inlined, called
// runtime.memequal for each literal: seven calls per price_changes entry.)
func win(b []byte, i, n int) []byte {
	if i < 0 || n > len(b)-i {
		return nil
	}
	return b[i : i+n]
}

// at16 returns the 16 bytes at b[i:], zero-padded past its end (in
// d.pad; no literal has a zero byte). A literal of up to 16 bytes compared
// with a prefix of them, string(d.at16(b, i)[:len(lit)]) == lit, compiles to a
// few wide loads and compares behind one bounds check, where win's slice
// took some fifteen instructions a literal.
func (d *Decoder) at16(b []byte, i int) *[16]byte {
	if i >= 0 && i <= len(b)-16 {
		return (*[16]byte)(b[i:])
	}
	return d.padded(b, i)
}

//go:noinline
func (d *Decoder) padded(b []byte, i int) *[16]byte { // rare: keeps at16 small where inlined
	d.pad = [16]byte{}
	if i >= 0 && i < len(b) {
		copy(d.pad[:], b[i:])
	}
	return &d.pad
}

// scanChange parses the wire's price_changes entry at b[i:] into c (every
// field but start and end, which the caller sets) and returns the index
// after its closing brace. Any other shape (key order, white space, an
// escape, a missing or null field, a side other than BUY/SELL, an empty
// asset id) is ok=false, with c partly written, and parseChange then judges
// the entry and names any problem: for the entries it accepts, both give the
// same change.
func (d *Decoder) scanChange(c *change, i int) (end int, ok bool) {
	b := d.frame
	if string(d.at16(b, i)[:len(chAsset)]) != chAsset {
		return 0, false
	}
	in, lo, hi := d.knownID(i + len(chAsset) - 1)
	if in == nil {
		if lo, hi, ok = fastString(b, i+len(chAsset)-1); !ok || hi == lo {
			return 0, false
		}
	}
	j := 0
	if k := d.at16(b, hi); string(k[:len(chPrice)]) == chPrice {
		j = hi + len(chPrice)
	} else if string(k[:len(chsPrice)]) == chsPrice {
		j = hi + len(chsPrice)
	} else {
		return 0, false
	}
	c.asset, c.inst = b[lo:hi], in
	if c.price, j, ok = scanDec(b, j, priceDecimals); !ok {
		return 0, false
	}
	if k := d.at16(b, j); string(k[:len(chSize)]) == chSize {
		j += len(chSize)
	} else if string(k[:len(chsSize)]) == chsSize {
		j += len(chsSize)
	} else {
		return 0, false
	}
	if c.size, j, ok = scanDec(b, j, sizeDecimals); !ok {
		return 0, false
	}
	if k := d.at16(b, j); string(k[:len(chSide)]) == chSide {
		j += len(chSide)
	} else if string(k[:len(chsSide)]) == chsSide {
		j += len(chsSide)
	} else {
		return 0, false
	}
	switch k := d.at16(b, j); {
	case string(k[:len(`BUY`)]) == `BUY`:
		c.side, j = book.Bid, j+3
	case string(k[:len(`SELL`)]) == `SELL`:
		c.side, j = book.Ask, j+4
	default:
		return 0, false
	}
	if k := d.at16(b, j); string(k[:len(chHash)]) == chHash {
		j += len(chHash) - 1
	} else if string(k[:len(chsHash)]) == chsHash {
		j += len(chsHash) - 1
	} else {
		return 0, false
	}
	if lo, hi, ok = fastString(b, j); !ok {
		return 0, false
	}
	c.hash = b[lo:hi]
	if k := d.at16(b, hi); string(k[:len(chBestBid)]) == chBestBid {
		j = hi + len(chBestBid)
	} else if string(k[:len(chsBestBid)]) == chsBestBid {
		j = hi + len(chsBestBid)
	} else {
		return 0, false
	}
	if c.bestBid, j, ok = scanDec(b, j, priceDecimals); !ok {
		return 0, false
	}
	if k := d.at16(b, j); string(k[:len(chBestAsk)]) == chBestAsk {
		j += len(chBestAsk)
	} else if string(k[:len(chsBestAsk)]) == chsBestAsk {
		j += len(chsBestAsk)
	} else {
		return 0, false
	}
	if c.bestAsk, j, ok = scanDec(b, j, priceDecimals); !ok || j+1 >= len(b) || b[j] != '"' || b[j+1] != '}' {
		return 0, false
	}
	c.bestAsk = emptyAsk(c.bestAsk)
	c.hasTop = c.bestBid != 0 || c.bestAsk != 0
	return j + 2, true
}
