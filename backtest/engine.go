package backtest

import (
	"container/heap"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// Strategy receives every event the engine is fed, with the read-only book,
// and trades through the Context. The optional interfaces Starter,
// FillHandler, OrderHandler, TimerHandler and Finisher add callbacks.
// A Strategy runs unchanged on a replay (Run) and on a live capture in paper
// mode: an Engine is a feed.Subscriber, so recorder.Subscribe(key, engine)
// trades the same strategy against live books with the same simulator.
type Strategy interface {
	OnEvent(ctx *Context, e *feed.Event)
}

// Starter is called once before the first event.
type Starter interface{ OnStart(ctx *Context) error }

// FillHandler is told of each fill, after the acknowledgement latency.
type FillHandler interface{ OnFill(ctx *Context, f *Fill) }

// OrderHandler is told of each order state change (open, rejected,
// cancelled, expired, filled), after the acknowledgement latency.
type OrderHandler interface{ OnOrder(ctx *Context, o *Order) }

// TimerHandler receives the timers set with Context.SetTimer.
type TimerHandler interface{ OnTimer(ctx *Context, tag int64) }

// Finisher is called once after the last event.
type Finisher interface{ OnEnd(ctx *Context) }

// Config selects the models and the account.
type Config struct {
	Queue   QueueModel // default RiskAverse
	Latency Latency    // default zero latency
	// Fees by venue name; defaults: Polymarket rate 0 (most markets are fee
	// free), Hyperliquid tier 0.
	Fees map[string]FeeModel
	// Cash is the starting cash at CashDecimals.
	Cash int64
	// FeedLatency "recorded" (default): an order reaches the exchange at
	// submit + entry latency on the exchange's clock, so it first meets an
	// event whose exchange timestamp (and receive time) is at or after that;
	// "none": receive times only.
	IgnoreExchangeTime bool
	// UseBackfill lets resting orders fill against trades the venue replayed
	// from before the subscription (venue.Event.Backfill); off by default.
	UseBackfill bool
	// AllowShort lifts Polymarket's rule that a SELL needs the shares.
	AllowShort bool
	// Resolutions settle Polymarket markets at the end of the run when the
	// recording has no market_resolved: token id → true (pays 1) or false (0).
	Resolutions map[string]bool
	// EquityEveryNs samples equity and positions at this interval (default 1 s).
	EquityEveryNs int64
	// MarkoutsNs are the horizons of the markouts after fills (default 1 s, 10 s, 60 s).
	MarkoutsNs []int64
}

// Engine simulates the venues' matching for one strategy. It is a
// feed.Subscriber: feed it every event (Subscribe it to a Replayer or a live
// Recorder with an empty Key), then call Finish.
type Engine struct {
	cfg   Config
	strat Strategy
	ctx   Context

	insts    map[string]*Instrument
	instList []*Instrument
	markets  map[string][]*Instrument

	orders  []*Order // by ID − 1
	fills   []Fill
	actions actionHeap
	notes   noteHeap
	timers  timerHeap
	seq     uint64

	nowNs   int64
	startNs int64
	cash    int64
	fees    int64
	rebates int64
	funding int64
	turnover int64

	stratDead bool
	stratErr  *StrategyError
	rejects   uint64
	errs      []error

	equity   []EquityPoint
	nextEq   int64
	marksOut []Markout
	events   uint64
}

// StrategyError is a strategy panic, isolated: the strategy receives nothing
// more, the simulated exchange goes on.
type StrategyError struct {
	Seq    uint64
	RecvNs int64
	Value  string
	Stack  string
}

func (e *StrategyError) Error() string {
	return fmt.Sprintf("backtest: strategy panicked at event seq %d (recv %d): %s", e.Seq, e.RecvNs, e.Value)
}

// NewEngine returns an engine running s with cfg.
func NewEngine(s Strategy, cfg Config) *Engine {
	if cfg.Queue == nil {
		cfg.Queue = RiskAverse{}
	}
	if cfg.Latency == nil {
		cfg.Latency = ConstantLatency{}
	}
	if cfg.Fees == nil {
		cfg.Fees = map[string]FeeModel{}
	}
	if cfg.Fees[venue.Polymarket] == nil {
		cfg.Fees[venue.Polymarket] = &PolymarketFees{}
	}
	if cfg.Fees[venue.Hyperliquid] == nil {
		t := HyperliquidTiers[0]
		cfg.Fees[venue.Hyperliquid] = &HyperliquidFees{Taker: t[0], Maker: t[1]}
	}
	if cfg.EquityEveryNs <= 0 {
		cfg.EquityEveryNs = 1e9
	}
	if cfg.MarkoutsNs == nil {
		cfg.MarkoutsNs = []int64{1e9, 10e9, 60e9}
	}
	e := &Engine{cfg: cfg, strat: s, insts: map[string]*Instrument{}, markets: map[string][]*Instrument{}, cash: cfg.Cash}
	e.ctx.e = e
	return e
}

// instrument returns (creating) the state of an instrument.
func (e *Engine) instrument(ven, id string, sc book.Scale) *Instrument {
	if in := e.insts[id]; in != nil {
		return in
	}
	in := &Instrument{ID: id, Venue: ven, Scale: sc, SzDecimals: -1, rules: VenueRules[ven]}
	if ven == venue.Polymarket {
		in.Tick = pow10(sc.PriceDecimals) / 100 // 0.01 until the venue says
		in.MinSize = 5 * pow10(sc.SizeDecimals)
	}
	e.insts[id] = in
	e.instList = append(e.instList, in)
	return in
}

func (e *Engine) pair(in *Instrument, market string) {
	if market == "" || in.Market != "" {
		return
	}
	in.Market = market
	l := append(e.markets[market], in)
	e.markets[market] = l
	if len(l) == 2 && in.rules != nil && in.rules.MirroredPairs {
		l[0].Complement, l[1].Complement = l[1], l[0]
	} else if len(l) > 2 {
		for _, x := range l {
			x.Complement = nil // not a binary market: no mirror
		}
	}
}

// OnEvent implements feed.Subscriber.
func (e *Engine) OnEvent(ev *feed.Event) error {
	e.events++
	if ev.RecvNs > e.nowNs {
		e.nowNs = ev.RecvNs
	}
	if e.startNs == 0 {
		e.startNs = ev.RecvNs
		e.nextEq = ev.RecvNs
		if st, ok := e.strat.(Starter); ok && !e.stratDead {
			e.guard(ev, func() {
				if err := st.OnStart(&e.ctx); err != nil {
					panic(err)
				}
			})
		}
	}
	var in *Instrument
	if d := ev.Decoded; d != nil {
		if d.Instrument != "" {
			in = e.instrument(ev.Venue, d.Instrument, ev.Scale)
			if ev.Book != nil {
				in.Book = ev.Book
			}
			if d.ExchangeNs > in.ExchangeNs {
				in.ExchangeNs = d.ExchangeNs
			}
			e.pair(in, d.Market)
		}
		e.metadata(ev, d, in)
	} else if ev.Kind == datasets.KindRESTResponse && ev.Control != nil {
		e.restBody(ev)
	}
	if in != nil {
		e.activate(in, ev)
		e.market(in, ev)
	}
	e.deliver()
	if !e.stratDead {
		e.guard(ev, func() { e.strat.OnEvent(&e.ctx, ev) })
	}
	e.sample(ev.RecvNs)
	return nil
}

// guard runs f, isolating a strategy panic.
func (e *Engine) guard(ev *feed.Event, f func()) {
	defer func() {
		if r := recover(); r != nil {
			e.stratDead = true
			e.stratErr = &StrategyError{Seq: ev.Seq, RecvNs: ev.RecvNs, Value: fmt.Sprint(r), Stack: string(debug.Stack())}
			e.errs = append(e.errs, e.stratErr)
		}
	}()
	f()
}

// metadata follows tick sizes, market resolutions and funding.
func (e *Engine) metadata(ev *feed.Event, d *venue.Event, in *Instrument) {
	switch d.Type {
	case venue.EventTickSize:
		if in != nil && d.Price > 0 {
			in.Tick = d.Price
		}
	case venue.EventSnapshot:
		if in != nil && in.Venue == venue.Polymarket {
			if t := bytesField(d.Raw, `"tick_size"`); len(t) > 0 {
				if v, err := book.ParseDecimal(t, in.Scale.PriceDecimals); err == nil && v > 0 {
					in.Tick = v
				}
			}
		}
	case venue.EventMarket:
		if string(d.Text) == "market_resolved" {
			var r pmResolved
			if jsonUnmarshal(d.Raw, &r) == nil && r.Winner != "" {
				ids := r.Assets
				if len(ids) == 0 && r.Market != "" {
					for _, x := range e.markets[r.Market] {
						ids = append(ids, x.ID)
					}
				}
				for _, id := range ids {
					x := e.instrument(ev.Venue, id, ev.Scale)
					e.settle(x, id == r.Winner, ev)
				}
			}
		}
	case venue.EventAssetCtx:
		if in != nil {
			if d.Price > 0 {
				in.MarkPx = d.Price
			}
			if f := bytesField(d.Raw, `"funding"`); len(f) > 0 {
				if v := parseFloat(f); v == v {
					in.FundRate = v
				}
			}
			e.fund(in, d.ExchangeNs)
		}
	}
}

// fund pays Hyperliquid's hourly funding at each hour boundary of the
// exchange clock: payment = position × mark price × funding rate (a long
// pays a positive rate), from the latest recorded asset context.
func (e *Engine) fund(in *Instrument, exNs int64) {
	if exNs <= 0 {
		return
	}
	hour := exNs / 3600e9
	if in.lastHour == 0 {
		in.lastHour = hour
		return
	}
	if hour == in.lastHour {
		return
	}
	in.lastHour = hour
	if in.Position == 0 || in.MarkPx == 0 {
		return
	}
	notional := Notional(in.MarkPx, in.Position, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
	pay := int64(float64(notional) * in.FundRate)
	e.cash -= pay
	e.funding += pay
	in.Funding += pay
}

func (e *Engine) restBody(ev *feed.Event) {
	switch ev.Venue {
	case venue.Polymarket:
		for _, s := range parsePMSummaries(ev.Payload) {
			in := e.instrument(ev.Venue, s.AssetID, ev.Scale)
			e.pair(in, s.Market)
			if v, err := book.ParseDecimal([]byte(s.TickSize), in.Scale.PriceDecimals); err == nil && v > 0 {
				in.Tick = v
			}
			if v, err := book.ParseDecimal([]byte(s.MinOrderSize), in.Scale.SizeDecimals); err == nil && v > 0 {
				in.MinSize = v
			}
		}
	case venue.Hyperliquid:
		var m hlMeta
		if jsonUnmarshal(ev.Payload, &m) == nil {
			for _, u := range m.Universe {
				if u.Name != "" {
					e.instrument(ev.Venue, u.Name, ev.Scale).SzDecimals = u.SzDecimals
				}
			}
		}
	}
}

// settle closes a resolved Polymarket token at 1 or 0: open orders are
// cancelled, the position is paid out.
func (e *Engine) settle(in *Instrument, wins bool, ev *feed.Event) {
	if in.Resolved {
		return
	}
	in.Resolved = true
	if wins {
		in.Settle = pow10(in.Scale.PriceDecimals)
	}
	for _, o := range slices.Clone(in.open) {
		e.finish(in, o, StatusCancelled, "market resolved")
	}
	e.cash += Notional(in.Settle, in.Position, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
	in.Position = 0
	_ = ev
}

// activate applies the strategy's actions that have reached the exchange by
// this event: no look-ahead, an action meets only data received at or after
// its arrival, and (unless IgnoreExchangeTime) stamped by the exchange at or
// after it.
func (e *Engine) activate(in *Instrument, ev *feed.Event) {
	if len(e.actions) == 0 {
		return
	}
	exNs := int64(0)
	if ev.Decoded != nil && !e.cfg.IgnoreExchangeTime {
		exNs = ev.Decoded.ExchangeNs
	}
	// Actions for other instruments wait for their own instrument's data.
	var keep []action
	for len(e.actions) > 0 {
		a := e.actions[0]
		if a.atNs > ev.RecvNs || (exNs != 0 && a.atNs > exNs) {
			break
		}
		heap.Pop(&e.actions)
		if a.order.Instrument != in.ID {
			keep = append(keep, a)
			continue
		}
		e.apply(in, a, ev)
	}
	for _, a := range keep {
		heap.Push(&e.actions, a)
	}
}

type actionKind uint8

const (
	actSubmit actionKind = iota
	actCancel
	actAmend
)

type action struct {
	atNs  int64
	seq   uint64
	kind  actionKind
	order *Order
	price int64
	size  int64
}

func (e *Engine) apply(in *Instrument, a action, ev *feed.Event) {
	o := a.order
	o.pending = false
	switch a.kind {
	case actCancel:
		if !o.Status.Done() && o.Status != StatusPending {
			e.finish(in, o, StatusCancelled, "cancelled")
		}
	case actAmend:
		if o.Status != StatusOpen {
			return
		}
		if a.price == o.Price && a.size <= o.Size && a.size > o.Filled {
			o.Size = a.size // a size decrease keeps priority
			e.note(o, nil)
			return
		}
		e.unrest(in, o)
		o.Price, o.Size = a.price, a.size
		o.Status = StatusPending
		e.enter(in, o, ev)
	case actSubmit:
		e.enter(in, o, ev)
	}
}

// enter validates and matches an order arriving at the exchange.
func (e *Engine) enter(in *Instrument, o *Order, ev *feed.Event) {
	o.ActiveNs = ev.RecvNs
	r := in.rules
	exNs := ev.RecvNs
	if ev.Decoded != nil && ev.Decoded.ExchangeNs != 0 {
		exNs = ev.Decoded.ExchangeNs
	}
	switch {
	case r == nil:
		e.reject(in, o, "no simulated exchange for venue "+strconv.Quote(in.Venue))
		return
	case in.Resolved:
		e.reject(in, o, r.Resolved)
		return
	case !slices.Contains(r.TIFs, o.TIF):
		e.reject(in, o, fmt.Sprintf("time in force %s not offered by %s", o.TIF, r.Venue))
		return
	case in.Book == nil || !in.Book.Valid():
		e.reject(in, o, "book not valid (before the first snapshot or after a gap): order not simulated")
		return
	}
	if reason := r.Check(in, o, exNs); reason != "" {
		e.reject(in, o, reason)
		return
	}
	if r.NoShort && !e.cfg.AllowShort && o.Side == Sell && o.Size > in.Position-e.sellingRest(in, o) {
		e.reject(in, o, r.NoBalance)
		return
	}
	if o.ReduceOnly {
		o.Size = min(o.Size, abs64(in.Position))
	}
	bs := o.Side.bookSide()
	opp := book.Ask
	if bs == book.Ask {
		opp = book.Bid
	}
	marketable := e.crosses(in, o, opp)
	if (o.PostOnly || o.TIF == ALO) && marketable {
		reason := r.PostOnlyCrosses
		if o.TIF == ALO {
			b, _ := in.Book.Best(book.Bid)
			a, _ := in.Book.Best(book.Ask)
			reason += ", bbo was " + book.FormatDecimal(b.Price, in.Scale.PriceDecimals) + "@" + book.FormatDecimal(a.Price, in.Scale.PriceDecimals)
		}
		e.reject(in, o, reason)
		return
	}
	if o.TIF == FOK && !e.canFill(in, o, opp) {
		e.reject(in, o, r.FOKUnfilled)
		return
	}
	if marketable {
		e.take(in, o, opp, ev)
	}
	if o.Status.Done() {
		return
	}
	if o.TIF.immediate() {
		if o.Filled == 0 {
			e.finish(in, o, StatusCancelled, r.FAKUnfilled)
		} else {
			e.finish(in, o, StatusCancelled, "unfilled rest killed ("+o.TIF.String()+")")
		}
		return
	}
	o.Status = StatusOpen
	lv, _ := in.Book.Level(bs, o.Price)
	o.Queue, o.prevLevel, o.tradedHere = lv, lv, 0
	in.open = append(in.open, o)
	e.note(o, nil)
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
func (e *Engine) levels(in *Instrument, opp book.Side) []book.Level {
	in.scratch = in.Book.Top(opp, in.scratch[:0], -1)
	c := in.Complement
	if c == nil || c.Book == nil || !c.Book.Valid() {
		return in.scratch
	}
	one := pow10(in.Scale.PriceDecimals)
	mside := book.Bid
	if opp == book.Bid {
		mside = book.Ask
	}
	n := c.Book.Len(mside)
	base := len(in.scratch)
	in.scratch = c.Book.Top(mside, in.scratch, n)
	own, mir := in.scratch[:base], in.scratch[base:]
	for i := range mir {
		mir[i].Price = one - mir[i].Price
	}
	// merge own and mir (both best first for opp) into the tail.
	out := in.scratch[len(in.scratch):]
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
	in.scratch = append(in.scratch[:0], out...)
	return in.scratch
}

func (e *Engine) crosses(in *Instrument, o *Order, opp book.Side) bool {
	for _, l := range e.levels(in, opp) {
		if !better(o.Side, l.Price, o.Price) {
			return false
		}
		if l.Size-in.takenAt(opp, l.Price) > 0 {
			return true
		}
	}
	return false
}

// canFill reports whether a FOK can fill completely now.
func (e *Engine) canFill(in *Instrument, o *Order, opp book.Side) bool {
	need, amt := o.Size, o.Amount
	for _, l := range e.levels(in, opp) {
		if !better(o.Side, l.Price, o.Price) {
			break
		}
		avail := l.Size - in.takenAt(opp, l.Price)
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
func (e *Engine) take(in *Instrument, o *Order, opp book.Side, ev *feed.Event) {
	sc := in.Scale
	cashUnit := pow10(CashDecimals - sc.PriceDecimals)
	amtLeft := o.Amount * cashUnit // dollars at CashDecimals
	for _, l := range e.levels(in, opp) {
		if !better(o.Side, l.Price, o.Price) {
			break
		}
		avail := l.Size - in.takenAt(opp, l.Price)
		if avail <= 0 {
			continue
		}
		var q int64
		if o.Amount > 0 {
			// shares = dollars / price, floored to the size scale.
			q = mulDivRound(amtLeft, pow10(sc.SizeDecimals), 0, 0) / (l.Price * cashUnit)
			q = min(q, avail)
			if q <= 0 {
				break
			}
		} else {
			q = min(avail, o.Leaves())
		}
		in.take(opp, l.Price, q)
		if o.Amount > 0 {
			o.Size += q
			amtLeft -= Notional(l.Price, q, sc.PriceDecimals, sc.SizeDecimals)
		}
		e.fill(in, o, l.Price, q, Taker, 0, ev)
		if o.Amount == 0 && o.Leaves() == 0 {
			break
		}
	}
	if o.Amount > 0 && !o.Status.Done() {
		// A dollar-sized order is done when its money is spent or the book is.
		e.finish(in, o, StatusFilled, "")
	}
}

// fill books one execution.
func (e *Engine) fill(in *Instrument, o *Order, price, q int64, liq Liquidity, queue int64, ev *feed.Event) {
	sc := in.Scale
	o.Filled += q
	notional := Notional(price, q, sc.PriceDecimals, sc.SizeDecimals)
	fee := int64(0)
	if fm := e.cfg.Fees[in.Venue]; fm != nil {
		fee = fm.Fee(&FeeInput{Venue: in.Venue, Instrument: in.ID, Market: in.Market, Price: price, Size: q,
			PriceDecimals: sc.PriceDecimals, SizeDecimals: sc.SizeDecimals, Liquidity: liq})
	}
	if o.Side == Buy {
		e.cash -= notional
		in.Position += q
	} else {
		e.cash += notional
		in.Position -= q
	}
	e.cash -= fee
	if fee >= 0 {
		e.fees += fee
	} else {
		e.rebates -= fee
	}
	e.turnover += notional
	in.LastTrade = price
	var exNs int64
	if ev.Decoded != nil {
		exNs = ev.Decoded.ExchangeNs
	}
	e.fills = append(e.fills, Fill{Seq: uint64(len(e.fills) + 1), OrderID: o.ID, Venue: in.Venue, Instrument: in.ID,
		Side: o.Side, Price: price, Size: q, Liquidity: liq, Queue: queue, Fee: fee, ExchangeNs: exNs, RecvNs: ev.RecvNs, Tag: o.Tag})
	f := &e.fills[len(e.fills)-1]
	for _, h := range e.cfg.MarkoutsNs {
		in.marks = append(in.marks, markout{fill: len(e.fills) - 1, atNs: ev.RecvNs + h, horizon: h})
	}
	if o.Amount == 0 && o.Leaves() == 0 {
		e.finish(in, o, StatusFilled, "")
	}
	e.noteFill(f)
}

// market applies one event to the strategy's resting orders of in.
func (e *Engine) market(in *Instrument, ev *feed.Event) {
	d := ev.Decoded
	switch d.Type {
	case venue.EventSnapshot:
		in.taken = in.taken[:0]
	case venue.EventLevel:
		in.untake(d.Side, d.Price)
	}
	e.markouts(in, ev.RecvNs)
	if len(in.open) == 0 {
		return
	}
	exNs := d.ExchangeNs
	if exNs == 0 {
		exNs = ev.RecvNs
	}
	q := e.cfg.Queue
	switch d.Type {
	case venue.EventTrade:
		if d.Backfill && !e.cfg.UseBackfill {
			break
		}
		// The taker's side: a buy takes asks (our sells), a sell takes bids.
		for i := 0; i < len(in.open); i++ {
			o := in.open[i]
			if o.Side.bookSide() == d.Side {
				continue // same side as the taker
			}
			if !better(takerOf(o.Side), d.Price, o.Price) {
				continue
			}
			before := len(in.open)
			if d.Price != o.Price {
				// Traded through our price: we were ahead of it.
				e.fill(in, o, o.Price, o.Leaves(), Maker, max(o.Queue, 0), ev)
			} else {
				ahead := max(o.Queue, 0)
				q.Trade(o, d.Size)
				if o.Queue < 0 {
					x := min(-o.Queue, o.Leaves())
					o.Queue = 0
					e.fill(in, o, o.Price, x, Maker, ahead, ev)
				}
			}
			if len(in.open) < before {
				i--
			}
		}
	case venue.EventLevel:
		for _, o := range in.open {
			if o.Side.bookSide() == d.Side && o.Price == d.Price {
				q.Depth(o, o.prevLevel, d.Size)
				o.prevLevel = d.Size
			}
		}
	case venue.EventSnapshot:
		for _, o := range in.open {
			lv, _ := in.Book.Level(o.Side.bookSide(), o.Price)
			if lv != o.prevLevel {
				q.Depth(o, o.prevLevel, lv)
				o.prevLevel = lv
			}
		}
	}
	// The book moved through a resting order (best opposite strictly better
	// than its price): it was hit as a maker, at its price.
	if in.Book != nil && in.Book.Valid() && (d.Type == venue.EventLevel || d.Type == venue.EventSnapshot) && !in.Book.Crossed() {
		for i := 0; i < len(in.open); i++ {
			o := in.open[i]
			opp := book.Ask
			if o.Side == Sell {
				opp = book.Bid
			}
			b, ok := in.Book.Best(opp)
			if ok && ((o.Side == Buy && b.Price < o.Price) || (o.Side == Sell && b.Price > o.Price)) {
				e.fill(in, o, o.Price, o.Leaves(), Maker, max(o.Queue, 0), ev)
				i--
			}
		}
	}
	// GTD expiry, the venue's threshold before the stated time.
	for i := 0; i < len(in.open); i++ {
		o := in.open[i]
		if o.TIF == GTD && exNs >= o.ExpireNs-in.rules.GTDThresholdNs {
			e.finish(in, o, StatusExpired, "expired")
			i--
		}
	}
}

func takerOf(s Side) Side {
	if s == Buy {
		return Sell
	}
	return Buy
}

func (e *Engine) unrest(in *Instrument, o *Order) {
	if i := slices.Index(in.open, o); i >= 0 {
		in.open = slices.Delete(in.open, i, i+1)
	}
}

func (e *Engine) reject(in *Instrument, o *Order, reason string) {
	e.rejects++
	e.finish(in, o, StatusRejected, reason)
}

func (e *Engine) finish(in *Instrument, o *Order, st Status, reason string) {
	if in != nil {
		e.unrest(in, o)
	}
	o.Status, o.Reason, o.DoneNs = st, reason, e.nowNs
	e.note(o, nil)
}

// Notifications reach the strategy after the acknowledgement latency.
type note struct {
	atNs  int64
	seq   uint64
	order *Order
	fill  int // index in fills, −1 none
	st    Status
}

func (e *Engine) note(o *Order, _ *Fill) {
	e.seq++
	heap.Push(&e.notes, note{atNs: e.nowNs + e.cfg.Latency.Ack(), seq: e.seq, order: o, fill: -1, st: o.Status})
}

func (e *Engine) noteFill(f *Fill) {
	e.seq++
	heap.Push(&e.notes, note{atNs: e.nowNs + e.cfg.Latency.Ack(), seq: e.seq, fill: int(f.Seq - 1)})
}

func (e *Engine) deliver() {
	for len(e.timers) > 0 || len(e.notes) > 0 {
		var useTimer bool
		switch {
		case len(e.notes) > 0 && e.notes[0].atNs <= e.nowNs && (len(e.timers) == 0 || e.notes[0].atNs <= e.timers[0].atNs):
		case len(e.timers) > 0 && e.timers[0].atNs <= e.nowNs:
			useTimer = true
		default:
			return
		}
		if useTimer {
			t := heap.Pop(&e.timers).(timer)
			if h, ok := e.strat.(TimerHandler); ok && !e.stratDead {
				e.guard(&feed.Event{RecvNs: e.nowNs}, func() { h.OnTimer(&e.ctx, t.tag) })
			}
			continue
		}
		n := heap.Pop(&e.notes).(note)
		if e.stratDead {
			continue
		}
		if n.fill >= 0 {
			if h, ok := e.strat.(FillHandler); ok {
				f := e.fills[n.fill]
				e.guard(&feed.Event{RecvNs: e.nowNs}, func() { h.OnFill(&e.ctx, &f) })
			}
		} else if h, ok := e.strat.(OrderHandler); ok {
			e.guard(&feed.Event{RecvNs: e.nowNs}, func() { h.OnOrder(&e.ctx, n.order) })
		}
	}
}

type timer struct {
	atNs int64
	seq  uint64
	tag  int64
}

// heaps, ordered by time then sequence (deterministic).
type actionHeap []action

func (h actionHeap) Len() int { return len(h) }
func (h actionHeap) Less(i, j int) bool {
	return h[i].atNs < h[j].atNs || (h[i].atNs == h[j].atNs && h[i].seq < h[j].seq)
}
func (h actionHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *actionHeap) Push(x any)   { *h = append(*h, x.(action)) }
func (h *actionHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type noteHeap []note

func (h noteHeap) Len() int { return len(h) }
func (h noteHeap) Less(i, j int) bool {
	return h[i].atNs < h[j].atNs || (h[i].atNs == h[j].atNs && h[i].seq < h[j].seq)
}
func (h noteHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *noteHeap) Push(x any)   { *h = append(*h, x.(note)) }
func (h *noteHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type timerHeap []timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].atNs < h[j].atNs || (h[i].atNs == h[j].atNs && h[i].seq < h[j].seq)
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
