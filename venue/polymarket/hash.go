package polymarket

import (
	"crypto/sha1"
	"encoding/hex"
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
	// LastTradePrice, when not empty, is appended as "last_trade_price": the
	// form the server has used since about 2025-12. Empty selects the older
	// nine-field form.
	LastTradePrice string
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
	buf = appendHashTail(buf, f.NegRisk, f.LastTradePrice != "")
	if f.LastTradePrice != "" {
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
	dst = strconv.AppendUint(dst, ip, 10)
	if fp == 0 {
		return dst
	}
	for fp%10 == 0 {
		fp /= 10
		width--
	}
	var buf [8]byte
	buf[0] = '.'
	for k := width; k > 0; k-- {
		buf[k] = byte('0' + fp%10)
		fp /= 10
	}
	return append(dst, buf[:width+1]...)
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

// hashMatches reports whether sum equals the 40 hex digits of want (either case).
func hashMatches(sum *[sha1.Size]byte, want []byte) bool {
	if len(want) != 2*sha1.Size {
		return false
	}
	for i, c := range sum {
		if unhex(want[2*i]) != c>>4 || unhex(want[2*i+1]) != c&15 {
			return false
		}
	}
	return true
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0xff
}

// isHash40 reports whether h looks like a real book hash: 40 hex digits.
// Placeholders such as "0xabc" in synthetic frames are not checked.
func isHash40(h []byte) bool {
	if len(h) != 2*sha1.Size {
		return false
	}
	for _, c := range h {
		if unhex(c) == 0xff {
			return false
		}
	}
	return true
}
