package backtest

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/book"
)

// QueueModel estimates how much resting size is ahead of a strategy order
// at its price level, from L2 data: trades at the level and changes of the
// level's aggregate size. The engine calls Trade for a trade printed at the
// order's price (the queue ahead is consumed first) and Depth for a change
// of the level's size; an order fills by the amount its queue goes below
// zero. Queue is in the book's fixed-point size units. The *Order is the
// exchange's record of the order, the model's to keep its estimate in
// (Queue); a summary-only run (ManyOptions.SummaryOnly) reuses the record
// of an order it has let go, so nothing may be kept by it once the order
// is done.
type QueueModel interface {
	Name() string
	// Trade: size q traded at the order's price against its side.
	Trade(o *Order, q int64)
	// Depth: the level's size went from prev to now (no trade explained it
	// unless Trade was called since the last Depth).
	Depth(o *Order, prev, now int64)
}

// RiskAverse is hftbacktest's RiskAdverseQueueModel: the queue ahead
// advances only by trades at the level; a size decrease only caps it at the
// level's new size (the order cannot be behind more than there is).
//
//	trade q:          front ← front − q
//	depth prev → now: front ← min(front, now)
//
// Source: nkaz001/hftbacktest, hftbacktest/src/backtest/models/queue.rs.
type RiskAverse struct{}

// Name returns "risk-averse".
func (RiskAverse) Name() string { return "risk-averse" }

// Trade consumes the queue ahead.
func (RiskAverse) Trade(o *Order, q int64) { o.Queue -= q }

// Depth caps the queue ahead at the level size.
func (RiskAverse) Depth(o *Order, _, now int64) { o.Queue = min(o.Queue, now) }

// ProbFunc is f in the probabilistic queue model.
type ProbFunc func(x float64) float64

// Prob is hftbacktest's ProbQueueModel. A decrease of the level not explained
// by trades (chg = prev − now − traded since the last depth change) is split
// between the size in front of the order and the size behind it:
//
//	back = prev − front
//	p    = f(back) / (f(back) + f(front))      (the share cancelled behind)
//	front ← min(front − (1 − p)·chg + min(back − p·chg, 0), now)
//
// so the order advances by (1 − p)·chg in expectation (and by all of the
// decrease that the size behind cannot hold). Increases only cap front at
// now. With f(x) = x^n ("power", n = 1 is linear, larger n favours
// cancellations behind a deep queue) or f(x) = ln(1 + x) ("log").
// Source: nkaz001/hftbacktest queue.rs (ProbQueueModel, PowerProbQueueFunc,
// LogProbQueueFunc), after the discussion in quant.stackexchange.com
// question 3782.
type Prob struct {
	Label string
	F     ProbFunc
}

// Name returns the model's label.
func (m Prob) Name() string { return m.Label }

// Trade consumes the queue ahead and remembers the traded size.
func (m Prob) Trade(o *Order, q int64) { o.Queue -= q; o.tradedHere += q }

// Depth applies the formula above.
func (m Prob) Depth(o *Order, prev, now int64) {
	chg := prev - now - o.tradedHere
	o.tradedHere = 0
	if chg <= 0 {
		o.Queue = min(o.Queue, now)
		return
	}
	front := float64(max(o.Queue, 0))
	back := float64(prev) - front
	// f takes sizes in shares or coins (hftbacktest's quantities), not
	// fixed-point units: ln(1 + x) is not scale-free.
	u := 1.0 // an order the engine did not enter: units as they are
	if o.in != nil {
		u = float64(pow10(o.in.Scale.SizeDecimals))
	}
	fb, ff := m.F(max(back, 0)/u), m.F(front/u)
	p := 1.0
	if d := fb + ff; d > 0 && !math.IsInf(fb/d, 0) {
		p = fb / d
	}
	c := float64(chg)
	est := front - (1-p)*c + math.Min(back-p*c, 0)
	o.Queue = min(int64(math.Round(est)), now)
}

// PowerProb returns the probabilistic model with f(x) = x^n.
func PowerProb(n float64) Prob {
	return Prob{Label: "power:" + strconv.FormatFloat(n, 'g', -1, 64), F: func(x float64) float64 { return math.Pow(x, n) }}
}

// LogProb returns the probabilistic model with f(x) = ln(1 + x).
func LogProb() Prob { return Prob{Label: "log", F: func(x float64) float64 { return math.Log1p(x) }} }

// ParseQueueModel reads "risk-averse", "power:N" (N > 0) or "log".
func ParseQueueModel(s string) (QueueModel, error) {
	switch {
	case s == "risk-averse" || s == "riskaverse":
		return RiskAverse{}, nil
	case s == "log":
		return LogProb(), nil
	case strings.HasPrefix(s, "power:"):
		n, err := strconv.ParseFloat(s[len("power:"):], 64)
		if err != nil || !(n > 0) || math.IsInf(n, 0) {
			return nil, fmt.Errorf("backtest: queue model %q: want power:N with N > 0", s)
		}
		return PowerProb(n), nil
	case s == "power":
		return PowerProb(2), nil
	}
	return nil, fmt.Errorf("backtest: unknown queue model %q (want risk-averse, power:N or log)", s)
}

// Latency gives order entry, acknowledgement and cancel latencies in ns.
// Draws must be deterministic for a given sequence of calls.
type Latency interface {
	Entry() int64  // local submit → exchange
	Ack() int64    // exchange → local notification of an ack, fill, rejection
	Cancel() int64 // local cancel → exchange
}

// ConstantLatency is the same latency for every order.
type ConstantLatency struct{ EntryNs, AckNs, CancelNs int64 }

// Entry returns EntryNs.
func (c ConstantLatency) Entry() int64 { return c.EntryNs }

// Ack returns AckNs.
func (c ConstantLatency) Ack() int64 { return c.AckNs }

// Cancel returns CancelNs.
func (c ConstantLatency) Cancel() int64 { return c.CancelNs }

// SampledLatency replays measured round trips in order, wrapping around:
// entry = ack = round trip / 2 (the usual split when only round trips are
// known), cancel likewise. Deterministic: the k-th draw is row k mod n.
type SampledLatency struct {
	RoundTrips []int64
	next       int
}

func (s *SampledLatency) draw() int64 {
	v := s.RoundTrips[s.next%len(s.RoundTrips)]
	s.next++
	return v / 2
}

// Entry returns half the next round trip.
func (s *SampledLatency) Entry() int64 { return s.draw() }

// Ack returns half the next round trip.
func (s *SampledLatency) Ack() int64 { return s.draw() }

// Cancel returns half the next round trip.
func (s *SampledLatency) Cancel() int64 { return s.draw() }

// ReadLatencyCSV reads measured round trips: one value per line, or the last
// column of a CSV with a header; values are durations ("850us", "1.2ms") or
// integer nanoseconds. Blank lines and lines starting with # are skipped.
func ReadLatencyCSV(r io.Reader) (*SampledLatency, error) {
	sc := bufio.NewScanner(r)
	var out []int64
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || t[0] == '#' {
			continue
		}
		if i := strings.LastIndexByte(t, ','); i >= 0 {
			t = strings.TrimSpace(t[i+1:])
		}
		v, err := parseDurationNs(t)
		if err != nil {
			if len(out) == 0 && line == 1 {
				continue // header
			}
			return nil, fmt.Errorf("backtest: latency csv line %d: %v", line, err)
		}
		if v < 0 {
			return nil, fmt.Errorf("backtest: latency csv line %d: negative round trip", line)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("backtest: latency csv: no round trips")
	}
	return &SampledLatency{RoundTrips: out}, nil
}

// ReadLatencyFile opens and reads a latency CSV.
func ReadLatencyFile(path string) (*SampledLatency, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadLatencyCSV(f)
}

func parseDurationNs(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	d, err := parseGoDuration(s)
	return d, err
}

// FeeModel prices one fill. Values are fixed-point: price and size at the
// instrument's scale, the result at CashDecimals; negative is a rebate.
type FeeModel interface {
	Fee(f *FeeInput) int64
}

// FeeInput describes a fill for a FeeModel.
type FeeInput struct {
	Venue, Instrument, Market string
	Price, Size               int64
	PriceDecimals             uint8
	SizeDecimals              uint8
	Liquidity                 Liquidity
	// What the recording said of the market's fees by the fill's receive
	// time (never later): its fee category (Polymarket Gamma feeType, ""
	// unknown) and the taker rate it stated, Recorded, with RecordedFrom
	// FeeListing or FeeTrades and RecordedNs when that value was first
	// received; RecordedFrom FeeDefault when it stated none.
	Category     string
	Recorded     float64
	RecordedFrom FeeSource
	RecordedNs   int64
	// RecordedRebate is the maker rebate share the market's recorded
	// listing states (Gamma feeSchedule.rebateRate), when HasRebate.
	RecordedRebate float64
	HasRebate      bool
}

// feeUnit is the smallest probability fee charged: 0.00001 at CashDecimals.
const feeUnit = 100000

// ProbabilityFees is the fee of venues whose trading description has
// ProbabilityFees (Polymarket): a taker pays
//
//	fee = shares × rate × p × (1 − p)
//
// with the market's rate (Rate: Rates by token id, then by market condition
// id; Categories by the market's recorded fee category; the rate the
// recording stated by the fill, FeeInput.Recorded; else DefaultRate), and a
// maker pays nothing; with MakerRebateShare > 0 the maker receives that
// share of the taker fee its fill generated, as a rebate. Rates are
// fractions (0.02 is 2%). The fee is computed exactly in integers, then
// floored to 5 decimals (0.00001 USDC, the smallest the venue charges; as
// NautilusTrader's Polymarket compute_commission, "matching the venue
// charge").
// Source: docs.polymarket.com, "Fees" (trading/fees: fee = C × feeRate × p
// × (1 − p), C shares, p the price; taker rates by category, 0.07 crypto …
// 0 geopolitics; makers are never charged; the maker rebates program).
type ProbabilityFees struct {
	DefaultRate      float64
	Rates            map[string]float64 // by market condition id or token id
	Categories       map[string]float64 // by fee category, "crypto" or "crypto_fees", any case
	MakerRebateShare float64
	// RecordedRebates: a maker's share is the market's recorded one
	// (FeeInput.RecordedRebate) where stated, else MakerRebateShare.
	RecordedRebates bool
}

// Rate implements FeeRater: the taker rate of the fill's market and where
// it came from.
func (m *ProbabilityFees) Rate(in *FeeInput) (float64, FeeSource, string) {
	if r, ok := m.Rates[in.Instrument]; ok {
		return r, FeeByInstrument, in.Instrument
	}
	if in.Market != "" {
		if r, ok := m.Rates[in.Market]; ok {
			return r, FeeByMarket, in.Market
		}
	}
	if in.Category != "" && len(m.Categories) > 0 {
		for k, r := range m.Categories { // Config.Validate refuses two keys of one category
			if sameCategory(k, in.Category) {
				return r, FeeByCategory, k
			}
		}
	}
	if in.RecordedFrom != FeeDefault {
		return in.Recorded, in.RecordedFrom, ""
	}
	return m.DefaultRate, FeeDefault, ""
}

// Fee implements FeeModel.
func (m *ProbabilityFees) Fee(in *FeeInput) int64 {
	rate, _, _ := m.Rate(in)
	one := pow10(in.PriceDecimals)
	ppm := int64(math.Round(rate * 1e6))
	// s·p·(1−p)·ppm at sd + 2·pd + 6 decimals.
	a := in.Size * in.Price
	b := (one - in.Price) * ppm
	fee := mulDivRound(a, b, 0, int(in.SizeDecimals)+2*int(in.PriceDecimals)+6-CashDecimals)
	fee -= fee % feeUnit // the venue charges whole 0.00001s, floored
	if in.Liquidity == Maker {
		s := m.MakerRebateShare
		if m.RecordedRebates && in.HasRebate {
			s = in.RecordedRebate
		}
		share := int64(math.Round(s * 1e6))
		if share == 0 {
			return 0
		}
		return -mulDivRound(fee, share, 0, 6)
	}
	return fee
}

// NotionalFees charges notional × rate, maker and taker rates of a tier
// of the venue's schedule (venue.Trading.FeeTiers: Hyperliquid's perps VIP
// tiers 0–6 by 14-day volume; fractions, a negative maker rate is a
// rebate). Rounded half away from zero at CashDecimals.
// Source: hyperliquid.gitbook.io, "Fees".
type NotionalFees struct {
	Taker, Maker float64
	Tier         int // the tier's index, for the summary
}

// Rate implements FeeRater: the tier's taker or maker rate.
func (m *NotionalFees) Rate(in *FeeInput) (float64, FeeSource, string) {
	side := 0
	if in.Liquidity == Maker {
		side = 1
	}
	rate := m.Taker
	if side == 1 {
		rate = m.Maker
	}
	if m.Tier >= 0 && m.Tier < len(tierKeys) {
		return rate, FeeTier, tierKeys[m.Tier][side]
	}
	return rate, FeeTier, "tier " + strconv.Itoa(m.Tier) + [2]string{" taker", " maker"}[side]
}

// tierKeys are the summary keys of the first fee tiers (no allocation per fill).
var tierKeys = func() (k [16][2]string) {
	for i := range k {
		k[i] = [2]string{"tier " + strconv.Itoa(i) + " taker", "tier " + strconv.Itoa(i) + " maker"}
	}
	return k
}()

// Fee implements FeeModel.
func (m *NotionalFees) Fee(in *FeeInput) int64 {
	rate := m.Taker
	if in.Liquidity == Maker {
		rate = m.Maker
	}
	notional := Notional(in.Price, in.Size, in.PriceDecimals, in.SizeDecimals)
	ppm := int64(math.Round(rate * 1e6))
	return mulDivRound(notional, ppm, 0, 6)
}

// CashDecimals is the fixed-point scale of cash, fees and notional: 10
// decimal places, exact for every Polymarket price × size (4 + 6 decimals)
// and every valid Hyperliquid one (prices of at most 6 − szDecimals
// decimals times sizes of szDecimals).
const CashDecimals = 10

// Notional returns price × size at CashDecimals, rounded half away from zero.
func Notional(price, size int64, pd, sd uint8) int64 {
	return mulDivRound(price, size, 0, int(pd)+int(sd)-CashDecimals)
}

func pow10(n uint8) int64 {
	if n <= book.MaxDecimals {
		return book.Pow10(n)
	}
	v := int64(1)
	for range n {
		v *= 10 // overflows, as it always has for a scale this large
	}
	return v
}

// mulDivRound returns a·b·10^-shift, rounded half away from zero, with a
// 128-bit intermediate (shift < 0 multiplies).
func mulDivRound(a, b int64, _ int, shift int) int64 {
	neg := (a < 0) != (b < 0)
	ua, ub := uabs(a), uabs(b)
	hi, lo := bits.Mul64(ua, ub)
	if shift <= 0 {
		m := uint64(1)
		for range -shift {
			m *= 10
		}
		_, l := bits.Mul64(lo, m)
		r := int64(l)
		if neg {
			return -r
		}
		return r
	}
	d := uint64(1)
	for range shift {
		d *= 10
	}
	if hi >= d {
		hi %= d // overflow of the result: keep the arithmetic defined
	}
	q, rem := bits.Div64(hi, lo, d)
	if rem*2 >= d {
		q++
	}
	r := int64(q)
	if neg {
		return -r
	}
	return r
}

// mulDivFloor returns ⌊a·b / c⌋ for a, b ≥ 0 and c > 0 with a 128-bit
// intermediate (a dollar amount times a size unit overflows int64).
func mulDivFloor(a, b, c int64) int64 {
	if a <= 0 || b <= 0 || c <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(min(q, math.MaxInt64))
}

func uabs(v int64) uint64 {
	if v < 0 {
		return uint64(-v)
	}
	return uint64(v)
}

func parseGoDuration(s string) (int64, error) {
	d, err := time.ParseDuration(s)
	return int64(d), err
}
