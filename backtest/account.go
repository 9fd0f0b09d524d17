package backtest

import (
	"fmt"
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
		if in.xPos == 0 || px == 0 {
			continue
		}
		notional := Notional(px, in.xPos, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
		pay := int64(math.Round(float64(notional) * rate))
		if pay == 0 {
			continue
		}
		e.cash -= pay
		in.cashFlow -= pay
		e.funding += pay
		in.xFunding += pay
		e.noteAccount(noteFunding, in, pay, 0)
	}
	if r.t.CrossMargin {
		e.checkMargin(r)
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
	pay := Notional(in.Settle, in.xPos, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
	e.cash += pay
	in.cashFlow += pay
	e.noteAccount(noteAccount, in, pay, -in.xPos)
	in.xPos = 0
	e.hold(in)
}

// # Balances and margin
//
// Outcome-token venues (Polymarket) are fully collateralized: a BUY needs
// its cost in cash (price × size, or a dollar-sized order's amount, plus
// the taker fee at the limit price) beyond what the account's resting BUYs
// already hold; a SELL needs the tokens beyond what resting SELLs hold (no
// naked shorts, Config.AllowShort lifts it). A token's complement is a
// different token: holding NO does not let one sell YES; the way to be short
// YES is to buy NO (the mirrored book makes a BUY NO at 1 − p the same order
// as a SELL YES at p). Cross-margin venues (Hyperliquid perpetuals): an
// order needs initial margin |size| × price / max leverage for the part that
// increases the position, out of the account value (cash + positions at
// their marks) less the initial margin of the positions and resting orders;
// the account is liquidated when its value falls below the maintenance
// margin (a share of the positions' initial margin, the venue's
// MaintenanceShare: half on Hyperliquid, "Margining" in its docs). The
// liquidation is a model: every position of the venue is closed at its mark
// price, as one taker order per instrument tagged "liquidation" (the
// venue's liquidators sell through the book first and its backstop vault
// keeps what margin is left; neither is simulated), checked at each event of
// an instrument held and after funding.

// markOf is the price margin and liquidations value a position at: the
// venue's recorded mark price, else the last uncrossed mid, else the last
// fill's price (at the exchange, or the last reported with local).
func markOf(in *Instrument, local bool) int64 {
	switch {
	case in.MarkPx > 0:
		return in.MarkPx
	case in.lastMid > 0:
		return in.lastMid
	case local:
		return in.LastTrade
	}
	return in.lastFill
}

func leverage(in *Instrument) int64 { return int64(max(in.MaxLeverage, 1)) }

// marginUsed is the initial margin of venue r's positions and resting
// orders, and the maintenance margin of its positions (CashDecimals): at
// the exchange, or (local) of the positions and resting orders the
// strategy has been told of.
func (e *Engine) marginUsed(r *venueRules, local bool) (initial, maint int64) {
	held := e.held
	if local {
		held = e.instList
	}
	for _, in := range held {
		pos := in.xPos
		if local {
			pos = in.Position
		}
		if in.rules != r || pos == 0 {
			continue
		}
		m := Notional(markOf(in, local), abs64(pos), in.Scale.PriceDecimals, in.Scale.SizeDecimals) / leverage(in)
		initial += m
		maint += int64(math.Round(float64(m) * r.t.MaintenanceShare))
	}
	for _, in := range e.instList {
		open := in.open
		if local {
			open = in.view.live
		}
		if in.rules != r || len(open) == 0 {
			continue
		}
		for _, o := range open {
			if o.Status == StatusOpen {
				initial += Notional(o.Price, o.Leaves(), in.Scale.PriceDecimals, in.Scale.SizeDecimals) / leverage(in)
			}
		}
	}
	return initial, maint
}

// marginValue is the account value margin is judged by (equity in the
// package doc): cash plus each position at its value, a cross-margin
// venue's at the mark margin uses (markOf, the venue's mark price where
// recorded, not the book's mid), at the exchange or (local) as the
// strategy knows them.
func (e *Engine) marginValue(local bool) int64 {
	v, list := e.cash, e.held
	if local {
		v, list = e.view.cash, e.instList
	}
	for _, in := range list {
		pos := in.xPos
		if local {
			pos = in.Position
		}
		switch {
		case pos == 0:
		case in.rules != nil && in.rules.t.CrossMargin:
			v += Notional(markOf(in, local), pos, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
		default:
			x, _ := in.value(local)
			v += x
		}
	}
	return v
}

// afford reports the venue's reason when the account cannot carry o as it
// enters, "" when it can.
func (e *Engine) afford(in *Instrument, o *Order) string {
	t := in.rules.t
	sc := in.Scale
	switch {
	case t.Outcomes && o.Side == Buy:
		cost := o.Amount * pow10(CashDecimals-sc.PriceDecimals)
		size := o.Size
		if o.Amount > 0 {
			size = mulDivFloor(cost, pow10(sc.SizeDecimals), o.Price*pow10(CashDecimals-sc.PriceDecimals))
		} else {
			cost = Notional(o.Price, o.Size, sc.PriceDecimals, sc.SizeDecimals)
		}
		if fm := in.rules.fees; fm != nil {
			cost += max(fm.Fee(e.feeInput(in, o.Price, size, Taker)), 0)
		}
		if cost > e.cash-e.reserved {
			return fmt.Sprintf("%s (needs %s, available %s)", t.Reasons.NoBalance, fmtDec(cost, CashDecimals), fmtDec(e.cash-e.reserved, CashDecimals))
		}
	case t.CrossMargin:
		pos := in.xPos
		for _, x := range in.open {
			if x.Side == o.Side {
				if o.Side == Buy {
					pos += x.Leaves()
				} else {
					pos -= x.Leaves()
				}
			}
		}
		after := pos + o.Size
		if o.Side == Sell {
			after = pos - o.Size
		}
		inc := max(abs64(after)-abs64(pos), 0)
		if inc == 0 {
			return ""
		}
		need := Notional(o.Price, inc, sc.PriceDecimals, sc.SizeDecimals) / leverage(in)
		used, _ := e.marginUsed(in.rules, false)
		if free := e.marginValue(false) - used; need > free {
			return fmt.Sprintf("%s (margin %s needed at %dx, %s free)", t.Reasons.NoBalance, fmtDec(need, CashDecimals), leverage(in), fmtDec(free, CashDecimals))
		}
	}
	return ""
}

// buyHold is the cash a resting order o of in holds: a BUY of an outcome
// token holds its unfilled notional (Engine.reserved sums them).
func buyHold(in *Instrument, o *Order) int64 {
	if o.Side != Buy || !in.Outcomes() {
		return 0
	}
	return Notional(o.Price, o.Leaves(), in.Scale.PriceDecimals, in.Scale.SizeDecimals)
}

// rest puts o on in's resting orders, and its hold on the account's.
func (e *Engine) rest(in *Instrument, o *Order) {
	in.open = append(in.open, o)
	e.reserved += buyHold(in, o)
}

// hold keeps e.held, the instruments with a position, after in's changed.
func (e *Engine) hold(in *Instrument) {
	i := slices.Index(e.held, in)
	switch {
	case in.xPos != 0 && i < 0:
		e.held = append(e.held, in)
	case in.xPos == 0 && i >= 0:
		e.held = slices.Delete(e.held, i, i+1)
	}
}

// checkMargin records the peak margin of cross-margin venue r and
// liquidates its positions when the account value is below maintenance.
func (e *Engine) checkMargin(r *venueRules) {
	initial, maint := e.marginUsed(r, false)
	e.peakMargin = max(e.peakMargin, initial)
	if maint == 0 || e.marginValue(false) >= maint {
		return
	}
	e.liquidations++
	for _, in := range slices.Clone(e.held) {
		if in.rules != r {
			continue
		}
		for _, o := range slices.Clone(in.open) {
			e.finish(in, o, StatusCancelled, "liquidation")
		}
		side := Sell
		if in.xPos < 0 {
			side = Buy
		}
		o := &Order{ID: e.nextOrderID(), Venue: in.Venue, Instrument: in.ID, Side: side, Price: markOf(in, false),
			Size: abs64(in.xPos), TIF: IOC, ReduceOnly: true, Tag: "liquidation", SubmitNs: e.nowNs, ActiveNs: e.xNs,
			Status: StatusOpen, in: in}
		e.orders = append(e.orders, o)
		lo := *o
		lo.Status = StatusPending
		e.view.orders = append(e.view.orders, &lo)
		in.view.live = append(in.view.live, &lo)
		e.view.version++
		e.fill(in, o, o.Price, o.Size, Taker, 0)
	}
}

// LiquidationPrice is the mark of instrument at which the account's value
// would fall to the maintenance margin of its cross-margin venue, every
// other mark unchanged: where the simulator liquidates the account (see
// Balances and margin in the package doc), as a venue's liquidationPx
// says. It is computed from the strategy's view (positions, cash and
// resting orders as the reports received make them), as a client computes
// it from what its venue has told it. ok false when the instrument is not
// held on a cross-margin venue or no positive price reaches the
// maintenance margin.
func (c *Context) LiquidationPrice(instrument string) (int64, bool) {
	e := c.e
	in := e.lookup(instrument)
	if in == nil || in.Position == 0 || in.rules == nil || !in.rules.t.CrossMargin {
		return 0, false
	}
	_, maint := e.marginUsed(in.rules, true)
	share := in.rules.t.MaintenanceShare
	mark0, sc := markOf(in, true), in.Scale
	pos, mark := float64(in.Position), float64(mark0)
	f := math.Pow10(CashDecimals - int(sc.PriceDecimals) - int(sc.SizeDecimals)) // cash per price unit per size unit
	k := share / float64(leverage(in))
	// This position's maintenance at the mark, as marginUsed counts it.
	own := math.Round(float64(Notional(mark0, abs64(in.Position), sc.PriceDecimals, sc.SizeDecimals)/leverage(in)) * share)
	// value(P) = equity + pos·(P − mark)·f; maintenance(P) = others + |pos|·P·f·k.
	den := f * (pos - math.Abs(pos)*k)
	if den == 0 {
		return 0, false
	}
	p := (float64(maint) - own - float64(e.marginValue(true)) + pos*mark*f) / den
	if !(p > 0) || p > math.MaxInt64/2 {
		return 0, false
	}
	return int64(math.Round(p)), true
}
