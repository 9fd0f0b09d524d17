package backtest

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/tapedeck/tapedeck/book"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Context is a strategy's handle on the simulated exchange. Its methods are
// for the engine's goroutine (inside the strategy's callbacks).
type Context struct{ e *Engine }

// Now returns the simulated local clock: the receive time of the event being
// delivered (ns since the epoch).
func (c *Context) Now() int64 { return c.e.nowNs }

// Instrument returns the simulator's state of an instrument (book, tick,
// minimum size, position), or nil if none was seen.
func (c *Context) Instrument(id string) *Instrument { return c.e.insts[id] }

// Instruments returns every instrument seen, in first-seen order.
func (c *Context) Instruments() []*Instrument { return c.e.instList }

// Price converts a decimal price to the instrument's fixed point (rounded).
func (c *Context) Price(id string, p float64) int64 {
	in := c.e.insts[id]
	if in == nil {
		return 0
	}
	return int64(math.Round(p * float64(pow10(in.Scale.PriceDecimals))))
}

// Shares converts a decimal size to the instrument's fixed point (rounded).
func (c *Context) Shares(id string, s float64) int64 {
	in := c.e.insts[id]
	if in == nil {
		return 0
	}
	return int64(math.Round(s * float64(pow10(in.Scale.SizeDecimals))))
}

// Submit sends an order; it reaches the exchange after the entry latency.
// The returned id names it in every later callback and output. An order for
// an instrument never seen is rejected at once (the error names it).
func (c *Context) Submit(r OrderRequest) (uint64, error) {
	e := c.e
	o := &Order{ID: uint64(len(e.orders) + 1), Instrument: r.Instrument, Side: r.Side, Price: r.Price, Size: r.Size,
		Amount: r.Amount, TIF: r.TIF, PostOnly: r.PostOnly, ReduceOnly: r.ReduceOnly, ExpireNs: r.ExpireNs, Tag: r.Tag,
		SubmitNs: e.nowNs, Status: StatusPending}
	e.orders = append(e.orders, o)
	in := e.insts[r.Instrument]
	if in == nil {
		reason := fmt.Sprintf("unknown instrument %q: no data recorded for it", r.Instrument)
		e.reject(nil, o, reason)
		return o.ID, &Error{OrderID: o.ID, Instrument: r.Instrument, Reason: reason}
	}
	o.Venue = in.Venue
	if in.Resolved && in.rules != nil {
		e.reject(in, o, in.rules.t.Reasons.Resolved)
		return o.ID, &Error{OrderID: o.ID, Instrument: r.Instrument, Reason: o.Reason}
	}
	e.push(action{atNs: e.nowNs + e.cfg.Latency.Entry(), kind: actSubmit, order: o})
	return o.ID, nil
}

func (e *Engine) push(a action) {
	e.seq++
	a.seq = e.seq
	a.order.pending = true
	e.actions.push(a)
}

// Cancel asks to cancel an order; it takes effect after the cancel latency
// (the order can still fill meanwhile).
func (c *Context) Cancel(id uint64) error {
	o := c.e.order(id)
	if o == nil {
		return &Error{OrderID: id, Reason: "no such order"}
	}
	if o.Status.Done() {
		return &Error{OrderID: id, Instrument: o.Instrument, Reason: "order is " + o.Status.String()}
	}
	c.e.push(action{atNs: c.e.nowNs + c.e.cfg.Latency.Cancel(), kind: actCancel, order: o})
	return nil
}

// Amend changes an open order's price and size after the entry latency. A
// size decrease at the same price keeps the queue position; anything else
// is a cancel and a new entry at the back of the queue (Polymarket has no
// amend: the same as cancel and replace; Hyperliquid's modify likewise
// loses priority).
func (c *Context) Amend(id uint64, price, size int64) error {
	o := c.e.order(id)
	if o == nil {
		return &Error{OrderID: id, Reason: "no such order"}
	}
	if o.Status.Done() {
		return &Error{OrderID: id, Instrument: o.Instrument, Reason: "order is " + o.Status.String()}
	}
	c.e.push(action{atNs: c.e.nowNs + c.e.cfg.Latency.Entry(), kind: actAmend, order: o, price: price, size: size})
	return nil
}

func (e *Engine) order(id uint64) *Order {
	if id == 0 || id > uint64(len(e.orders)) {
		return nil
	}
	return e.orders[id-1]
}

// Order returns an order by id (nil if none). Read-only.
func (c *Context) Order(id uint64) *Order { return c.e.order(id) }

// OpenOrders appends the instrument's resting orders ("" for all) to dst.
func (c *Context) OpenOrders(dst []*Order, instrument string) []*Order {
	for _, in := range c.e.instList {
		if instrument == "" || in.ID == instrument {
			dst = append(dst, in.open...)
		}
	}
	return dst
}

// Working reports how many orders are pending (on their way to the
// exchange) or open, of one instrument ("" for all).
func (c *Context) Working(instrument string) int {
	n := 0
	for _, in := range c.e.instList {
		if instrument == "" || in.ID == instrument {
			n += len(in.open)
		}
	}
	for _, a := range c.e.actions {
		if a.kind != actCancel && a.order.Status == StatusPending && (instrument == "" || a.order.Instrument == instrument) {
			n++
		}
	}
	return n
}

// Fills returns the fills so far (read-only; valid until the next callback).
func (c *Context) Fills() []Fill { return c.e.fills }

// Position returns the instrument's position in size units.
func (c *Context) Position(instrument string) int64 {
	if in := c.e.insts[instrument]; in != nil {
		return in.Position
	}
	return 0
}

// Cash returns cash at CashDecimals.
func (c *Context) Cash() int64 { return c.e.cash }

// TakerFeeRate is the taker rate a fill of instrument would be priced at
// now, and where it comes from (Config.FeeRates, FeeCategories, what the
// recording has stated so far, FeeRate; a fee tier): ok false when the
// instrument is unknown or its venue's fee model cannot tell.
func (c *Context) TakerFeeRate(instrument string) (rate float64, src FeeSource, ok bool) {
	return c.e.takerRate(c.e.insts[instrument])
}

// SetTimer calls the strategy's OnTimer(tag) at the first event at or after
// atNs (local clock).
func (c *Context) SetTimer(atNs, tag int64) {
	c.e.seq++
	c.e.timers.push(timer{atNs: atNs, seq: c.e.seq, tag: tag})
}

// Best returns the best level of a side of the instrument's book.
func (c *Context) Best(instrument string, side book.Side) (book.Level, bool) {
	in := c.e.insts[instrument]
	if in == nil || in.Book == nil {
		return book.Level{}, false
	}
	return in.Book.Best(side)
}

// Available returns the size a taker order of side could take now at limit
// or better on the instrument, as the simulated exchange sees it: the
// recorded book, its mirror for an outcome token (a BUY YES meets BUY NO at
// 1 − p), less what the strategy's own taker orders already took. Orders in
// flight meet the book as it is when they arrive, which may differ.
func (c *Context) Available(instrument string, side Side, limit int64) int64 {
	in := c.e.insts[instrument]
	if in == nil || in.Book == nil || !in.Book.Valid() {
		return 0
	}
	opp := book.Ask
	if side == Sell {
		opp = book.Bid
	}
	var n int64
	for _, l := range c.e.levels(in, opp) {
		if !better(side, l.Price, limit) {
			break
		}
		n += max(l.Size-in.takenAt(opp, l.Price), 0)
	}
	return n
}

// Take returns the best price and size a taker of side meets now on the
// instrument, as Available sees the book (mirror included, own takes
// excluded); ok is false when there is none.
func (c *Context) Take(instrument string, side Side) (price, size int64, ok bool) {
	in := c.e.insts[instrument]
	if in == nil || in.Book == nil || !in.Book.Valid() {
		return 0, 0, false
	}
	opp := book.Ask
	if side == Sell {
		opp = book.Bid
	}
	for _, l := range c.e.levels(in, opp) {
		if n := l.Size - in.takenAt(opp, l.Price); n > 0 {
			return l.Price, n, true
		}
	}
	return 0, 0, false
}
