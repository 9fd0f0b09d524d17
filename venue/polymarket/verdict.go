package polymarket

import (
	"crypto/sha1"
	"encoding"
)

// Hash verdicts (NOTES.md, "Hash verdicts"). The venue hashes the book after
// a whole same-timestamp batch, with the last trade price as it stands after
// the batch's trade: that price's last_trade_price message may come after
// the hashes that include it, and on the market's other asset (at 1 − p).
// A hash is judged when its batch closes (or at once, for a snapshot): ok if
// it matches with a known last trade price; otherwise pending, kept as the
// SHA-1 state of its input up to the last trade price's value, and tried
// with every trade of the asset or of its complement that arrives within
// the window; when the window ends, a mismatch if some trade was tried and
// none explained it, unverifiable if none came.

// maxPendingHashes bounds the verdicts one asset keeps waiting: a fixed
// array, no allocation. The oldest is decided (as at the end of its window)
// to make room.
const maxPendingHashes = 4

// sha1StateLen is the length of crypto/sha1's marshalled state.
const sha1StateLen = 96

// pendingHash is a hash waiting for a trade that may explain it.
type pendingHash struct {
	state [sha1StateLen]byte // SHA-1 after the input up to `"last_trade_price":"`
	want  [sha1.Size]byte
	ms    int64  // its batch's or snapshot's time
	good  uint64 // instrument.goodSeq when taken
	tried bool   // a trade was tried and did not explain it
}

// checkHash judges a snapshot's hash want against in's book, which it
// describes whole, when every hashed field is known. Sampling, a hash not
// due stays open like a batch's, settled (closeBatch) when a message of
// another timestamp, a snapshot, a loss or the end comes.
func (d *Decoder) checkHash(in *instrument, ts, want []byte, tsMs int64) {
	// Inlined: most books' min_order_size is not known (a REST summary or
	// instrumentInfo tells it), so their hashes are not checked.
	if d.opts.hashCheck && in.minOrder > 0 {
		d.snapshotHash(in, ts, want, tsMs)
	}
}

func (d *Decoder) snapshotHash(in *instrument, ts, want []byte, tsMs int64) {
	if !in.hashable() || len(want) != len(in.batchRaw) {
		return
	}
	if d.opts.hashEvery == 0 || d.due(in, tsMs, false) {
		var sum [sha1.Size]byte
		if decodeHash40(&sum, want) {
			d.stats.HashSeen++
			d.judge(in, ts, &sum, tsMs)
		}
		return
	}
	in.batchHash, in.batchTs = true, tsMs
	copy(in.batchRaw[:], want)
	in.batchTsTxt = append(in.batchTsTxt[:0], ts...)
	if !in.inPending {
		in.inPending = true
		d.pending = append(d.pending, in)
	}
}

// batchEntryHash keeps a price_change entry's hash as its batch's: the venue
// gives every entry of a batch the hash of the book after the whole batch,
// so the last one stands for them all.
func (d *Decoder) batchEntryHash(in *instrument, h []byte) {
	if d.opts.hashCheck && in.minOrder > 0 { // inlined, as checkHash
		// Copied, decoded only if judged: sampling judges few batches.
		if in.batchHash = len(h) == len(in.batchRaw); in.batchHash {
			copy(in.batchRaw[:], h)
		}
	}
}

// judgeBatch judges a closed batch's hash against the book after it.
func (d *Decoder) judgeBatch(in *instrument, force bool) {
	in.batchHash = false
	if !in.hashable() || !in.book.Valid() && !in.hashBad {
		return
	}
	// Decoded only when judged: sampling passes most over. A hash of 40
	// characters that are not all hex digits is seen but never judged.
	d.stats.HashSeen++
	var sum [sha1.Size]byte
	if d.due(in, in.batchTs, force) && decodeHash40(&sum, in.batchRaw[:]) {
		d.judge(in, in.batchTsTxt, &sum, in.batchTs)
	}
}

// due reports whether a hash of time ms is to be judged: always unless
// sampling (WithHashSampling), then the first, one per interval, and a
// forced one.
func (d *Decoder) due(in *instrument, ms int64, force bool) bool {
	if d.opts.hashEvery == 0 {
		return true
	}
	if force || !in.everHashed || ms-in.checkedMs >= d.opts.hashEvery || ms < in.checkedMs {
		in.everHashed, in.checkedMs = true, ms
		return true
	}
	return false
}

// judge compares in's book at ts with the venue's hash want: ok with the
// form that matched last, the other form, or a last trade price the asset
// had before or its complement's last trade implies; a mismatch at once when
// the asset's hashes are known not to include the last trade price;
// otherwise pending.
func (d *Decoder) judge(in *instrument, ts []byte, want *[sha1.Size]byte, ms int64) {
	ok := d.hashForm(in, ts, want, in.ltpFirst && in.ltp != 0)
	if !ok && in.ltp != 0 {
		if ok = d.hashForm(in, ts, want, !in.ltpFirst); ok {
			in.ltpFirst = !in.ltpFirst
		}
	}
	if ok {
		d.verdictOK(in, true)
		return
	}
	if in.okSeen && !in.ltpFirst {
		d.verdictMismatch(in, in.goodSeq) // hashed without a last trade price
		return
	}
	state, have := d.hashPrefix(in, ts)
	if !have {
		d.verdictUnverifiable(in)
		return
	}
	// The current price in its other text form, the price before it, and
	// the other asset's last trade taken either way (1 − p or p itself).
	for _, p := range [...]int64{in.ltp, in.ltpPrev, in.ltpComp, in.ltpSame, -1} {
		if p == 0 || p == in.ltp && p == -1 {
			continue
		}
		if ok, pad := d.tryLtp(state, p, want, in.ltpPad); ok {
			d.learnLtp(in, p, pad)
			d.verdictOK(in, true)
			return
		}
	}
	if d.opts.hashWindow <= 0 {
		d.verdictUnverifiable(in)
		return
	}
	if in.npend == maxPendingHashes {
		d.decidePending(in, 0)
	}
	p := &in.pend[in.npend]
	in.npend++
	*p = pendingHash{want: *want, ms: ms, good: in.goodSeq}
	copy(p.state[:], state)
	in.q.HashPending++
	d.stats.HashPending++
	if !in.inWaiting {
		in.inWaiting = true
		d.waiting = append(d.waiting, in)
	}
}

// verdictOK counts a match. current: the hash describes the book as it is
// now, so a book invalidated by a mismatch is valid again.
func (d *Decoder) verdictOK(in *instrument, current bool) {
	in.q.HashChecked++
	in.q.HashOK++
	d.stats.HashChecked++
	d.stats.HashOK++
	in.okSeen = true
	if current {
		in.goodSeq++
		if in.hashBad {
			in.hashBad = false
			if !in.gap && in.snapped {
				in.book.Revalidate()
			}
		}
	}
}

// verdictMismatch counts a confirmed mismatch and marks the book not valid,
// unless a snapshot or a matching hash has vouched for it since the hash was
// taken (goodSeq moved past good).
func (d *Decoder) verdictMismatch(in *instrument, good uint64) {
	in.q.HashChecked++
	in.q.HashMismatch++
	d.stats.HashChecked++
	d.stats.HashMismatch++
	if in.goodSeq == good && in.book.Valid() {
		in.book.Invalidate()
		in.hashBad = true
	}
}

func (d *Decoder) verdictUnverifiable(in *instrument) {
	in.q.HashChecked++
	in.q.HashUnverifiable++
	d.stats.HashChecked++
	d.stats.HashUnverifiable++
}

// decidePending decides in's pending hash i: its window is over.
func (d *Decoder) decidePending(in *instrument, i int) {
	p := &in.pend[i]
	if p.tried {
		d.verdictMismatch(in, p.good)
	} else {
		d.verdictUnverifiable(in)
	}
	d.dropPending(in, i)
}

func (d *Decoder) dropPending(in *instrument, i int) {
	copy(in.pend[i:in.npend], in.pend[i+1:in.npend])
	in.npend--
	in.q.HashPending--
	d.stats.HashPending--
}

// expireHashes decides the pending hashes whose window ended before nowMs
// (all of them with all).
func (d *Decoder) expireHashes(nowMs int64, all bool) {
	n := 0
	for _, in := range d.waiting {
		for i := 0; i < in.npend; {
			if all || in.pend[i].ms+d.opts.hashWindow < nowMs {
				d.decidePending(in, i)
				continue
			}
			i++
		}
		if in.npend > 0 {
			d.waiting[n] = in
			n++
		} else {
			in.inWaiting = false
		}
	}
	clear(d.waiting[n:])
	d.waiting = d.waiting[:n]
}

// trade records a last_trade_price of in at price p (time ms) and tries it,
// and 1 − p on the market's other asset, against the pending hashes.
func (d *Decoder) trade(in *instrument, p, ms int64) {
	if len(d.waiting) > 0 {
		d.expireHashes(ms, false)
	}
	if p != in.ltp {
		in.ltpPrev, in.ltp = in.ltp, p
	}
	if in.npend > 0 {
		// Either price: a real market's two assets have carried the same
		// last_trade_price in their hashes (NOTES.md, "Hash verdicts").
		d.tryTrade(in, p, priceOne-p)
	}
	if c := d.complement(in); c != nil {
		// The venue moves the other token's last trade price too (its
		// hashes say so): take 1 − p as the complement's; the price it had
		// stays a candidate (ltpPrev), as does 1 − p (ltpComp) should the
		// complement's own trade come later.
		q := priceOne - p
		c.ltpComp, c.ltpSame = q, p
		if c.ltpShared {
			q = p // its hashes took the other asset's price as it is
		}
		if c.ltp != q {
			c.ltpPrev, c.ltp = c.ltp, q
		}
		if c.npend > 0 {
			d.tryTrade(c, priceOne-p, p)
		}
	}
}

// priceOne is the price 1 at Scale.
const priceOne = 10000

// tryTrade tries last trade price p, and alt unless 0, on each of in's
// pending hashes.
func (d *Decoder) tryTrade(in *instrument, p, alt int64) {
	for i := 0; i < in.npend; {
		pe := &in.pend[i]
		ok, pad := d.tryLtp(pe.state[:], p, &pe.want, in.ltpPad)
		q := p
		if !ok && alt != 0 {
			ok, pad = d.tryLtp(pe.state[:], alt, &pe.want, in.ltpPad)
			q = alt
		}
		if ok {
			d.learnLtp(in, q, pad)
			d.verdictOK(in, false)
			d.dropPending(in, i)
			continue
		}
		pe.tried = true
		i++
	}
}

// learnLtp takes p, written with pad, as in's last trade price: a hash
// matched with it. Which of the other asset's trade prices it was (1 − p or
// p itself) is how that asset's next trade sets in's (trade).
func (d *Decoder) learnLtp(in *instrument, p int64, pad bool) {
	switch p {
	case in.ltpComp:
		in.ltpShared = false
	case in.ltpSame:
		in.ltpShared = true
	}
	in.ltp, in.ltpFirst, in.ltpPad = p, true, pad
}

// complement returns the other asset of in's market when exactly one is
// known, looking again only when instruments were added since.
func (d *Decoder) complement(in *instrument) *instrument {
	if in.comp != nil || in.compN == len(d.list) || in.market == "" {
		return in.comp
	}
	in.compN = len(d.list)
	var c *instrument
	for _, o := range d.list {
		if o != in && o.market == in.market {
			if c != nil {
				return nil // more than two outcomes: no single complement
			}
			c = o
		}
	}
	if c != nil {
		in.comp = c
		if c.comp == nil {
			c.comp = in
		}
	}
	return c
}

// hashPrefix returns the SHA-1 state after in's ten-field hash input at ts
// up to `"last_trade_price":"`, in d.stBuf (valid until the next call).
func (d *Decoder) hashPrefix(in *instrument, ts []byte) ([]byte, bool) {
	h := d.hashBody(in, ts)
	buf := append(d.stBuf[:0], `],"min_order_size":"`...)
	buf = appendDecimal(buf, in.minOrder, sizeDecimals)
	buf = append(buf, `","tick_size":"`...)
	buf = appendDecimal(buf, in.tick, priceDecimals)
	buf = appendHashTail(buf, in.negRisk, true)
	h.Write(buf)
	a, ok := h.(encoding.BinaryAppender)
	if !ok {
		return nil, false
	}
	st, err := a.AppendBinary(buf[:0])
	d.stBuf = st
	if err != nil || len(st) != sha1StateLen {
		return nil, false
	}
	return st, true
}

// tryLtp reports whether state, completed with last trade price p (-1: the
// empty text), hashes to want, trying p's text with pad first and then in
// the other form (appendLtp) when it differs; pad reports the form that
// matched.
func (d *Decoder) tryLtp(state []byte, p int64, want *[sha1.Size]byte, pad bool) (ok, padded bool) {
	if d.ltpHashes(state, p, pad, want) {
		return true, pad
	}
	// The forms differ when p has fewer than three decimals (0.49, 0.5).
	if p > 0 && p%100 == 0 && d.ltpHashes(state, p, !pad, want) {
		return true, !pad
	}
	return false, pad
}

// ltpHashes reports whether state completed with p written with pad hashes
// to want.
func (d *Decoder) ltpHashes(state []byte, p int64, pad bool, want *[sha1.Size]byte) bool {
	h := d.sha
	u, ok := h.(encoding.BinaryUnmarshaler)
	if !ok || u.UnmarshalBinary(state) != nil {
		return false
	}
	buf := d.ltpBuf[:0]
	if p > 0 {
		buf = appendLtp(buf, p, pad)
	}
	buf = append(buf, `"}`...)
	d.ltpBuf = buf
	h.Write(buf)
	h.Sum(d.sum[:0])
	return d.sum == *want
}
