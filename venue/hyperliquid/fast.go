package hyperliquid

import "github.com/tapedeck/tapedeck/book"

// The fast path reads the compact level shape every Hyperliquid server sends,
// {"px":"84143.0","sz":"10.25923","n":36}, straight from the bytes, fusing
// the JSON string scan with the decimal conversion. It accepts a strict
// subset of what the generic path accepts, with the same result, and gives up
// at the first byte it does not expect: the generic path then resumes at the
// last level it completed and reports any error with its offset. The fuzz
// target checks both paths agree.

// pow10Scale is 10^(8-frac) for frac fractional digits.
var pow10Scale = [...]int64{1e8, 1e7, 1e6, 1e5, 1e4, 1e3, 1e2, 1e1, 1}

// fastDecimal parses the digits of a decimal string at buf[i:] up to its
// closing quote and returns its value at 8 decimals and the offset after the
// quote. ok is false for anything but [0-9]{1,10}(\.[0-9]{1,8})?", which keeps
// the value below 10^18. (An eight-bytes-at-a-time SWAR conversion was tried
// and measured slower on 20+20-level frames: the per-character loop is short
// and predicts well.)
func fastDecimal(buf []byte, i int) (v int64, next int, ok bool) {
	if i >= len(buf) {
		return 0, 0, false
	}
	b := buf[i:] // indexing b from 0 lets the compiler drop bounds checks
	j := 0
	for ; j < len(b); j++ {
		c := b[j] - '0'
		if c > 9 {
			break
		}
		v = v*10 + int64(c)
	}
	if j == 0 || j > 10 || j >= len(b) {
		return 0, 0, false
	}
	frac := 0
	if b[j] == '.' {
		j++
		fs := j
		for ; j < len(b); j++ {
			c := b[j] - '0'
			if c > 9 {
				break
			}
			v = v*10 + int64(c)
		}
		if frac = j - fs; frac == 0 || frac > 8 || j >= len(b) {
			return 0, 0, false
		}
	}
	if b[j] != '"' {
		return 0, 0, false
	}
	return v * pow10Scale[frac], i + j + 1, true
}

// fastLevel parses one compact level at buf[i:] and returns the offset after
// its closing brace. It knows the wire order {"px","sz","n"} (n optional, as
// in trimmed REST bodies) and the alphabetical {"n","px","sz"} of older REST
// bodies.
func fastLevel(buf []byte, i int) (lv book.Level, next int, ok bool) {
	if len(buf)-i < 7 {
		return lv, 0, false
	}
	if string(buf[i:i+5]) == `{"n":` {
		if lv.Count, i, ok = fastCount(buf, i+5); !ok || i >= len(buf) || buf[i] != ',' {
			return lv, 0, false
		}
		i++
	} else if buf[i] == '{' {
		i++
	} else {
		return lv, 0, false
	}
	if len(buf)-i < 6 || string(buf[i:i+6]) != `"px":"` {
		return lv, 0, false
	}
	if lv.Price, i, ok = fastDecimal(buf, i+6); !ok || lv.Price == 0 {
		return lv, 0, false
	}
	if len(buf)-i < 7 || string(buf[i:i+7]) != `,"sz":"` {
		return lv, 0, false
	}
	if lv.Size, i, ok = fastDecimal(buf, i+7); !ok || lv.Size == 0 || i >= len(buf) {
		return lv, 0, false
	}
	if buf[i] == '}' {
		return lv, i + 1, true
	}
	if lv.Count != 0 || len(buf)-i < 5 || string(buf[i:i+5]) != `,"n":` {
		return lv, 0, false
	}
	if lv.Count, i, ok = fastCount(buf, i+5); !ok || i >= len(buf) || buf[i] != '}' {
		return lv, 0, false
	}
	return lv, i + 1, true
}

// fastCount parses the order count n at buf[i:]: 1–9 digits (so it fits
// int32), no leading zero (not JSON), followed by something that is not part
// of a number.
func fastCount(buf []byte, i int) (n int32, next int, ok bool) {
	start := i
	for i < len(buf) {
		c := buf[i] - '0'
		if c > 9 {
			break
		}
		n = n*10 + int32(c)
		i++
	}
	if d := i - start; d == 0 || d > 9 || (buf[start] == '0' && d > 1) {
		return 0, 0, false
	}
	return n, i, true
}

// fastSide parses the levels of one snapshot side starting just after its
// '[' at buf[i:], appending to dst while they stay strictly best-first and
// within max. It returns the offset after the last level it completed (or i)
// and done = true if it also consumed the closing ']'.
func fastSide(buf []byte, i int, dst []book.Level, side book.Side, max int) (_ []book.Level, next int, done bool) {
	for n := 0; ; n++ {
		if i >= len(buf) {
			return dst, i, false
		}
		j := i
		switch buf[j] {
		case ']':
			return dst, j + 1, true
		case ',':
			if n == 0 {
				return dst, i, false
			}
			j++
		default:
			if n > 0 {
				return dst, i, false
			}
		}
		lv, k, ok := fastLevel(buf, j)
		if !ok || n >= max {
			return dst, i, false
		}
		if n > 0 {
			prev := dst[len(dst)-1].Price
			if lv.Price == prev || (side == book.Bid) == (lv.Price > prev) {
				return dst, i, false
			}
		}
		dst = append(dst, lv)
		i = k
	}
}
