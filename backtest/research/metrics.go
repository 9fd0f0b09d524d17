package research

import (
	"math"
	"strconv"

	"github.com/tapedeck/tapedeck/backtest"
)

// Metrics are one run's figures, as the sweep table and the objectives
// read them. Money is in dollars.
type Metrics struct {
	PnL, Fees, Rebates, Funding, Turnover float64
	FillRatio, MaxDrawdown                float64
	// Sharpe is the summary's (backtest.Summary); Sortino is computed on
	// the same returns, with the downside deviation (returns below 0) in
	// place of the standard deviation.
	Sharpe, Sortino float64
	Markouts        map[string]float64 // by horizon, as the summary's
	Orders, Fills   int
	Digest          string
}

// Measure reads a run's metrics from its result.
func Measure(r *backtest.Result) Metrics {
	s := &r.Summary
	m := Metrics{PnL: s.PnL, Fees: s.Fees, Rebates: s.Rebates, Funding: s.Funding, Turnover: s.Turnover,
		FillRatio: s.FillRatio, MaxDrawdown: s.MaxDrawdown, Sharpe: s.DailySharpe, Markouts: s.Markouts,
		Orders: s.Orders, Fills: s.Fills, Digest: s.Digest}
	m.Sortino = sortino(dailyReturns(r), 365)
	return m
}

// dailyReturns are the equity's changes from one UTC day's last sample to
// the next, the first from the starting cash: the returns the summary's
// daily Sharpe is computed on.
func dailyReturns(r *backtest.Result) []float64 {
	var rets []float64
	prev := r.Summary.StartCash
	day := int64(-1)
	last := 0.0
	for _, p := range r.Equity {
		v := float64(p.Equity) / 1e10
		if d := p.RecvNs / 86400e9; d != day {
			if day >= 0 {
				rets = append(rets, last-prev)
				prev = last
			}
			day = d
		}
		last = v
	}
	if day >= 0 {
		rets = append(rets, last-prev)
	}
	return rets
}

// sortino is mean / downside deviation × √periods, 0 with fewer than two
// returns or no downside.
func sortino(rets []float64, periods float64) float64 {
	if len(rets) < 2 {
		return 0
	}
	var mean, down float64
	for _, x := range rets {
		mean += x
		if x < 0 {
			down += x * x
		}
	}
	mean /= float64(len(rets))
	dd := math.Sqrt(down / float64(len(rets)-1))
	if dd == 0 {
		return 0
	}
	return mean / dd * math.Sqrt(periods)
}

// Objectives are the figures a walk-forward may choose its points by
// (higher is better; max_drawdown is taken negated).
var Objectives = []string{"pnl", "sharpe", "sortino", "pnl_per_drawdown", "fill_ratio", "max_drawdown"}

// Objective returns the figure name selects, higher better, and whether the
// name is known.
func (m *Metrics) Objective(name string) (float64, bool) {
	switch name {
	case "pnl":
		return m.PnL, true
	case "sharpe":
		return m.Sharpe, true
	case "sortino":
		return m.Sortino, true
	case "pnl_per_drawdown":
		if m.MaxDrawdown == 0 {
			return m.PnL, true
		}
		return m.PnL / m.MaxDrawdown, true
	case "fill_ratio":
		return m.FillRatio, true
	case "max_drawdown":
		return -m.MaxDrawdown, true
	}
	return 0, false
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
