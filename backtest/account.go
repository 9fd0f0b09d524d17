package backtest

import (
	"math"
	"slices"
)

// fundAt pays perpetual funding at boundary h of venue r's funding
// interval on its exchange clock, for every position held then: payment =
// position × oracle price × the funding rate in force (the latest the
// recording stated, received at or before h: asset contexts carry no
// exchange time; a long pays a positive rate). Hyperliquid
// "Funding": the hourly payment is position size × oracle price × funding
// rate. Without a recorded oracle price the mark price stands in.
func (e *Engine) fundAt(r *venueRules, h int64) {
	for _, in := range e.instList {
		if in.rules != r {
			continue
		}
		px, rate := in.boundOracle, in.boundRate
		// What was received since is in force at the next boundary.
		in.boundRate, in.boundOracle = in.FundRate, in.oraclePx
		if px == 0 {
			px = in.MarkPx
		}
		if in.Position == 0 || px == 0 {
			continue
		}
		notional := Notional(px, in.Position, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
		pay := int64(math.Round(float64(notional) * rate))
		if pay == 0 {
			continue
		}
		e.cash -= pay
		e.funding += pay
		in.Funding += pay
		e.noteAccount(in, -pay, 0)
	}
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
	pay := Notional(in.Settle, in.Position, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
	e.cash += pay
	e.noteAccount(in, pay, -in.Position)
	in.Position = 0
}
