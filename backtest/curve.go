package backtest

import (
	"math"
	"math/big"
)

// curve folds the equity curve into the summary's figures sample by
// sample, so that a run keeps no series for them (ManyOptions.SummaryOnly):
// the maximum drawdown, and the Sharpe and Sortino ratios of the changes
// of equity over periods of ReturnPeriodNs (the last sample of each
// period). A run that keeps its series computes its figures here too, so
// the two give the same numbers to the last bit.
//
// The ratios come from exact sums of the periods' changes in fixed point
// (CashDecimals): with n periods, S = Σd, Q = Σd² and N = Σd² over the
// losing ones,
//
//	mean / sd          = S·√((n−1)/n) / √(n·Q − S²)   (sample standard deviation)
//	mean / downside dd = S / √(n·N)                    (root mean square of the losses)
//
// (the returns d/start share the starting cash, which cancels), rounded
// once to float64: no sum of floats whose value depends on the order.
type curve struct {
	period int64 // ReturnPeriodNs
	start  int64 // the starting cash (CashDecimals): the first period's change is against it

	last    EquityPoint // the latest sample: a later one at the same time replaces it
	hasLast bool

	peak, maxDD float64 // dollars, as the summary has them

	bucket   int64 // the period of the samples being folded
	bucketEq int64 // the last equity in it
	inBucket bool
	prevEq   int64 // the previous period's last equity

	n          int64
	sum        big.Int // S
	sumSq, neg big.Int // Q, N
	d, d2      big.Int // scratch
}

func newCurve(period, start int64) curve {
	return curve{period: period, start: start, peak: math.Inf(-1), prevEq: start}
}

// add takes the sample p; one at the time of the last replaces it (the
// end of a run right after its last event's sample).
func (c *curve) add(p EquityPoint) {
	if c.hasLast && c.last.RecvNs != p.RecvNs {
		c.fold(c.last)
	}
	c.last, c.hasLast = p, true
}

func (c *curve) fold(p EquityPoint) {
	v := cashF(p.Equity)
	c.peak = math.Max(c.peak, v)
	c.maxDD = math.Max(c.maxDD, c.peak-v)
	if b := p.RecvNs / c.period; !c.inBucket || b != c.bucket {
		if c.inBucket {
			c.commit(c.bucketEq)
		}
		c.bucket, c.inBucket = b, true
	}
	c.bucketEq = p.Equity
}

// commit adds a period that ended at equity eq.
func (c *curve) commit(eq int64) {
	c.d.SetInt64(eq)
	c.d2.SetInt64(c.prevEq)
	c.d.Sub(&c.d, &c.d2) // exact: the difference of two int64 may not fit one
	c.prevEq = eq
	c.n++
	c.sum.Add(&c.sum, &c.d)
	c.d2.Mul(&c.d, &c.d)
	c.sumSq.Add(&c.sumSq, &c.d2)
	if c.d.Sign() < 0 {
		c.neg.Add(&c.neg, &c.d2)
	}
}

// figures folds what is pending and returns the maximum drawdown (dollars)
// and the annualized Sharpe and Sortino ratios (0 with fewer than two
// periods, or when the deviation is 0).
func (c *curve) figures() (maxDD, sharpe, sortino float64) {
	if c.hasLast {
		c.fold(c.last)
		c.hasLast = false
	}
	if c.inBucket {
		c.commit(c.bucketEq)
		c.inBucket = false
	}
	if c.n < 2 || c.start <= 0 {
		return c.maxDD, 0, 0
	}
	ann := math.Sqrt(365 * 86400e9 / float64(c.period))
	n := big.NewInt(c.n)
	s, _ := new(big.Float).SetInt(&c.sum).Float64()
	a := new(big.Int).Mul(n, &c.sumSq)
	a.Sub(a, new(big.Int).Mul(&c.sum, &c.sum))
	if a.Sign() > 0 {
		af, _ := new(big.Float).SetInt(a).Float64()
		sharpe = s * math.Sqrt(float64(c.n-1)/float64(c.n)) / math.Sqrt(af) * ann
	}
	if c.neg.Sign() > 0 {
		nf, _ := new(big.Float).SetInt(new(big.Int).Mul(n, &c.neg)).Float64()
		sortino = s / math.Sqrt(nf) * ann
	}
	return c.maxDD, sharpe, sortino
}

// ratios returns the annualized Sharpe and Sortino ratios of the changes
// between consecutive equity values in dollars (the first against the
// starting cash), one value a period, as curve computes them.
func ratios(eqs []float64, start float64, period int64) (sharpe, sortino float64) {
	fixed := func(v float64) int64 { return int64(math.Round(v * 1e10)) }
	c := newCurve(period, fixed(start))
	for i, v := range eqs {
		c.add(EquityPoint{RecvNs: int64(i) * period, Equity: fixed(v)})
	}
	_, sharpe, sortino = c.figures()
	return sharpe, sortino
}

// markoutSums are the summary's mean markouts, accumulated as each
// markout is taken: by horizon (the first index of its value in
// Config.MarkoutsNs), the sum of the per-unit markouts in price units and
// their count.
type markoutSums struct {
	sum []float64
	n   []int
}

func (m *markoutSums) add(hi int, v float64) {
	if m.sum == nil {
		return
	}
	m.sum[hi] += v
	m.n[hi]++
}
