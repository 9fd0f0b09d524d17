package backtest

import (
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/registry"
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
	// Fees overrides the fee model of a venue, by venue name. Otherwise a
	// venue with probability fees (venue.Trading.ProbabilityFees) charges
	// ProbabilityFees{FeeRate, FeeRates, MakerRebateShare} and a venue with
	// fee tiers NotionalFees at FeeTier.
	Fees map[string]FeeModel
	// A market's taker rate of probability fees (Polymarket) is, in this
	// order: FeeRates by instrument (token id), then by market (condition
	// id); FeeCategories by the market's recorded fee category (Gamma's
	// feeType, "crypto_fees", matched case-insensitively with or without
	// the "_fees" suffix); the rate the recording states, from the moment it
	// is received (the market's listing: Gamma's feesEnabled and
	// feeSchedule.rate; else the fee_rate_bps of its trades); FeeRate (0:
	// most Polymarket markets are fee free). Summary.FeeRates says which
	// applied to each market's fills.
	FeeRate       float64
	FeeRates      map[string]float64
	FeeCategories map[string]float64
	// MakerRebateShare is the share of the taker fee a maker fill receives
	// back (probability fees). With RecordedRebates, a market whose recorded
	// listing states its rebate share (Gamma feeSchedule.rebateRate) uses
	// that one from the moment it is received, a per-fill approximation of
	// the venue's daily pro-rata maker rebates (as NautilusTrader's
	// PolymarketFeeModel does); the others MakerRebateShare.
	MakerRebateShare float64
	RecordedRebates  bool
	// FeeTier is the tier of venues' fee schedules (0 the lowest volume).
	FeeTier int
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
	// Instruments, when set, restricts what the strategy receives to the
	// events of these instruments (ids, or market ids such as Polymarket
	// condition ids, for all the market's instruments) and connection-wide
	// events; the simulator still follows every book (a mirrored token's
	// book included).
	Instruments []string
	// Shard, when not whole, restricts what the strategy receives to the
	// markets shard K of N owns (replayer.Shard over the market id, or the
	// instrument id where a venue has no markets) and connection-wide
	// events, as Instruments does: the simulator still follows every book.
	// Sharding by market keeps a Polymarket market's YES and NO tokens, whose
	// orders meet in one mirrored book, in one shard, so N runs given
	// 1/N … N/N make the unsharded run's fills between them.
	Shard replayer.Shard
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
	venues   map[string]*venueRules // by venue name; nil: not tradable

	orders  []*Order // by ID − 1
	fills   []Fill
	actions queue[action]
	notes   queue[note]
	timers  queue[timer]
	seq     uint64

	nowNs    int64
	startNs  int64
	cash     int64
	fees     int64
	rebates  int64
	funding  int64
	turnover int64

	stratDead bool
	stratErr  *StrategyError
	rejects   uint64
	errs      []error
	problems  int // problems found in the recording (bounded in errs)

	feeIn     FeeInput               // the fee models' argument, reused (no allocation per fill)
	pending   map[string]listedRules // rules listed for instruments no event has named yet
	feeStates map[string]*feeState   // by market (instrument where none)
	feeUse    map[feeUseKey]int      // index in feeUses
	feeUses   []FeeRateUse

	equity    []EquityPoint
	positions []PositionPoint
	nextEq    int64
	marksOut  []Markout
	events    uint64
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

// Validate refuses bad parameters before a run: negative or non-finite
// rates, a rebate share outside [0, 1], a fee tier no venue's schedule has,
// negative sampling intervals or horizons.
func (c *Config) Validate() error {
	okRate := func(r float64) bool { return r >= 0 && r <= 1 }
	if !okRate(c.FeeRate) {
		return fmt.Errorf("backtest: fee rate %v: want a fraction within [0, 1]", c.FeeRate)
	}
	for k, r := range c.FeeRates {
		if !okRate(r) {
			return fmt.Errorf("backtest: fee rate of %s %v: want a fraction within [0, 1]", k, r)
		}
	}
	cats := map[string]string{}
	for k, r := range c.FeeCategories {
		if !okRate(r) {
			return fmt.Errorf("backtest: fee rate of category %s %v: want a fraction within [0, 1]", k, r)
		}
		n := normCategory(k)
		if n == "" {
			return fmt.Errorf("backtest: fee category %q: want a name", k)
		}
		if o, dup := cats[n]; dup {
			return fmt.Errorf("backtest: fee categories %q and %q name the same category", o, k)
		}
		cats[n] = k
	}
	if !okRate(c.MakerRebateShare) {
		return fmt.Errorf("backtest: maker rebate share %v: want within [0, 1]", c.MakerRebateShare)
	}
	if c.FeeTier < 0 {
		return fmt.Errorf("backtest: fee tier %d: want 0 or more", c.FeeTier)
	}
	if c.FeeTier > 0 {
		ok := false
		for _, d := range registry.All() {
			if t := d.Capabilities().Trading; t != nil && c.FeeTier < len(t.FeeTiers) {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("backtest: fee tier %d: no venue's schedule has it", c.FeeTier)
		}
	}
	if c.EquityEveryNs < 0 {
		return fmt.Errorf("backtest: equity interval %d ns: want positive", c.EquityEveryNs)
	}
	for _, h := range c.MarkoutsNs {
		if h <= 0 {
			return fmt.Errorf("backtest: markout horizon %d ns: want positive", h)
		}
	}
	if c.Cash < 0 {
		return fmt.Errorf("backtest: starting cash must not be negative")
	}
	return nil
}

// feeModel is the fee model of a venue: Config.Fees, else the one its
// trading description implies.
func (e *Engine) feeModel(name string, t *venue.Trading) FeeModel {
	if m := e.cfg.Fees[name]; m != nil {
		return m
	}
	if t.ProbabilityFees {
		return &ProbabilityFees{DefaultRate: e.cfg.FeeRate, Rates: e.cfg.FeeRates, Categories: e.cfg.FeeCategories,
			MakerRebateShare: e.cfg.MakerRebateShare, RecordedRebates: e.cfg.RecordedRebates}
	}
	if len(t.FeeTiers) > 0 {
		n := min(e.cfg.FeeTier, len(t.FeeTiers)-1)
		tier := t.FeeTiers[n]
		return &NotionalFees{Taker: tier[0], Maker: tier[1], Tier: n}
	}
	return nil
}

// NewEngine returns an engine running s with cfg (see Config.Validate).
func NewEngine(s Strategy, cfg Config) *Engine {
	if cfg.Queue == nil {
		cfg.Queue = RiskAverse{}
	}
	if cfg.Latency == nil {
		cfg.Latency = ConstantLatency{}
	}
	if cfg.EquityEveryNs <= 0 {
		cfg.EquityEveryNs = 1e9
	}
	if cfg.MarkoutsNs == nil {
		cfg.MarkoutsNs = []int64{1e9, 10e9, 60e9}
	}
	e := &Engine{cfg: cfg, strat: s, insts: map[string]*Instrument{}, markets: map[string][]*Instrument{},
		venues: map[string]*venueRules{}, cash: cfg.Cash, feeStates: map[string]*feeState{}, feeUse: map[feeUseKey]int{}}
	e.ctx.e = e
	return e
}

// Context returns the engine's Context, the handle its strategy trades
// through, for a caller that drives the strategy's orders from outside the
// callbacks (replay serve --trading reads the account's state with it). It
// must not be used concurrently with OnEvent or Finish.
func (e *Engine) Context() *Context { return &e.ctx }

// instrument returns (creating) the state of an instrument.
func (e *Engine) instrument(ven, id string, sc book.Scale) *Instrument {
	if in := e.insts[id]; in != nil {
		return in
	}
	r, ok := e.venues[ven]
	if !ok {
		r = lookupRules(ven)
		if r != nil {
			r.fees = e.feeModel(ven, r.t)
		}
		e.venues[ven] = r
	}
	in := &Instrument{ID: id, Venue: ven, Scale: sc, SzDecimals: -1, rules: r}
	if r != nil {
		in.Tick, in.MinSize = r.t.Tick, r.t.MinSize
	}
	e.insts[id] = in
	e.instList = append(e.instList, in)
	if p, ok := e.pending[id]; ok {
		delete(e.pending, id)
		e.pair(in, p.market)
		p.apply(in)
	}
	return in
}

func (e *Engine) pair(in *Instrument, market string) {
	if market == "" || in.Market != "" {
		return
	}
	in.Market = market
	l := append(e.markets[market], in)
	e.markets[market] = l
	if len(l) == 2 && in.Outcomes() {
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
		if in != nil && in.rules != nil && in.rules.t.FundingInterval > 0 {
			e.fund(in, in.ExchangeNs)
		}
	} else if ev.Kind == datasets.KindRESTResponse && ev.Control != nil {
		e.restBody(ev)
	}
	e.activate(ev)
	if in != nil {
		e.market(in, ev)
	}
	e.deliver()
	if !e.stratDead && e.wants(ev, in) {
		e.guard(ev, func() { e.strat.OnEvent(&e.ctx, ev) })
	}
	// Orders sent in the callbacks that are due already (no latency, and
	// the exchange's clock at or past their arrival) meet this book.
	e.activate(ev)
	e.sample(ev.RecvNs)
	return nil
}

// wants reports whether the strategy receives ev (Config.Shard, Config.Instruments).
func (e *Engine) wants(ev *feed.Event, in *Instrument) bool {
	if ev.Instrument == "" {
		return true
	}
	if !e.cfg.Shard.Whole() && !e.shardOwns(ev, in) {
		return false
	}
	if len(e.cfg.Instruments) == 0 {
		return true
	}
	for _, id := range e.cfg.Instruments {
		if id == ev.Instrument || (in != nil && in.Market != "" && id == in.Market) {
			return true
		}
	}
	return false
}

// shardOwns reports whether Config.Shard owns ev's instrument: by its
// market once one is known, else by its id; the answer is kept on the
// instrument until its key changes, so no event hashes an id again.
func (e *Engine) shardOwns(ev *feed.Event, in *Instrument) bool {
	if in == nil {
		return e.cfg.Shard.Owns(ev.Venue, ev.Instrument)
	}
	key := in.Market
	if key == "" {
		key = in.ID
	}
	if key != in.shardKey {
		in.shardKey, in.shardOwned = key, e.cfg.Shard.Owns(in.Venue, key)
	}
	return in.shardOwned
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

// metadata follows tick sizes, market resolutions and funding, as the
// venue's trading description reads them.
func (e *Engine) metadata(ev *feed.Event, d *venue.Event, in *Instrument) {
	switch d.Type {
	case venue.EventTickSize:
		if in != nil && d.Price > 0 {
			in.Tick = d.Price
		}
	case venue.EventMarket:
		r := e.rulesOf(ev.Venue, in)
		if r == nil || r.t.Resolution == nil {
			return
		}
		winner, ids, ok := r.t.Resolution(d.Raw)
		if !ok {
			return
		}
		if len(ids) == 0 && d.Market != "" {
			for _, x := range e.markets[d.Market] {
				ids = append(ids, x.ID)
			}
		}
		for _, id := range ids {
			x := e.instrument(ev.Venue, id, ev.Scale)
			e.pair(x, d.Market)
			e.settle(x, id == winner)
		}
	case venue.EventTrade:
		if in != nil && in.rules != nil && in.rules.t.TradeFeeRate != nil {
			e.tradeFee(in, d, ev)
		}
	case venue.EventAssetCtx:
		if in == nil || in.rules == nil {
			return
		}
		if d.Price > 0 {
			in.MarkPx = d.Price
		}
		if f := in.rules.t.FundingRate; f != nil {
			if v, ok := f(d.Raw); ok {
				in.FundRate = v
			}
		}
	}
}

func (e *Engine) rulesOf(ven string, in *Instrument) *venueRules {
	if in != nil {
		return in.rules
	}
	if r, ok := e.venues[ven]; ok {
		return r
	}
	r := lookupRules(ven)
	if r != nil {
		r.fees = e.feeModel(ven, r.t)
	}
	e.venues[ven] = r
	return r
}

// fund pays perpetual funding at each multiple of the venue's funding
// interval on the exchange clock: payment = position × mark price × rate
// (a long pays a positive rate), from the latest recorded asset context.
// Checked at every event of the instrument, on its latest exchange time;
// the first only starts the clock.
func (e *Engine) fund(in *Instrument, exNs int64) {
	iv := int64(in.rules.t.FundingInterval)
	if exNs <= 0 || iv <= 0 {
		return
	}
	period := exNs / iv
	if in.lastPeriod == 0 || period <= in.lastPeriod {
		if in.lastPeriod == 0 {
			in.lastPeriod = period
		}
		return
	}
	in.lastPeriod = period
	if in.Position == 0 || in.MarkPx == 0 {
		return
	}
	notional := Notional(in.MarkPx, in.Position, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
	pay := int64(math.Round(float64(notional) * in.FundRate))
	e.cash -= pay
	e.funding += pay
	in.Funding += pay
}

// restBody reads what a recorded REST body states about instruments, as
// the venue's driver reads it (venue.Driver.Instruments: the same facts the
// exports' instruments table has): tick and minimum sizes (Polymarket book
// summaries and Gamma listings), szDecimals and price decimals (Hyperliquid
// meta and spotMeta), a market's fees (Gamma feesEnabled, feeType,
// feeSchedule). They apply from the body's receive time on. A body, or an
// element of one, that does not read is a problem in Result.Errors; what
// did read applies.
func (e *Engine) restBody(ev *feed.Event) {
	r := e.rulesOf(ev.Venue, nil)
	if r == nil || r.drv == nil {
		return
	}
	facts, err := r.drv.Instruments(ev.Payload)
	if err != nil {
		e.problem(fmt.Errorf("backtest: recorded REST body (seq %d, recv %d): %w", ev.Seq, ev.RecvNs, err))
	}
	for i := range facts {
		f := &facts[i]
		if f.Instrument == "" {
			continue
		}
		key := f.Market
		if key == "" {
			key = f.Instrument
		}
		e.listedFees(key, f, ev.RecvNs)
		rules := listedRules{market: f.Market, tick: f.TickSize, minSize: f.MinSize, szDec: -1}
		if f.SzDecimals >= 0 {
			rules.szDec = f.SzDecimals
			if f.PriceDecimals >= 0 {
				rules.maxPriceDec = f.PriceDecimals + f.SzDecimals
			}
		}
		if in := e.insts[f.Instrument]; in != nil {
			e.pair(in, f.Market)
			rules.apply(in)
			continue
		}
		// No event has named it yet (a listing names every market of the
		// venue): its rules wait for its first event, so that instruments
		// the recording never trades cost nothing per event.
		if e.pending == nil {
			e.pending = map[string]listedRules{}
		}
		p, ok := e.pending[f.Instrument]
		if !ok {
			p.szDec = -1
		}
		p.merge(rules)
		e.pending[f.Instrument] = p
	}
}

// listedRules are an instrument's rules as recorded REST bodies state them
// (0, or szDec -1: not stated).
type listedRules struct {
	market             string
	tick, minSize      int64
	szDec, maxPriceDec int
}

func (r *listedRules) merge(n listedRules) {
	if n.market != "" {
		r.market = n.market
	}
	if n.tick > 0 {
		r.tick = n.tick
	}
	if n.minSize > 0 {
		r.minSize = n.minSize
	}
	if n.szDec >= 0 {
		r.szDec, r.maxPriceDec = n.szDec, n.maxPriceDec
	}
}

func (r *listedRules) apply(in *Instrument) {
	if r.tick > 0 {
		in.Tick = r.tick
	}
	if r.minSize > 0 {
		in.MinSize = r.minSize
	}
	if r.szDec >= 0 {
		in.SzDecimals = r.szDec
		if r.maxPriceDec > 0 {
			in.maxPriceDec = r.maxPriceDec
		}
	}
}

// warmupREST reads a REST body recorded before the replay's window
// (replayer.WithWarmupREST): its facts apply from its receive time, as
// restBody's; nothing is delivered to the strategy.
func (e *Engine) warmupREST(ven string, rec *datasets.Record) {
	r := e.rulesOf(ven, nil)
	if r == nil {
		return
	}
	e.restBody(&feed.Event{Venue: ven, Seq: rec.Seq, RecvNs: rec.WallNs, Kind: rec.Kind, Payload: rec.Payload,
		Scale: r.drv.Scale(), Channel: feed.ChannelControl})
}

// settle closes a resolved Polymarket token at 1 or 0: open orders are
// cancelled, the position is paid out.
func (e *Engine) settle(in *Instrument, wins bool) {
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
}

// activate applies the strategy's actions that have reached the exchange by
// this event, each to its own instrument's book as last received: no
// look-ahead, an action meets only the state after data received at or
// after its arrival (submit + latency on the local clock), and, unless
// IgnoreExchangeTime, only once the venue's feed shows an exchange
// timestamp at or after it (the recorded feed latency: an event stamped
// before the arrival but received after it was already in the book the
// order met). Actions on one instrument apply in the order they were sent.
func (e *Engine) activate(ev *feed.Event) {
	if len(e.actions) == 0 {
		return
	}
	exNs := int64(0)
	if ev.Decoded != nil && !e.cfg.IgnoreExchangeTime {
		exNs = ev.Decoded.ExchangeNs
	}
	for len(e.actions) > 0 {
		a := e.actions[0]
		if a.atNs > ev.RecvNs {
			break
		}
		in := e.insts[a.order.Instrument]
		if exNs != 0 && in.Venue == ev.Venue && a.atNs > exNs {
			break
		}
		e.actions.pop()
		e.apply(in, a, ev)
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
	var t *venue.Trading
	if r != nil {
		t = r.t
	}
	exNs := ev.RecvNs
	if ev.Decoded != nil && ev.Decoded.ExchangeNs != 0 {
		exNs = ev.Decoded.ExchangeNs
	}
	switch {
	case r == nil:
		e.reject(in, o, "no simulated exchange for venue "+strconv.Quote(in.Venue))
		return
	case in.Resolved:
		e.reject(in, o, t.Reasons.Resolved)
		return
	case !r.accepts(o.TIF):
		e.reject(in, o, fmt.Sprintf("time in force %s not offered by %s (it offers %s)", o.TIF, r.name, strings.Join(t.OrderTypes, ", ")))
		return
	case in.Book == nil || !in.Book.Valid():
		e.reject(in, o, "book not valid (before the first snapshot or after a gap): order not simulated")
		return
	}
	if reason := check(in, o, exNs); reason != "" {
		e.reject(in, o, reason)
		return
	}
	if t.Outcomes && !e.cfg.AllowShort && o.Side == Sell && o.Size > in.Position-e.sellingRest(in, o) {
		e.reject(in, o, t.Reasons.NoBalance)
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
		reason := t.Reasons.PostOnlyCrosses
		if o.TIF == ALO {
			b, _ := in.Book.Best(book.Bid)
			a, _ := in.Book.Best(book.Ask)
			reason += ", bbo was " + book.FormatDecimal(b.Price, in.Scale.PriceDecimals) + "@" + book.FormatDecimal(a.Price, in.Scale.PriceDecimals)
		}
		e.reject(in, o, reason)
		return
	}
	if o.TIF == FOK && !e.canFill(in, o, opp) {
		e.reject(in, o, t.Reasons.FOKUnfilled)
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
			e.finish(in, o, StatusCancelled, t.Reasons.FAKUnfilled)
		} else {
			e.finish(in, o, StatusCancelled, "unfilled rest killed ("+o.TIF.String()+")")
		}
		return
	}
	o.Status = StatusOpen
	lv, _ := in.Book.Level(bs, o.Price)
	o.Queue, o.prevLevel, o.tradedHere = lv, lv, 0
	o.unit = float64(pow10(in.Scale.SizeDecimals))
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
			q = mulDivFloor(amtLeft, pow10(sc.SizeDecimals), l.Price*cashUnit)
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
	if fm := in.rules.fees; fm != nil {
		fi := e.feeInput(in, price, q, liq)
		fee = fm.Fee(fi)
		e.noteFeeRate(fm, fi, fee, ev.RecvNs)
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
			// A trade reaches a resting order at its price or through it (a
			// buy printed above a resting sell, a sell below a resting buy).
			if !better(o.Side, d.Price, o.Price) {
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
		if o.TIF == GTD && exNs >= o.ExpireNs-int64(in.rules.t.GTDThreshold) {
			e.finish(in, o, StatusExpired, "expired")
			i--
		}
	}
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
	e.notes.push(note{atNs: e.nowNs + e.cfg.Latency.Ack(), seq: e.seq, order: o, fill: -1, st: o.Status})
}

func (e *Engine) noteFill(f *Fill) {
	e.seq++
	e.notes.push(note{atNs: e.nowNs + e.cfg.Latency.Ack(), seq: e.seq, fill: int(f.Seq - 1)})
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
			t := e.timers.pop()
			if h, ok := e.strat.(TimerHandler); ok && !e.stratDead {
				e.guard(&feed.Event{RecvNs: e.nowNs}, func() { h.OnTimer(&e.ctx, t.tag) })
			}
			continue
		}
		n := e.notes.pop()
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

// queue is a binary min-heap ordered by time then sequence (deterministic),
// without container/heap's boxing of every element in an interface.
type queue[T timed] []T

type timed interface{ key() (int64, uint64) }

func (a action) key() (int64, uint64) { return a.atNs, a.seq }
func (n note) key() (int64, uint64)   { return n.atNs, n.seq }
func (t timer) key() (int64, uint64)  { return t.atNs, t.seq }

func before[T timed](a, b T) bool {
	at, as := a.key()
	bt, bs := b.key()
	return at < bt || (at == bt && as < bs)
}

func (q *queue[T]) push(x T) {
	h := append(*q, x)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !before(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *queue[T]) pop() T {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	var zero T
	h[n] = zero
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && before(h[l], h[m]) {
			m = l
		}
		if r := l + 1; r < n && before(h[r], h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}
