package hyperliquid

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// The channel parsers below read one data value at the scanner into
// out.Events and the decoder's scratch; they never touch a book. Field paths
// are formatted only on the error path.

// infoBody names the bare POST /info body in errors.
var infoBody = []byte("l2Book (POST /info body)")

// parseBook parses l2Book data, or the whole POST /info body:
// {"coin":…,"time":ms,"levels":[[bids…],[asks…]]}.
func (d *Decoder) parseBook(out *venue.Frame) error {
	sc := &d.sc
	if d.ch == nil {
		d.ch = infoBody
	}
	if err := sc.BeginObject(); err != nil {
		return d.errAt("data", err)
	}
	var coin []byte
	var ns int64
	haveLevels := false
	for first := true; ; first = false {
		key, ok, err := sc.NextKey(first)
		if err != nil {
			return d.errAt("data", err)
		}
		if !ok {
			break
		}
		switch string(key) {
		case "coin":
			if coin, err = d.coin("coin"); err != nil {
				return err
			}
		case "time":
			if ns, err = d.timeNs("time"); err != nil {
				return err
			}
		case "levels":
			if err := d.parseLevels(); err != nil {
				return err
			}
			haveLevels = true
		default:
			if _, err := sc.Skip(); err != nil {
				return d.errAt(string(key), err)
			}
		}
	}
	if coin == nil {
		return d.errAt("coin", ErrMissingField)
	}
	if !haveLevels {
		return d.errAt("levels", ErrMissingField)
	}
	if len(d.bids) > 0 && len(d.asks) > 0 && d.bids[0].Price >= d.asks[0].Price {
		// The venue's snapshot is one consistent book: never crossed or
		// locked (none in 26,131 real frames, PROTOCOLS.md §2.3).
		return d.errOff("levels", 0, fmt.Errorf("%w: best bid %s, best ask %s", ErrCrossed,
			book.FormatDecimal(d.bids[0].Price, Scale.PriceDecimals), book.FormatDecimal(d.asks[0].Price, Scale.PriceDecimals)))
	}
	ev := venue.Event{Type: venue.EventSnapshot, ExchangeNs: ns, Raw: d.frame}
	if len(d.bids) > 0 {
		ev.BidPrice, ev.BidSize, ev.HasBid = d.bids[0].Price, d.bids[0].Size, true
	}
	if len(d.asks) > 0 {
		ev.AskPrice, ev.AskSize, ev.HasAsk = d.asks[0].Price, d.asks[0].Size, true
	}
	d.push(out, ev, coin)
	return nil
}

// parseLevels parses [[bids…],[asks…]] into d.bids and d.asks.
func (d *Decoder) parseLevels() error {
	sc := &d.sc
	if err := sc.BeginArray(); err != nil {
		return d.errAt("levels", err)
	}
	for side := 0; ; side++ {
		at := d.valueStart()
		ok, err := sc.NextElem(side == 0)
		if err != nil {
			return d.errAt("levels", err)
		}
		if !ok {
			if side != 2 {
				return d.errOff("levels", at, ErrLevelSides)
			}
			return nil
		}
		if side == 2 {
			return d.errAt("levels", ErrLevelSides)
		}
		if side == 0 {
			d.bids, err = d.parseSide(d.bids[:0], book.Bid)
		} else {
			d.asks, err = d.parseSide(d.asks[:0], book.Ask)
		}
		if err != nil {
			return err
		}
	}
}

// parseSide parses one side of a snapshot into dst, checking it is strictly
// best-first: bids descending, asks ascending.
func (d *Decoder) parseSide(dst []book.Level, side book.Side) ([]book.Level, error) {
	sc := &d.sc
	if err := sc.BeginArray(); err != nil {
		return dst, d.errAt(fmt.Sprintf("levels[%d]", side), err)
	}
	if !d.generic {
		var next int
		var done bool
		dst, next, done = fastSide(sc.Bytes(), sc.Offset(), dst, side, d.opts.maxLevels)
		sc.SetOffset(next)
		if done {
			return dst, nil
		}
	}
	for i := len(dst); ; i++ {
		ok, err := sc.NextElem(i == 0)
		if err != nil {
			return dst, d.errAt(fmt.Sprintf("levels[%d]", side), err)
		}
		if !ok {
			return dst, nil
		}
		if i >= d.opts.maxLevels {
			return dst, d.errAt(fmt.Sprintf("levels[%d]", side), ErrTooManyLevels)
		}
		start := d.valueStart()
		lv, name, at, err := d.parseLevel()
		if err != nil {
			return dst, d.errOff(fmt.Sprintf("levels[%d][%d]%s", side, i, name), at, err)
		}
		if i > 0 {
			prev := dst[i-1].Price
			switch {
			case lv.Price == prev:
				err = book.ErrDuplicatePrice
			case (side == book.Bid) == (lv.Price > prev):
				err = ErrUnsorted
			}
			if err != nil {
				return dst, d.errOff(fmt.Sprintf("levels[%d][%d].px", side, i), start, err)
			}
		}
		dst = append(dst, lv)
	}
}

// parseLevel parses one {"px","sz","n"} level. On error it returns the
// offending field as a path suffix (".px") and the offset to report.
func (d *Decoder) parseLevel() (lv book.Level, name string, at int, err error) {
	sc := &d.sc
	at = d.valueStart()
	if lv, next, ok := fastLevel(sc.Bytes(), at); ok && !d.generic {
		sc.SetOffset(next)
		return lv, "", at, nil
	}
	if err = sc.BeginObject(); err != nil {
		return lv, "", at, err
	}
	havePx, haveSz := false, false
	for first := true; ; first = false {
		key, ok, err := sc.NextKey(first)
		if err != nil {
			return lv, "", sc.Offset(), err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "px":
			if lv.Price, at, err = d.positive("px", Scale.PriceDecimals); err != nil {
				return lv, ".px", at, err
			}
			havePx = true
		case "sz":
			if lv.Size, at, err = d.positive("sz", Scale.SizeDecimals); err != nil {
				return lv, ".sz", at, err
			}
			haveSz = true
		case "n":
			at = d.valueStart()
			n, err := sc.Int()
			if err != nil {
				return lv, ".n", at, err
			}
			if n > math.MaxInt32 {
				return lv, ".n", at, ErrRange
			}
			lv.Count = int32(n)
		default:
			if _, err := sc.Skip(); err != nil {
				return lv, "", sc.Offset(), err
			}
		}
	}
	if !havePx {
		return lv, ".px", sc.Offset(), ErrMissingField
	}
	if !haveSz {
		return lv, ".sz", sc.Offset(), ErrMissingField
	}
	return lv, "", at, nil
}

// decimal parses a decimal string value at the scanner.
func (d *Decoder) decimal(field string, decimals uint8) (v int64, at int, err error) {
	at = d.valueStart()
	s, err := d.sc.String()
	if err != nil {
		return 0, at, err
	}
	v, err = book.ParseDecimal(s, decimals)
	if err != nil {
		return 0, at, book.NewDecimalError(field, s, err)
	}
	return v, at, nil
}

// outside is decimal for a value outside the books (candle OHLCV, an asset
// context's markPx): one with more fractional digits than decimals is
// rounded half up at that scale instead of rejected (the venue prints
// computed values such as a volume "3495670.8399999999"); the exact text
// stays in the event's Raw. Syntax and range errors still reject.
func (d *Decoder) outside(field string, decimals uint8) (v int64, at int, err error) {
	at = d.valueStart()
	s, err := d.sc.String()
	if err != nil {
		return 0, at, err
	}
	v, err = book.ParseDecimal(s, decimals)
	if errors.Is(err, book.ErrPrecision) {
		v, err = roundDecimal(s, decimals)
	}
	if err != nil {
		return 0, at, book.NewDecimalError(field, s, err)
	}
	return v, at, nil
}

// roundDecimal parses s, a plain decimal with more than decimals fractional
// digits, rounded half up to decimals.
func roundDecimal(s []byte, decimals uint8) (int64, error) {
	dot := bytes.IndexByte(s, '.')
	if dot < 0 || len(s)-dot-1 <= int(decimals) {
		return book.ParseDecimal(s, decimals)
	}
	cut := dot + 1 + int(decimals)
	up := s[cut] >= '5' && s[cut] <= '9'
	for _, c := range s[cut:] {
		if c < '0' || c > '9' {
			return 0, book.ErrSyntax
		}
	}
	v, err := book.ParseDecimal(s[:cut], decimals)
	if err == nil && up {
		if v == 1<<63-1 {
			return 0, book.ErrRange
		}
		v++
	}
	return v, err
}

// positive is decimal for a value the venue never sends as zero.
func (d *Decoder) positive(field string, decimals uint8) (int64, int, error) {
	v, at, err := d.decimal(field, decimals)
	if err == nil && v == 0 {
		err = ErrNonPositive
	}
	return v, at, err
}

// timeNs parses a millisecond timestamp into ns.
func (d *Decoder) timeNs(field string) (int64, error) {
	at := d.valueStart()
	ms, err := d.sc.Int()
	if err != nil {
		return 0, d.errOff(field, at, err)
	}
	if ms > maxMs {
		return 0, d.errOff(field, at, ErrRange)
	}
	return ms * 1_000_000, nil
}

// coin reads a coin name: a non-empty string, unescaped in the rare case it
// holds escapes (the only allocation on a valid frame's path, and never seen
// on the wire).
func (d *Decoder) coin(field string) ([]byte, error) {
	at := d.valueStart()
	s, err := d.sc.String()
	if err != nil {
		return nil, d.errOff(field, at, err)
	}
	if len(s) == 0 {
		return nil, d.errOff(field, at, ErrMissingField)
	}
	if bytes.IndexByte(s, '\\') >= 0 {
		s = unescape(s)
	}
	return s, nil
}

// unescape decodes the escapes of a JSON string already validated by the
// scanner into a new slice.
func unescape(s []byte) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if r2 := hex4(s[i+3 : i+7]); utf16.DecodeRune(r, r2) != utf8.RuneError {
					r = utf16.DecodeRune(r, r2)
					i += 6
				}
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, s[i])
		}
	}
	return out
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// parseBbo parses {"coin","time","bbo":[level|null, level|null]}.
func (d *Decoder) parseBbo(out *venue.Frame) error {
	sc := &d.sc
	if err := sc.BeginObject(); err != nil {
		return d.errAt("data", err)
	}
	var coin []byte
	ev := venue.Event{Type: venue.EventQuote, Raw: d.frame}
	haveBbo := false
	for first := true; ; first = false {
		key, ok, err := sc.NextKey(first)
		if err != nil {
			return d.errAt("data", err)
		}
		if !ok {
			break
		}
		switch string(key) {
		case "coin":
			if coin, err = d.coin("coin"); err != nil {
				return err
			}
		case "time":
			if ev.ExchangeNs, err = d.timeNs("time"); err != nil {
				return err
			}
		case "bbo":
			if err := d.parseTouch(&ev); err != nil {
				return err
			}
			haveBbo = true
		default:
			if _, err := sc.Skip(); err != nil {
				return d.errAt(string(key), err)
			}
		}
	}
	if coin == nil {
		return d.errAt("coin", ErrMissingField)
	}
	if !haveBbo {
		return d.errAt("bbo", ErrMissingField)
	}
	d.push(out, ev, coin)
	return nil
}

// parseTouch parses the [bid|null, ask|null] pair of a bbo into ev.
func (d *Decoder) parseTouch(ev *venue.Event) error {
	sc := &d.sc
	if err := sc.BeginArray(); err != nil {
		return d.errAt("bbo", err)
	}
	for side := 0; ; side++ {
		at := d.valueStart()
		ok, err := sc.NextElem(side == 0)
		if err != nil {
			return d.errAt("bbo", err)
		}
		if !ok {
			if side != 2 {
				return d.errOff("bbo", at, ErrLevelSides)
			}
			return nil
		}
		if side == 2 {
			return d.errAt("bbo", ErrLevelSides)
		}
		if sc.IsNull() {
			d.bboCount[side] = 0
			continue
		}
		lv, name, at, err := d.parseLevel()
		if err != nil {
			return d.errOff(fmt.Sprintf("bbo[%d]%s", side, name), at, err)
		}
		d.bboCount[side] = lv.Count
		if side == 0 {
			ev.BidPrice, ev.BidSize, ev.HasBid = lv.Price, lv.Size, true
		} else {
			ev.AskPrice, ev.AskSize, ev.HasAsk = lv.Price, lv.Size, true
		}
	}
}

// parseTrades parses [{"coin","side","px","sz","time",…},…] into one event
// per trade.
func (d *Decoder) parseTrades(out *venue.Frame) error {
	sc := &d.sc
	if err := sc.BeginArray(); err != nil {
		return d.errAt("data", err)
	}
	text := sc.Bytes()
	for i := 0; ; i++ {
		ok, err := sc.NextElem(i == 0)
		if err != nil {
			return d.errAt("data", err)
		}
		if !ok {
			return nil
		}
		if i >= d.opts.maxTrades {
			return d.errAt(fmt.Sprintf("data[%d]", i), ErrTooManyTrades)
		}
		start := d.valueStart()
		ev := venue.Event{Type: venue.EventTrade}
		coin, name, at, err := d.parseTrade(&ev)
		if err != nil {
			return d.errOff(fmt.Sprintf("data[%d]%s", i, name), at, err)
		}
		ev.Raw = text[start:sc.Offset()]
		d.push(out, ev, coin)
	}
}

func (d *Decoder) parseTrade(ev *venue.Event) (coin []byte, name string, at int, err error) {
	sc := &d.sc
	at = d.valueStart()
	if err = sc.BeginObject(); err != nil {
		return nil, "", at, err
	}
	haveSide, havePx, haveSz := false, false, false
	for first := true; ; first = false {
		key, ok, err := sc.NextKey(first)
		if err != nil {
			return nil, "", sc.Offset(), err
		}
		if !ok {
			break
		}
		at = d.valueStart()
		switch string(key) {
		case "coin":
			s, err := sc.String()
			if err == nil && len(s) == 0 {
				err = ErrMissingField
			}
			if err != nil {
				return nil, ".coin", at, err
			}
			if bytes.IndexByte(s, '\\') >= 0 {
				s = unescape(s)
			}
			coin = s
		case "side":
			s, err := sc.String()
			if err != nil {
				return nil, ".side", at, err
			}
			switch string(s) {
			case "A":
				ev.Side = book.Ask
			case "B":
				ev.Side = book.Bid
			default:
				return nil, ".side", at, ErrSide
			}
			haveSide = true
		case "px":
			if ev.Price, at, err = d.positive("px", Scale.PriceDecimals); err != nil {
				return nil, ".px", at, err
			}
			havePx = true
		case "sz":
			if ev.Size, at, err = d.positive("sz", Scale.SizeDecimals); err != nil {
				return nil, ".sz", at, err
			}
			haveSz = true
		case "time":
			ms, err := sc.Int()
			if err == nil && ms > maxMs {
				err = ErrRange
			}
			if err != nil {
				return nil, ".time", at, err
			}
			ev.ExchangeNs = ms * 1_000_000
		case "tid":
			// The venue's trade id: a bare integer (50 bits), its text kept
			// as venue.Event.ID; a string is taken as sent.
			id, err := sc.StringOrNumber()
			if err != nil {
				return nil, ".tid", at, err
			}
			ev.ID = id
		default:
			if _, err := sc.Skip(); err != nil {
				return nil, "", sc.Offset(), err
			}
		}
	}
	at = sc.Offset()
	switch {
	case coin == nil:
		return nil, ".coin", at, ErrMissingField
	case !haveSide:
		return nil, ".side", at, ErrMissingField
	case !havePx:
		return nil, ".px", at, ErrMissingField
	case !haveSz:
		return nil, ".sz", at, ErrMissingField
	}
	return coin, "", at, nil
}

// parseMids parses {"mids":{coin:px,…},"dex"?:…}. Mids are midpoints and may
// need one decimal more than Scale, so they are checked to be strings and
// counted, not converted; Raw carries them.
func (d *Decoder) parseMids(out *venue.Frame) error {
	sc := &d.sc
	if err := sc.BeginObject(); err != nil {
		return d.errAt("data", err)
	}
	n := -1
	for first := true; ; first = false {
		key, ok, err := sc.NextKey(first)
		if err != nil {
			return d.errAt("data", err)
		}
		if !ok {
			break
		}
		if string(key) != "mids" {
			if _, err := sc.Skip(); err != nil {
				return d.errAt(string(key), err)
			}
			continue
		}
		if err := sc.BeginObject(); err != nil {
			return d.errAt("mids", err)
		}
		n = 0
		for first := true; ; first = false {
			_, ok, err := sc.NextKey(first)
			if err != nil {
				return d.errAt("mids", err)
			}
			if !ok {
				break
			}
			at := d.valueStart()
			if _, err := sc.String(); err != nil {
				return d.errOff(fmt.Sprintf("mids[%d]", n), at, err)
			}
			n++
		}
	}
	if n < 0 {
		return d.errAt("mids", ErrMissingField)
	}
	d.push(out, venue.Event{Type: venue.EventMids, Size: int64(n), Raw: d.frame}, nil)
	return nil
}

// parseCtx parses {"coin","ctx":{…,"markPx":…}}; only markPx is converted
// (the other values, midPx included, may not fit Scale and stay in Raw).
func (d *Decoder) parseCtx(out *venue.Frame) error {
	sc := &d.sc
	if err := sc.BeginObject(); err != nil {
		return d.errAt("data", err)
	}
	var coin []byte
	ev := venue.Event{Type: venue.EventAssetCtx, Raw: d.frame}
	haveCtx := false
	for first := true; ; first = false {
		key, ok, err := sc.NextKey(first)
		if err != nil {
			return d.errAt("data", err)
		}
		if !ok {
			break
		}
		switch string(key) {
		case "coin":
			if coin, err = d.coin("coin"); err != nil {
				return err
			}
		case "ctx":
			if err := sc.BeginObject(); err != nil {
				return d.errAt("ctx", err)
			}
			for first := true; ; first = false {
				key, ok, err := sc.NextKey(first)
				if err != nil {
					return d.errAt("ctx", err)
				}
				if !ok {
					break
				}
				if string(key) == "markPx" {
					v, at, err := d.outside("markPx", Scale.PriceDecimals)
					if err != nil {
						return d.errOff("ctx.markPx", at, err)
					}
					ev.Price = v
					continue
				}
				if _, err := sc.Skip(); err != nil {
					return d.errAt("ctx", err)
				}
			}
			haveCtx = true
		default:
			if _, err := sc.Skip(); err != nil {
				return d.errAt(string(key), err)
			}
		}
	}
	if coin == nil {
		return d.errAt("coin", ErrMissingField)
	}
	if !haveCtx {
		return d.errAt("ctx", ErrMissingField)
	}
	d.push(out, ev, coin)
	return nil
}

// parseCandle parses {"t","T","s","i","o","c","h","l","v","n"}.
func (d *Decoder) parseCandle(out *venue.Frame) error {
	sc := &d.sc
	if err := sc.BeginObject(); err != nil {
		return d.errAt("data", err)
	}
	var coin []byte
	ev := venue.Event{Type: venue.EventCandle, Raw: d.frame}
	haveT := false
	for first := true; ; first = false {
		key, ok, err := sc.NextKey(first)
		if err != nil {
			return d.errAt("data", err)
		}
		if !ok {
			break
		}
		switch string(key) {
		case "s":
			if coin, err = d.coin("s"); err != nil {
				return err
			}
		case "t":
			if ev.ExchangeNs, err = d.timeNs("t"); err != nil {
				return err
			}
			haveT = true
		case "o", "h", "l", "c":
			c := key[0]
			v, at, err := d.outside(string(key), Scale.PriceDecimals)
			if err != nil {
				return d.errOff(string(key), at, err)
			}
			if c == 'c' {
				ev.Price = v
			}
		case "v":
			v, at, err := d.outside("v", Scale.SizeDecimals)
			if err != nil {
				return d.errOff("v", at, err)
			}
			ev.Size = v
		case "n":
			at := d.valueStart()
			n, err := sc.Int()
			if err == nil && n > math.MaxInt32 {
				err = ErrRange
			}
			if err != nil {
				return d.errOff("n", at, err)
			}
			ev.Count = int32(n)
		default:
			if _, err := sc.Skip(); err != nil {
				return d.errAt(string(key), err)
			}
		}
	}
	if coin == nil {
		return d.errAt("s", ErrMissingField)
	}
	if !haveT {
		return d.errAt("t", ErrMissingField)
	}
	d.push(out, ev, coin)
	return nil
}
