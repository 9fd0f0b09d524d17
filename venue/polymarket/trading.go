package polymarket

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// Trading is Polymarket's CLOB order rules for the backtester: order types
// GTC, GTD, FOK, FAK (docs.polymarket.com, "Orders overview" and "Create
// order"), post-only on GTC/GTD, FOK/FAK BUYs sized in dollars, GTD's
// one-minute security threshold, tick 0.01 and minimum size 5 until a book
// summary or tick_size_change says otherwise, YES/NO tokens as one
// mirrored book, settlement at 1/0 and the taker fee shares × rate × p ×
// (1 − p) ("Fees"; most markets are fee free: no tier by default). The
// reasons are the error messages of POST /order.
var Trading = &venue.Trading{
	OrderTypes:       []string{"GTC", "GTD", "FOK", "FAK"},
	PostOnlyFlag:     true,
	Outcomes:         true,
	DollarMarketBuys: true,
	GTDThreshold:     time.Minute,
	Tick:             100,     // 0.01 at 4 price decimals
	MinSize:          5000000, // 5 shares at 6 size decimals
	ProbabilityFees:  true,
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
		Expiration:      "INVALID_ORDER_EXPIRATION: invalid expiration",
		ReduceOnly:      "reduce-only orders do not exist on polymarket",
	},
	Meta:       tradingMeta,
	Resolution: tradingResolution,
}

// tradingMeta reads tick_size and min_order_size from a /book or /books body.
func tradingMeta(body []byte) []venue.InstrumentRules {
	sums, err := ParseBookSummaries(body)
	if err != nil {
		return nil
	}
	out := make([]venue.InstrumentRules, 0, len(sums))
	for _, s := range sums {
		r := venue.InstrumentRules{Instrument: s.AssetID, Market: s.Market, SizeDecimals: -1}
		if v, err := book.ParseDecimal([]byte(s.TickSize), priceDecimals); err == nil && v > 0 {
			r.Tick = v
		}
		if v, err := book.ParseDecimal([]byte(s.MinOrderSize), sizeDecimals); err == nil && v > 0 {
			r.MinSize = v
		}
		out = append(out, r)
	}
	return out
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
