package backtest

import (
	"fmt"
	"strings"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// enter validates and matches an order arriving at the exchange.
func (e *Engine) enter(in *Instrument, o *Order) {
	o.ActiveNs = e.xNs
	r := in.rules
	t := r.t
	exNs := e.xNs
	xb := in.xbook()
	switch {
	case in.Resolved:
		e.reject(in, o, t.Reasons.Resolved)
		return
	case !r.accepts(o.TIF):
		e.reject(in, o, fmt.Sprintf("time in force %s not offered by %s (it offers %s)", o.TIF, r.name, strings.Join(t.OrderTypes, ", ")))
		return
	case xb == nil || !xb.Valid():
		e.reject(in, o, "book not valid (before the first snapshot or after a gap): order not simulated")
		return
	}
	if reason := check(in, o, exNs); reason != "" {
		e.reject(in, o, reason)
		return
	}
	if t.Outcomes && !e.cfg.AllowShort && o.Side == Sell && o.Size > in.xPos-e.sellingRest(in, o) {
		e.reject(in, o, t.Reasons.NoBalance)
		return
	}
	if reason := e.afford(in, o); reason != "" {
		e.reject(in, o, reason)
		return
	}
	if o.ReduceOnly {
		o.Size = min(o.Size, abs64(in.xPos))
	}
	bs := o.Side.bookSide()
	opp := book.Ask
	if bs == book.Ask {
		opp = book.Bid
	}
	marketable := e.crosses(in, o, opp)
	if (o.PostOnly || o.TIF == ALO) && marketable {
		reason := t.Reasons.PostOnlyCrosses
		if o.TIF == ALO {
			b, _ := xb.Best(book.Bid)
			a, _ := xb.Best(book.Ask)
			reason += ", bbo was " + book.FormatDecimal(b.Price, in.Scale.PriceDecimals) + "@" + book.FormatDecimal(a.Price, in.Scale.PriceDecimals)
		}
		e.reject(in, o, reason)
		return
	}
	if marketable && o.Side == Buy && o.Amount == 0 {
		// A limit BUY that takes liquidity is a marketable order too: the
		// venue's minimum value for one (Polymarket $1).
		v := Notional(o.Price, o.Size, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
		if m := minMarketable(in); m > 0 && v < m*pow10(CashDecimals-in.Scale.PriceDecimals) {
			e.reject(in, o, reasonText(t.Reasons.MinMarketable, "", 0, 0, fmtDec(v, CashDecimals)))
			return
		}
	}
	if o.TIF == FOK && !e.canFill(in, o, opp) {
		e.reject(in, o, t.Reasons.FOKUnfilled)
		return
	}
	if marketable {
		e.take(in, o, opp)
	}
	if t.CrossMargin {
		defer e.checkMargin(r) // peak margin, with the order resting or filled
	}
	if o.Status.Done() {
		return
	}
	if o.TIF.immediate() {
		if o.Filled == 0 {
			e.finish(in, o, StatusCancelled, t.Reasons.FAKUnfilled)
		} else {
			e.finish(in, o, StatusCancelled, "unfilled rest killed ("+o.TIF.String()+")")
		}
		return
	}
	o.Status = StatusOpen
	lv, _ := xb.Level(bs, o.Price)
	o.Queue, o.prevLevel, o.tradedHere = lv, lv, 0
	e.rest(in, o)
	if o.TIF == GTD {
		// Gone at the venue's threshold before the stated time, exactly.
		e.push(action{atNs: o.ExpireNs - int64(t.GTDThreshold), kind: actExpire, order: o})
	}
	e.note(o)
}

func (e *Engine) sellingRest(in *Instrument, skip *Order) int64 {
	var s int64
	for _, o := range in.open {
		if o != skip && o.Side == Sell {
			s += o.Leaves()
		}
	}
	return s
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// better reports whether price p is at or inside limit for a taker of side s.
func better(s Side, p, limit int64) bool {
	if s == Buy {
		return p <= limit
	}
	return p >= limit
}

// levels returns the liquidity a taker of o meets on side opp, best first:
// the recorded book, and for a mirrored pair the complement's book seen
// from the other side (a BUY YES at p meets SELL YES at p and BUY NO at
// 1 − p). The venue publishes the same resting orders in both books, so a
// price's liquidity is the larger of the two, never their sum.
//
// local selects the books as the strategy received them (Context.Take,
// Available) instead of the exchange's (matching). The slice is in's
// scratch space, valid until the next call for in.
func (e *Engine) levels(in *Instrument, opp book.Side, local bool) []book.Level {
	b := in.xbook()
	if local {
		b = in.Book
	}
	in.scratch = b.Top(opp, in.scratch[:0], -1)
	c := in.Complement
	if c == nil {
		return in.scratch
	}
	cb := c.xbook()
	if local {
		cb = c.Book
	}
	if cb == nil || !cb.Valid() || (local && cb.Crossed()) {
		return in.scratch
	}
	one := pow10(in.Scale.PriceDecimals)
	mside := book.Bid
	if opp == book.Bid {
		mside = book.Ask
	}
	n := cb.Len(mside)
	base := len(in.scratch)
	in.scratch = cb.Top(mside, in.scratch, n)
	own, mir := in.scratch[:base], in.scratch[base:]
	for i := range mir {
		mir[i].Price = one - mir[i].Price
	}
	// merge own and mir (both best first for opp) into in.merged, kept
	// between calls: appending past scratch's end would allocate each time.
	out := in.merged[:0]
	i, j := 0, 0
	bestFirst := func(a, b int64) bool {
		if opp == book.Ask {
			return a < b
		}
		return a > b
	}
	for i < len(own) || j < len(mir) {
		switch {
		case j >= len(mir) || (i < len(own) && bestFirst(own[i].Price, mir[j].Price)):
			out = append(out, own[i])
			i++
		case i >= len(own) || bestFirst(mir[j].Price, own[i].Price):
			out = append(out, mir[j])
			j++
		default:
			l := own[i]
			l.Size = max(l.Size, mir[j].Size)
			out = append(out, l)
			i++
			j++
		}
	}
	in.merged = out
	return out
}

func (e *Engine) crosses(in *Instrument, o *Order, opp book.Side) bool {
	if p, ok := bestLevel(in, opp); !ok || !better(o.Side, p, o.Price) {
		return false // the best level levels would return does not cross
	}
	if len(in.taken) == 0 {
		// Nothing of in's book is taken: the best level, which crosses,
		// has size (a book holds no empty level).
		return true
	}
	for _, l := range e.levels(in, opp, false) {
		if !better(o.Side, l.Price, o.Price) {
			return false
		}
		if l.Size-in.takenAt(opp, l.Price) > 0 {
			return true
		}
	}
	return false
}

// bestLevel returns the price of the first level levels(in, opp, false)
// returns (the better of the book's best and the complement's mirrored
// best), without copying either book: most post-only orders do not cross,
// and crosses needs no more than this to say so.
func bestLevel(in *Instrument, opp book.Side) (int64, bool) {
	l, ok := in.xbook().Best(opp)
	c := in.Complement
	if c == nil {
		return l.Price, ok
	}
	cb := c.xbook()
	if cb == nil || !cb.Valid() {
		return l.Price, ok
	}
	mside := book.Bid
	if opp == book.Bid {
		mside = book.Ask
	}
	m, mok := cb.Best(mside)
	if !mok {
		return l.Price, ok
	}
	mp := pow10(in.Scale.PriceDecimals) - m.Price
	if !ok || (opp == book.Ask && mp < l.Price) || (opp == book.Bid && mp > l.Price) {
		return mp, true
	}
	return l.Price, true
}

// canFill reports whether a FOK can fill completely now.
func (e *Engine) canFill(in *Instrument, o *Order, opp book.Side) bool {
	need, amt := o.Size, o.Amount
	for _, l := range e.levels(in, opp, false) {
		if !better(o.Side, l.Price, o.Price) {
			break
		}
		avail := l.Size - in.takenAt(opp, l.Price)
		if amt == 0 {
			avail -= avail % in.Lot()
		}
		if avail <= 0 {
			continue
		}
		if amt > 0 {
			cost := Notional(l.Price, avail, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
			if cost >= amt*pow10(CashDecimals-in.Scale.PriceDecimals) {
				return true
			}
			amt -= cost / pow10(CashDecimals-in.Scale.PriceDecimals)
			continue
		}
		need -= avail
		if need <= 0 {
			return true
		}
	}
	return false
}

// take walks the levels visible at arrival.
func (e *Engine) take(in *Instrument, o *Order, opp book.Side) {
	sc := in.Scale
	cashUnit := pow10(CashDecimals - sc.PriceDecimals)
	amtLeft := o.Amount * cashUnit // dollars at CashDecimals
	for _, l := range e.levels(in, opp, false) {
		if !better(o.Side, l.Price, o.Price) {
			break
		}
		avail := l.Size - in.takenAt(opp, l.Price)
		if avail <= 0 {
			continue
		}
		var q int64
		if o.Amount > 0 {
			// shares = dollars / price, floored to the size scale: the
			// venue spends a market BUY's whole amount, the shares it
			// receives are not in lots.
			q = mulDivFloor(amtLeft, pow10(sc.SizeDecimals), l.Price*cashUnit)
			q = min(q, avail)
			if q <= 0 {
				break
			}
		} else {
			// Whole lots: the rest of a level finer than the lot stays.
			q = min(avail, o.Leaves())
			q -= q % in.Lot()
			if q <= 0 {
				continue
			}
		}
		e.consume(in, opp, l.Price, q)
		if o.Amount > 0 {
			o.Size += q
			amtLeft -= Notional(l.Price, q, sc.PriceDecimals, sc.SizeDecimals)
		}
		e.fill(in, o, l.Price, q, Taker, 0)
		if o.Amount == 0 && o.Leaves() == 0 {
			break
		}
	}
	if o.Amount > 0 && !o.Status.Done() {
		// A dollar-sized order is done when its money is spent or the book is.
		e.finish(in, o, StatusFilled, "")
	}
}

// consume records q taken at price on side opp of in's book and, for a
// mirrored pair, at 1 − price on the other side of the complement's: the
// venue shows the same resting orders in both books, so what one token's
// taker consumed is gone for the other token's too.
func (e *Engine) consume(in *Instrument, opp book.Side, price, q int64) {
	in.take(opp, price, q)
	if c := in.Complement; c != nil {
		c.take(1-opp, pow10(in.Scale.PriceDecimals)-price, q)
	}
}

// fill books one execution at the exchange (e.xNs); the report reaches
// the strategy after the acknowledgement latency, and only then does its
// view (Context.Position, Cash, Fills) change.
func (e *Engine) fill(in *Instrument, o *Order, price, q int64, liq Liquidity, queue int64) {
	sc := in.Scale
	if o.Status == StatusOpen {
		// A resting order holds less (Engine.reserved); one entering
		// holds nothing yet.
		e.reserved -= buyHold(in, o)
		o.Filled += q
		e.reserved += buyHold(in, o)
	} else {
		o.Filled += q
	}
	notional := Notional(price, q, sc.PriceDecimals, sc.SizeDecimals)
	fee := int64(0)
	if fm := in.rules.fees; fm != nil {
		fi := e.feeInput(in, price, q, liq)
		fee = fm.Fee(fi)
		e.noteFeeRate(fm, fi, fee, e.nowNs)
	}
	delta := notional
	if o.Side == Buy {
		delta = -notional
		in.xPos += q
	} else {
		in.xPos -= q
	}
	delta -= fee
	e.cash += delta
	in.cashFlow += delta
	e.hold(in)
	if fee >= 0 {
		e.fees += fee
	} else {
		e.rebates -= fee
	}
	e.turnover += notional
	in.lastFill = price
	if m, ok := in.Mid(); ok {
		in.lastMid = m // marks start from the book the fill met
	}
	at := e.noteAt()
	n := e.fillBase + len(e.fills) // the fill's index (Seq − 1)
	e.fills = append(roomFor(e.fills), Fill{Seq: uint64(n + 1), OrderID: o.ID, Venue: in.Venue, Instrument: in.ID,
		Side: o.Side, Price: price, Size: q, Liquidity: liq, Queue: queue, Fee: fee, ExchangeNs: e.xNs, RecvNs: at,
		Tag: o.Tag, cashDelta: delta, filled: o.Filled})
	e.filled(in, &e.fills[len(e.fills)-1])
	e.addMarkouts(in, uint64(n+1), price, o.Side)
	e.seq++
	o.refs++
	e.notes.push(note{atNs: at, seq: e.seq, kind: noteFill, fill: n, in: in})
	if o.Amount == 0 && o.Leaves() == 0 {
		e.finish(in, o, StatusFilled, "")
	}
}

// traded applies a trade printed on in (taker side, price, size) to the
// strategy's resting orders of in and, for a mirrored pair, of its
// complement c (nil if none), which meets it as a trade of the other side
// at 1 − price. An order at the price advances through its queue (or, with
// Config.TradesAtPrice, fills up to the trade's size whatever the queue);
// one the trade went through fills whole. The strategy's orders at the
// price share the venue's one queue, on either token: they are taken in
// arrival order, and one print fills no more than its size in all.
func (e *Engine) traded(in, c *Instrument, taker book.Side, price, size int64) {
	left := size // what the strategy's orders at the price have not filled
	var cTaker book.Side
	var cPrice int64
	if c != nil {
		cTaker, cPrice = 1-taker, pow10(in.Scale.PriceDecimals)-price
	}
	i, j := 0, 0 // the next order of in.open and c.open to meet the trade
	for {
		// The earlier arrival of the two lists' next orders (each list is
		// in arrival order).
		useC := c != nil && j < len(c.open)
		if i < len(in.open) && (!useC || arrivedBefore(in.open[i], c.open[j])) {
			useC = false
		} else if !useC {
			return
		}
		if useC {
			if !e.tradedOne(c, c.open[j], cTaker, cPrice, size, &left) {
				j++
			}
		} else if !e.tradedOne(in, in.open[i], taker, price, size, &left) {
			i++
		}
	}
}

func arrivedBefore(a, b *Order) bool {
	return a.ActiveNs < b.ActiveNs || (a.ActiveNs == b.ActiveNs && a.ID < b.ID)
}

// tradedOne applies a trade to one resting order o of in; left is what of
// the trade the strategy's earlier orders at its price have not filled. It
// reports whether o left in.open (filled).
func (e *Engine) tradedOne(in *Instrument, o *Order, taker book.Side, price, size int64, left *int64) bool {
	// A trade reaches a resting order at its price or through it (a buy
	// printed above a resting sell, a sell below a resting buy); not one
	// on the taker's side.
	if o.Side.bookSide() == taker || !better(o.Side, price, o.Price) {
		return false
	}
	before := len(in.open)
	switch {
	case price != o.Price:
		// Traded through our price: we were ahead of it.
		e.fill(in, o, o.Price, o.Leaves(), Maker, max(o.Queue, 0))
	case e.cfg.TradesAtPrice:
		x := min(*left, o.Leaves())
		x -= x % in.Lot()
		if x > 0 {
			*left -= x
			e.fill(in, o, o.Price, x, Maker, max(o.Queue, 0))
		}
	default:
		ahead := max(o.Queue, 0)
		e.cfg.Queue.Trade(o, size)
		if o.Queue < 0 {
			// What traded beyond the queue ahead, never more than the trade
			// (hftbacktest: exec_qty = min(filled, qty, leaves),
			// partialfillexchange.rs) less what earlier orders of ours took,
			// in whole lots.
			x := min(-o.Queue, *left, o.Leaves())
			x -= x % in.Lot()
			o.Queue = 0
			if x > 0 {
				*left -= x
				e.fill(in, o, o.Price, x, Maker, ahead)
			}
		}
	}
	return len(in.open) < before
}

// market applies one event to the strategy's resting orders of in, at the
// exchange (e.xNs), against the exchange's book after the event.
func (e *Engine) market(in *Instrument, ev *feed.Event) {
	d := ev.Decoded
	switch d.Type {
	case venue.EventSnapshot:
		in.untakeAll()
	case venue.EventLevel:
		in.untake(d.Side, d.Price)
	}
	e.markouts(in, e.xNs)
	if d.Type == venue.EventTrade && (!d.Backfill || e.cfg.UseBackfill) {
		// The venue prints a match on one token only; the mirrored book
		// makes it a trade of the other at 1 − p, the taker on the other
		// side: it reaches the complement's resting orders too.
		c := in.Complement
		if c != nil && len(c.open) == 0 {
			c = nil
		}
		if len(in.open) > 0 || c != nil {
			e.traded(in, c, d.Side, d.Price, d.Size)
		}
	}
	if len(in.open) == 0 {
		return
	}
	xb := in.xbook()
	q := e.cfg.Queue
	switch d.Type {
	case venue.EventLevel:
		for _, o := range in.open {
			if o.Side.bookSide() == d.Side && o.Price == d.Price {
				q.Depth(o, o.prevLevel, d.Size)
				o.prevLevel = d.Size
			}
		}
	case venue.EventSnapshot:
		for _, o := range in.open {
			lv, _ := xb.Level(o.Side.bookSide(), o.Price)
			if lv != o.prevLevel {
				q.Depth(o, o.prevLevel, lv)
				o.prevLevel = lv
			}
		}
	}
	// The book moved through a resting order (best opposite strictly better
	// than its price): it was hit as a maker, at its price.
	if xb != nil && xb.Valid() && (d.Type == venue.EventLevel || d.Type == venue.EventSnapshot) && !xb.Crossed() {
		for i := 0; i < len(in.open); i++ {
			o := in.open[i]
			opp := book.Ask
			if o.Side == Sell {
				opp = book.Bid
			}
			b, ok := xb.Best(opp)
			if ok && ((o.Side == Buy && b.Price < o.Price) || (o.Side == Sell && b.Price > o.Price)) {
				e.fill(in, o, o.Price, o.Leaves(), Maker, max(o.Queue, 0))
				i--
			}
		}
	}
}
