package backtest

import (
	"fmt"
	"runtime/debug"

	"github.com/cespare/xxhash/v2"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
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
	// TradesAtPrice: a trade printed at a resting order's price fills it up
	// to the trade's size whatever the queue ahead (NautilusTrader's
	// trade_execution: a trade at the limit fills it; optimistic). The
	// default is the queue model's: the queue ahead is consumed first, and
	// only a trade or book through the price fills regardless.
	TradesAtPrice bool
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
	// ReturnPeriodNs is the period of the returns Summary's Sharpe and
	// Sortino ratios use (default one minute).
	ReturnPeriodNs int64
}

// Engine simulates the venues' matching for one strategy. It is a
// feed.Subscriber: feed it every event (Subscribe it to a Replayer or a live
// Recorder with an empty Key), then call Finish.
type Engine struct {
	cfg   Config
	strat Strategy
	ctx   Context

	// drivers are the venues' drivers by name, from Run's datasets and
	// from the events (feed.Event.Driver); lastDrv the last one added.
	drivers map[string]venue.Driver
	lastDrv venue.Driver

	insts    map[string]*Instrument
	instList []*Instrument
	hot      [hotSlots]*Instrument // instruments lookup found, by hotSlot of their id
	markets  map[string][]*Instrument
	venues   map[string]*venueRules // by venue name; nil: not tradable

	orders    []*Order    // the exchange's orders, by ID − 1 − orderBase
	orderBase uint64      // orders a summary-only run has let go (bounded.go)
	orderSlab []Order     // where newOrder takes orders from
	xorders   xorderSlabs // where Submit takes the exchange's records from
	fills     []Fill      // by Seq − 1 − fillBase
	fillBase  int         // fills a summary-only run has let go
	notes     queue[note]
	timers    queue[timer]
	seq       uint64
	view      accountView // what the strategy has been told

	nowNs    int64 // the local (receive) clock
	xNs      int64 // the exchange time of what is being applied
	startNs  int64
	cash     int64
	fees     int64
	rebates  int64
	funding  int64
	turnover int64

	stratDead     bool
	stratErr      *StrategyError
	rejects       uint64
	cancelRejects uint64        // cancels and amends the venue refused (unknown order)
	held          []*Instrument // instruments with a position, in the order they got one
	peakMargin    int64         // the largest initial margin used (cross-margin venues)
	reserved      int64         // the cash resting BUYs of outcome tokens hold (buyHold), kept as they rest, fill and leave
	liquidations  int
	errs          []error
	problems      int // problems found in the recording (bounded in errs)

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

	// summaryOnly keeps no series (equity, positions, markouts) and hands
	// back no orders or fills (ManyOptions.SummaryOnly): the summary's
	// figures come from curve, markSums and tally, which every run keeps,
	// and it lets go of the orders and fills it no longer needs as it
	// runs (bounded.go).
	summaryOnly bool
	tally       tally
	dig         *xxhash.Digest // summary-only: the digest of the orders let go
	digBuf      []byte
	fillLog     fillLog
	listing     *listing // the REST body being delivered, read once for every engine of a RunMany

	// sh is what the engines of a RunMany share, worked out once per event
	// (shared.go); nil in Run. An engine with sh is stepped by its fanout
	// only. bySlot are its instruments by their slot there.
	sh       *shared
	bySlot   []*Instrument
	curve    curve
	markSums markoutSums
	markHi   []int // by index in Config.MarkoutsNs: the first index of the same horizon
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
	if c.ReturnPeriodNs < 0 {
		return fmt.Errorf("backtest: return period %d ns: want positive", c.ReturnPeriodNs)
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
	if cfg.ReturnPeriodNs <= 0 {
		cfg.ReturnPeriodNs = 60e9
	}
	if cfg.MarkoutsNs == nil {
		cfg.MarkoutsNs = []int64{1e9, 10e9, 60e9}
	}
	e := &Engine{cfg: cfg, strat: s, insts: map[string]*Instrument{}, markets: map[string][]*Instrument{},
		venues: map[string]*venueRules{}, cash: cfg.Cash, feeStates: map[string]*feeState{}, feeUse: map[feeUseKey]int{}}
	e.view.cash = cfg.Cash
	e.ctx.e = e
	e.curve = newCurve(cfg.ReturnPeriodNs, cfg.Cash)
	n := len(cfg.MarkoutsNs)
	e.markSums = markoutSums{sum: make([]float64, n), n: make([]int, n)}
	e.markHi = make([]int, n)
	for i, h := range cfg.MarkoutsNs {
		e.markHi[i] = i
		for j := range i {
			if cfg.MarkoutsNs[j] == h {
				e.markHi[i] = j
				break
			}
		}
	}
	return e
}

// Context returns the engine's Context, the handle its strategy trades
// through, for a caller that drives the strategy's orders from outside the
// callbacks (replay serve --trading reads the account's state with it). It
// must not be used concurrently with OnEvent or Finish.
func (e *Engine) Context() *Context { return &e.ctx }

// lookup returns the instrument with this id, or nil. A strategy and the
// matching path ask for the same few instruments (a token and its
// complement) many times per event, so each one found is kept in a slot
// picked by a couple of its id's bytes and tried before the map: a
// Polymarket token id is 77 digits to hash, while the same interned id
// compares by address and two different ids differ within their first
// bytes. Instruments are never removed, so a remembered one stays right.
func (e *Engine) lookup(id string) *Instrument {
	s := &e.hot[hotSlot(id)]
	if in := *s; in != nil && in.ID == id {
		return in
	}
	in := e.insts[id]
	if in != nil {
		*s = in
	}
	return in
}

// hotSlots is the size of Engine.hot: a run trades a handful of
// instruments, whatever the recording holds.
const hotSlots = 16

// hotSlot picks id's slot in Engine.hot from its last and middle bytes
// (the ends of decimal token ids, coin names).
func hotSlot(id string) int {
	n := len(id)
	if n == 0 {
		return 0
	}
	return (int(id[n-1]) + 3*int(id[n/2])) & (hotSlots - 1)
}

// instrument returns (creating) the state of an instrument.
func (e *Engine) instrument(ven, id string, sc book.Scale) *Instrument {
	if in := e.lookup(id); in != nil {
		return in
	}
	r, ok := e.venues[ven]
	if !ok {
		r = e.lookupRules(ven)
		if r != nil {
			r.fees = e.feeModel(ven, r.t)
		}
		e.venues[ven] = r
	}
	in := &Instrument{ID: id, Venue: ven, Index: len(e.instList), Scale: sc, SzDecimals: -1, rules: r}
	if r != nil {
		in.Tick, in.MinSize = r.t.Tick, r.t.MinSize
		if r.t.SizeDecimals > 0 {
			in.SzDecimals = r.t.SizeDecimals
		}
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

// eventInstrument returns (creating) the instrument of d, the decoded
// event of ev: in a RunMany, from the slot the fanout interned its id at.
func (e *Engine) eventInstrument(ev *feed.Event, d *venue.Event) *Instrument {
	si := (*sharedInst)(nil)
	if e.sh != nil {
		si = e.sh.cur
	}
	if si == nil {
		return e.instrument(ev.Venue, d.Instrument, ev.Scale)
	}
	if in := e.at(si); in != nil {
		return in
	}
	in := e.instrument(ev.Venue, d.Instrument, ev.Scale)
	e.remember(si, in)
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
		if l[0].xb != nil || l[1].xb != nil {
			e.track(l[0])
		}
	} else if len(l) > 2 {
		for _, x := range l {
			x.Complement = nil // not a binary market: no mirror
		}
	}
}

// OnEvent implements feed.Subscriber.
func (e *Engine) OnEvent(ev *feed.Event) error {
	e.events++
	if d := ev.Driver; d != nil && d != e.lastDrv {
		e.addDriver(d)
	}
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
	d := ev.Decoded
	if d != nil && d.Instrument != "" {
		in = e.eventInstrument(ev, d)
		if ev.Book != nil {
			in.Book = ev.Book
		}
		if d.ExchangeNs > in.ExchangeNs {
			in.ExchangeNs = d.ExchangeNs
		}
		e.pair(in, d.Market)
	} else if ev.Instrument != "" && ev.Book != nil {
		in = e.lookup(ev.Instrument) // a loss record invalidating the book
	}
	// The exchange first catches up with the time this event is stamped:
	// actions and expiries due before it, against the book before it.
	var r *venueRules
	if in != nil {
		r = in.rules
		if in.xs != nil {
			in.xb = in.xs.pre // the shared book before ev
		}
	}
	x := e.exchangeTime(ev)
	if r == nil && x > 0 {
		r = e.rulesOf(ev.Venue, nil)
	}
	e.xNs = ev.RecvNs
	if r != nil {
		if x > 0 {
			e.advance(r, x)
			e.xNs = x
		} else if r.clockNs > 0 {
			e.xNs = r.clockNs
		}
	}
	if in != nil && in.rules != nil {
		if in.xb == nil {
			e.track(in)
		}
		if in.xs != nil {
			in.xb = in.xs.post // the fanout has applied ev to it
		} else {
			followBook(in.xb, ev)
		}
	}
	if in != nil && (in.xPos != 0 || len(in.open) > 0) && ev.Book != nil {
		if m, ok := in.Mid(); ok {
			in.lastMid = m
		}
	}
	if d != nil {
		e.metadata(ev, d, in)
		if in != nil {
			e.market(in, ev)
			if in.xPos != 0 && in.rules != nil && in.rules.t.CrossMargin {
				e.checkMargin(in.rules)
			}
		}
	} else if ev.Kind == datasets.KindRESTResponse && ev.Control != nil {
		e.restBody(ev)
	}
	e.deliver()
	if !e.stratDead && e.wants(ev, in) {
		e.strategyEvent(ev)
	}
	e.sample(ev.RecvNs)
	if e.summaryOnly {
		e.release()
	}
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
	defer e.isolate(ev)
	f()
}

// strategyEvent hands ev to the strategy, isolating a panic: guard without
// a closure to make for every event.
func (e *Engine) strategyEvent(ev *feed.Event) {
	defer e.isolate(ev)
	e.strat.OnEvent(&e.ctx, ev)
}

// isolate, deferred around a strategy call at ev, stops the strategy if
// the call panicked and keeps the panic as a StrategyError.
func (e *Engine) isolate(ev *feed.Event) {
	if r := recover(); r != nil {
		e.stratDead = true
		e.stratErr = &StrategyError{Seq: ev.Seq, RecvNs: ev.RecvNs, Value: fmt.Sprint(r), Stack: string(debug.Stack())}
		e.errs = append(e.errs, e.stratErr)
	}
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
		if f := in.rules.t.OraclePrice; f != nil {
			if txt, ok := f(d.Raw); ok {
				if v, err := book.ParseDecimal(txt, in.Scale.PriceDecimals); err == nil && v > 0 {
					in.oraclePx = v
				}
			}
		}
		// Contexts carry no exchange time: one received after the next
		// funding boundary is not the one in force at it.
		if iv := int64(in.rules.t.FundingInterval); iv > 0 {
			if c := in.rules.clockNs; c == 0 || ev.RecvNs <= (c/iv+1)*iv {
				in.boundRate, in.boundOracle = in.FundRate, in.oraclePx
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
	r := e.lookupRules(ven)
	if r != nil {
		r.fees = e.feeModel(ven, r.t)
	}
	e.venues[ven] = r
	return r
}
