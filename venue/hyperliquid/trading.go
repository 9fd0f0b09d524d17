package hyperliquid

import (
	"bytes"
	"math"
	"strconv"
	"time"

	"github.com/tapedeck/tapedeck/venue"
)

// tradingRules is Hyperliquid's order rules for the backtester: order types GTC,
// IOC and ALO (post-only), reduce-only; prices of at most 5 significant
// figures and 6 − szDecimals decimals (8 − szDecimals for spot), integer
// prices always valid; sizes of szDecimals decimals; a $10 minimum order
// value ("Tick and lot size", exchange endpoint docs); hourly funding
// position × mark × rate from the asset contexts; maker/taker fees by
// VIP tier of the perps schedule ("Fees"). szDecimals come from the recorded
// meta and spotMeta bodies through Driver.Instruments. The reasons are the
// exchange endpoint's statuses[].error texts.
var tradingRules = &venue.Trading{
	OrderTypes:       []string{"GTC", "IOC", "ALO"},
	ReduceOnly:       true,
	PriceSigFigs:     5,
	MaxPriceDecimals: 6,
	MinNotional:      10,
	FundingInterval:  time.Hour,
	CrossMargin:      true,
	MaintenanceShare: 0.5,
	FeeTiers: [][2]float64{
		{0.00045, 0.00015}, {0.00040, 0.00012}, {0.00035, 0.00008}, {0.00030, 0.00004},
		{0.00028, 0.0}, {0.00026, 0.0}, {0.00024, 0.0},
	},
	Reasons: venue.TradingReasons{
		PostOnlyCrosses: "Post only order would have immediately matched",
		PostOnlyType:    "post-only on hyperliquid is the order type ALO",
		FOKUnfilled:     "Order could not immediately match against any resting orders.",
		FAKUnfilled:     "Order could not immediately match against any resting orders.",
		NoBalance:       "Insufficient margin to place order.",
		Unknown:         "Unknown asset",
		Resolved:        "Asset is delisted",
		Tick:            "Order has invalid price.",
		Price:           "Order has invalid price.",
		Size:            "Order has invalid size.",
		MinNotional:     "Order must have minimum value of $10.",
		Expiration:      "hyperliquid orders take no expiration",
		ReduceOnly:      "Reduce only order would increase position.",
		UnknownOrder:    "Order was never placed, already canceled, or filled.",
	},
	FundingRate: tradingFunding,
	OraclePrice: tradingOracle,
}

var fundingKey = []byte(`"funding"`)

var oracleKey = []byte(`"oraclePx"`)

// ctxField returns the text of a string or number field of an
// activeAssetCtx frame, without a DOM.
func ctxField(raw, key []byte) ([]byte, bool) {
	i := bytes.Index(raw, key)
	if i < 0 {
		return nil, false
	}
	rest := bytes.TrimLeft(raw[i+len(key):], " \t\r\n:")
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return nil, false
	}
	tok := bytes.TrimSpace(rest[:end])
	return bytes.Trim(tok, `"`), true
}

// tradingOracle reads ctx.oraclePx, the price hourly funding is paid on
// ("Funding": position size × oracle price × funding rate).
func tradingOracle(raw []byte) ([]byte, bool) { return ctxField(raw, oracleKey) }

// tradingFunding reads ctx.funding (a decimal string) of an activeAssetCtx
// frame without a DOM.
func tradingFunding(raw []byte) (float64, bool) {
	tok, ok := ctxField(raw, fundingKey)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
