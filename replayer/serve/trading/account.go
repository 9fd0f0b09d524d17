package trading

import (
	"context"
	"math"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// account is one trader: its own engine, fed every event by the hub, and a
// bridge strategy that hands it the API's requests. Its fields are guarded
// by the hub's lock.
type account struct {
	h   *Hub
	id  string
	eng *backtest.Engine

	inbox    []request
	waiting  map[uint64][]waiter // order id → the calls waiting for it
	cloids   map[string]uint64
	sent     int // orders sent so far (MaxOrders)
	agg      map[uint64]*fillAgg
	entry    map[string]*entryAgg
	seen     int     // fills folded into agg and entry
	closed   []int64 // by fill: the profit it realized (tradeapi.SimFill.ClosedPnl)
	watchers map[int]func(tradeapi.SimUpdate)
	nextW    int
	lev      map[string]leverage
}

type leverage struct {
	lev   int
	cross bool
}

type fillAgg struct{ size, notional float64 }

type entryAgg struct{ size, cost float64 } // signed size, cost of it at entry prices

type reqKind uint8

const (
	reqSubmit reqKind = iota
	reqCancel
	reqAmend
)

type request struct {
	kind        reqKind
	req         tradeapi.SimOrderRequest
	id          uint64
	price, size int64
	w           waiter
}

// waiter is one order of a Place, Cancel or Modify call.
type waiter struct {
	p    *placing
	i    int
	kind reqKind
}

// placing is one Place, Cancel or Modify call in progress. Its fields are
// guarded by the hub's lock.
type placing struct {
	h      *Hub
	res    []tradeapi.SimOrder
	left   int
	done   chan struct{}
	parked bool // counted in h.awaiting rather than h.busy
}

func newPlacing(h *Hub, n int) *placing {
	return &placing{h: h, res: make([]tradeapi.SimOrder, n), left: n, done: make(chan struct{})}
}

func (p *placing) set(i int, o tradeapi.SimOrder) {
	if p.res[i].Status != "" {
		return
	}
	p.res[i] = o
	p.left--
	if p.left == 0 {
		close(p.done)
		p.unpark()
	}
}

// park counts the request as waiting on the replay (deterministic mode:
// a settling replay may go on) until its answer is there; called with the
// hub's lock held, after the request was queued.
func (p *placing) park() {
	if p.left == 0 || p.parked {
		return
	}
	p.parked = true
	p.h.awaiting.Add(1)
	p.h.busy.Add(-1)
	p.h.Wake()
}

// unpark counts the request as in progress again: its answer is there (or
// its caller gave up), and a settling replay waits until it is sent.
// Called with the hub's lock held.
func (p *placing) unpark() {
	if !p.parked {
		return
	}
	p.parked = false
	// busy first: a settling replay never sees neither.
	p.h.busy.Add(1)
	p.h.awaiting.Add(-1)
}

func newAccount(h *Hub, id string) *account {
	a := &account{h: h, id: id, waiting: map[uint64][]waiter{}, cloids: map[string]uint64{}, agg: map[uint64]*fillAgg{},
		entry: map[string]*entryAgg{}, watchers: map[int]func(tradeapi.SimUpdate){}, lev: map[string]leverage{}}
	a.eng = backtest.NewEngine(&bridge{a: a}, h.opt.Backtest)
	return a
}

// bridge is the account's strategy: the API's requests, submitted through
// the Context at the next event the engine processes.
type bridge struct{ a *account }

func (b *bridge) OnEvent(ctx *backtest.Context, _ *feed.Event) { b.a.drain(ctx) }
func (b *bridge) OnOrder(ctx *backtest.Context, o *backtest.Order) {
	b.a.onOrder(ctx, o)
}
func (b *bridge) OnFill(ctx *backtest.Context, f *backtest.Fill) { b.a.onFill(ctx, f) }

// drain submits what the API received since the last event.
func (a *account) drain(ctx *backtest.Context) {
	for len(a.inbox) > 0 {
		r := a.inbox[0]
		a.inbox = a.inbox[1:]
		switch r.kind {
		case reqSubmit:
			id, err := ctx.Submit(toBacktest(ctx, r.req))
			if r.req.ClientID != "" {
				a.cloids[r.req.ClientID] = id
			}
			o := ctx.Order(id)
			if err != nil || o == nil || o.Status != backtest.StatusPending {
				r.w.p.set(r.w.i, a.snapshot(ctx, o, r.req))
				continue
			}
			a.waiting[id] = append(a.waiting[id], r.w)
		case reqCancel:
			if ctx.Cancel(r.id) != nil {
				r.w.p.set(r.w.i, a.snapshot(ctx, ctx.Order(r.id), tradeapi.SimOrderRequest{}))
				continue
			}
			a.waiting[r.id] = append(a.waiting[r.id], r.w)
		case reqAmend:
			if ctx.Amend(r.id, r.price, r.size) != nil {
				r.w.p.set(r.w.i, a.snapshot(ctx, ctx.Order(r.id), tradeapi.SimOrderRequest{}))
				continue
			}
			a.waiting[r.id] = append(a.waiting[r.id], r.w)
		}
	}
	a.inbox = a.inbox[:0]
}

func toBacktest(ctx *backtest.Context, r tradeapi.SimOrderRequest) backtest.OrderRequest {
	side := backtest.Buy
	if !r.Buy {
		side = backtest.Sell
	}
	tif, err := backtest.ParseTIF(r.TIF)
	if err != nil {
		tif = backtest.GTC
	}
	tag := r.Tag
	if tag == "" {
		tag = r.ClientID
	}
	return backtest.OrderRequest{Instrument: r.Instrument, Side: side, Price: r.Price, Size: r.Size, Amount: r.Amount,
		TIF: tif, PostOnly: r.PostOnly, ReduceOnly: r.ReduceOnly, ExpireNs: r.ExpireNs, Tag: tag}
}

func (a *account) onOrder(ctx *backtest.Context, o *backtest.Order) {
	a.fold(ctx)
	s := a.snapshot(ctx, o, tradeapi.SimOrderRequest{})
	// A Place is answered once its order left pending, a Cancel once its
	// order is done (cancelled, or filled before the cancel arrived), a
	// Modify at the order's next change.
	ws := a.waiting[o.ID]
	keep := ws[:0]
	for _, w := range ws {
		if (w.kind == reqSubmit && o.Status == backtest.StatusPending) || (w.kind == reqCancel && !o.Status.Done()) {
			keep = append(keep, w)
			continue
		}
		w.p.set(w.i, s)
	}
	if len(keep) == 0 {
		delete(a.waiting, o.ID)
	} else {
		a.waiting[o.ID] = keep
	}
	for _, f := range a.watchers {
		f(tradeapi.SimUpdate{Order: s})
	}
}

func (a *account) onFill(ctx *backtest.Context, f *backtest.Fill) {
	a.fold(ctx)
	if len(a.watchers) == 0 {
		return
	}
	o := ctx.Order(f.OrderID)
	s := a.snapshot(ctx, o, tradeapi.SimOrderRequest{})
	sf := simFill(f)
	if n := len(a.closed); n > 0 {
		sf.ClosedPnl = a.closed[n-1]
	}
	sf.Position = ctx.Position(f.Instrument)
	if f.Side == backtest.Buy {
		sf.Position -= f.Size
	} else {
		sf.Position += f.Size
	}
	for _, w := range a.watchers {
		w(tradeapi.SimUpdate{Order: s, Fill: &sf})
	}
}

func simFill(f *backtest.Fill) tradeapi.SimFill {
	return tradeapi.SimFill{Seq: f.Seq, OrderID: f.OrderID, Instrument: f.Instrument, Buy: f.Side == backtest.Buy,
		Price: f.Price, Size: f.Size, Maker: f.Liquidity == backtest.Maker, Fee: f.Fee, ExchangeNs: f.ExchangeNs, RecvNs: f.RecvNs}
}

// fold adds the fills not yet seen to the per-order and per-instrument sums.
func (a *account) fold(ctx *backtest.Context) {
	fills := ctx.Fills()
	for ; a.seen < len(fills); a.seen++ {
		f := &fills[a.seen]
		g := a.agg[f.OrderID]
		if g == nil {
			g = &fillAgg{}
			a.agg[f.OrderID] = g
		}
		g.size += float64(f.Size)
		g.notional += float64(f.Size) * float64(f.Price)
		e := a.entry[f.Instrument]
		if e == nil {
			e = &entryAgg{}
			a.entry[f.Instrument] = e
		}
		q := float64(f.Size)
		if f.Side == backtest.Sell {
			q = -q
		}
		var pnl int64
		if e.size != 0 && (e.size > 0) != (q > 0) {
			// Reducing (or flipping): the closed part realizes its profit
			// against the average entry price.
			closing := int64(math.Min(math.Abs(q), math.Abs(e.size)))
			entryPx := int64(math.Round(e.cost / e.size))
			sc := ctx.Instrument(f.Instrument).Scale
			pnl = backtest.Notional(f.Price, closing, sc.PriceDecimals, sc.SizeDecimals) -
				backtest.Notional(entryPx, closing, sc.PriceDecimals, sc.SizeDecimals)
			if e.size < 0 {
				pnl = -pnl
			}
		}
		a.closed = append(a.closed, pnl)
		switch {
		case e.size == 0 || (e.size > 0) == (q > 0): // opening or adding
			e.cost += q * float64(f.Price)
			e.size += q
		case math.Abs(q) <= math.Abs(e.size): // reducing: the entry price stays
			e.cost -= e.cost * (-q / e.size)
			e.size += q
		default: // flipping: the rest opens at the fill price
			e.size += q
			e.cost = e.size * float64(f.Price)
		}
	}
}

func (a *account) snapshot(ctx *backtest.Context, o *backtest.Order, req tradeapi.SimOrderRequest) tradeapi.SimOrder {
	if o == nil {
		return tradeapi.SimOrder{SimOrderRequest: req, Status: "rejected", Reason: "not accepted"}
	}
	s := tradeapi.SimOrder{ID: o.ID, SimOrderRequest: tradeapi.SimOrderRequest{Instrument: o.Instrument, Buy: o.Side == backtest.Buy,
		Price: o.Price, Size: o.Size, Amount: o.Amount, TIF: o.TIF.String(), PostOnly: o.PostOnly, ReduceOnly: o.ReduceOnly,
		ExpireNs: o.ExpireNs, Tag: o.Tag}, Status: o.Status.String(), Reason: o.Reason, Filled: o.Filled,
		SubmitNs: o.SubmitNs, DoneNs: o.DoneNs}
	s.ClientID = a.cloidOf(o)
	s.SimOrderRequest.ClientID = s.ClientID
	if g := a.agg[o.ID]; g != nil && g.size > 0 {
		s.AvgPrice = int64(math.Round(g.notional / g.size))
	}
	return s
}

func (a *account) cloidOf(o *backtest.Order) string {
	if o.Tag != "" {
		if id, ok := a.cloids[o.Tag]; ok && id == o.ID {
			return o.Tag
		}
	}
	return ""
}

// endAll answers every Place still waiting (the replay ended).
func (a *account) endAll() {
	ctx := a.eng.Context()
	for id, ws := range a.waiting {
		for _, w := range ws {
			w.p.set(w.i, a.snapshot(ctx, ctx.Order(id), tradeapi.SimOrderRequest{}))
		}
	}
	clear(a.waiting)
	for _, r := range a.inbox {
		o := tradeapi.SimOrder{SimOrderRequest: r.req, Status: "rejected", Reason: "the replay has ended"}
		if r.kind != reqSubmit {
			o = a.snapshot(ctx, ctx.Order(r.id), tradeapi.SimOrderRequest{})
		}
		r.w.p.set(r.w.i, o)
	}
	a.inbox = a.inbox[:0]
}

// ID implements tradeapi.Account.
func (a *account) ID() string { return a.id }

// Place implements tradeapi.Account.
func (a *account) Place(ctx context.Context, reqs []tradeapi.SimOrderRequest) []tradeapi.SimOrder {
	p := newPlacing(a.h, len(reqs))
	if len(reqs) == 0 {
		return nil
	}
	h := a.h
	h.noteLate()
	h.lock()
	for i, r := range reqs {
		switch {
		case h.ended:
			p.set(i, tradeapi.SimOrder{SimOrderRequest: r, Status: "rejected", Reason: "the replay has ended"})
		case r.ClientID != "" && a.cloids[r.ClientID] != 0:
			p.set(i, tradeapi.SimOrder{SimOrderRequest: r, Status: "rejected", Reason: "duplicate client order id"})
		case a.sent >= h.opt.MaxOrders:
			p.set(i, tradeapi.SimOrder{SimOrderRequest: r, Status: "rejected", Reason: "too many orders"})
		default:
			a.sent++
			a.inbox = append(a.inbox, request{kind: reqSubmit, req: r, w: waiter{p: p, i: i, kind: reqSubmit}})
		}
	}
	p.park()
	h.mu.Unlock()
	out := a.await(ctx, p)
	for i := range out {
		if out[i].Status == "" {
			out[i] = tradeapi.SimOrder{SimOrderRequest: reqs[i], Status: "pending"}
		}
	}
	return out
}

// await waits for the simulator to answer p; the request does not hold the
// replay back meanwhile (deterministic mode).
func (a *account) await(ctx context.Context, p *placing) []tradeapi.SimOrder {
	h := a.h
	h.Start()
	select {
	case <-p.done:
	case <-ctx.Done():
	}
	h.lock()
	defer h.mu.Unlock()
	p.unpark()
	return append([]tradeapi.SimOrder(nil), p.res...)
}

// Cancel implements tradeapi.Account.
func (a *account) Cancel(ctx context.Context, ids []uint64) []string {
	if len(ids) == 0 {
		return nil
	}
	a.h.noteLate()
	out := make([]string, len(ids))
	p := newPlacing(a.h, len(ids))
	a.h.lock()
	ectx := a.eng.Context()
	for i, id := range ids {
		o := ectx.Order(id)
		switch {
		case o == nil:
			out[i] = "unknown order"
		case o.Status.Done():
			out[i] = "order is " + o.Status.String()
		case a.h.ended:
			out[i] = "the replay has ended"
		}
		if out[i] != "" {
			p.set(i, tradeapi.SimOrder{Status: "rejected"})
			continue
		}
		a.inbox = append(a.inbox, request{kind: reqCancel, id: id, w: waiter{p: p, i: i, kind: reqCancel}})
	}
	p.park()
	a.h.mu.Unlock()
	for i, o := range a.await(ctx, p) {
		switch {
		case out[i] != "":
		case o.Status == "cancelled":
		case o.Status == "":
			out[i] = "cancel not yet processed"
		default:
			out[i] = "order is " + o.Status
		}
	}
	return out
}

// Modify implements tradeapi.Account.
func (a *account) Modify(ctx context.Context, id uint64, price, size int64) (tradeapi.SimOrder, string) {
	a.h.noteLate()
	a.h.lock()
	o := a.eng.Context().Order(id)
	why := ""
	switch {
	case o == nil:
		why = "unknown order"
	case o.Status.Done():
		why = "order is " + o.Status.String()
	case a.h.ended:
		why = "the replay has ended"
	}
	if why != "" {
		a.h.mu.Unlock()
		return tradeapi.SimOrder{}, why
	}
	p := newPlacing(a.h, 1)
	a.inbox = append(a.inbox, request{kind: reqAmend, id: id, price: price, size: size, w: waiter{p: p, kind: reqAmend}})
	p.park()
	a.h.mu.Unlock()
	return a.await(ctx, p)[0], ""
}

// Orders implements tradeapi.Account.
func (a *account) Orders(dst []tradeapi.SimOrder, open bool) []tradeapi.SimOrder {
	a.h.lock()
	defer a.h.mu.Unlock()
	ctx := a.eng.Context()
	a.fold(ctx)
	for id := uint64(1); ; id++ {
		o := ctx.Order(id)
		if o == nil {
			break
		}
		if open && o.Status != backtest.StatusOpen {
			continue
		}
		dst = append(dst, a.snapshot(ctx, o, tradeapi.SimOrderRequest{}))
	}
	return dst
}

// Order implements tradeapi.Account.
func (a *account) Order(id uint64, cloid string) (tradeapi.SimOrder, bool) {
	a.h.lock()
	defer a.h.mu.Unlock()
	ctx := a.eng.Context()
	a.fold(ctx)
	if cloid != "" {
		var ok bool
		if id, ok = a.cloids[cloid]; !ok {
			return tradeapi.SimOrder{}, false
		}
	}
	o := ctx.Order(id)
	if o == nil {
		return tradeapi.SimOrder{}, false
	}
	return a.snapshot(ctx, o, tradeapi.SimOrderRequest{}), true
}

// Fills implements tradeapi.Account.
func (a *account) Fills(dst []tradeapi.SimFill) []tradeapi.SimFill {
	a.h.lock()
	defer a.h.mu.Unlock()
	ctx := a.eng.Context()
	a.fold(ctx)
	fills := ctx.Fills()
	var pos = map[string]int64{}
	for i := range fills {
		f := simFill(&fills[i])
		f.ClosedPnl = a.closed[i]
		f.Position = pos[f.Instrument]
		if f.Buy {
			pos[f.Instrument] += f.Size
		} else {
			pos[f.Instrument] -= f.Size
		}
		dst = append(dst, f)
	}
	return dst
}

// State implements tradeapi.Account.
func (a *account) State() tradeapi.SimState {
	a.h.lock()
	defer a.h.mu.Unlock()
	ctx := a.eng.Context()
	a.fold(ctx)
	st := tradeapi.SimState{Cash: ctx.Cash(), Equity: ctx.Cash()}
	for _, in := range ctx.Instruments() {
		if in.Position == 0 {
			continue
		}
		mark, ok := in.Mid()
		if !ok {
			mark = in.LastTrade
		}
		if in.Resolved {
			mark = in.Settle
		}
		sc := in.Scale
		val := backtest.Notional(mark, in.Position, sc.PriceDecimals, sc.SizeDecimals)
		p := tradeapi.SimPosition{Instrument: in.ID, Size: in.Position, Mark: mark, Value: val}
		if liq, ok := ctx.LiquidationPrice(in.ID); ok {
			p.LiqPx = liq
		}
		if e := a.entry[in.ID]; e != nil && e.size != 0 {
			p.EntryPx = int64(math.Round(e.cost / e.size))
			p.Upnl = val - backtest.Notional(p.EntryPx, in.Position, sc.PriceDecimals, sc.SizeDecimals)
		}
		st.Equity += val
		st.Positions = append(st.Positions, p)
	}
	return st
}

// Watch implements tradeapi.Account.
func (a *account) Watch(f func(tradeapi.SimUpdate)) (stop func()) {
	a.h.lock()
	defer a.h.mu.Unlock()
	k := a.nextW
	a.nextW++
	a.watchers[k] = f
	return func() {
		a.h.lock()
		delete(a.watchers, k)
		a.h.mu.Unlock()
	}
}

// SetLeverage implements tradeapi.Account.
func (a *account) SetLeverage(instrument string, lev int, cross bool) {
	a.h.lock()
	defer a.h.mu.Unlock()
	a.lev[instrument] = leverage{lev, cross}
}

// Leverage implements tradeapi.Account.
func (a *account) Leverage(instrument string) (int, bool) {
	a.h.lock()
	defer a.h.mu.Unlock()
	l, ok := a.lev[instrument]
	if !ok {
		return 20, true
	}
	return l.lev, l.cross
}
