package backtest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/feed"
)

// Builtin describes a built-in strategy.
type Builtin struct {
	Name   string
	About  string
	Params map[string]string // name → default
	New    func(p Params) (Strategy, error)
}

// Params are a strategy's parameters as given on the command line.
type Params map[string]string

// Float reads a float parameter, refusing garbage.
func (p Params) Float(k string) (float64, error) {
	v, err := strconv.ParseFloat(p[k], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("backtest: parameter %s=%q: not a number", k, p[k])
	}
	return v, nil
}

// Builtins lists the built-in strategies by name.
var Builtins = map[string]*Builtin{
	"noop": {Name: "noop", About: "receives every event and trades nothing (the engine's overhead)",
		Params: map[string]string{}, New: func(Params) (Strategy, error) { return Noop{}, nil }},
	"mm": {Name: "mm", About: "passive quoting market maker with inventory skew: post-only bid and ask around the mid",
		Params: map[string]string{"spread": "0.02", "size": "10", "skew": "0.001", "max_position": "100", "instrument": ""},
		New:    newMM},
	"complement": {Name: "complement", About: "Polymarket YES/NO complement taker: buys both tokens (FOK) when ask(YES) + ask(NO) + fees < 1 − edge (fee_rate=auto: each market's rate as the simulator charges it)",
		Params: map[string]string{"edge": "0", "size": "10", "fee_rate": "auto"},
		New:    newComplement},
}

// NewBuiltin builds a built-in strategy, checking every parameter first:
// unknown names and bad values are refused before any data is read.
func NewBuiltin(name string, given Params) (Strategy, Params, error) {
	b := Builtins[name]
	if b == nil {
		names := make([]string, 0, len(Builtins))
		for n := range Builtins {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, nil, fmt.Errorf("backtest: unknown strategy %q (built-in: %s)", name, strings.Join(names, ", "))
	}
	p := Params{}
	for k, v := range b.Params {
		p[k] = v
	}
	for k, v := range given {
		if _, ok := b.Params[k]; !ok {
			keys := make([]string, 0, len(b.Params))
			for k := range b.Params {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return nil, nil, fmt.Errorf("backtest: strategy %s has no parameter %q (has: %s)", name, k, strings.Join(keys, ", "))
		}
		p[k] = v
	}
	s, err := b.New(p)
	return s, p, err
}

// Noop trades nothing.
type Noop struct{}

// OnEvent does nothing.
func (Noop) OnEvent(*Context, *feed.Event) {}

// MM quotes a post-only bid and ask around the mid of every instrument (or
// one), skewed against its inventory:
//
//	bid = mid − spread/2 − skew·inventory,  ask = mid + spread/2 − skew·inventory
//
// rounded away from the mid to the tick; no bid above max_position, no ask
// below −max_position. On Polymarket, where a SELL needs the shares, the ask
// is a BUY of the complementary token at 1 − ask while the inventory is not
// long (the mirrored book makes the two the same order), and inventory is
// YES shares minus NO shares.
type MM struct {
	Spread, Size, Skew, MaxPos float64
	Only                       string
	insts                      []*mmState // by Instrument.Index; nil until its first quote
	noSkip                     bool       // evaluate every event (tests: the skip changes nothing)
	skipped                    int        // events skipped (tests)
}

// mmState is what MM keeps of one instrument: its quotes, and the
// inputs of its last evaluation when that evaluation changed nothing.
type mmState struct {
	q      [2]mmQuote // bid, ask
	shares int64      // Size in the instrument's size units (its scale never changes)
	// The last evaluation changed nothing (idle): it sent nothing and left
	// the quotes as they were. Then market and account are its inputs,
	// and the account was so at view version (Context.ViewVersion).
	idle    bool
	market  mmMarket
	account mmAccount
	version uint64
}

// An evaluation of MM reads what can change of the market (mmMarket) and
// of the account as the strategy knows it (mmAccount). The parameters and
// the instrument's scale, venue rules and resolution (checked first) do
// not change under it, and an order's side and instrument are those it
// was sent with.
type mmMarket struct {
	bid, ask       int64 // best prices
	step           int64 // the price step at the bid (Instrument.PriceStep)
	size           int64 // quote size, in whole lots
	comp           *Instrument
	tick, compTick int64 // Instrument.Tick of the instrument and its complement
}

type mmAccount struct {
	pos, compPos int64 // Instrument.Position of the instrument and its complement
	q            [2]mmQuote
	ord          [2]mmOrder
}

// mmOrder is what MM reads of a quote's order (Context.Order).
type mmOrder struct {
	known  bool // Order is not nil
	status Status
	price  int64
}

// mmQuote is one of MM's quotes: its order's id and whether a cancel of
// it was sent and not yet answered.
type mmQuote struct {
	id         uint64
	cancelling bool
}

func newMM(p Params) (Strategy, error) {
	m := &MM{Only: p["instrument"]}
	var err error
	for _, f := range []struct {
		k string
		v *float64
	}{{"spread", &m.Spread}, {"size", &m.Size}, {"skew", &m.Skew}, {"max_position", &m.MaxPos}} {
		if *f.v, err = p.Float(f.k); err != nil {
			return nil, err
		}
		if *f.v < 0 {
			return nil, fmt.Errorf("backtest: mm: %s must not be negative", f.k)
		}
	}
	if m.Spread == 0 || m.Size == 0 {
		return nil, fmt.Errorf("backtest: mm: spread and size must be positive")
	}
	return m, nil
}

// OnEvent requotes the event's instrument when its book changed.
//
// Most book events change nothing MM decides from: the best prices stay
// and no report about its quotes arrived. An evaluation is a function of
// its inputs, so one with the inputs of the last evaluation of the
// instrument, when that one changed nothing, would change nothing again,
// and is skipped. The market inputs are compared first; the account's
// are the same if the view version is (nothing was reported since), else
// they are read and compared.
func (m *MM) OnEvent(ctx *Context, e *feed.Event) {
	if e.Channel != feed.ChannelBook || e.Book == nil || !e.Book.Valid() || (m.Only != "" && e.Instrument != m.Only) {
		return
	}
	in := ctx.Instrument(e.Instrument)
	if in == nil || in.Resolved {
		return
	}
	bb, ok1 := e.Book.Best(book.Bid)
	ba, ok2 := e.Book.Best(book.Ask)
	if !ok1 || !ok2 || bb.Price >= ba.Price {
		return
	}
	st := m.state(ctx, in)
	mk := mmMarket{bid: bb.Price, ask: ba.Price, step: in.PriceStep(bb.Price), size: st.shares, comp: in.Complement, tick: in.Tick}
	if lot := in.Lot(); lot > 1 {
		mk.size = max(mk.size/lot*lot, lot)
	}
	if mk.comp != nil {
		mk.compTick = mk.comp.Tick
	}
	if st.idle && st.market == mk && !m.noSkip {
		v := ctx.ViewVersion()
		if v == st.version || st.account == m.account(ctx, in, st, &mk) {
			st.version = v // the account is as it was then
			m.skipped++
			return
		}
	}
	v, q := ctx.ViewVersion(), st.q
	m.requote(ctx, in, st, &mk)
	// An evaluation that changed nothing found the account as it left
	// it: read it now (the quotes' orders are at hand).
	if st.idle = ctx.ViewVersion() == v && st.q == q; st.idle {
		st.market, st.account, st.version = mk, m.account(ctx, in, st, &mk), v
	}
}

// account reads what an evaluation of in reads of the account.
func (m *MM) account(ctx *Context, in *Instrument, st *mmState, mk *mmMarket) mmAccount {
	a := mmAccount{pos: in.Position, q: st.q}
	if mk.comp != nil {
		a.compPos = mk.comp.Position
	}
	for i, q := range st.q {
		if o := ctx.Order(q.id); o != nil {
			a.ord[i] = mmOrder{known: true, status: o.Status, price: o.Price}
		}
	}
	return a
}

// state returns in's state, making it on its first quote.
func (m *MM) state(ctx *Context, in *Instrument) *mmState {
	if in.Index >= len(m.insts) {
		m.insts = append(m.insts, make([]*mmState, in.Index+1-len(m.insts))...)
	}
	st := m.insts[in.Index]
	if st == nil {
		st = &mmState{shares: ctx.Shares(in.ID, m.Size)}
		m.insts[in.Index] = st
	}
	return st
}

// requote places, keeps or cancels in's two quotes for market mk.
func (m *MM) requote(ctx *Context, in *Instrument, st *mmState, mk *mmMarket) {
	sc := in.Scale
	unit := float64(pow10(sc.PriceDecimals))
	// Inventory as the fill reports received so far make it (the local
	// view, Context.Position), not the simulator's.
	pos := in.Position
	inv := float64(pos) / float64(pow10(sc.SizeDecimals))
	if c := mk.comp; c != nil {
		inv -= float64(c.Position) / float64(pow10(sc.SizeDecimals))
	}
	mid := float64(mk.bid+mk.ask) / 2 / unit
	tick := mk.step
	bid := int64(math.Floor((mid-m.Spread/2-m.Skew*inv)*unit/float64(tick))) * tick
	ask := int64(math.Ceil((mid+m.Spread/2-m.Skew*inv)*unit/float64(tick))) * tick
	size := mk.size
	m.quote(ctx, in, &st.q[0], Buy, in.ID, bid, size, inv < m.MaxPos && bid > 0)
	if in.Outcomes() && !ctx.e.cfg.AllowShort && pos < size {
		if c := mk.comp; c != nil {
			m.quote(ctx, c, &st.q[1], Buy, c.ID, pow10(sc.PriceDecimals)-ask, size, inv > -m.MaxPos && ask < pow10(sc.PriceDecimals))
		}
		return
	}
	m.quote(ctx, in, &st.q[1], Sell, in.ID, ask, size, inv > -m.MaxPos)
}

func (m *MM) quote(ctx *Context, in *Instrument, q *mmQuote, side Side, inst string, price, size int64, want bool) {
	if o := ctx.Order(q.id); o != nil && !o.Status.Done() {
		if want && o.Price == price && o.Side == side && o.Instrument == inst {
			return
		}
		// Cancel only what the venue has acknowledged: a cancel racing
		// its order would be refused.
		if o.Status == StatusOpen && !q.cancelling && ctx.Cancel(q.id) == nil {
			q.cancelling = true
		}
		return // requote once the cancel is through
	}
	*q = mmQuote{}
	if !want || price <= 0 {
		return
	}
	if in.Outcomes() && (price < in.Tick || price > pow10(in.Scale.PriceDecimals)-in.Tick) {
		return
	}
	tif, post := in.PostOnly()
	q.id, _ = ctx.Submit(OrderRequest{Instrument: inst, Side: side, Price: price, Size: size, TIF: tif, PostOnly: post, Tag: "mm"})
}

// Complement buys both outcome tokens of a Polymarket market with FOK
// orders when the two best asks and the taker fees leave an edge:
//
//	ask(YES) + ask(NO) + fee(YES) + fee(NO) < 1 − edge   (per share)
//
// with fee = rate × p × (1 − p) per share; a pair pays 1 at resolution.
// Rate is the parameter fee_rate; "auto" (the default, Auto) takes each
// token's rate from the simulator (Context.TakerFeeRate: --fee,
// --fee-category, the recorded rate so far, --fee-rate), the rate its fills
// will be charged.
type Complement struct {
	Edge, Size, Rate float64
	Auto             bool
	busy             map[string]bool
}

func newComplement(p Params) (Strategy, error) {
	c := &Complement{busy: map[string]bool{}}
	var err error
	if c.Edge, err = p.Float("edge"); err != nil {
		return nil, err
	}
	if c.Size, err = p.Float("size"); err != nil {
		return nil, err
	}
	if p["fee_rate"] == "auto" {
		c.Auto = true
	} else if c.Rate, err = p.Float("fee_rate"); err != nil {
		return nil, err
	}
	if c.Size <= 0 || c.Rate < 0 || c.Rate > 1 {
		return nil, fmt.Errorf("backtest: complement: size must be positive and fee_rate within [0, 1] or auto")
	}
	return c, nil
}

// OnEvent looks for the edge on the event's market.
func (c *Complement) OnEvent(ctx *Context, e *feed.Event) {
	if e.Channel != feed.ChannelBook {
		return
	}
	in := ctx.Instrument(e.Instrument)
	if in == nil || in.Complement == nil || in.Resolved || !in.Outcomes() {
		return
	}
	yes, no := in, in.Complement
	if yes.ID > no.ID {
		yes, no = no, yes
	}
	if c.busy[yes.ID] && ctx.Working(yes.ID)+ctx.Working(no.ID) > 0 {
		return
	}
	c.busy[yes.ID] = false
	if yes.Book == nil || no.Book == nil || !yes.Book.Valid() || !no.Book.Valid() {
		return
	}
	ay, sy, ok1 := ctx.Take(yes.ID, Buy)
	an, sn, ok2 := ctx.Take(no.ID, Buy)
	if !ok1 || !ok2 {
		return
	}
	unit := float64(pow10(in.Scale.PriceDecimals))
	py, pn := float64(ay)/unit, float64(an)/unit
	ry, rn := c.Rate, c.Rate
	if c.Auto {
		ry, _, _ = ctx.TakerFeeRate(yes.ID)
		rn, _, _ = ctx.TakerFeeRate(no.ID)
	}
	cost := py + pn + ry*py*(1-py) + rn*pn*(1-pn)
	if cost >= 1-c.Edge {
		return
	}
	// Both legs at their best ask only, in whole shares, and only as many
	// as both books still hold for us: a pair pays 1 at resolution, a lone
	// leg is a bet.
	unitSz := pow10(in.Scale.SizeDecimals)
	shares := min(ctx.Shares(yes.ID, c.Size), sy, sn)
	// Whole shares, as many as keep both legs' dollars within the venue's
	// decimals (cents on Polymarket): price × n in whole cents.
	n := shares / unitSz
	if d := in.rules.t.DollarDecimals; d > 0 && d < int(in.Scale.PriceDecimals) {
		cent := pow10(in.Scale.PriceDecimals - uint8(d))
		step := lcm(cent/gcd(ay, cent), cent/gcd(an, cent))
		n -= n % step
	}
	shares = n * unitSz
	if m := minMarketable(in); shares <= 0 || ay*n < m || an*n < m {
		return // a leg below the venue's smallest market BUY would be refused
	}
	for _, x := range []struct {
		in *Instrument
		px int64
	}{{yes, ay}, {no, an}} {
		amount := x.px * (shares / unitSz)
		_, _ = ctx.Submit(OrderRequest{Instrument: x.in.ID, Side: Buy, Price: x.px, Amount: amount, TIF: FOK, Tag: "complement"})
	}
	c.busy[yes.ID] = true
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int64) int64 { return a / gcd(a, b) * b }
