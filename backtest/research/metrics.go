package research

import (
	"strconv"

	"github.com/tapedeck/tapedeck/backtest"
)

// Metrics are one run's figures, as the sweep table and the objectives
// read them. Money is in dollars.
type Metrics struct {
	PnL, Fees, Rebates, Funding, Turnover float64
	FillRatio, MaxDrawdown, PeakMargin    float64
	// Sharpe and Sortino are the summary's (backtest.Summary: returns over
	// ReturnPeriodNs, annualized).
	Sharpe, Sortino float64
	ReturnPeriodNs  int64
	Markouts        map[string]float64 // by horizon, as the summary's
	Orders, Fills   int
	Digest          string
}

// Measure reads a run's metrics from its result.
func Measure(r *backtest.Result) Metrics {
	s := &r.Summary
	return Metrics{PnL: s.PnL, Fees: s.Fees, Rebates: s.Rebates, Funding: s.Funding, Turnover: s.Turnover,
		FillRatio: s.FillRatio, MaxDrawdown: s.MaxDrawdown, PeakMargin: s.PeakMargin, Sharpe: s.Sharpe, Sortino: s.Sortino,
		ReturnPeriodNs: s.ReturnPeriodNs, Markouts: s.Markouts, Orders: s.Orders, Fills: s.Fills, Digest: s.Digest}
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
