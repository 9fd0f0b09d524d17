package polymarket

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// tradingRules is Polymarket's CLOB order rules for the backtester: order types
// GTC, GTD, FOK, FAK (docs.polymarket.com, "Orders overview" and "Create
// order"), post-only on GTC/GTD, FOK/FAK BUYs sized in dollars, GTD's
// one-minute security threshold, tick 0.01 and minimum size 5 until a book
// summary or tick_size_change says otherwise, YES/NO tokens as one
// mirrored book, settlement at 1/0 and the taker fee shares × rate × p ×
// (1 − p) ("Fees"; most markets are fee free: no tier by default; a
// market's rate is read from its recorded Gamma listing, Instruments, and
// from its recorded trades, TradeFeeRate). The reasons are the error
// messages of POST /order.
//
// Size rules: the CLOB signs an order as a maker and a taker amount
// (USDC and shares, 6 decimals on chain) and refuses amounts finer than
// the order builders make them. The builders round sizes to 2 decimals
// at every tick size and amounts (price × size) to the tick's decimals +
// 2 (py-clob-client order_builder/builder.py ROUNDING_CONFIG: tick 0.01 →
// price 2, size 2, amount 4; the same table in NautilusTrader's Polymarket
// guide, "Precision limits"); a market BUY's dollars are rounded to 2
// decimals and the share amount it signs (the least it accepts) to at
// most 4; the match spends the whole amount (the venue reports a $5
// market BUY as making 5). The venue's refusals:
// "invalid amounts, the buy orders maker amount supports a max accuracy
// of 4 decimals, taker amount a max of 2 decimals" (py-clob-client issue
// 305), "… the sell orders maker amount supports a max accuracy of 2
// decimals, taker amount a max of 4 decimals", "invalid amounts, the
// market buy orders maker amount supports a max accuracy of 2 decimals,
// taker amount a max of 4 decimals" (rs-clob-client issue 114), and, for
// a FOK/FAK BUY or a crossing limit BUY worth less than $1, "invalid
// amount for a marketable BUY order ($0.9975), min size: $1"
// (NautilusTrader's Polymarket guide: resting GTC/GTD orders are bound
// only by the 5-share minimum).
var tradingRules = &venue.Trading{
	OrderTypes:       []string{"GTC", "GTD", "FOK", "FAK"},
	PostOnlyFlag:     true,
	Outcomes:         true,
	DollarMarketBuys: true,
	GTDThreshold:     time.Minute,
	Tick:             100,     // 0.01 at 4 price decimals
	MinSize:          5000000, // 5 shares at 6 size decimals
	// Sizes in hundredths of a share at every tick size, a market BUY's
	// dollars in cents (the share amount it signs in at most 4 decimals),
	// a marketable BUY worth $1 at least (the size rules above).
	SizeDecimals:        2,
	DollarDecimals:      2,
	DollarShareDecimals: 4,
	MinMarketableBuy:    1,
	ProbabilityFees:     true,
	Reasons: venue.TradingReasons{
		PostOnlyCrosses: "INVALID_POST_ONLY_ORDER: invalid post-only order: order crosses book",
		PostOnlyType:    "INVALID_POST_ONLY_ORDER_TYPE: invalid post-only order: only GTC and GTD orders can be post-only",
		FOKUnfilled:     "FOK_ORDER_NOT_FILLED_ERROR: order couldn't be fully filled. FOK orders are fully filled or killed.",
		FAKUnfilled:     "no orders found to match with FAK order. FAK orders are partially filled or killed if no match is found.",
		NoBalance:       "INVALID_ORDER_NOT_ENOUGH_BALANCE: not enough balance / allowance",
		Unknown:         "No orderbook exists for the requested token id",
		Resolved:        "MARKET_NOT_READY: the market is resolved; its orderbook is closed",
		Tick:            "INVALID_ORDER_MIN_TICK_SIZE: order is invalid. Price breaks minimum tick size rule",
		MinSize:         "INVALID_ORDER_MIN_SIZE: order is invalid. Size lower than the minimum",
		Size:            "invalid amounts, the {side} orders maker amount supports a max accuracy of {maker} decimals, taker amount a max of {taker} decimals",
		MinMarketable:   "invalid amount for a marketable BUY order (${amount}), min size: $1",
		Expiration:      "INVALID_ORDER_EXPIRATION: invalid expiration",
		ReduceOnly:      "reduce-only orders do not exist on polymarket",
		// DELETE /order answers a cancel it cannot do in not_canceled,
		// by order id.
		UnknownOrder: "not_canceled: order not found (already canceled or matched)",
	},
	Resolution:   tradingResolution,
	TradeFeeRate: tradingTradeFee,
}

// feeRateKey is the key of a last_trade_price's fee rate.
var feeRateKey = []byte(`"fee_rate_bps"`)

// tradingTradeFee reads a last_trade_price message's fee_rate_bps (a string
// of basis points, "0" on fee-free markets: [doc PM-AA] in
// shared/PROTOCOLS.md §1.6; the real 2024 trade of
// testdata/real/nautilus_ws_misc_events.ndjson) as a fraction: bps / 10⁴,
// so "700" is the 0.07 of fee = shares × rate × p × (1 − p). It is the
// rate the match applied (NautilusTrader's Polymarket adapter: the trade's
// fee_rate_bps is "the post-trade rate that actually applied"), read
// without a DOM or an allocation. Absent, null or "" states none; a sign,
// an exponent, letters or more than 10000 bps are an error.
func tradingTradeFee(raw []byte) (float64, bool, error) {
	i := bytes.Index(raw, feeRateKey)
	if i < 0 {
		return 0, false, nil
	}
	rest := bytes.TrimLeft(raw[i+len(feeRateKey):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return 0, false, nil // the text inside some value, not the key
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	var tok []byte
	if len(rest) > 0 && rest[0] == '"' {
		end := bytes.IndexByte(rest[1:], '"')
		if end < 0 {
			return 0, false, errFeeRate(rest)
		}
		tok = rest[1 : 1+end]
	} else {
		end := bytes.IndexAny(rest, ",} \t\r\n")
		if end < 0 {
			end = len(rest)
		}
		tok = rest[:end]
		if string(tok) == "null" {
			return 0, false, nil
		}
	}
	if len(tok) == 0 {
		return 0, false, nil
	}
	v, err := book.ParseDecimal(tok, 4) // bps with up to 4 decimals
	if err != nil || v > 10000*1e4 {
		return 0, false, errFeeRate(tok)
	}
	if v >= baseFeeBps*1e4 {
		// The base fee an order signs (1000 on every fee-charging market,
		// whatever its category), not the rate the match applied: the
		// documented taker rates are at most 0.07 (docs.polymarket.com
		// "Fees"), and captures of early 2026 state 1000 on markets of 0.07
		// and 0.03 alike. It says fees are on, not how much.
		return 0, false, nil
	}
	return float64(v) / 1e8, true, nil
}

// baseFeeBps is the base fee orders sign on fee-charging markets (the CLOB's
// fee-rate endpoint's base_fee; the V1 order's feeRateBps cap).
const baseFeeBps = 1000

func errFeeRate(tok []byte) error {
	return fmt.Errorf("fee_rate_bps %.40q: want basis points within [0, 10000]", tok)
}

// tradingResolution reads a market_resolved message: winning_asset_id and
// assets_ids (custom feature of the market channel).
func tradingResolution(raw []byte) (string, []string, bool) {
	if !bytes.Contains(raw, marketResolvedTag) {
		return "", nil, false
	}
	var m struct {
		EventType string       `json:"event_type"`
		Assets    gammaStrings `json:"assets_ids"`
		Winner    string       `json:"winning_asset_id"`
	}
	if json.Unmarshal(raw, &m) != nil || m.EventType != "market_resolved" || m.Winner == "" {
		return "", nil, false
	}
	return m.Winner, m.Assets, true
}
