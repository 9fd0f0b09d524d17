package backtest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/venue"
)

// FeeSource says where the taker rate a fill was priced at came from.
type FeeSource uint8

// Fee rate sources, in the order ProbabilityFees consults them (FeeTier is
// NotionalFees').
const (
	FeeDefault      FeeSource = iota // Config.FeeRate (--fee-rate)
	FeeByInstrument                  // Config.FeeRates by token id (--fee TOKEN=rate)
	FeeByMarket                      // Config.FeeRates by market (--fee CONDITION_ID=rate)
	FeeByCategory                    // Config.FeeCategories by the market's recorded fee category (--fee-category)
	FeeListing                       // the market's recorded listing: Gamma feesEnabled, feeSchedule.rate
	FeeTrades                        // the fee_rate_bps of the market's recorded trades
	FeeTier                          // a tier of the venue's schedule (Config.FeeTier)
)

var feeSourceNames = [...]string{"default", "config_instrument", "config_market", "config_category",
	"recorded_listing", "recorded_trades", "fee_tier"}

// String returns the stable name the summary uses.
func (s FeeSource) String() string {
	if int(s) < len(feeSourceNames) {
		return feeSourceNames[s]
	}
	return "invalid"
}

// FeeRater is implemented by fee models that can tell which rate a fill is
// priced at and where it came from (key: the Config key or category that
// matched, "" otherwise). The summary's FeeRates come from it.
type FeeRater interface {
	Rate(f *FeeInput) (rate float64, src FeeSource, key string)
}

// FeeRateUse is one rate a market's fills were priced at: the summary lists
// them per market in the order they first applied, so a market whose rate
// the recording revealed part way through shows the default before and the
// recorded rate after. Markets with orders and no fills show the rate in
// force at the end, with no fills.
type FeeRateUse struct {
	Market string  `json:"market"` // condition id; the instrument where the venue has no markets
	Rate   float64 `json:"rate"`   // taker rate, a fraction
	Source string  `json:"source"` // FeeSource name
	// Key is the --fee key or fee category that matched (config sources),
	// or the recorded fee category (Gamma feeType) for the others, "" none.
	Key string `json:"key,omitempty"`
	// SinceNs is when the recorded rate was first received (recorded
	// sources): no fill before it uses it. 0 for the others.
	SinceNs     int64   `json:"since_ns,omitempty"`
	FirstFillNs int64   `json:"first_fill_ns,omitempty"`
	Fills       int     `json:"fills"`
	Fees        float64 `json:"fees"` // net of maker rebates, dollars
	fee         int64
}

type feeUseKey struct {
	market, key string
	rate        float64
	src         FeeSource
}

// feeState is what the recording said so far of one market's fees.
type feeState struct {
	category          string // recorded fee category (Gamma feeType), "" unknown
	listed, traded    bool
	listRate, tradeRt float64
	listNs, tradeNs   int64 // when the current value was first received
	rebate            float64
	hasRebate         bool
	warned            uint8 // problems reported, a bit per kind
}

const (
	warnExponent uint8 = 1 << iota
	warnNoRate
	warnTrade
)

// maxProblems bounds the recording problems kept in Result.Errors.
const maxProblems = 100

// problem records a problem of the recording (bounded; the run goes on).
func (e *Engine) problem(err error) {
	e.problems++
	if e.problems <= maxProblems {
		e.errs = append(e.errs, err)
	}
}

func feeKey(in *Instrument) string {
	if in.Market != "" {
		return in.Market
	}
	return in.ID
}

// feeOf returns the fee state of in's market (nil if none and not create).
// The instrument keeps the state found for its key: every trade, order and
// fill asks, and a market's key is a 66-character condition id to hash.
// States are never removed or replaced, so a kept one stays right while the
// key is the same.
func (e *Engine) feeOf(in *Instrument, create bool) *feeState {
	k := feeKey(in)
	if in.fee != nil && in.feeFor == k {
		return in.fee
	}
	st := e.feeStates[k]
	if st == nil && create {
		st = &feeState{}
		e.feeStates[k] = st
	}
	if st != nil {
		in.fee, in.feeFor = st, k
	}
	return st
}

func (e *Engine) feeProblem(st *feeState, kind uint8, err error) {
	if st.warned&kind != 0 {
		return
	}
	st.warned |= kind
	e.problem(err)
}

// listedFees takes the fees a recorded listing states for a market (key:
// its condition id, the instrument where it has none; f: FeesEnabled,
// FeeType, TakerFeeRate, FeeExponent, MakerRebateShare).
// feesEnabled false is a fee-free market (rate 0). A schedule whose curve
// is not the model's (exponent other than 1) or a fee-enabled market with
// no rate leaves the listing rate unknown, with a problem recorded.
func (e *Engine) listedFees(key string, f *venue.Instrument, recvNs int64) {
	if f.FeesEnabled == venue.FlagUnknown && f.TakerFeeRate < 0 && f.FeeType == "" && f.MakerRebateShare < 0 {
		return
	}
	st := e.feeStates[key]
	if st == nil {
		st = &feeState{}
		e.feeStates[key] = st
	}
	if f.FeeType != "" {
		st.category = f.FeeType
	}
	if f.MakerRebateShare >= 0 {
		st.rebate, st.hasRebate = f.MakerRebateShare, true
	}
	rate := -1.0
	switch {
	case f.FeesEnabled == venue.FlagFalse:
		rate = 0
	case f.TakerFeeRate >= 0 && f.FeeExponent != 0 && f.FeeExponent != 1:
		e.feeProblem(st, warnExponent, fmt.Errorf("backtest: fees: market %s: its recorded listing's fee schedule has exponent %g "+
			"(fee = shares × rate × (p × (1 − p))^%g); the model is shares × rate × p × (1 − p), so its rate %g is not used",
			key, f.FeeExponent, f.FeeExponent, f.TakerFeeRate))
	case f.TakerFeeRate >= 0:
		rate = f.TakerFeeRate
	case f.FeesEnabled == venue.FlagTrue:
		e.feeProblem(st, warnNoRate, fmt.Errorf("backtest: fees: market %s: its recorded listing has feesEnabled but states no fee rate "+
			"(feeSchedule.rate); its rate comes from its trades or the default", key))
	}
	if rate >= 0 && (!st.listed || st.listRate != rate) {
		st.listed, st.listRate, st.listNs = true, rate, recvNs
	}
}

// tradeFee takes the fee rate a recorded trade states (venue.Trading
// TradeFeeRate), from its receive time on. A value that does not read
// changes nothing and is a problem (once per market).
func (e *Engine) tradeFee(in *Instrument, d *venue.Event, ev *feed.Event) {
	var rate float64
	var ok bool
	var err error
	if s := e.sh; s != nil && s.feeOf == in.rules.t {
		rate, ok, err = s.feeRate, s.feeOK, s.feeErr // read once for every engine of a RunMany
	} else {
		rate, ok, err = in.rules.t.TradeFeeRate(d.Raw)
	}
	if err != nil {
		e.feeProblem(e.feeOf(in, true), warnTrade, fmt.Errorf("backtest: fees: market %s: trade at seq %d (recv %d): %w; "+
			"the market's rate is unchanged (later bad values of this market are not reported)", feeKey(in), ev.Seq, ev.RecvNs, err))
		return
	}
	if !ok {
		return
	}
	st := e.feeOf(in, true)
	if !st.traded || st.tradeRt != rate {
		st.traded, st.tradeRt, st.tradeNs = true, rate, ev.RecvNs
	}
}

// feeInput is the fee models' description of a fill of q at price on in,
// with what the recording said of its market's fees so far (the engine's
// reused FeeInput: valid until the next call).
func (e *Engine) feeInput(in *Instrument, price, q int64, liq Liquidity) *FeeInput {
	fi := &e.feeIn
	*fi = FeeInput{Venue: in.Venue, Instrument: in.ID, Market: in.Market, Price: price, Size: q,
		PriceDecimals: in.Scale.PriceDecimals, SizeDecimals: in.Scale.SizeDecimals, Liquidity: liq}
	e.recordedFee(in, fi)
	return fi
}

// takerRate is the taker rate a fill on in would be priced at now.
func (e *Engine) takerRate(in *Instrument) (float64, FeeSource, bool) {
	if in == nil || in.rules == nil || in.rules.fees == nil {
		return 0, FeeDefault, false
	}
	rr, ok := in.rules.fees.(FeeRater)
	if !ok {
		return 0, FeeDefault, false
	}
	r, src, _ := rr.Rate(e.feeInput(in, 0, 0, Taker))
	return r, src, true
}

// recordedFee fills in what the recording has said of in's market so far.
func (e *Engine) recordedFee(in *Instrument, fi *FeeInput) {
	st := e.feeOf(in, false)
	if st == nil {
		return
	}
	fi.Category, fi.RecordedRebate, fi.HasRebate = st.category, st.rebate, st.hasRebate
	switch {
	case st.listed:
		fi.Recorded, fi.RecordedFrom, fi.RecordedNs = st.listRate, FeeListing, st.listNs
	case st.traded:
		fi.Recorded, fi.RecordedFrom, fi.RecordedNs = st.tradeRt, FeeTrades, st.tradeNs
	}
}

// noteFeeRate tallies the rate a fill was priced at, for Summary.FeeRates.
func (e *Engine) noteFeeRate(fm FeeModel, fi *FeeInput, fee, recvNs int64) {
	u := e.feeRateUse(fm, fi)
	if u == nil {
		return
	}
	if u.Fills == 0 {
		u.FirstFillNs = recvNs
	}
	u.Fills++
	u.fee += fee
}

func (e *Engine) feeRateUse(fm FeeModel, fi *FeeInput) *FeeRateUse {
	rr, ok := fm.(FeeRater)
	if !ok {
		return nil
	}
	rate, src, key := rr.Rate(fi)
	if key == "" {
		key = fi.Category
	}
	mk := fi.Market
	if mk == "" {
		mk = fi.Instrument
	}
	k := feeUseKey{market: mk, key: key, rate: rate, src: src}
	i, ok := e.feeUse[k]
	if !ok {
		i = len(e.feeUses)
		e.feeUse[k] = i
		u := FeeRateUse{Market: mk, Rate: rate, Source: src.String(), Key: key}
		if src == fi.RecordedFrom && src != FeeDefault {
			u.SinceNs = fi.RecordedNs
		}
		e.feeUses = append(e.feeUses, u)
	}
	return &e.feeUses[i]
}

// feeRates is Summary.FeeRates: the rates fills used, in order, then for
// each market with orders and no fills the taker rate in force at the end.
func (e *Engine) feeRates() []FeeRateUse {
	filled := map[string]bool{}
	for _, u := range e.feeUses {
		filled[u.Market] = true
	}
	// The instruments with orders, by their first order, as the orders
	// are (tally.feeFirst).
	ordered := slices.SortedFunc(maps.Keys(e.tally.feeFirst), func(a, b *Instrument) int {
		return cmp.Compare(e.tally.feeFirst[a], e.tally.feeFirst[b])
	})
	var idle []*Instrument
	seen := map[string]bool{}
	for _, in := range ordered {
		k := feeKey(in)
		if filled[k] || seen[k] {
			continue
		}
		seen[k] = true
		idle = append(idle, in)
	}
	slices.SortFunc(idle, func(a, b *Instrument) int { return strings.Compare(feeKey(a), feeKey(b)) })
	for _, in := range idle {
		e.feeRateUse(in.rules.fees, e.feeInput(in, 0, 0, Taker))
	}
	out := slices.Clone(e.feeUses)
	for i := range out {
		out[i].Fees = cashF(out[i].fee)
	}
	return out
}

// trimFees drops a case-insensitive "_fees" suffix (Gamma's feeType
// "crypto_fees" is the category "crypto").
func trimFees(s string) string {
	if n := len(s); n > 5 && strings.EqualFold(s[n-5:], "_fees") {
		return s[:n-5]
	}
	return s
}

// normCategory is a fee category's comparable form: lower case, without
// the "_fees" suffix.
func normCategory(s string) string { return strings.ToLower(trimFees(strings.TrimSpace(s))) }

// sameCategory compares fee categories as normCategory does, without
// allocating.
func sameCategory(a, b string) bool {
	return strings.EqualFold(trimFees(strings.TrimSpace(a)), trimFees(strings.TrimSpace(b)))
}
