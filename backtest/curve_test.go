package backtest

import (
	"math"
	"testing"
)

// The summary's drawdown, ratios and markouts are folded as the run goes
// (curve, markoutSums); the series a full run keeps must give the same:
// the drawdown and the markouts to the last bit (the same sums in the same
// order), the ratios to float64 rounding (the series' two-pass mean and
// deviation against the curve's exact sums).
func TestSummaryFiguresMatchTheSeries(t *testing.T) {
	for _, c := range []struct {
		path   string
		params Params
		cfg    Config
	}{
		{pmSample, Params{"spread": "0.02"}, Config{Cash: 1000e10, ReturnPeriodNs: 10e9}},
		{hlSample, Params{"spread": "0.001", "size": "0.01", "instrument": "BTC"}, Config{Cash: 1e6 * 1e10, MarkoutsNs: []int64{1e9, 5e9, 1e9}}},
	} {
		res := runBuiltin(t, c.path, "mm", c.params, c.cfg)
		s := res.Summary
		start := cashF(c.cfg.Cash)
		peak, dd := math.Inf(-1), 0.0
		var eqs []float64
		bucket := int64(math.MinInt64)
		for _, p := range res.Equity {
			v := cashF(p.Equity)
			peak = math.Max(peak, v)
			dd = math.Max(dd, peak-v)
			if b := p.RecvNs / s.ReturnPeriodNs; b != bucket {
				bucket = b
				eqs = append(eqs, v)
			} else {
				eqs[len(eqs)-1] = v
			}
		}
		if dd != s.MaxDrawdown || len(eqs) < 10 {
			t.Fatalf("%s: max drawdown %v, the equity series says %v (%d periods)", c.path, s.MaxDrawdown, dd, len(eqs))
		}
		var m, sd, down float64
		prev := start
		rets := make([]float64, len(eqs))
		for i, v := range eqs {
			rets[i] = (v - prev) / start
			prev = v
			m += rets[i]
		}
		m /= float64(len(rets))
		for _, x := range rets {
			sd += (x - m) * (x - m)
			if x < 0 {
				down += x * x
			}
		}
		ann := math.Sqrt(365 * 86400e9 / float64(s.ReturnPeriodNs))
		sharpe := m / math.Sqrt(sd/float64(len(rets)-1)) * ann
		sortino := m / math.Sqrt(down/float64(len(rets))) * ann
		if math.Abs(sharpe-s.Sharpe) > 1e-9*math.Abs(sharpe) || math.Abs(sortino-s.Sortino) > 1e-9*math.Abs(sortino) || s.Sharpe == 0 {
			t.Fatalf("%s: sharpe %v sortino %v, the series say %v %v", c.path, s.Sharpe, s.Sortino, sharpe, sortino)
		}
		horizons := c.cfg.MarkoutsNs
		if horizons == nil {
			horizons = []int64{1e9, 10e9, 60e9}
		}
		for _, h := range horizons {
			var sum float64
			n := 0
			for _, mk := range res.Markouts {
				if mk.Horizon == h {
					sum += float64(mk.PnL) / float64(pow10(res.Scales[res.Fills[mk.Fill-1].Instrument].PriceDecimals))
					n++
				}
			}
			if got, ok := s.Markouts[horizonName(h)]; n == 0 || !ok || got != sum/float64(n) {
				t.Fatalf("%s: markout %s %v, the series say %v over %d", c.path, horizonName(h), got, sum/float64(n), n)
			}
		}
	}
}
