package venue

import "time"

// Trading is a venue's order rules as data, for the simulated exchange of
// the backtester (package backtest), which reads it from
// Capabilities.Trading and never names a venue. Fixed-point values are at
// the driver's Scale. A venue whose Capabilities carry no Trading cannot be
// traded in a backtest (its orders are rejected, naming the venue).
type Trading struct {
	// OrderTypes are the time-in-force names the venue accepts: Polymarket
	// "GTC", "GTD", "FOK", "FAK"; Hyperliquid "GTC", "IOC", "ALO".
	OrderTypes []string
	// PostOnlyFlag: post-only is a flag on resting orders (Polymarket's
	// postOnly on GTC and GTD) rather than an order type (ALO).
	PostOnlyFlag bool
	// ReduceOnly: the venue takes reduce-only orders.
	ReduceOnly bool
	// Outcomes: instruments are outcome tokens priced strictly inside (0, 1)
	// that settle at 1 or 0 when their market resolves; the two tokens of a
	// binary market are one book seen from both sides (a BUY of one at p is
	// a SELL of the other at 1 − p); a SELL needs the tokens held.
	Outcomes bool
	// DollarMarketBuys: FOK and FAK BUYs are sized in dollars, SELLs in
	// shares (Polymarket market orders).
	DollarMarketBuys bool
	// GTDThreshold: a GTD order's expiration must be more than this far
	// ahead, and the order leaves the book this long before it (Polymarket's
	// one-minute security threshold).
	GTDThreshold time.Duration
	// Tick and MinSize are the defaults until the recording tells an
	// instrument's own (TickSize events; the facts Driver.Instruments reads
	// from recorded REST bodies and messages); 0: no such rule.
	Tick, MinSize int64
	// SizeDecimals: an order's size, and every fill, is a whole number of
	// lots of 10^−SizeDecimals shares, for instruments whose recorded
	// listing states no size decimals of their own (Hyperliquid's
	// szDecimals). Polymarket 2 at every tick size. 0: no such rule.
	SizeDecimals int
	// DollarDecimals: a dollar-sized market BUY (DollarMarketBuys) states
	// its amount in at most DollarDecimals decimals (Polymarket 2); the
	// share amount it signs, its minimum (amount / limit price), has at
	// most DollarShareDecimals (Polymarket 4). It spends its whole amount:
	// the shares it receives are at the driver's size scale, not in lots.
	// 0: no such rule.
	DollarDecimals, DollarShareDecimals int
	// MinMarketableBuy is the smallest value in dollars of a BUY that takes
	// liquidity: a dollar-sized BUY's amount, a crossing limit BUY's price ×
	// size (Polymarket $1; resting orders are bound by MinSize). 0: none.
	MinMarketableBuy float64
	// PriceSigFigs and MaxPriceDecimals are a significant-figures price rule
	// (Hyperliquid: at most 5 significant figures and at most
	// MaxPriceDecimals − szDecimals decimals; integer prices always valid).
	// 0: no such rule.
	PriceSigFigs, MaxPriceDecimals int
	// MinNotional is the smallest order value in dollars (Hyperliquid $10);
	// reduce-only orders are exempt. 0: none.
	MinNotional float64
	// FundingInterval: perpetual funding is paid at every multiple of it on
	// the exchange clock, position × oracle price × rate (a long pays a
	// positive rate), from the asset contexts (EventAssetCtx). 0: no funding.
	FundingInterval time.Duration
	// CrossMargin: positions are margined across the account: an order
	// needs initial margin notional / max leverage (the instrument's
	// MaxLeverage from recorded listings, 1 when unknown), and the account
	// is liquidated when its value falls below the maintenance margin,
	// MaintenanceShare of the initial margin (Hyperliquid "Margining": half
	// of the initial margin at max leverage). False: fully collateralized.
	CrossMargin      bool
	MaintenanceShare float64
	// ProbabilityFees: the taker fee is shares × rate × p × (1 − p)
	// (Polymarket); otherwise notional × rate.
	ProbabilityFees bool
	// FeeTiers are (taker, maker) rates by tier, tier 0 first; an empty list
	// is no fee (a fee-free market unless the user gives a rate or the
	// recording states one: Instrument.TakerFeeRate, TradeFeeRate).
	FeeTiers [][2]float64
	// Reasons are rejections in the venue's own words.
	Reasons TradingReasons

	// Resolution reads a market-resolution message (EventMarket's Raw): the
	// winning instrument and the market's instruments; ok false when the
	// message is not a resolution.
	Resolution func(raw []byte) (winner string, instruments []string, ok bool)
	// FundingRate reads the funding rate of an asset context (EventAssetCtx's
	// Raw); ok false when it has none.
	FundingRate func(raw []byte) (rate float64, ok bool)
	// OraclePrice reads the oracle price of an asset context, the price
	// funding is paid on, as a decimal's text; nil when the venue has none.
	OraclePrice func(raw []byte) (text []byte, ok bool)
	// TradeFeeRate reads the fee rate a recorded trade states (EventTrade's
	// Raw: Polymarket's last_trade_price fee_rate_bps) as a fraction, the
	// rate of the ProbabilityFees formula; ok false when the trade states
	// none; err names a value that does not read. It allocates nothing
	// unless it fails.
	TradeFeeRate func(raw []byte) (rate float64, ok bool, err error)
}

// TradingReasons are a venue's rejection texts. A text may name values in
// braces that the backtester fills in, as the venue does: {side} ("buy",
// "sell", "market buy"), {maker} and {taker} (the decimals the order's
// maker and taker amounts allow: for a BUY the maker amount is dollars,
// price × size, and the taker amount shares; for a SELL the reverse),
// {amount} (the order's value in dollars). A text without them gets the
// offending values appended in parentheses.
type TradingReasons struct {
	PostOnlyCrosses string // a post-only order would take liquidity
	PostOnlyType    string // post-only on an order type that cannot rest
	FOKUnfilled     string // a FOK cannot fill completely
	FAKUnfilled     string // a FAK/IOC found nothing to match
	NoBalance       string // a SELL beyond the tokens held, or no margin
	Unknown         string // no book for the instrument
	Resolved        string // the market is resolved / the asset delisted
	Tick            string // price off the tick grid (the backtester appends the price and tick)
	Price           string // price breaks the significant-figures rule
	MinSize         string // size below the instrument's minimum
	Size            string // size off the lot (szDecimals), or a dollar amount beyond DollarDecimals (see SizeText)
	MinMarketable   string // a marketable BUY worth less than MinMarketableBuy ({amount}: its value)
	MinNotional     string // order value below MinNotional
	Expiration      string // GTD expiration too close, or an expiration on another type
	ReduceOnly      string // a reduce-only order that would increase the position
	UnknownOrder    string // a cancel or modify of an order the venue does not have (never placed, or already done)
}
