package venue

// Instrument is what one recorded message says about one instrument: a
// discovery listing (Polymarket's Gamma /markets, Hyperliquid's meta and
// spotMeta), a REST book summary, a WebSocket message that carries
// instrument facts (Polymarket's initial-dump book with its tick_size, a
// new_market). Driver.Instruments returns them; exports merge them over a
// recording into the instruments table. Zero values mean "this message does
// not say": a message says only some of the fields.
type Instrument struct {
	// Instrument is the id events name it by (token id, coin).
	Instrument string
	// ExchangeNs is the venue's time of the message, ns since the epoch (a
	// book summary's timestamp), 0 when it carries none.
	ExchangeNs int64
	// Source names the message kind, stable and lower case:
	// "gamma_markets", "book_summary", "book", "new_market", "meta",
	// "spot_meta".
	Source string

	Market string // market the instrument belongs to (Polymarket condition id)
	Slug   string // market slug
	Name   string // human-readable name (Polymarket: the market's question)
	Type   string // "binary_option" (a Polymarket outcome token), "perpetual", "spot"
	// Outcome is what the token pays on ("Yes"); OutcomeIndex its position
	// in the market's outcomes (-1 unknown).
	Outcome      string
	OutcomeIndex int
	// Paired are the other instruments of its market, in outcome order (a
	// binary market's complementary token).
	Paired      []string
	Base, Quote string // base and quote asset names (Hyperliquid spot pairs)

	// Fixed-point at the driver's Scale; 0 unknown.
	TickSize int64 // price increment (Polymarket tick_size)
	MinSize  int64 // minimum order size
	SizeStep int64 // size increment (Hyperliquid: 10^-szDecimals)
	// -1 unknown.
	SzDecimals    int // Hyperliquid szDecimals
	PriceDecimals int // most decimals a price may have (Hyperliquid: 6 − szDecimals for perps, 8 − szDecimals for spot)
	MaxLeverage   int // 0 unknown
	NegRisk       Flag
	Active        Flag // listed and open for trading (Polymarket active && !closed; Hyperliquid !isDelisted)

	// The market's trading fees as the message states them (Polymarket:
	// Gamma's feesEnabled, feeType and feeSchedule; the CLOB market info's
	// fd). FeesEnabled FlagFalse is a fee-free market.
	FeesEnabled Flag
	// FeeType is the venue's fee category ("crypto_fees", "politics_fees").
	FeeType string
	// TakerFeeRate is the taker rate of the venue's fee formula, a fraction
	// (Polymarket: fee = shares × rate × p × (1 − p); 0.07 is 7%); -1 when
	// not stated.
	TakerFeeRate float64
	// FeeExponent is the exponent of the schedule's curve (Polymarket's
	// fee = shares × rate × (p × (1 − p))^exponent, 1 on current markets);
	// 0 when not stated.
	FeeExponent float64
	// MakerRebateShare is the share of the taker fees the venue pays back to
	// makers (Polymarket feeSchedule.rebateRate: 0.2 crypto, 0.25 others),
	// a fraction; -1 when not stated.
	MakerRebateShare float64
}

// Flag is a boolean a message may leave unsaid.
type Flag uint8

// Flag values.
const (
	FlagUnknown Flag = iota
	FlagFalse
	FlagTrue
)

// FlagOf returns FlagTrue or FlagFalse.
func FlagOf(b bool) Flag {
	if b {
		return FlagTrue
	}
	return FlagFalse
}

// NewInstrument returns an Instrument that says nothing but its id and
// source (OutcomeIndex, SzDecimals, PriceDecimals, TakerFeeRate and
// MakerRebateShare -1).
func NewInstrument(id, source string) Instrument {
	return Instrument{Instrument: id, Source: source, OutcomeIndex: -1, SzDecimals: -1, PriceDecimals: -1,
		TakerFeeRate: -1, MakerRebateShare: -1}
}
