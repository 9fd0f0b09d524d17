package backtest

import (
	"math"
	"slices"
)

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
