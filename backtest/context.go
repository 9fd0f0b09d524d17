package backtest

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/tapedeck/tapedeck/book"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Context is a strategy's handle on the simulated exchange. Its methods are
// for the engine's goroutine (inside the strategy's callbacks).
type Context struct{ e *Engine }

// Now returns the simulated local clock: the receive time of the event being
// delivered (ns since the epoch).
func (c *Context) Now() int64 { return c.e.nowNs }

// Instrument returns an instrument as the strategy knows it (book, tick,
// minimum size, rules as the feed delivered them; Position, Funding and
// LastTrade as the reports received so far make them), or nil if none was
// seen. Read-only.
func (c *Context) Instrument(id string) *Instrument { return c.e.lookup(id) }

// Instruments returns every instrument seen, in first-seen order.
func (c *Context) Instruments() []*Instrument { return c.e.instList }

// Price converts a decimal price to the instrument's fixed point (rounded).
func (c *Context) Price(id string, p float64) int64 {
	in := c.e.lookup(id)
	if in == nil {
		return 0
	}
	return int64(math.Round(p * float64(pow10(in.Scale.PriceDecimals))))
}

// Shares converts a decimal size to the instrument's fixed point (rounded).
func (c *Context) Shares(id string, s float64) int64 {
	in := c.e.lookup(id)
	if in == nil {
		return 0
	}
	return int64(math.Round(s * float64(pow10(in.Scale.SizeDecimals))))
}

// Submit sends an order; it reaches the venue after the entry latency, on
// the venue's clock (see the package doc), and the strategy hears of it
// (Order, OnOrder) after the acknowledgement latency. The returned id names
// it in every later callback and output. An order for an instrument never
// seen, or one whose venue the simulator cannot trade, is rejected at once
// (the error names it; the rejection is also reported like any other).
func (c *Context) Submit(r OrderRequest) (uint64, error) {
	e := c.e
	e.view.version++
	id := e.nextOrderID()
	in := e.lookup(r.Instrument)
	var o *Order
	if in != nil {
		o = e.xorders.take(e, id)
	} else {
		o = e.newOrder() // kept to the end (tally.strays): never reused
	}
	*o = Order{ID: id, Instrument: r.Instrument, Side: r.Side, Price: r.Price, Size: r.Size,
		Amount: r.Amount, TIF: r.TIF, PostOnly: r.PostOnly, ReduceOnly: r.ReduceOnly, ExpireNs: r.ExpireNs, Tag: r.Tag,
		SubmitNs: e.nowNs, Status: StatusPending}
	e.orders = append(roomFor(e.orders), o)
	lo := e.newOrder()
	*lo = *o
	e.view.orders = append(roomFor(e.view.orders), lo)
	if in == nil {
		reason := fmt.Sprintf("unknown instrument %q: no data recorded for it", r.Instrument)
		e.rejectNow(nil, o, reason)
		return o.ID, &Error{OrderID: o.ID, Instrument: r.Instrument, Reason: reason}
	}
	o.Venue, lo.Venue = in.Venue, in.Venue
	o.in, lo.in = in, in
	in.view.live = append(in.view.live, lo)
	if in.rules == nil {
		e.rejectNow(in, o, "no simulated exchange for venue "+strconv.Quote(in.Venue))
		return o.ID, &Error{OrderID: o.ID, Instrument: r.Instrument, Reason: o.Reason}
	}
	if in.Resolved {
		// The resolution is public: the feed has told the strategy.
		e.rejectNow(in, o, in.rules.t.Reasons.Resolved)
		return o.ID, &Error{OrderID: o.ID, Instrument: r.Instrument, Reason: o.Reason}
	}
	e.track(in)
	e.push(action{atNs: e.nowNs + e.cfg.Latency.Entry(), kind: actSubmit, order: o})
	return o.ID, nil
}

// newOrder returns a zero Order from a slab, for the strategy's copy of
// an order (and the exchange's of an order for an unknown instrument): a
// run keeps every one until its result, or a strategy may keep a pointer
// to it, so taking them orderSlabLen at a time frees nothing later and
// saves an allocation per order.
func (e *Engine) newOrder() *Order {
	if len(e.orderSlab) == cap(e.orderSlab) {
		e.orderSlab = make([]Order, 0, orderSlabLen)
	}
	e.orderSlab = e.orderSlab[:len(e.orderSlab)+1]
	return &e.orderSlab[len(e.orderSlab)-1]
}

const orderSlabLen = 64

// xorderSlabs hands out the exchange's records of orders, from slabs as
// newOrder does; in a summary-only run it takes a slab again once every
// order in it has been let go. Such a run lets go of its orders in ID
// order (release, bounded.go), each once nothing about it is in flight,
// it is done and the strategy has been told so: then nothing refers to
// the exchange's record (the strategy only ever sees its own copy), and a
// slab whose last order's ID is at most Engine.orderBase holds no record
// in use. A full run keeps every order to its result and never reuses.
type xorderSlabs struct {
	cur    []Order
	curID  uint64     // the ID of cur's last order
	filled []usedSlab // summary-only runs: full slabs, oldest first
}

type usedSlab struct {
	orders []Order
	lastID uint64
}

// take returns a zero Order for the exchange's record of order id.
func (s *xorderSlabs) take(e *Engine, id uint64) *Order {
	if len(s.cur) == cap(s.cur) {
		if s.cur != nil && e.summaryOnly {
			s.filled = append(s.filled, usedSlab{s.cur, s.curID})
		}
		if len(s.filled) > 0 && s.filled[0].lastID <= e.orderBase {
			s.cur = s.filled[0].orders
			clear(s.cur) // let go of what the old orders pointed to
			s.cur = s.cur[:0]
			s.filled = dropFront(s.filled, 1)
		} else {
			s.cur = make([]Order, 0, orderSlabLen)
		}
	}
	s.cur, s.curID = s.cur[:len(s.cur)+1], id
	return &s.cur[len(s.cur)-1]
}

// rejectNow refuses an order before it leaves (no exchange to send it to).
func (e *Engine) rejectNow(in *Instrument, o *Order, reason string) {
	x := e.xNs
	e.xNs = e.nowNs
	e.reject(in, o, reason)
	e.xNs = x
}

// Cancel asks to cancel an order; it reaches the venue after the cancel
// latency (the order can still fill meanwhile). A cancel that reaches the
// venue before the order, or after it is done, is refused with the venue's
// unknown-order error (venue.TradingReasons.UnknownOrder), reported through
// OnOrder with the order's state and that reason; the order then rests as
// sent. The error is for an id never issued or an order the strategy has
// already been told is done.
func (c *Context) Cancel(id uint64) error {
	o, lo := c.e.order(id), c.e.localOrder(id)
	if o == nil {
		return c.e.noOrder(id)
	}
	if lo.Status.Done() {
		return &Error{OrderID: id, Instrument: o.Instrument, Reason: "order is " + lo.Status.String()}
	}
	c.e.view.version++
	c.e.push(action{atNs: c.e.nowNs + c.e.cfg.Latency.Cancel(), kind: actCancel, order: o})
	return nil
}

// Amend changes an open order's price and size after the entry latency. A
// size decrease at the same price keeps the queue position; anything else
// is a cancel and a new entry at the back of the queue (Polymarket has no
// amend: the same as cancel and replace; Hyperliquid's modify likewise
// loses priority). An amend that finds the order not resting is refused
// like a cancel (OnOrder with the unknown-order reason).
func (c *Context) Amend(id uint64, price, size int64) error {
	o, lo := c.e.order(id), c.e.localOrder(id)
	if o == nil {
		return c.e.noOrder(id)
	}
	if lo.Status.Done() {
		return &Error{OrderID: id, Instrument: o.Instrument, Reason: "order is " + lo.Status.String()}
	}
	c.e.view.version++
	c.e.push(action{atNs: c.e.nowNs + c.e.cfg.Latency.Entry(), kind: actAmend, order: o, price: price, size: size})
	return nil
}

// instOf returns o's instrument: the one it was submitted for, or (an
// order for an instrument unknown when submitted) the one of its id now.
func (e *Engine) instOf(o *Order) *Instrument {
	if o.in != nil {
		return o.in
	}
	return e.lookup(o.Instrument)
}

func (e *Engine) order(id uint64) *Order {
	if id <= e.orderBase || id > e.orderBase+uint64(len(e.orders)) {
		return nil
	}
	return e.orders[id-e.orderBase-1]
}

func (e *Engine) localOrder(id uint64) *Order {
	if id <= e.orderBase || id > e.orderBase+uint64(len(e.view.orders)) {
		return nil
	}
	return e.view.orders[id-e.orderBase-1]
}

// Order returns an order as the strategy knows it (nil if no such id): as
// submitted until the venue's first response reaches it, then as the last
// response or fill report left it. Read-only; Queue is always 0 here (see
// QueueEstimate). A summary-only run (ManyOptions.SummaryOnly) forgets an
// order once the strategy has been told it is done and nothing about it
// is in flight: Order then returns nil for it.
func (c *Context) Order(id uint64) *Order { return c.e.localOrder(id) }

// OpenOrders appends the instrument's orders ("" for all) the strategy
// knows to be resting (acknowledged open, not yet reported done) to dst.
func (c *Context) OpenOrders(dst []*Order, instrument string) []*Order {
	for _, in := range c.e.instList {
		if instrument == "" || in.ID == instrument {
			for _, o := range in.view.live {
				if o.Status == StatusOpen {
					dst = append(dst, o)
				}
			}
		}
	}
	return dst
}

// Working reports how many orders of one instrument ("" for all) the
// strategy has sent and not yet been told are done (pending or open).
func (c *Context) Working(instrument string) int {
	n := 0
	for _, in := range c.e.instList {
		if instrument == "" || in.ID == instrument {
			n += len(in.view.live)
		}
	}
	return n
}

// QueueEstimate is the queue model's estimate (Config.Queue) of the size
// ahead of a resting order now, in size units; ok is false unless the
// strategy has been told the order is open (Order's status), as a
// client's own estimate would be. It is a model of the hidden queue, not
// something the venue tells: on a live venue a strategy would have to
// estimate it itself from the same feed.
func (c *Context) QueueEstimate(id uint64) (int64, bool) {
	o, lo := c.e.order(id), c.e.localOrder(id)
	if o == nil || lo.Status != StatusOpen {
		return 0, false
	}
	return max(o.Queue, 0), true
}

// Fills returns the fills reported to the strategy so far, in the order
// the reports arrived (read-only; valid until the next callback). A
// summary-only run (ManyOptions.SummaryOnly) keeps only those reported
// since the last event the engine received.
func (c *Context) Fills() []Fill { return c.e.view.fills }

// Position returns the instrument's position in size units, as the fill
// reports, funding and settlements received so far make it.
func (c *Context) Position(instrument string) int64 {
	if in := c.e.lookup(instrument); in != nil {
		return in.Position
	}
	return 0
}

// Cash returns cash at CashDecimals, as the reports received so far make it.
func (c *Context) Cash() int64 { return c.e.view.cash }

// ViewVersion is a number that changes whenever the account as the
// strategy knows it changes, and whenever the strategy acts: when the
// engine delivers a report (an order's new state, a fill, funding, a
// settlement), fires a timer, or forgets a done order (summary-only runs:
// Order turns nil), when the reports of the last event leave Fills
// (summary-only runs), when the simulator liquidates the account (its
// orders appear), and at each Submit, SetTimer, and Cancel or Amend that
// returns no error. It stays the same otherwise, so what the account
// methods return (Order, OpenOrders, Working, Fills, Position, Cash, an
// Instrument's Position, Funding and LastTrade) is the same while it
// does, and equal versions before and after a callback mean the callback
// sent nothing. It does not follow the market: books (and so Best,
// Available and Take), ticks, rules, marks, funding rates, resolutions,
// QueueEstimate and the clock change without it.
//
// A strategy that decides from the same few inputs on every event can
// keep, with its last decision, the version and the market inputs it
// read, and skip an event where neither changed and its last decision
// sent nothing: the built-in mm does (MM.OnEvent).
func (c *Context) ViewVersion() uint64 { return c.e.view.version }

// TakerFeeRate is the taker rate a fill of instrument would be priced at
// now, and where it comes from (Config.FeeRates, FeeCategories, what the
// recording has stated so far, FeeRate; a fee tier): ok false when the
// instrument is unknown or its venue's fee model cannot tell.
func (c *Context) TakerFeeRate(instrument string) (rate float64, src FeeSource, ok bool) {
	return c.e.takerRate(c.e.lookup(instrument))
}

// SetTimer calls the strategy's OnTimer(tag) at the first event at or after
// atNs (local clock).
func (c *Context) SetTimer(atNs, tag int64) {
	c.e.view.version++
	c.e.seq++
	c.e.timers.push(timer{atNs: atNs, seq: c.e.seq, tag: tag})
}

// Best returns the best level of a side of the instrument's book.
func (c *Context) Best(instrument string, side book.Side) (book.Level, bool) {
	in := c.e.lookup(instrument)
	if in == nil || in.Book == nil {
		return book.Level{}, false
	}
	return in.Book.Best(side)
}

// Available returns the size a taker order of side could take now at limit
// or better on the instrument, as the strategy sees it: the book as
// received (nothing while it is crossed: a crossed book is a same-time
// batch of the venue in progress, the aggressor resting before its match), its mirror for an outcome token (a BUY YES meets BUY NO at
// 1 − p), less what the fill reports received say the strategy's own
// taker orders took there since the venue last published the level (a
// fill not yet reported is not known). Orders in flight meet the book as
// it is when they arrive, which may differ.
func (c *Context) Available(instrument string, side Side, limit int64) int64 {
	in := c.e.lookup(instrument)
	if in == nil || in.Book == nil || !in.Book.Valid() || in.Book.Crossed() {
		return 0
	}
	opp := book.Ask
	if side == Sell {
		opp = book.Bid
	}
	var n int64
	for _, l := range c.e.levels(in, opp, true) {
		if !better(side, l.Price, limit) {
			break
		}
		n += max(l.Size-in.view.taken.at(opp, l.Price), 0)
	}
	return n
}

// Take returns the best price and size a taker of side meets now on the
// instrument, as Available sees the book (mirror included, own reported
// takes excluded); ok is false when there is none.
func (c *Context) Take(instrument string, side Side) (price, size int64, ok bool) {
	in := c.e.lookup(instrument)
	if in == nil || in.Book == nil || !in.Book.Valid() || in.Book.Crossed() {
		return 0, 0, false
	}
	opp := book.Ask
	if side == Sell {
		opp = book.Bid
	}
	for _, l := range c.e.levels(in, opp, true) {
		if n := l.Size - in.view.taken.at(opp, l.Price); n > 0 {
			return l.Price, n, true
		}
	}
	return 0, 0, false
}
