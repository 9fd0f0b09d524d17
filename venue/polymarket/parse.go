package polymarket

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue/internal/jscan"
)

// This file is the first of Decode's two passes: it walks the whole frame,
// validates every message and parses levels into scratch, touching no book.
// Semantic problems inside a message are held back until its event_type is
// known (key order is free, and event_type may come last), so a message of a
// type we skip never fails over a field we would not have used.

// kind is what a message is, from its event_type.
type kind uint8

const (
	kUnknown kind = iota
	kText
	kBook
	kPriceChange
	kTrade
	kTick
	kQuote
	kMarket
	kRejected // a message of one of the kinds above that failed validation: msg.want, msg.err
)

// val is a raw scalar of a message: its text (nil when absent) and offset.
type val struct {
	b   []byte
	off int
}

// msg is one parsed message of a frame. Byte slices point into the frame.
type msg struct {
	kind       kind
	start, end int
	typ        []byte
	asset      val
	market     []byte
	ts         val   // raw timestamp text
	tsMs       int64 // as sent (normally ms); batches compare it
	tsNs       int64
	hash       []byte

	// The other raw scalars (price, size, side, …), parsed once the kind is
	// known, are in Decoder.sc: only classify reads them, right after the
	// message is parsed, and zeroing them with every message cost more than
	// the rest of a small frame's setup.
	negRisk int8 // -1 absent, 0 false, 1 true

	hasBids, hasAsks, hasChanges, legacyChanges bool
	bidLo, bidHi, askLo, askHi                  int // ranges of Decoder.levels
	bidOff, askOff                              int // offsets of the arrays
	bidOrder, askOrder                          order
	chLo, chHi                                  int // range of Decoder.changes

	deferred error       // first semantic problem, reported only for kinds we decode
	inst     *instrument // the asset's instrument if it existed at parse time
	txHash   []byte      // last_trade_price's transaction_hash, the trade's id
	nums     uint32      // bit kc: the scalar of key code kc was a bare number, not a string
	ltpEmpty bool        // "last_trade_price":"" (present, empty: no trade yet)
	ltpPad   int8        // last_trade_price's text: 1 padded to three decimals ("0.500"), -1 not, 0 unknown
	rej      int32       // kind kRejected: 1 + its index in Decoder.rejs
	typKind  kind        // kBook or kPriceChange when parse matched typ as a constant, else kUnknown
	tsOK     bool        // tsMs holds ts's value, read as it was scanned

	// Parsed scalars.
	pPrice, pSize, pBid, pAsk, pTick, pMinOrder, pLtp int64
	pSide                                             book.Side
	hasBid, hasAsk                                    bool
}

// change is one entry of a price_change message.
type change struct {
	start, end       int
	asset            []byte
	price, size      int64
	side             book.Side
	hash             []byte
	bestBid, bestAsk int64       // 0 = side empty (the sentinels "0", "" and, for asks, "1")
	hasTop           bool        // both best_bid and best_ask given and not both empty
	inst             *instrument // the asset's instrument if it existed at parse time
}

// order is the price order of a snapshot side as parsed.
type order uint8

const (
	orderUp   order = 1 << iota // strictly ascending so far
	orderDown                   // strictly descending so far
)

// parse runs the validation pass over frame into d.msgs.
func (d *Decoder) parse(frame []byte) error {
	d.frame = frame
	d.msgs = d.msgs[:0]
	if len(d.rejs) > 0 {
		clear(d.rejs)
		d.rejs = d.rejs[:0]
	}
	d.levels = d.levels[:0]
	d.changes = d.changes[:0]
	s := &d.s
	s.Reset(frame)
	newIDs := 0
	switch c := s.Peek(); {
	case c == '{':
		if err := d.parseMsg(&newIDs); err != nil {
			return err
		}
	case c == '[':
		start := s.Offset()
		s.BeginArray()
		n := 0
		for first := true; ; first = false {
			// The wire's shape first: a message right after the '[' or a
			// ',', or the ']' right after the last; anything else goes to
			// the scanner.
			if i := s.Offset(); i < len(frame) && frame[i] == '{' && first {
				n++
				if err := d.parseMsg(&newIDs); err != nil {
					return err
				}
				continue
			} else if i+1 < len(frame) && frame[i] == ',' && frame[i+1] == '{' && !first {
				n++
				s.SetOffset(i + 1)
				if err := d.parseMsg(&newIDs); err != nil {
					return err
				}
				continue
			} else if i < len(frame) && frame[i] == ']' && !first {
				s.SetOffset(i + 1)
				break
			}
			ok, err := s.NextElem(first)
			if err != nil {
				return d.syntax(err, "")
			}
			if !ok {
				break
			}
			n++
			if s.Peek() != '{' {
				// Not a message: rejected alone, like any bad element.
				off := s.Offset()
				if _, err := s.Skip(); err != nil {
					return d.syntax(err, "")
				}
				d.msgs = append(d.msgs, msg{start: off, end: s.Offset()})
				d.reject(&d.msgs[len(d.msgs)-1], kUnknown, &DecodeError{Offset: off, Err: ErrType})
				continue
			}
			if err := d.parseMsg(&newIDs); err != nil {
				return err
			}
		}
		if n == 0 && s.AtEnd() {
			// An empty list of messages (a /books body for no assets, an
			// empty Gamma page): nothing to apply, but not silent.
			d.msgs = append(d.msgs, msg{kind: kUnknown, start: start, end: s.Offset(), typ: emptyList})
		}
	case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
		t := trimRight(frame[s.Offset():])
		switch string(t) {
		case "null", "true", "false":
			return &DecodeError{Offset: s.Offset(), Err: fmt.Errorf("%w: JSON %s", ErrFrame, t)}
		}
		// PONG, PING and other server text such as "INVALID OPERATION".
		d.msgs = append(d.msgs, msg{kind: kText, start: s.Offset(), end: len(trimRight(frame))})
		return nil
	default: // empty, a JSON scalar, or garbage
		return &DecodeError{Offset: s.Offset(), Err: ErrFrame}
	}
	if s.Offset() != len(frame) && !s.AtEnd() {
		return &DecodeError{Offset: s.Offset(), Err: fmt.Errorf("%w: data after the top-level value", ErrSyntax)}
	}
	return nil
}

func trimRight(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case ' ', '\t', '\r', '\n':
			b = b[:len(b)-1]
			continue
		}
		break
	}
	return b
}

// syntax wraps a scanner error as a DecodeError at the scanner's offset.
func (d *Decoder) syntax(err error, event string) error {
	if se, ok := err.(*jscan.SyntaxError); ok {
		return &DecodeError{Offset: se.Offset, Event: event, Err: fmt.Errorf("%w: %s", ErrSyntax, se.Msg)}
	}
	return &DecodeError{Offset: d.s.Offset(), Event: event, Err: err}
}

// hold records the first semantic problem of m.
func (m *msg) hold(off int, field string, err error) {
	if m.deferred == nil {
		m.deferred = &DecodeError{Offset: off, Field: field, Err: err}
	}
}

// parseMsg parses one message object at the scanner and appends it to d.msgs.
func (d *Decoder) parseMsg(newIDs *int) error {
	s := &d.s
	// Fill the message in place: it is large, and copying it costs more
	// than the rest of a small frame.
	d.msgs = slices.Grow(d.msgs, 1)
	d.msgs = d.msgs[:len(d.msgs)+1]
	m := &d.msgs[len(d.msgs)-1]
	*m = msg{start: s.Offset(), negRisk: -1}
	d.scSet = 0
	s.BeginObject()
	b := d.frame
	for first := true; ; first = false {
		// The wire's shape, `,"key":` right after the previous value
		// (`"key":` first) or the closing brace, is read here; anything
		// else goes to nextKeyCode.
		var err error
		kc, n, i, at := kcOther, 0, s.Offset(), first
		if !first && i < len(b) {
			switch b[i] {
			case ',':
				i, at = i+1, true
				if i < len(b) && b[i] == ' ' { // live frames: PROTOCOLS.md §1.9
					i++
				}
			case '}':
				s.SetOffset(i + 1)
				goto end
			}
		}
		if at && i >= 0 && len(b)-i >= 16 {
			kc, n = keyColon16((*[16]byte)(b[i : i+16]))
		}
		if kc != kcOther && n <= 16 {
			s.SetOffset(i + n)
		} else {
			var ok bool
			if kc, ok, err = d.nextKeyCode(first); err != nil {
				return d.syntax(err, "")
			} else if !ok {
				break
			}
		}
		switch kc {
		case kcEventType:
			// The two types of nearly every frame, matched as constants.
			if off := s.Offset(); string(d.at16(b, off)[:len(`"book"`)]) == `"book"` {
				m.typ, m.typKind = b[off+1:off+5], kBook
				s.SetOffset(off + len(`"book"`))
				break
			} else if string(d.at16(b, off)[:len(`"price_change"`)]) == `"price_change"` {
				m.typ, m.typKind = b[off+1:off+13], kPriceChange
				s.SetOffset(off + len(`"price_change"`))
				break
			}
			m.typKind = kUnknown
			m.typ, err = d.rawString(m, "event_type")
		case kcAssetID:
			m.asset.off = s.Offset()
			if in, lo, hi := d.knownID(m.asset.off); in != nil {
				m.asset.b, m.inst = d.frame[lo:hi], in
				s.SetOffset(hi + 1)
				break
			}
			m.inst = nil
			m.asset.b, err = d.rawString(m, "asset_id")
		case kcMarket:
			if lo, hi, ok := d.knownMarket(s.Offset()); ok {
				m.market = d.frame[lo:hi]
				s.SetOffset(hi + 1)
				break
			}
			m.market, err = d.rawString(m, "market")
		case kcHash:
			m.hash, err = d.rawString(m, "hash")
		case kcTimestamp:
			if d.fastTs(m) {
				break
			}
			m.tsOK = false
			err = d.rawScalar(m, &m.ts, kc)
		case kcPrice:
			err = d.rawScalar(m, d.scalar(kc), kc)
		case kcSize:
			err = d.rawScalar(m, d.scalar(kc), kc)
		case kcSide:
			err = d.rawScalar(m, d.scalar(kc), kc)
		case kcBestBid:
			err = d.rawScalar(m, d.scalar(kc), kc)
		case kcBestAsk:
			err = d.rawScalar(m, d.scalar(kc), kc)
		case kcNewTick:
			err = d.rawScalar(m, d.scalar(kc), kc)
		case kcTickSize:
			err = d.rawScalar(m, d.scalar(kc), kc)
		case kcMinOrder:
			err = d.rawScalar(m, d.scalar(kc), kc)
		case kcLastTrade:
			err = d.rawScalar(m, d.scalar(kc), kc)
		case kcNegRisk:
			off := s.Offset()
			switch s.Peek() {
			case 't', 'f':
				var lit []byte
				lit, err = s.Literal()
				if err == nil {
					if lit[0] == 't' {
						m.negRisk = 1
					} else {
						m.negRisk = 0
					}
				}
			default:
				m.hold(off, "neg_risk", ErrType)
				_, err = s.Skip()
			}
		case kcBids:
			m.hasBids = true
			m.bidOff = s.Offset()
			m.bidLo, m.bidHi, m.bidOrder, err = d.parseSide(m, "bids")
		case kcAsks:
			m.hasAsks = true
			m.askOff = s.Offset()
			m.askLo, m.askHi, m.askOrder, err = d.parseSide(m, "asks")
		case kcPriceChanges:
			m.hasChanges = true
			m.chLo, m.chHi, err = d.parseChanges(m)
		case kcChanges:
			m.legacyChanges = true
			_, err = s.Skip()
		case kcTxHash:
			m.txHash, err = d.rawString(m, "transaction_hash")
		default:
			_, err = s.Skip()
		}
		if err != nil {
			return d.syntax(err, string(m.typ))
		}
	}
end:
	m.end = s.Offset()
	// A semantic problem rejects this message alone: the frame's other
	// messages still apply (each book of an initial dump stands alone).
	saved := *newIDs
	if err := d.classify(m, newIDs); err != nil {
		*newIDs = saved
		if de, ok := err.(*DecodeError); ok && de.Asset == "" && len(m.asset.b) > 0 {
			de.Asset = string(m.asset.b)
		}
		d.reject(m, m.kind, err)
	}
	return nil
}

// rejection is a message parse rejected: the kind it would have been and why.
type rejection struct {
	want kind
	err  error
}

// reject marks m rejected (kept out of msg, which every message zeroes).
func (d *Decoder) reject(m *msg, want kind, err error) {
	d.rejs = append(d.rejs, rejection{want, err})
	m.kind, m.rej = kRejected, int32(len(d.rejs))
}

// knownID reports whether the string at frame[i] (its opening quote, no
// white space before) is the id of the last or the one-before-last
// instrument looked up, or of the instrument its hint names (hint.go), and
// returns that instrument and the string's contents. Consecutive messages are mostly for one asset or the two of one
// market: comparing with a known id costs less than scanning a new one for
// its end and then looking it up. An id is a string's raw contents as once
// scanned, so the same bytes followed by a quote are that whole string.
func (d *Decoder) knownID(i int) (in *instrument, lo, hi int) {
	b := d.frame
	if i >= len(b) || b[i] != '"' {
		return nil, 0, 0
	}
	k, long := keyAt(b, i+1)
	if in := d.last; in != nil && in.at(b, i+1, k, long) {
		return in, i + 1, i + 1 + len(in.id)
	}
	if in := d.prev; in != nil && in.at(b, i+1, k, long) {
		d.prev, d.last = d.last, in
		return in, i + 1, i + 1 + len(in.id)
	}
	if !long {
		return nil, 0, 0
	}
	if h := &d.instHints[k.slot()]; h.in != nil && h.k == k && idAt(b, i+1, h.in.id) {
		d.prev, d.last = d.last, h.in
		return h.in, i + 1, i + 1 + len(h.in.id)
	}
	return nil, 0, 0
}

// at reports whether b[j:] is in's id then a closing quote; k is the key at
// b[j] when long. Comparing keys first settles most misses in registers.
func (in *instrument) at(b []byte, j int, k idKey, long bool) bool {
	if long && in.long && in.key != k {
		return false
	}
	return idAt(b, j, in.id)
}

// idAt reports whether b[j:] is id then a closing quote.
func idAt(b []byte, j int, id string) bool {
	k := j + len(id)
	return k < len(b) && b[k] == '"' && string(b[j:k]) == id
}

// knownMarket is knownID for the market of the last instrument looked up, or
// a market its hint names.
func (d *Decoder) knownMarket(i int) (lo, hi int, ok bool) {
	b := d.frame
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	if in := d.last; in != nil && in.market != "" && idAt(b, i+1, in.market) {
		return i + 1, i + 1 + len(in.market), true
	}
	if n, ok := d.hintedMarket(b, i+1); ok {
		return i + 1, i + 1 + n, true
	}
	return 0, 0, false
}

// rawString reads a string value (or null, as absent). Another type is held
// as a semantic problem and skipped.
func (d *Decoder) rawString(m *msg, field string) ([]byte, error) {
	s := &d.s
	if b, i := d.frame, s.Offset(); i < len(b) && b[i] == '"' {
		if lo, hi, ok := fastString(b, i); ok {
			s.SetOffset(hi + 1)
			return b[lo:hi], nil
		}
	}
	switch s.Peek() {
	case '"':
		return d.str()
	case 'n':
		if s.IsNull() {
			return nil, nil
		}
	}
	m.hold(s.Offset(), field, ErrType)
	_, err := s.Skip()
	return nil, err
}

// rawScalar reads a string or number value into v (null = absent); a bare
// number sets kc's bit in m.nums.
func (d *Decoder) rawScalar(m *msg, v *val, kc keyCode) error {
	s := &d.s
	v.off = s.Offset()
	if b := d.frame; v.off < len(b) {
		switch c := b[v.off]; {
		case c == '"':
			if lo, hi, ok := fastString(b, v.off); ok {
				s.SetOffset(hi + 1)
				v.b = b[lo:hi]
				return nil
			}
		case c >= '1' && c <= '9':
			// A bare integer (a timestamp) without a fraction or exponent,
			// which Number would judge: its text is the digits.
			j := v.off + 1
			for j < len(b) && b[j]-'0' <= 9 {
				j++
			}
			if j == len(b) || b[j] != '.' && b[j] != 'e' && b[j] != 'E' {
				s.SetOffset(j)
				v.b = b[v.off:j]
				m.nums |= 1 << kc
				return nil
			}
		}
	}
	switch c := s.Peek(); {
	case c == '"':
		b, err := d.str()
		v.b = b
		return err
	case c == '-' || c >= '0' && c <= '9':
		b, err := s.Number()
		v.b = b
		m.nums |= 1 << kc
		return err
	case c == 'n':
		if s.IsNull() {
			v.b = nil
			return nil
		}
	}
	v.off = s.Offset()
	m.hold(v.off, keyNames[kc], ErrType)
	_, err := s.Skip()
	return err
}

// fastTs reads a timestamp of at most 18 digits, as a string or a bare
// integer, valuing it as it scans (parseTs would read it again). Anything
// else is false, for rawScalar and parseTs to judge.
func (d *Decoder) fastTs(m *msg) bool {
	s := &d.s
	b, off := d.frame, s.Offset()
	if off >= len(b) {
		return false
	}
	str := b[off] == '"'
	j := off
	if str {
		j++
	} else if b[off]-'1' > 8 {
		return false // not a bare integer as rawScalar reads one (no sign, no leading zero)
	}
	lo := j
	v, n := digitsAt(b, j)
	j += n
	if n == 0 || n > 18 || j >= len(b) {
		return false
	}
	switch {
	case str && b[j] == '"':
		s.SetOffset(j + 1)
	case !str && b[j] != '.' && b[j] != 'e' && b[j] != 'E':
		s.SetOffset(j)
		m.nums |= 1 << kcTimestamp
	default:
		return false
	}
	m.ts = val{b: b[lo:j], off: off}
	m.tsMs, m.tsOK = int64(v), true
	return true
}

// digitsAt values the run of up to 18 ASCII digits at b[j:] and returns its
// length (more than 18: the length only, v meaningless). A run of up to 16
// digits with 16 bytes to read (a ms or µs timestamp) is valued a word at a time: a 13-digit
// timestamp one digit at a time is a chain of 13 multiply-adds, the costliest
// part of a small frame's header.
func digitsAt(b []byte, j int) (v uint64, n int) {
	if j >= 0 && len(b)-j >= 16 {
		w1 := binary.LittleEndian.Uint64(b[j:])
		if n = bits.TrailingZeros64(nonDigits(w1)) >> 3; n < 8 {
			if n == 0 {
				return 0, 0
			}
			return digits8((w1 - ones*'0') << (64 - 8*n)), n
		}
		w2 := binary.LittleEndian.Uint64(b[j+8:])
		switch n = bits.TrailingZeros64(nonDigits(w2)) >> 3; {
		case n == 0:
			return digits8(w1 - ones*'0'), 8
		case n < 8:
			return digits8(w1-ones*'0')*uint64(pow10[n]) + digits8((w2-ones*'0')<<(64-8*n)), 8 + n
		case len(b)-j == 16 || b[j+16]-'0' > 9: // 16 digits: a µs timestamp
			return digits8(w1-ones*'0')*1e8 + digits8(w2-ones*'0'), 16
		}
	}
	n = 0
	for k := j; k < len(b); k++ {
		c := b[k] - '0'
		if c > 9 {
			break
		}
		v = v*10 + uint64(c)
		n++
	}
	return v, n
}

// nonDigits returns a word whose lowest non-zero byte is that of the first
// byte of w (little-endian) that is not an ASCII digit; 0 if all are digits.
// Borrows and carries move only upwards, past that byte.
func nonDigits(w uint64) uint64 {
	return ((w & (ones * 0xf0)) - ones*0x30) | (((w + ones*0x06) & (ones * 0xf0)) - ones*0x30)
}

// digits8 values eight digit values (0 to 9, one a byte, the first byte the
// most significant) as one number.
func digits8(x uint64) uint64 {
	x = x*10 + x>>8 // each even byte: ten times itself plus the next
	const mask = 0x000000ff000000ff
	return ((x&mask)*(100+1000000<<32) + (x>>16&mask)*(1+10000<<32)) >> 32
}

// scalar returns the slot of the message's scalar of key code kc, now given.
func (d *Decoder) scalar(kc keyCode) *val {
	d.scSet |= 1 << kc
	return &d.sc[kc]
}

// sv returns the message's scalar of key code kc; absent (nil) if not given.
func (d *Decoder) sv(kc keyCode) val {
	if d.scSet&(1<<kc) == 0 {
		return val{}
	}
	return d.sc[kc]
}

// num reports whether the scalar of key code kc was a bare number.
func (m *msg) num(kc keyCode) bool { return m.nums&(1<<kc) != 0 }

// after is the order of a side once price follows prev.
func (o order) after(prev, price int64) order {
	if price <= prev {
		o &^= orderUp
	}
	if price >= prev {
		o &^= orderDown
	}
	return o
}

// parseSide parses a snapshot side into d.levels, returning its range and
// price order. A semantic problem is held in m and the array skipped.
func (d *Decoder) parseSide(m *msg, name string) (lo, hi int, ord order, err error) {
	s := &d.s
	lo = len(d.levels)
	b := d.frame
	if i := s.Offset(); i < len(b) && b[i] == '[' {
		s.SetOffset(i + 1)
	} else if s.Peek() == '[' {
		s.BeginArray()
	} else {
		m.hold(s.Offset(), name, ErrType)
		_, err = s.Skip()
		return lo, lo, 0, err
	}
	arr := s.Offset() - 1
	ord = orderUp | orderDown
	var prev int64
	// The wire's levels back to back, in a loop of its own: the first
	// level that is not the usual shape, or not good, and anything else
	// after a level, go to the loop below from where this one stopped, which
	// reads that level again and names any problem.
	idx, at := 0, arr+1
	if at < len(b) && b[at] == ']' {
		s.SetOffset(at + 1)
		return lo, lo, ord, nil
	}
	for j := at; ; idx++ {
		price, size, end, ok := d.scanLevel(b, j)
		if !ok || size == 0 || price <= 0 || price > maxPrice || size > maxSize {
			break
		}
		if idx > 0 {
			ord = ord.after(prev, price)
		}
		prev = price
		d.levels = append(d.levels, book.Level{Price: price, Size: size})
		at = end
		next, closed := backToBack(b, end)
		if closed {
			s.SetOffset(end + 1)
			return lo, len(d.levels), ord, nil
		}
		if next < 0 {
			idx++
			break
		}
		j = next
	}
	s.SetOffset(at)
	for first := idx == 0; ; first, idx = false, idx+1 {
		// Fast path: "," (after the first) then the wire's level shape; or
		// the end of the array.
		off := s.Offset()
		if !first && off < len(b) {
			switch b[off] {
			case ',':
				off++
				for off < len(b) && b[off] == ' ' {
					off++
				}
			case ']':
				s.SetOffset(off + 1)
				return lo, len(d.levels), ord, nil
			}
		}
		price, size, end, fast := int64(0), int64(0), 0, false
		if first || off > s.Offset() {
			price, size, end, fast = d.scanLevel(b, off)
		}
		if fast {
			s.SetOffset(end)
		} else {
			ok, err := s.NextElem(first)
			if err != nil {
				return lo, lo, 0, err
			}
			if !ok {
				break
			}
			off = s.Offset()
			var herr error
			var field string
			price, size, field, herr, err = d.slowLevel()
			if err != nil {
				return lo, lo, 0, err
			}
			if herr != nil {
				m.hold(off, fmt.Sprintf("%s[%d]%s", name, idx, field), herr)
				return d.abandonArray(arr, lo)
			}
		}
		if size == 0 {
			m.hold(off, fmt.Sprintf("%s[%d].size", name, idx), book.ErrBadLevel)
			return d.abandonArray(arr, lo)
		}
		if price <= 0 || price > maxPrice || size > maxSize { // inline guard: checkLevel names it
			field, err := checkLevel(price, size)
			m.hold(off, fmt.Sprintf("%s[%d].%s", name, idx, field), err)
			return d.abandonArray(arr, lo)
		}
		if idx > 0 {
			ord = ord.after(prev, price)
		}
		prev = price
		d.levels = append(d.levels, book.Level{Price: price, Size: size})
	}
	return lo, len(d.levels), ord, nil
}

// backToBack reads what follows an array element that ends at b[end]: the
// array's closing bracket (closed), or a comma, at most one space and the
// next object (next, its opening brace); anything else is next = -1, for
// the general loop to read.
func backToBack(b []byte, end int) (next int, closed bool) {
	if end < 0 || end >= len(b) {
		return -1, false
	}
	switch {
	case b[end] == ']':
		return 0, true
	case b[end] != ',' || end+1 >= len(b):
	case b[end+1] == '{':
		return end + 1, false
	case b[end+1] == ' ' && end+2 < len(b) && b[end+2] == '{': // live frames: PROTOCOLS.md §1.9
		return end + 2, false
	}
	return -1, false
}

// abandonArray drops the levels parsed so far and skips the whole array from
// its start, so its syntax is still checked.
func (d *Decoder) abandonArray(arr, lo int) (int, int, order, error) {
	d.levels = d.levels[:lo]
	d.s.SetOffset(arr)
	_, err := d.s.Skip()
	return lo, lo, 0, err
}

// slowLevel parses a level object at the scanner with the generic scanner:
// any key order, white space and extra keys. herr is a semantic problem
// (field names the sub-field), err a syntax error.
func (d *Decoder) slowLevel() (price, size int64, field string, herr, err error) {
	s := &d.s
	if s.Peek() != '{' {
		return 0, 0, "", ErrType, nil
	}
	s.BeginObject()
	var hasP, hasS bool
	for first := true; ; first = false {
		key, ok, err := d.nextKey(first)
		if err != nil {
			return 0, 0, "", nil, err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "price", "size":
			t, isStr, err := d.scalarText()
			if err != nil {
				return 0, 0, "", nil, err
			}
			f := "." + string(key)
			if !isStr {
				return 0, 0, f, ErrType, nil
			}
			dec := uint8(priceDecimals)
			if key[0] == 's' {
				dec = sizeDecimals
			}
			v, perr := book.ParseDecimal(t, dec)
			if perr != nil {
				return 0, 0, f, book.NewDecimalError(f[1:], t, perr), nil
			}
			if key[0] == 's' {
				size, hasS = v, true
			} else {
				price, hasP = v, true
			}
		default:
			if _, err := s.Skip(); err != nil {
				return 0, 0, "", nil, err
			}
		}
	}
	switch {
	case !hasP:
		return 0, 0, ".price", ErrMissingField, nil
	case !hasS:
		return 0, 0, ".size", ErrMissingField, nil
	}
	return price, size, "", nil, nil
}

// scalarText reads a string and returns its text; isStr is false (with the
// value skipped) for any other type: the venue sends every price and size as
// a string, so a bare number is as wrong as an object.
func (d *Decoder) scalarText() (t []byte, isStr bool, err error) {
	s := &d.s
	if s.Peek() == '"' {
		t, err = d.str()
		return t, true, err
	}
	_, err = s.Skip()
	return nil, false, err
}

// parseChanges parses a price_changes array into d.changes.
func (d *Decoder) parseChanges(m *msg) (lo, hi int, err error) {
	s := &d.s
	lo = len(d.changes)
	arr := s.Offset()
	b := d.frame
	if arr < len(b) && b[arr] == '[' {
		s.SetOffset(arr + 1)
	} else if s.Peek() == '[' {
		s.BeginArray()
	} else {
		m.hold(s.Offset(), "price_changes", ErrType)
		_, err = s.Skip()
		return lo, lo, err
	}
	// The wire's entries back to back, in a loop of their own, each parsed
	// straight into its slot: the first entry that is not the usual shape,
	// or not in the venue's domain, and anything else after an entry, go to
	// the loop below from where this one stopped, which reads that entry
	// again and names any problem.
	idx, at := 0, s.Offset()
	for j := at; j < len(b) && b[j] == '{'; idx++ {
		c := d.changeSlot()
		end, ok := d.scanChange(c, j)
		if !ok || !inDomain(c) {
			d.changes = d.changes[:len(d.changes)-1]
			break
		}
		c.start, c.end = j, end
		at = end
		next, closed := backToBack(b, end)
		if closed {
			s.SetOffset(end + 1)
			return lo, len(d.changes), nil
		}
		if next < 0 {
			idx++
			break
		}
		j = next
	}
	s.SetOffset(at)
	for first := idx == 0; ; first, idx = false, idx+1 {
		ok, err := s.NextElem(first)
		if err != nil {
			return lo, lo, err
		}
		if !ok {
			break
		}
		off := s.Offset()
		c := d.changeSlot()
		if end, ok := d.scanChange(c, off); ok && inDomain(c) {
			s.SetOffset(end)
			c.start, c.end = off, end
			continue
		}
		d.changes = d.changes[:len(d.changes)-1]
		// Anything else, an entry outside the venue's domain included, is
		// judged (and named) by the generic path.
		c2, field, herr, err := d.parseChange()
		if err != nil {
			return lo, lo, err
		}
		if herr == nil && !inDomain(&c2) {
			f, derr := checkChange(&c2)
			field, herr = "."+f, derr
		}
		if herr != nil {
			if f, ok := herr.(*DecodeError); ok {
				f.Field = fmt.Sprintf("price_changes[%d].%s", idx, f.Field)
				m.hold(f.Offset, f.Field, f.Err)
			} else {
				m.hold(off, fmt.Sprintf("price_changes[%d]%s", idx, field), herr)
			}
			m.nameAsset(c2.asset)
			d.changes = d.changes[:lo]
			s.SetOffset(arr)
			_, err = s.Skip()
			return lo, lo, err
		}
		c2.start, c2.end = off, s.Offset()
		d.changes = append(d.changes, c2)
	}
	return lo, len(d.changes), nil
}

// changeSlot appends a slot to d.changes for scanChange to fill in place
// (a change is 17 words: returned by value and appended, it was copied
// twice). The slot holds whatever a dropped entry left there.
func (d *Decoder) changeSlot() *change {
	n := len(d.changes)
	if n == cap(d.changes) {
		d.changes = slices.Grow(d.changes, 1)
	}
	d.changes = d.changes[:n+1]
	return &d.changes[n]
}

// parseChange parses one price_changes entry. A semantic problem comes back
// as herr: a *DecodeError whose Field is relative to the entry, or a bare
// error for the entry as a whole.
func (d *Decoder) parseChange() (c change, field string, herr, err error) {
	s := &d.s
	if s.Peek() != '{' {
		return c, "", ErrType, nil
	}
	s.BeginObject()
	var hasP, hasS, hasSide, hasBB, hasBA bool
	for first := true; ; first = false {
		kc, ok, err := d.nextKeyCode(first)
		if err != nil {
			return c, "", nil, err
		}
		if !ok {
			break
		}
		at := s.Offset()
		k := keyNames[kc]
		switch kc {
		case kcAssetID, kcHash, kcSide:
			if s.Peek() != '"' {
				if _, err := s.Skip(); err != nil {
					return c, "", nil, err
				}
				if kc == kcHash {
					continue // null or odd hash: unchecked, not fatal
				}
				return c, "", &DecodeError{Offset: at, Field: k, Err: ErrType}, nil
			}
			t, err := d.str()
			if err != nil {
				return c, "", nil, err
			}
			switch kc {
			case kcAssetID:
				c.asset = t
			case kcHash:
				c.hash = t
			default:
				side, ok := sideOf(t)
				if !ok {
					return c, "", &DecodeError{Offset: at, Field: k, Err: fmt.Errorf("%w: %q", ErrSide, t)}, nil
				}
				c.side, hasSide = side, true
			}
		case kcPrice, kcSize, kcBestBid, kcBestAsk:
			t, isStr, err := d.scalarText()
			if err != nil {
				return c, "", nil, err
			}
			if !isStr {
				return c, "", &DecodeError{Offset: at, Field: k, Err: ErrType}, nil
			}
			dec := uint8(priceDecimals)
			if kc == kcSize {
				dec = sizeDecimals
			}
			if len(t) == 0 && (kc == kcBestBid || kc == kcBestAsk) {
				t = zeroText // "" is the venue's empty side
			}
			v, perr := parseDec(t, dec)
			if perr != nil {
				return c, "", &DecodeError{Offset: at, Field: k, Err: book.NewDecimalError(k, t, perr)}, nil
			}
			switch kc {
			case kcPrice:
				c.price, hasP = v, true
			case kcSize:
				c.size, hasS = v, true
			case kcBestBid:
				c.bestBid, hasBB = v, true
			default:
				c.bestAsk, hasBA = v, true
			}
		default:
			if _, err := s.Skip(); err != nil {
				return c, "", nil, err
			}
		}
	}
	switch {
	case c.asset == nil:
		return c, ".asset_id", ErrMissingField, nil
	case len(c.asset) == 0:
		return c, ".asset_id", ErrTokenID, nil
	case !hasP:
		return c, ".price", ErrMissingField, nil
	case !hasS:
		return c, ".size", ErrMissingField, nil
	case !hasSide:
		return c, ".side", ErrMissingField, nil
	}
	c.bestAsk = emptyAsk(c.bestAsk)
	c.hasTop = hasBB && hasBA && (c.bestBid != 0 || c.bestAsk != 0)
	return c, "", nil, nil
}

var zeroText = []byte("0")

// emptyList is the Text of the EventUnknown an empty array frame yields.
var emptyList = []byte("[]")

// emptyAsk maps the venue's empty-ask sentinel "1" (no price is ever 1: the
// valid prices run from one tick to 1 − tick) to 0, the decoder's empty side.
// An empty bid is "0" already; "" has been read as "0".
func emptyAsk(ask int64) int64 {
	if ask == maxPrice {
		return 0
	}
	return ask
}

// sideOf reads a side as the venue spells it: upper case only.
func sideOf(t []byte) (book.Side, bool) {
	switch string(t) {
	case "BUY":
		return book.Bid, true
	case "SELL":
		return book.Ask, true
	}
	return 0, false
}

// The venue's domain (see NOTES.md): prices are probabilities, sizes shares.
const (
	maxPrice = 10_000 // 1 at Scale.PriceDecimals
	// maxShares bounds any size or min_order_size, in shares: a billion
	// shares at one level is far beyond any real book (the largest seen are
	// in the millions) and keeps size × price inside int64 at Scale.
	maxShares = 1_000_000_000
	maxSize   = maxShares * 1_000_000
)

// checkLevel validates a snapshot level against the venue's domain and
// returns the offending sub-field.
func checkLevel(price, size int64) (string, error) {
	if err := checkPrice(price); err != nil {
		return "price", err
	}
	if size > maxSize {
		return "size", sizeErr(size)
	}
	return "", nil
}

// inDomain is checkChange's fast negative, inlined on the hot path.
func inDomain(c *change) bool {
	return c.price > 0 && c.price <= maxPrice && c.size <= maxSize && c.bestBid <= maxPrice && c.bestAsk <= maxPrice
}

// checkChange validates a price_changes entry, parsed by either path.
func checkChange(c *change) (string, error) {
	switch {
	case checkPrice(c.price) != nil:
		return "price", checkPrice(c.price)
	case c.size > maxSize:
		return "size", sizeErr(c.size)
	case c.bestBid > maxPrice:
		return "best_bid", priceErr(c.bestBid)
	case c.bestAsk > maxPrice:
		return "best_ask", priceErr(c.bestAsk)
	}
	return "", nil
}

// checkPrice accepts a level or trade price in (0, 1].
func checkPrice(p int64) error {
	if p <= 0 || p > maxPrice {
		return priceErr(p)
	}
	return nil
}

func priceErr(p int64) error {
	return fmt.Errorf("%w: price %s is not in (0, 1]", ErrDomain, book.FormatDecimal(p, priceDecimals))
}

func sizeErr(z int64) error {
	return fmt.Errorf("%w: size %s is above %d", ErrDomain, book.FormatDecimal(z, sizeDecimals), maxShares)
}

// checkTick accepts the venue's tick sizes: 0.1, 0.01, 0.001, 0.0001.
func checkTick(t int64) error {
	switch t {
	case 1, 10, 100, 1000:
		return nil
	}
	return fmt.Errorf("%w: tick size %s is not 0.1, 0.01, 0.001 or 0.0001", ErrDomain, book.FormatDecimal(t, priceDecimals))
}

// parseDec is book.ParseDecimal with a fast path for the short plain
// decimals of real frames.
func parseDec(t []byte, dec uint8) (int64, error) {
	if v, n, ok := scanDec(t, 0, int(dec)); ok && n == len(t) {
		return v, nil
	}
	return book.ParseDecimal(t, dec)
}

// parseTs parses a timestamp's text: a non-negative integer of at most 19 digits.
func parseTs(t []byte) (ms int64, ok bool) {
	if len(t) == 0 || len(t) > 19 {
		return 0, false
	}
	var v uint64
	i := 0
	for ; i+1 < len(t); i += 2 { // two digits per step: 13 for ms
		c0, c1 := t[i]-'0', t[i+1]-'0'
		if c0 > 9 || c1 > 9 {
			return 0, false
		}
		v = v*100 + uint64(c0)*10 + uint64(c1)
	}
	if i < len(t) {
		if c := t[i] - '0'; c <= 9 {
			v = v*10 + uint64(c)
		} else {
			return 0, false
		}
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// tsNs converts a venue timestamp to ns. Polymarket sends epoch ms; some
// third-party recorders and the polyfill-rs benchmark write 16-digit µs or
// 19-digit ns, told apart by magnitude (1e14 ms is the year 5138). ok is false
// when the result would not fit an int64 (past the year 2262).
func tsNs(v int64) (ns int64, ok bool) {
	const maxInt = 1<<63 - 1
	switch {
	case v >= 1e17:
		return v, true
	case v >= 1e14:
		return v * 1e3, v <= maxInt/1000
	}
	return v * 1e6, v <= maxInt/1000000
}

// classify sets m's kind from its event_type and validates the fields that
// kind uses.
func (d *Decoder) classify(m *msg, newIDs *int) error {
	switch {
	case m.typKind != kUnknown:
		m.kind = m.typKind
	default:
		d.classifyType(m)
	}
	if m.kind == kMarket || m.kind == kUnknown {
		return nil
	}
	return d.classifyFields(m, newIDs)
}

// classifyType sets m's kind from an event_type parse did not match as a
// constant.
func (d *Decoder) classifyType(m *msg) {
	switch string(m.typ) {
	case "book":
		m.kind = kBook
	case "price_change":
		m.kind = kPriceChange
	case "last_trade_price":
		m.kind = kTrade
	case "tick_size_change":
		m.kind = kTick
	case "best_bid_ask":
		m.kind = kQuote
	case "new_market", "market_resolved":
		m.kind = kMarket
	default:
		// A REST /book summary or a recorder's stored book has no
		// event_type; bids, asks and asset_id make it a snapshot.
		if m.typ == nil && m.hasBids && m.hasAsks && m.asset.b != nil {
			m.kind = kBook
			break
		}
		m.kind = kUnknown
	}
}

// classifyFields validates the fields m's kind uses.
func (d *Decoder) classifyFields(m *msg, newIDs *int) error {
	event := kindNames[m.kind]
	fail := func(err error) error { return failAs(err, event, m.start) }
	if m.deferred != nil {
		return fail(m.deferred)
	}
	if m.ts.b != nil {
		v, ok := m.tsMs, m.tsOK
		if !ok {
			v, ok = parseTs(m.ts.b)
		}
		if ok {
			m.tsNs, ok = tsNs(v)
		}
		if !ok {
			return fail(&DecodeError{Offset: m.ts.off, Field: "timestamp", Err: fmt.Errorf("%w: %q", ErrTimestamp, clip(m.ts.b))})
		}
		m.tsMs = v
	}
	if m.kind == kPriceChange {
		switch {
		case m.hasChanges:
		case m.legacyChanges:
			return &DecodeError{Offset: m.start, Err: ErrLegacyChanges}
		case d.sv(kcPrice).b != nil || d.sv(kcSide).b != nil || d.sv(kcSize).b != nil:
			return &DecodeError{Offset: m.start, Err: ErrLegacyFlat}
		default:
			return fail(&DecodeError{Offset: m.start, Field: "price_changes", Err: ErrMissingField})
		}
		for i := m.chLo; i < m.chHi; i++ {
			c := &d.changes[i]
			if c.inst == nil {
				c.inst = d.lookup(c.asset)
			}
			if c.inst == nil {
				*newIDs++
			}
		}
		return d.checkRoom(*newIDs, m.start, event)
	}
	if m.asset.b == nil {
		return fail(&DecodeError{Offset: m.start, Field: "asset_id", Err: ErrMissingField})
	}
	if len(m.asset.b) == 0 {
		return fail(&DecodeError{Offset: m.asset.off, Field: "asset_id", Err: ErrTokenID})
	}
	var err error
	switch m.kind {
	case kBook:
		switch {
		case !m.hasBids:
			return fail(&DecodeError{Offset: m.start, Field: "bids", Err: ErrMissingField})
		case !m.hasAsks:
			return fail(&DecodeError{Offset: m.start, Field: "asks", Err: ErrMissingField})
		}
		if err := d.checkDistinct(m.bidLo, m.bidHi, m.bidOrder, m.bidOff, "bids"); err != nil {
			return fail(err)
		}
		if err := d.checkDistinct(m.askLo, m.askHi, m.askOrder, m.askOff, "asks"); err != nil {
			return fail(err)
		}
		if d.scSet&(1<<kcTickSize|1<<kcMinOrder|1<<kcLastTrade) != 0 { // not in most WebSocket books
			if err := d.bookScalars(m); err != nil {
				return fail(err)
			}
		}
	case kTrade:
		if m.pPrice, err = reqDec(d.sv(kcPrice), m.num(kcPrice), m.start, "price", priceDecimals); err != nil {
			return fail(err)
		}
		if err := checkPrice(m.pPrice); err != nil {
			return fail(&DecodeError{Offset: d.sv(kcPrice).off, Field: "price", Err: err})
		}
		if m.pSize, err = reqDec(d.sv(kcSize), m.num(kcSize), m.start, "size", sizeDecimals); err != nil {
			return fail(err)
		}
		if m.pSize <= 0 || m.pSize > maxSize {
			return fail(&DecodeError{Offset: d.sv(kcSize).off, Field: "size", Err: fmt.Errorf("%w: trade size %s is not in (0, %d]",
				ErrDomain, book.FormatDecimal(m.pSize, sizeDecimals), maxShares)})
		}
		if d.sv(kcSide).b == nil {
			return fail(&DecodeError{Offset: m.start, Field: "side", Err: ErrMissingField})
		}
		side, ok := sideOf(d.sv(kcSide).b)
		if !ok {
			return fail(&DecodeError{Offset: d.sv(kcSide).off, Field: "side", Err: fmt.Errorf("%w: %q", ErrSide, clip(d.sv(kcSide).b))})
		}
		m.pSide = side
	case kTick:
		if m.pTick, err = reqDec(d.sv(kcNewTick), m.num(kcNewTick), m.start, "new_tick_size", priceDecimals); err != nil {
			return fail(err)
		}
		if err := checkTick(m.pTick); err != nil {
			return fail(&DecodeError{Offset: d.sv(kcNewTick).off, Field: "new_tick_size", Err: err})
		}
	case kQuote:
		// "0", "" (either side) and "1" (asks) are the venue's empty side.
		if m.pBid, err = d.optScalar(m, kcBestBid, priceDecimals); err != nil {
			return fail(err)
		}
		if m.pAsk, err = d.optScalar(m, kcBestAsk, priceDecimals); err != nil {
			return fail(err)
		}
		if m.pBid > maxPrice {
			return fail(&DecodeError{Offset: d.sv(kcBestBid).off, Field: "best_bid", Err: priceErr(m.pBid)})
		}
		if m.pAsk > maxPrice {
			return fail(&DecodeError{Offset: d.sv(kcBestAsk).off, Field: "best_ask", Err: priceErr(m.pAsk)})
		}
		m.pAsk = emptyAsk(m.pAsk)
		m.hasBid, m.hasAsk = m.pBid > 0, m.pAsk > 0
	}
	if m.inst == nil { // else parse found it (knownID)
		m.inst = d.lookup(m.asset.b)
	}
	if m.inst == nil {
		*newIDs++
	}
	return d.checkRoom(*newIDs, m.start, event)
}

// bookScalars validates the optional scalars of a book message: tick_size,
// min_order_size and last_trade_price. "" is present and empty (an asset
// that never traded has "last_trade_price":""): accepted, and hashed as the
// venue does.
func (d *Decoder) bookScalars(m *msg) (err error) {
	if m.pTick, err = d.optScalar(m, kcTickSize, priceDecimals); err != nil {
		return err
	}
	if m.pTick != 0 {
		if err := checkTick(m.pTick); err != nil {
			return &DecodeError{Offset: d.sv(kcTickSize).off, Field: "tick_size", Err: err}
		}
	}
	if m.pMinOrder, err = d.optScalar(m, kcMinOrder, sizeDecimals); err != nil {
		return err
	}
	if m.pMinOrder > maxSize {
		return &DecodeError{Offset: d.sv(kcMinOrder).off, Field: "min_order_size", Err: sizeErr(m.pMinOrder)}
	}
	if m.pLtp, err = d.optScalar(m, kcLastTrade, priceDecimals); err != nil {
		return err
	}
	m.ltpEmpty = d.sv(kcLastTrade).b != nil && len(d.sv(kcLastTrade).b) == 0
	if m.pLtp != 0 {
		if err := checkPrice(m.pLtp); err != nil {
			return &DecodeError{Offset: d.sv(kcLastTrade).off, Field: "last_trade_price", Err: err}
		}
		m.ltpPad = ltpTextForm(d.sv(kcLastTrade).b)
	}
	return nil
}

// kindNames are the event_type of each decoded kind, as constants so naming
// the event of an error costs nothing on the good path.
var kindNames = [...]string{kBook: "book", kPriceChange: "price_change", kTrade: "last_trade_price",
	kTick: "tick_size_change", kQuote: "best_bid_ask", kMarket: "market", kUnknown: "", kText: ""}

// failAs names the event of a message's error.
func failAs(err error, event string, off int) error {
	if de, ok := err.(*DecodeError); ok {
		de.Event = event
		return de
	}
	return &DecodeError{Offset: off, Event: event, Err: err}
}

func (d *Decoder) checkRoom(newIDs, off int, event string) error {
	if newIDs > 0 && len(d.list)+newIDs > maxInstruments {
		return &DecodeError{Offset: off, Event: event, Err: ErrTooManyInstruments}
	}
	return nil
}

// checkDistinct rejects a side with two levels at one price. A strictly
// monotone side (every real one) cannot have any; others are sorted in scratch.
func (d *Decoder) checkDistinct(lo, hi int, ord order, off int, name string) error {
	if ord != 0 || hi-lo < 2 { // inlined: every real side
		return nil
	}
	return d.sortDistinct(lo, hi, off, name)
}

func (d *Decoder) sortDistinct(lo, hi int, off int, name string) error {
	d.sortBuf = append(d.sortBuf[:0], d.levels[lo:hi]...)
	slices.SortFunc(d.sortBuf, func(a, b book.Level) int {
		switch {
		case a.Price < b.Price:
			return -1
		case a.Price > b.Price:
			return 1
		}
		return 0
	})
	for i := 1; i < len(d.sortBuf); i++ {
		if d.sortBuf[i].Price == d.sortBuf[i-1].Price {
			return &DecodeError{Offset: off, Field: name, Err: fmt.Errorf("%w: price %s",
				book.ErrDuplicatePrice, book.FormatDecimal(d.sortBuf[i].Price, priceDecimals))}
		}
	}
	return nil
}

// optScalar is optDec of the message's scalar of key code kc, settling the
// usual case, a field the message does not have, without a call.
func (d *Decoder) optScalar(m *msg, kc keyCode, dec uint8) (int64, error) {
	if d.scSet&(1<<kc) == 0 {
		return 0, nil
	}
	return d.givenScalar(m, kc, dec)
}

func (d *Decoder) givenScalar(m *msg, kc keyCode, dec uint8) (int64, error) {
	return optDec(d.sc[kc], m.num(kc), keyNames[kc], dec)
}

// optDec parses an optional decimal field; absent and "" are 0. The venue
// sends decimals as strings: a bare number is ErrType.
func optDec(v val, num bool, field string, dec uint8) (int64, error) {
	if v.b == nil {
		return 0, nil
	}
	if num {
		return 0, &DecodeError{Offset: v.off, Field: field, Err: fmt.Errorf("%w: a bare number where the venue sends a string", ErrType)}
	}
	if len(v.b) == 0 {
		return 0, nil
	}
	x, err := parseDec(v.b, dec)
	if err != nil {
		return 0, &DecodeError{Offset: v.off, Field: field, Err: book.NewDecimalError(field, v.b, err)}
	}
	return x, nil
}

// reqDec parses a required decimal field; "" is missing.
func reqDec(v val, num bool, msgOff int, field string, dec uint8) (int64, error) {
	if v.b == nil || len(v.b) == 0 {
		return 0, &DecodeError{Offset: msgOff, Field: field, Err: ErrMissingField}
	}
	return optDec(v, num, field, dec)
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// nameAsset names the asset of the price_changes entry that failed in the
// message's held error (error path only).
func (m *msg) nameAsset(asset []byte) {
	if de, ok := m.deferred.(*DecodeError); ok && de.Asset == "" && len(asset) > 0 {
		de.Asset = string(asset)
	}
}
