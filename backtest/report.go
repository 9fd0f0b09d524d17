package backtest

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
)

// EquityPoint is one sample of the account: cash plus every position valued
// at its mark (PositionPoint).
type EquityPoint struct {
	RecvNs int64
	Cash   int64 // CashDecimals
	Equity int64 // CashDecimals
}

// PositionPoint is one instrument's position at an equity sample, for every
// instrument with a position or resting orders then. Mark is the book's mid
// (the last trade price when a side is empty; a resolved token's
// settlement), at the instrument's price scale; Value is Position × Mark at
// CashDecimals.
type PositionPoint struct {
	RecvNs     int64
	Venue      string
	Instrument string
	Position   int64 // size units; negative is short
	Mark       int64
	Value      int64 // CashDecimals
}

// markout is a fill's markout not yet taken: what of the fill it needs is
// kept with it, so that the fill itself need not be (a summary-only run
// drops fills once reported, bounded.go).
type markout struct {
	seq   uint64 // the fill's Seq
	price int64  // the fill's price
	atNs  int64
	side  Side
}

// Markout is the mid price a horizon after a fill, signed so that positive
// is a gain for the strategy: (mid − price) for a buy, (price − mid) for a
// sell, per unit, in price units.
type Markout struct {
	Fill    uint64
	Horizon int64
	Mid     int64
	PnL     int64
}

// markQueue is an instrument's markouts of one horizon not yet taken,
// m[head:], in the order of their times (exchange time of the fill plus
// the horizon), then of their fills: those due at a time are a prefix. The
// times mostly come in order; they come out of it where the exchange clock
// went back between two fills (an event stamped before the clock is
// applied where it is). Those taken go by moving head; the array is
// compacted when full (or reused whole when empty), so that neither
// costs more than its share of the appends.
type markQueue struct {
	m     []markout
	head  int
	due   int // markouts' scratch: how many from head on are due,
	taken int // and how many of those it took
}

// addMarkouts schedules the markouts of fill seq, made now (e.xNs) at
// price on side, one per horizon (Config.MarkoutsNs).
func (e *Engine) addMarkouts(in *Instrument, seq uint64, price int64, side Side) {
	if in.marks == nil {
		in.marks = make([]markQueue, len(e.cfg.MarkoutsNs))
	}
	for i, h := range e.cfg.MarkoutsNs {
		at := e.xNs + h
		if in.marksN == 0 || at < in.marksDue {
			in.marksDue = at
		}
		q := &in.marks[i]
		if q.head > 0 && len(q.m) == cap(q.m) {
			q.m, q.head = dropFront(q.m, q.head), 0
		}
		q.m = append(roomFor(q.m), markout{})
		j := len(q.m) - 1
		for ; j > q.head && q.m[j-1].atNs > at; j-- {
			q.m[j] = q.m[j-1] // later than this one: it goes before them
		}
		q.m[j] = markout{seq: seq, price: price, side: side, atNs: at}
		in.marksN++
	}
}

// markouts takes in's markouts due at nowNs against its mid now, in the
// order of their fills and, for one fill, of Config.MarkoutsNs: the
// order the summary's sums (of floats) and the run's Markouts read them.
// Checking the earliest time (marksDue) makes an event with none due cost
// nothing; one with some due costs what is due, each horizon's queue
// handing them over from its head.
func (e *Engine) markouts(in *Instrument, nowNs int64) {
	if in.marksN == 0 || nowNs < in.marksDue {
		return // none due: most events of a traded instrument
	}
	mid, ok := in.Mid()
	if !ok {
		return
	}
	for i := range in.marks {
		in.marks[i].dueFirst(nowNs)
	}
	// Merge the queues' due heads by fill, then horizon index.
	for {
		qi := -1
		var next uint64
		for i := range in.marks {
			q := &in.marks[i]
			if q.taken < q.due {
				if s := q.m[q.head+q.taken].seq; qi < 0 || s < next {
					qi, next = i, s
				}
			}
		}
		if qi < 0 {
			break
		}
		q := &in.marks[qi]
		e.takeMarkout(in, qi, &q.m[q.head+q.taken], mid)
		q.taken++
	}
	in.marksDue = math.MaxInt64
	for i := range in.marks {
		q := &in.marks[i]
		q.head += q.due
		in.marksN -= q.due
		q.due, q.taken = 0, 0
		if q.head == len(q.m) {
			q.m, q.head = q.m[:0], 0
		} else {
			in.marksDue = min(in.marksDue, q.m[q.head].atNs)
		}
	}
}

// dueFirst counts the markouts due at nowNs (q.due, from head on) and
// puts them in the order of their fills.
func (q *markQueue) dueFirst(nowNs int64) {
	n := q.head
	for n < len(q.m) && q.m[n].atNs <= nowNs {
		n++
	}
	due := q.m[q.head:n]
	q.due = len(due)
	if !slices.IsSortedFunc(due, bySeq) {
		slices.SortFunc(due, bySeq)
	}
}

func bySeq(a, b markout) int { return cmp.Compare(a.seq, b.seq) }

// takeMarkout folds markout m of horizon i (Config.MarkoutsNs), taken at
// mid, into the summary's sums and, in a run that keeps its series, the
// Markouts.
func (e *Engine) takeMarkout(in *Instrument, i int, m *markout, mid int64) {
	d := mid - m.price
	if m.side == Sell {
		d = -d
	}
	e.markSums.add(e.markHi[i], float64(d)/float64(pow10(in.Scale.PriceDecimals)))
	if !e.summaryOnly {
		e.marksOut = append(roomFor(e.marksOut), Markout{Fill: m.seq, Horizon: e.cfg.MarkoutsNs[i], Mid: mid, PnL: d})
	}
}

// value is the position at its mark, at the exchange or (local) as the
// strategy knows it: the settlement once resolved, else the mid of the
// book as it last stood uncrossed with both sides (a crossed book is a
// batch of the venue in progress), else the last fill's price.
func (in *Instrument) value(local bool) (int64, int64) {
	pos, px := in.xPos, in.lastFill
	if local {
		pos, px = in.Position, in.LastTrade
	}
	if in.Resolved {
		px = in.Settle
	} else if m, ok := in.Mid(); ok {
		px = m
	} else if in.lastMid > 0 {
		px = in.lastMid
	}
	return Notional(px, pos, in.Scale.PriceDecimals, in.Scale.SizeDecimals), px
}

// equityNow is the exchange's account value: cash plus the positions at
// their marks.
func (e *Engine) equityNow() int64 {
	eq := e.cash
	for _, in := range e.held {
		v, _ := in.value(false)
		eq += v
	}
	return eq
}

func (e *Engine) sample(nowNs int64) {
	if nowNs < e.nextEq {
		return
	}
	e.nextEq = (nowNs/e.cfg.EquityEveryNs + 1) * e.cfg.EquityEveryNs
	e.record(nowNs)
}

// record samples the account at nowNs. A sample already taken at nowNs
// (the end of a run, right after the last event's) is replaced: one
// sample per time, the latest state.
func (e *Engine) record(nowNs int64) {
	p := EquityPoint{RecvNs: nowNs, Cash: e.cash, Equity: e.equityNow()}
	e.curve.add(p)
	if e.summaryOnly {
		return
	}
	if n := len(e.equity); n > 0 && e.equity[n-1].RecvNs == nowNs {
		e.equity = e.equity[:n-1]
		k := len(e.positions)
		for k > 0 && e.positions[k-1].RecvNs == nowNs {
			k--
		}
		e.positions = e.positions[:k]
	}
	e.equity = append(roomFor(e.equity), p)
	for _, in := range e.instList {
		if in.xPos == 0 && len(in.open) == 0 {
			continue
		}
		v, px := in.value(false)
		e.positions = append(e.positions, PositionPoint{RecvNs: nowNs, Venue: in.Venue, Instrument: in.ID,
			Position: in.xPos, Mark: px, Value: v})
	}
}

// Finish ends the run: pending actions are dropped as never reaching the
// exchange (recorded as cancelled: "run ended"), user resolutions settle,
// the strategy's OnEnd is called and the summary computed.
func (e *Engine) Finish() *Result {
	e.xNs = e.nowNs
	for _, r := range e.venueList() {
		for a := range r.due.all() {
			if a.order.Status == StatusPending {
				e.finish(nil, a.order, StatusCancelled, "run ended before the order reached the exchange")
			}
		}
		r.due.reset()
	}
	for _, in := range e.instList {
		if w, ok := e.cfg.Resolutions[in.ID]; ok && !in.Resolved {
			e.settle(in, w)
		}
	}
	if f, ok := e.strat.(Finisher); ok && !e.stratDead {
		e.guard(&feed.Event{RecvNs: e.nowNs}, func() { f.OnEnd(&e.ctx) })
	}
	e.record(e.nowNs)
	if e.problems > maxProblems {
		e.errs = append(e.errs, fmt.Errorf("backtest: %d more problems in the recording, not listed", e.problems-maxProblems))
	}
	return e.result()
}

// Result is a finished run.
type Result struct {
	Summary Summary
	Orders  []*Order
	Fills   []Fill
	// Equity is the account sampled every Config.EquityEveryNs of receive
	// time in which an event arrived, and at the end; Positions the
	// instruments' positions at those samples.
	Equity    []EquityPoint
	Positions []PositionPoint
	Markouts  []Markout
	Errors    []error
	// Scales are the instruments' fixed-point scales, by instrument id.
	Scales map[string]book.Scale
	// Markets are the instruments' markets (Polymarket condition ids), by
	// instrument id, for those that have one.
	Markets map[string]string
}

// Summary is the run's scorecard. Money is in dollars (float64, from the
// exact fixed-point totals).
type Summary struct {
	Strategy    string            `json:"strategy"`
	Params      map[string]string `json:"params,omitempty"`
	Events      uint64            `json:"events"`
	Orders      int               `json:"orders"`
	Rejected    uint64            `json:"rejected"`
	Fills       int               `json:"fills"`
	MakerFills  int               `json:"maker_fills"`
	TakerFills  int               `json:"taker_fills"`
	FillRatio   float64           `json:"fill_ratio"` // filled value / submitted value, dollars (a dollar-sized order's value is its amount; rejected orders count)
	StartCash   float64           `json:"start_cash"`
	EndCash     float64           `json:"end_cash"`
	EndEquity   float64           `json:"end_equity"`
	PnL         float64           `json:"pnl"`
	Fees        float64           `json:"fees"`
	Rebates     float64           `json:"rebates"`
	Funding     float64           `json:"funding"`
	Turnover    float64           `json:"turnover"`
	MaxDrawdown float64           `json:"max_drawdown"`
	// Sharpe and Sortino ratios of the equity's changes over consecutive
	// periods of ReturnPeriodNs (Config.ReturnPeriodNs, default one minute)
	// of receive time, as returns on the starting cash, annualized by
	// √(periods in 365 days); Sortino divides by the downside deviation
	// (root mean square of the negative returns). 0 with fewer than two
	// periods.
	Sharpe         float64 `json:"sharpe"`
	Sortino        float64 `json:"sortino"`
	ReturnPeriodNs int64   `json:"return_period_ns"`
	// Markouts are the mean per-unit markout by horizon ("1s", …), price
	// units as decimals: the mid of the instrument's book as received
	// (uncrossed, both sides) at its first event stamped at or after the
	// fill's exchange time plus the horizon, minus the fill price (a buy).
	Markouts  map[string]float64 `json:"markouts"`
	Positions map[string]float64 `json:"positions"`
	// InstrumentPnL is each traded instrument's PnL: its fills' cash flows
	// (notional and fees), funding and settlement, plus its end position
	// at its mark.
	InstrumentPnL map[string]float64 `json:"instrument_pnl"`
	// Venues are per venue counts and sizes in the venue's own units
	// (shares, coins) and dollars.
	Venues map[string]*VenueSummary `json:"venues"`
	// PeakMargin is the largest initial margin the cross-margin venues'
	// positions and resting orders used; Liquidations how often the
	// account fell below maintenance (see the package doc).
	PeakMargin   float64 `json:"peak_margin"`
	Liquidations int     `json:"liquidations"`
	// CancelRejects are cancels and amends the venue refused as for an
	// order it did not have (sent before the order arrived, or after it was
	// done).
	CancelRejects uint64 `json:"cancel_rejects"`
	// FeeRates are the taker rates each market's fills were priced at and
	// where each came from (FeeRateUse; probability fees: Config.FeeRates,
	// FeeCategories, the recording, FeeRate; tiered fees: the tier).
	FeeRates      []FeeRateUse `json:"fee_rates,omitempty"`
	StrategyError string       `json:"strategy_error,omitempty"`
	Digest        string       `json:"digest"`
}

func cashF(v int64) float64 { return float64(v) / 1e10 }

// VenueSummary is one venue's share of a run. Sizes are in the venue's
// units (Polymarket shares, Hyperliquid coins) summed over its instruments;
// values in dollars.
type VenueSummary struct {
	Orders         int     `json:"orders"`
	Fills          int     `json:"fills"`
	SubmittedValue float64 `json:"submitted_value"`
	FilledValue    float64 `json:"filled_value"`
	FilledSize     float64 `json:"filled_size"`
}

func (e *Engine) result() *Result {
	r := &Result{Orders: e.orders, Fills: e.fills, Equity: e.equity, Positions: e.positions, Markouts: e.marksOut, Errors: e.errs,
		Scales: make(map[string]book.Scale, len(e.instList)), Markets: map[string]string{}}
	for _, in := range e.instList {
		r.Scales[in.ID] = in.Scale
		if in.Market != "" {
			r.Markets[in.ID] = in.Market
		}
	}
	s := &r.Summary
	s.Events, s.Orders, s.Rejected, s.Fills = e.events, int(e.nextOrderID()-1), e.rejects, e.fillBase+len(e.fills)
	// The orders not yet folded (all of a full run's), then those sent
	// for instruments unknown then; the fills were folded as they came.
	t := &e.tally
	for _, o := range e.orders {
		t.order(e, o, false)
	}
	for _, o := range t.strays {
		t.order(e, o, true)
	}
	t.strays = nil
	s.Venues = t.venues
	if s.Venues == nil {
		s.Venues = map[string]*VenueSummary{}
	}
	if t.sub > 0 {
		s.FillRatio = float64(t.fil) / float64(t.sub)
	}
	s.MakerFills, s.TakerFills = t.maker, t.taker
	s.StartCash, s.EndCash = cashF(e.cfg.Cash), cashF(e.cash)
	end := e.equityNow()
	s.EndEquity = cashF(end)
	s.PnL = cashF(end - e.cfg.Cash)
	s.Fees, s.Rebates, s.Funding, s.Turnover = cashF(e.fees), cashF(e.rebates), cashF(e.funding), cashF(e.turnover)
	s.FeeRates = e.feeRates()
	// Drawdown on the equity curve; Sharpe and Sortino on its changes over
	// periods of ReturnPeriodNs (the last sample in each period).
	s.ReturnPeriodNs = e.cfg.ReturnPeriodNs
	s.MaxDrawdown, s.Sharpe, s.Sortino = e.curve.figures()
	s.PeakMargin, s.Liquidations, s.CancelRejects = cashF(e.peakMargin), e.liquidations, e.cancelRejects
	s.InstrumentPnL = map[string]float64{}
	for _, in := range e.instList {
		if in.cashFlow != 0 || in.xPos != 0 {
			v, _ := in.value(false)
			s.InstrumentPnL[in.ID] = cashF(in.cashFlow + v)
		}
	}
	s.Markouts = map[string]float64{}
	for i, h := range e.cfg.MarkoutsNs {
		if n := e.markSums.n[i]; n > 0 {
			s.Markouts[horizonName(h)] = e.markSums.sum[i] / float64(n)
		}
	}
	s.Positions = map[string]float64{}
	for _, in := range e.instList {
		if in.xPos != 0 {
			s.Positions[in.ID] = float64(in.xPos) / float64(pow10(in.Scale.SizeDecimals))
		}
	}
	if e.stratErr != nil {
		s.StrategyError = e.stratErr.Error()
	}
	d, err := e.digest()
	if err != nil {
		r.Errors = append(r.Errors, err)
	}
	if e.fillLog.err != nil {
		r.Errors = append(r.Errors, fmt.Errorf("backtest: fills' digest records kept in memory: %w", e.fillLog.err))
	}
	s.Digest = d
	if e.summaryOnly {
		r.Orders, r.Fills = nil, nil // the summary is all a summary-only run hands back
	}
	return r
}

func horizonName(ns int64) string {
	if ns%1e9 == 0 {
		return strconv.FormatInt(ns/1e9, 10) + "s"
	}
	return strconv.FormatInt(ns/1e6, 10) + "ms"
}

// RunOptions configures Run.
type RunOptions struct {
	Replay []replayer.Option
	Name   string
	Params map[string]string
}

// Run replays paths through a new engine running s and returns the result.
func Run(ctx context.Context, paths []string, s Strategy, cfg Config, ro RunOptions) (*Result, *replayer.Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	e := NewEngine(s, cfg)
	// What REST bodies before a window state (a market's listing and fees,
	// a book summary's tick size) holds in it, as when recorded.
	opts := append(slices.Clone(ro.Replay), replayer.WithWarmupREST(e.warmupREST))
	rp, err := replayer.New(paths, opts...)
	if err != nil {
		return nil, nil, err
	}
	if err := e.useDrivers(rp.Drivers()); err != nil {
		return nil, nil, err
	}
	rp.Subscribe(replayer.Key{}, e)
	sum, err := rp.Run(ctx)
	if err != nil {
		return nil, sum, err
	}
	res := e.Finish()
	res.Summary.Strategy, res.Summary.Params = ro.Name, ro.Params
	return res, sum, nil
}

// WriteTable prints the summary as an aligned table.
func (s *Summary) WriteTable(w io.Writer) {
	row := func(k, v string) { fmt.Fprintf(w, "%-14s %s\n", k, v) }
	money := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	row("strategy", s.Strategy)
	keys := make([]string, 0, len(s.Params))
	for k := range s.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		row("  "+k, s.Params[k])
	}
	row("events", strconv.FormatUint(s.Events, 10))
	row("orders", fmt.Sprintf("%d (%d rejected)", s.Orders, s.Rejected))
	row("fills", fmt.Sprintf("%d (maker %d, taker %d)", s.Fills, s.MakerFills, s.TakerFills))
	row("fill ratio", strconv.FormatFloat(s.FillRatio, 'f', 4, 64))
	row("pnl", money(s.PnL))
	row("fees", money(s.Fees))
	row("rebates", money(s.Rebates))
	if s.Funding != 0 {
		row("funding", money(s.Funding))
	}
	row("turnover", money(s.Turnover))
	row("max drawdown", money(s.MaxDrawdown))
	per := time.Duration(s.ReturnPeriodNs).String()
	row("sharpe", strconv.FormatFloat(s.Sharpe, 'f', 3, 64)+" ("+per+" returns, annualized)")
	row("sortino", strconv.FormatFloat(s.Sortino, 'f', 3, 64)+" ("+per+" returns, annualized)")
	if s.PeakMargin != 0 || s.Liquidations != 0 {
		row("peak margin", money(s.PeakMargin))
		row("liquidations", strconv.Itoa(s.Liquidations))
	}
	if s.CancelRejects != 0 {
		row("cancel rejects", strconv.FormatUint(s.CancelRejects, 10))
	}
	for _, h := range []string{"1s", "10s", "60s"} {
		if v, ok := s.Markouts[h]; ok {
			row("markout "+h, strconv.FormatFloat(v, 'f', 6, 64)+" (mid "+h+" after the fill's exchange time)")
		}
	}
	names := slices.Sorted(maps.Keys(s.Venues))
	for _, n := range names {
		v := s.Venues[n]
		row("venue", fmt.Sprintf("%s: %d orders, %d fills, %g units filled, value %s of %s submitted", n, v.Orders, v.Fills,
			v.FilledSize, money(v.FilledValue), money(v.SubmittedValue)))
	}
	ids := make([]string, 0, len(s.Positions))
	for k := range s.Positions {
		ids = append(ids, k)
	}
	slices.Sort(ids)
	for _, id := range ids {
		row("position", fmt.Sprintf("%s %g", id, s.Positions[id]))
	}
	for _, id := range slices.Sorted(maps.Keys(s.InstrumentPnL)) {
		row("pnl of", fmt.Sprintf("%s %s", id, money(s.InstrumentPnL[id])))
	}
	for _, u := range s.FeeRates {
		v := fmt.Sprintf("%s %s %s", u.Market, strconv.FormatFloat(u.Rate, 'f', -1, 64), u.Source)
		if u.Key != "" && u.Key != u.Market {
			v += " " + u.Key
		}
		if u.SinceNs != 0 {
			v += " since " + time.Unix(0, u.SinceNs).UTC().Format(time.RFC3339Nano)
		}
		row("fee rate", v+fmt.Sprintf(" (%d fills, fees %s)", u.Fills, money(u.Fees)))
	}
	if s.StrategyError != "" {
		row("strategy error", s.StrategyError)
	}
	row("digest", s.Digest)
}

// Names reports whether the run's data named id: an instrument, or with
// markets also a market (Polymarket condition id).
func (r *Result) Names(id string, markets bool) bool {
	if _, ok := r.Scales[id]; ok {
		return true
	}
	if markets {
		for _, m := range r.Markets {
			if m == id {
				return true
			}
		}
	}
	return false
}

// ReasonCount is how many orders the exchange rejected for one reason.
type ReasonCount struct {
	Reason string
	Orders int
}

// Rejections groups the run's rejected orders by the venue's reason,
// without the values that broke the rule (the orders table has every one),
// sorted by reason.
func (r *Result) Rejections() []ReasonCount {
	n := map[string]int{}
	for _, o := range r.Orders {
		if o.Status == StatusRejected {
			k, _, _ := strings.Cut(o.Reason, " (")
			k, _, _ = strings.Cut(k, ", bbo was")
			n[k]++
		}
	}
	out := make([]ReasonCount, 0, len(n))
	for _, k := range slices.Sorted(maps.Keys(n)) {
		out = append(out, ReasonCount{k, n[k]})
	}
	return out
}
