package polymarket

import (
	"bytes"
	"crypto/sha1"
	"encoding"
	"errors"
	"hash"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// Decode parses one frame and applies it (venue.Decoder). A frame is a JSON
// object, a JSON array of objects, or a text frame such as PONG (counted in
// Stats.NonJSON, one EventControl). Events per message:
//   - book (or an object without event_type carrying bids, asks and
//     asset_id, such as a REST /book summary): EventSnapshot;
//   - price_change: one EventLevel per price_changes entry, applied in array
//     order (entries may touch two assets of one market); an asset without a
//     snapshot yet gets a new, invalid book that the changes are applied to;
//   - last_trade_price: EventTrade (Side is the taker's side; ID the
//     transaction_hash when sent);
//   - tick_size_change: EventTickSize (Price = new tick);
//   - best_bid_ask: EventQuote (prices only; "0", "" and, for asks, "1"
//     are an empty side: see NOTES.md);
//   - new_market, market_resolved: EventMarket;
//   - any other event_type: EventUnknown, counted in Stats.UnknownTypes.
//
// Raw is the message object (the entry object for EventLevel); Text is the
// event_type (the whole text for EventControl); both borrow frame. recvNs is
// not used: the venue's timestamp (ms, as a string or a bare number) becomes
// ExchangeNs. Key order and white space do not matter; ids are compared as
// raw bytes (escapes are not decoded). Prices and sizes are decimal strings
// (bare JSON numbers are read as text, exactly) that must fit Scale exactly.
//
// After applying a snapshot or price change whose hash field holds 40 hex
// digits, Decode recomputes the book hash if the asset's market,
// min_order_size, tick_size and neg_risk are known (see instrumentInfo; a
// REST-summary-shaped book teaches them) and counts the result in Quality and
// Stats. A price_change batch of one asset (its frames sharing a timestamp)
// closes when a message for the asset carries another timestamp, at its next
// snapshot, or on Flush/Invalidate; then the book's best bid/ask are compared
// with the batch's last best_bid/best_ask (both "0" = unknown) and
// Quality.Crossed is re-evaluated (as it is after each snapshot); a crossed
// book inside a batch is normal during a match. No check ever rejects data.
//
// The messages of an array frame are independent: each is validated and
// applied on its own, atomically, and a bad one is rejected alone. A
// rejected message changes no level; the books it would have changed are
// invalidated until their next snapshot and it yields EventReject events
// (NOTES.md has the rules). The error is then a *DecodeError naming the
// message's event, asset id, field and offset (several are joined with
// errors.Join), and out.Events holds the events of the messages that
// applied beside the EventReject ones. Values outside the venue's domain
// are ErrDomain, ErrSide or ErrType; pre-2025-09-15 price_change schemas
// are ErrLegacyChanges or ErrLegacyFlat.
func (d *Decoder) Decode(frame []byte, recvNs int64, out *venue.Frame) error {
	if out == nil {
		out = &d.discard
	}
	out.Events = out.Events[:0]
	d.stats.Frames++
	if err := d.parse(frame); err != nil {
		d.stats.Errors++
		d.stats.Rejected++
		d.rejectFrame(frame, err, out)
		return err
	}
	err := d.apply(out)
	if len(d.waiting) > 0 {
		d.expireHashes(d.nowMs, false)
	}
	if err != nil {
		d.stats.Errors++
		return err
	}
	return nil
}

// rejectFrame handles a frame rejected as a whole (malformed JSON, not a
// frame at all): nothing of it is applied. If it may have carried levels
// (it names bids, asks or price_change), the update it carried is lost, and
// which books it touched cannot be told: every book of the connection is
// invalid until its next snapshot. A non-frame (null, [], "str", 42) changes
// no book.
func (d *Decoder) rejectFrame(frame []byte, err error, out *venue.Frame) {
	out.Events = out.Events[:0]
	d.errText = append(d.errText[:0], err.Error()...)
	var de *DecodeError
	bookish := errors.As(err, &de) && !errors.Is(err, ErrFrame) &&
		(bytes.Contains(frame, []byte(`"bids"`)) || bytes.Contains(frame, []byte(`"asks"`)) ||
			bytes.Contains(frame, []byte(`price_change`)))
	n := 0
	if bookish {
		d.Flush(nil)
		n = d.invalidateAll(out, 0, len(frame), d.errText)
	}
	if n == 0 {
		d.rejectEvent(out, nil, 0, len(frame), d.errText)
	}
}

// invalidateAll invalidates every book not invalid already, with an
// EventReject for each (Raw frame[start:end], Text text), and returns how
// many: the books made valid (or seen first) since the last invalidation,
// so a run of rejected frames costs each book once, not once per frame.
func (d *Decoder) invalidateAll(out *venue.Frame, start, end int, text []byte) int {
	n := 0
	for i := len(d.ungapped) - 1; i >= 0; i-- { // invalidate takes d.ungapped[i] out
		in := d.ungapped[i]
		d.invalidate(in)
		d.rejectEvent(out, in, start, end, text)
		n++
	}
	return n
}

// invalidate marks one instrument's book invalid until its next snapshot.
func (d *Decoder) invalidate(in *instrument) {
	d.closeBatch(in, true)
	in.book.Invalidate()
	d.setGap(in)
	in.q.AfterGap = true
	d.stats.Invalidated++
}

// rejectEvent appends an EventReject for instrument in (nil: none).
func (d *Decoder) rejectEvent(out *venue.Frame, in *instrument, start, end int, text []byte) {
	d.stats.Events[venue.EventReject]++
	ev := venue.Event{Type: venue.EventReject, Text: text, Raw: d.frame[start:end]}
	if in != nil {
		ev.Instrument, ev.Market, ev.Book = in.id, in.market, in.book
	}
	out.Events = append(out.Events, ev)
}

// rejectMsg handles one rejected message of a frame whose other messages
// apply. A book or price_change that failed would have changed books: the
// asset's (a book), or its market's (a price_change: every entry is an asset
// of that market), or, when neither can be read, all of them.
func (d *Decoder) rejectMsg(m *msg, out *venue.Frame) {
	d.stats.Rejected++
	r := d.rejs[m.rej-1]
	lo := len(d.errText)
	d.errText = append(d.errText, r.err.Error()...)
	text := d.errText[lo:len(d.errText):len(d.errText)]
	n := 0
	switch r.want {
	case kBook, kPriceChange:
		if r.want == kBook && len(m.asset.b) > 0 {
			// The asset alone; one never seen has no book to invalidate.
			if in := d.lookup(m.asset.b); in != nil {
				d.invalidate(in)
				d.rejectEvent(out, in, m.start, m.end, text)
				n++
			}
			break
		}
		if ml := d.mktUngapped[string(m.market)]; len(m.market) > 0 && ml != nil {
			// The market's books; those invalid already stay so.
			for i := len(*ml) - 1; i >= 0; i-- { // invalidate takes (*ml)[i] out
				in := (*ml)[i]
				d.invalidate(in)
				d.rejectEvent(out, in, m.start, m.end, text)
				n++
			}
			break
		}
		n = d.invalidateAll(out, m.start, m.end, text)
	}
	if n == 0 {
		d.rejectEvent(out, nil, m.start, m.end, text)
	}
}

// errInternal reports a snapshot the validation pass accepted but the book
// rejected: a bug in this package, never bad input.
var errInternal = errors.New("polymarket: internal error: book rejected a validated snapshot")

// apply is the second pass: it cannot fail on anything parse accepted. It
// returns the errors of the messages parse rejected, after applying the
// others in frame order.
func (d *Decoder) apply(out *venue.Frame) error {
	var first error
	var more []error
	d.errText = d.errText[:0]
	for i := range d.msgs {
		m := &d.msgs[i]
		if m.tsMs > d.nowMs {
			d.nowMs = m.tsMs
		}
		switch m.kind {
		case kRejected:
			d.rejectMsg(m, out)
			if err := d.rejs[m.rej-1].err; first == nil {
				first = err
			} else {
				more = append(more, err)
			}
		case kText:
			d.stats.NonJSON++
			ev := d.newEvent(out, venue.EventControl, m)
			ev.Text = ev.Raw
		case kUnknown:
			d.stats.UnknownTypes++
			ev := d.newEvent(out, venue.EventUnknown, m)
			ev.Market = d.internMarket(m.market)
		case kMarket:
			ev := d.newEvent(out, venue.EventMarket, m)
			ev.Market = d.internMarket(m.market)
		case kBook:
			in := d.instrumentOf(m.inst, m.asset.b, m.market)
			if in.batchHash && in.batchTs == m.tsMs {
				// A snapshot of the batch's own millisecond carries the hash
				// of the book after it and is judged instead.
				in.batchHash = false
			}
			if in.batchHash && d.opts.hashEvery > 0 && in.book.Matches(d.levels[m.bidLo:m.bidHi], d.levels[m.askLo:m.askHi]) {
				// Sampling: a snapshot equal to the book confirms its levels
				// without a SHA-1 (the batch's hash is seen, not judged).
				in.batchHash = false
				d.stats.HashSeen++
			}
			d.closeBatch(in, true)
			if err := in.book.Replace(d.levels[m.bidLo:m.bidHi], d.levels[m.askLo:m.askHi]); err != nil {
				out.Events = out.Events[:0]
				return &DecodeError{Offset: m.start, Event: "book", Err: errors.Join(errInternal, err)}
			}
			if m.pTick > 0 {
				in.tick = m.pTick
			}
			if m.pMinOrder > 0 {
				in.minOrder = m.pMinOrder
			}
			if m.negRisk >= 0 {
				in.negRisk, in.negKnown = m.negRisk == 1, true
			}
			switch {
			case m.pLtp > 0:
				in.ltp = m.pLtp
				if m.ltpPad != 0 {
					in.ltpPad = m.ltpPad > 0
				}
			case m.ltpEmpty:
				in.ltp = -1
			}
			in.q.AfterGap, in.snapped = in.gap, true
			d.clearGap(in)
			in.hashBad = false
			in.goodSeq++
			in.q.Crossed = in.book.Crossed()
			d.checkHash(in, m.ts.b, m.hash, m.tsMs)
			d.bookEvent(out, venue.EventSnapshot, m, in, d.frame[m.start:m.end])
		case kPriceChange:
			for j := m.chLo; j < m.chHi; j++ {
				c := &d.changes[j]
				in := d.instrumentOf(c.inst, c.asset, m.market)
				if (in.batchOpen || in.batchHash) && in.batchTs != m.tsMs {
					d.closeBatch(in, false)
				}
				if !in.batchOpen {
					in.batchTsTxt = append(in.batchTsTxt[:0], m.ts.b...)
				}
				in.batchOpen, in.batchTs = true, m.tsMs
				in.topKnown, in.bestBid, in.bestAsk = c.hasTop, c.bestBid, c.bestAsk
				if !in.inPending {
					in.inPending = true
					d.pending = append(d.pending, in)
				}
				if !in.snapped {
					d.stats.Unsnapshotted++
				}
				// Set fails only on negative values, which parse rejects.
				g0 := in.book.Generation()
				_ = in.book.Set(c.side, c.price, c.size, 0)
				if d.opts.hashEvery == 0 && in.hc.valid {
					// Every hash is checked: keep the serialized sides in
					// step (afterSet leaves a cache not built as it is).
					// Sampled checks rebuild them (cheaply) instead.
					in.hc.afterSet(in.book, g0, c.side, c.price, c.size)
				}
				if in.book.Valid() || in.hashBad {
					d.batchEntryHash(in, c.hash)
				}
				ev := d.bookEvent(out, venue.EventLevel, m, in, d.frame[c.start:c.end])
				ev.Side, ev.Price, ev.Size = c.side, c.price, c.size
			}
		case kTrade:
			in := d.instrumentOf(m.inst, m.asset.b, m.market)
			d.closeIfNewTs(in, m)
			d.trade(in, m.pPrice, m.tsMs)
			ev := d.newEvent(out, venue.EventTrade, m)
			ev.Instrument, ev.Market = in.id, in.market
			ev.Side, ev.Price, ev.Size = m.pSide, m.pPrice, m.pSize
			if len(m.txHash) > 0 {
				ev.ID = m.txHash
			}
		case kTick:
			in := d.instrumentOf(m.inst, m.asset.b, m.market)
			d.closeIfNewTs(in, m)
			in.tick = m.pTick
			ev := d.newEvent(out, venue.EventTickSize, m)
			ev.Instrument, ev.Market, ev.Price = in.id, in.market, m.pTick
		case kQuote:
			in := d.instrumentOf(m.inst, m.asset.b, m.market)
			d.closeIfNewTs(in, m)
			ev := d.newEvent(out, venue.EventQuote, m)
			ev.Instrument, ev.Market = in.id, in.market
			ev.BidPrice, ev.AskPrice, ev.HasBid, ev.HasAsk = m.pBid, m.pAsk, m.hasBid, m.hasAsk
		}
	}
	if len(more) > 0 {
		return errors.Join(append([]error{first}, more...)...)
	}
	return first
}

// instrumentOf returns the instrument parse found, or interns the asset: it
// is new, or was created by an earlier message of this frame.
func (d *Decoder) instrumentOf(in *instrument, id, market []byte) *instrument {
	if in != nil && (in.market != "" || len(market) == 0) { // inlined: the usual case
		return in
	}
	return d.internOf(in, id, market)
}

func (d *Decoder) internOf(in *instrument, id, market []byte) *instrument {
	if in == nil {
		return d.intern(id, market)
	}
	if in.market == "" && len(market) > 0 {
		d.fileMarket(in, market)
	}
	return in
}

// newEvent appends an event of type t for message m to out and returns it
// to be filled in place: an Event is large, and building one on the stack
// and copying it cost more than the rest of a small frame's second pass.
func (d *Decoder) newEvent(out *venue.Frame, t venue.EventType, m *msg) *venue.Event {
	ev := d.eventSlot(out, t)
	ev.Type, ev.ExchangeNs, ev.Raw, ev.Text = t, m.tsNs, d.frame[m.start:m.end], m.typ
	return ev
}

// eventSlot appends a zeroed slot for an event of type t to out, counting
// it. Callers fill the slot field by field: a struct literal assigned
// through the pointer is built on the stack and then copied (an Event is
// about 200 bytes), which cost more than the rest of a small frame's second
// pass.
func (d *Decoder) eventSlot(out *venue.Frame, t venue.EventType) *venue.Event {
	d.stats.Events[t]++
	n := len(out.Events)
	if n < cap(out.Events) {
		out.Events = out.Events[:n+1]
		out.Events[n] = venue.Event{}
	} else {
		out.Events = append(out.Events, venue.Event{})
	}
	return &out.Events[n]
}

// bookEvent is newEvent for an event of in's book whose Raw is raw.
func (d *Decoder) bookEvent(out *venue.Frame, t venue.EventType, m *msg, in *instrument, raw []byte) *venue.Event {
	ev := d.eventSlot(out, t)
	ev.Type, ev.ExchangeNs, ev.Raw, ev.Text = t, m.tsNs, raw, m.typ
	ev.Instrument, ev.Market, ev.Book = in.id, in.market, in.book
	return ev
}

// closeIfNewTs closes in's batch when a message for it carries another
// timestamp: a trade or quote of the same millisecond belongs to the match.
func (d *Decoder) closeIfNewTs(in *instrument, m *msg) {
	if (in.batchOpen || in.batchHash) && in.batchTs != m.tsMs {
		d.closeBatch(in, false)
	}
}

// closeBatch ends in's timestamp batch of price changes: only now may the
// book be judged, because inside a match it can be transiently crossed and
// the venue hashes the book after the batch. It also settles a sampled
// snapshot's hash left open (checkHash). force checks the hash even when
// sampling would pass it over (the book is about to change in a way no
// later hash describes).
func (d *Decoder) closeBatch(in *instrument, force bool) {
	if in.batchOpen || in.batchHash { // inlined: most books have neither
		d.endBatch(in, force)
	}
}

func (d *Decoder) endBatch(in *instrument, force bool) {
	if in.batchOpen {
		in.batchOpen = false
		d.judgeTop(in)
	}
	if in.batchHash {
		d.judgeBatch(in, force)
	}
}

// judgeTop runs the crossed-book and top-of-book checks of a closed batch.
func (d *Decoder) judgeTop(in *instrument) {
	b := in.book
	if !b.Valid() {
		return
	}
	in.q.Crossed = b.Crossed()
	if in.q.Crossed {
		in.q.CrossedBatch++
		d.stats.CrossedBatches++
	}
	if !in.topKnown {
		return
	}
	var bid, ask int64
	if l, ok := b.Best(book.Bid); ok {
		bid = l.Price
	}
	if l, ok := b.Best(book.Ask); ok {
		ask = l.Price
	}
	in.q.TopChecked++
	d.stats.TopChecked++
	if bid != in.bestBid || ask != in.bestAsk {
		in.q.TopMismatch++
		d.stats.TopMismatch++
	}
}

// asksKey sits between the two sides in the hash input.
var asksKey = []byte(`],"asks":[`)

// hashForm reports whether want is the hash of in's book at timestamp ts in
// one form (with last_trade_price or without). The sides come from in's hash
// cache and go straight into a reused SHA-1 state: per check only the
// timestamp is formatted, and the SHA-1 of the input is all that is left of
// the cost (see BenchmarkReal/price_change_2_hashchecked).
func (d *Decoder) hashForm(in *instrument, ts []byte, want *[sha1.Size]byte, withLtp bool) bool {
	c := &in.hc
	c.sync(in.book, &d.topBuf)
	tk := tailKey{minOrder: in.minOrder, tick: in.tick, negRisk: in.negRisk, withLtp: withLtp}
	if withLtp {
		tk.ltp, tk.pad = in.ltp, in.ltpPad
	}
	if !c.tailOK || c.tailKey != tk {
		buf := append(c.tail[:0], `],"min_order_size":"`...)
		buf = appendDecimal(buf, tk.minOrder, sizeDecimals)
		buf = append(buf, `","tick_size":"`...)
		buf = appendDecimal(buf, tk.tick, priceDecimals)
		buf = appendHashTail(buf, tk.negRisk, withLtp)
		if withLtp {
			if tk.ltp > 0 { // -1: present and empty, "last_trade_price":""
				buf = appendLtp(buf, tk.ltp, tk.pad)
			}
			buf = append(buf, `"}`...)
		}
		c.tail, c.tailKey, c.tailOK = buf, tk, true
	}
	if c.memoOK && c.memoVer == c.ver && c.memoTail == tk && c.memoMarket == in.market && bytes.Equal(c.memoTs, ts) {
		return c.memoSum == *want
	}
	h := d.hashBody(in, ts)
	h.Write(c.tail)
	h.Sum(c.memoSum[:0])
	c.memoOK, c.memoVer, c.memoTail, c.memoMarket = true, c.ver, tk, in.market
	c.memoTs = append(c.memoTs[:0], ts...)
	return c.memoSum == *want
}

// hashBody returns d.sha holding in's hash input at ts up to the end of the
// asks, from in's hash cache (synced).
func (d *Decoder) hashBody(in *instrument, ts []byte) hash.Hash {
	c := &in.hc
	c.sync(in.book, &d.topBuf)
	buf := append(d.hashBuf[:0], `{"market":"`...)
	buf = append(buf, in.market...)
	buf = append(buf, `","asset_id":"`...)
	buf = append(buf, in.id...)
	buf = append(buf, `","timestamp":"`...)
	np := len(buf)
	buf = append(buf, ts...)
	buf = append(buf, `","hash":"","bids":[`...)
	d.hashBuf = buf
	if d.sha == nil {
		d.sha = sha1.New()
	}
	h := d.sha
	// The input up to the timestamp is the same for every check of the
	// asset: resume from the SHA-1 state after it. With real ids that prefix
	// is about 190 bytes, two whole blocks not hashed again.
	if u, ok := h.(encoding.BinaryUnmarshaler); !c.midOK || c.midMarket != in.market || !ok || u.UnmarshalBinary(c.mid) != nil {
		h.Reset()
		h.Write(buf[:np])
		c.midOK, c.midMarket = false, in.market
		if a, ok := h.(encoding.BinaryAppender); ok {
			var err error
			c.mid, err = a.AppendBinary(c.mid[:0])
			c.midOK = err == nil
		}
	}
	h.Write(buf[np:])
	h.Write(c.side[book.Bid].input())
	h.Write(asksKey)
	h.Write(c.side[book.Ask].input())
	return h
}
