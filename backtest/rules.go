package backtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// Rules are one venue's order rules. The simulator finds them by the
// dataset's venue name in VenueRules; a venue without rules cannot be
// traded (every order is rejected, naming the venue).
type Rules struct {
	Venue string
	// TIFs the venue accepts.
	TIFs []TIF
	// Check validates a new order against the instrument's state; it returns
	// the venue's rejection reason or "".
	Check func(in *Instrument, o *Order, nowNs int64) string
	// Reasons in the venue's words.
	PostOnlyCrosses, FOKUnfilled, FAKUnfilled, NoBalance, Unknown, Resolved string
	// MirroredPairs: the venue publishes the two outcome tokens of a market
	// as one book seen from both sides (Polymarket).
	MirroredPairs bool
	// NoShort: a SELL needs the shares (Polymarket: tokens must be held).
	NoShort bool
	// DollarMarketBuys: FOK/FAK BUYs are sized in dollars (Polymarket).
	DollarMarketBuys bool
	// GTDThresholdNs: a GTD order's expiry must be at least this far ahead,
	// and it expires this long before its stated expiry (Polymarket's one
	// minute security threshold).
	GTDThresholdNs int64
}

// VenueRules is the registry of venue rules, by venue name.
var VenueRules = map[string]*Rules{
	venue.Polymarket:  polymarketRules,
	venue.Hyperliquid: hyperliquidRules,
}

// Polymarket CLOB errors (docs.polymarket.com, "Create order": error
// messages of POST /order; "Error codes").
var polymarketRules = &Rules{
	Venue:            venue.Polymarket,
	TIFs:             []TIF{GTC, GTD, FOK, FAK},
	Check:            pmCheck,
	PostOnlyCrosses:  "INVALID_POST_ONLY_ORDER: invalid post-only order: order crosses book",
	FOKUnfilled:      "FOK_ORDER_NOT_FILLED_ERROR: order couldn't be fully filled. FOK orders are fully filled or killed.",
	FAKUnfilled:      "no orders found to match with FAK order. FAK orders are partially filled or killed if no match is found.",
	NoBalance:        "INVALID_ORDER_NOT_ENOUGH_BALANCE: not enough balance / allowance",
	Unknown:          "No orderbook exists for the requested token id",
	Resolved:         "MARKET_NOT_READY: the market is resolved; its orderbook is closed",
	MirroredPairs:    true,
	NoShort:          true,
	DollarMarketBuys: true,
	GTDThresholdNs:   60e9,
}

func pmCheck(in *Instrument, o *Order, nowNs int64) string {
	sc := in.Scale
	one := pow10(sc.PriceDecimals)
	fmtP := func(v int64) string { return book.FormatDecimal(v, sc.PriceDecimals) }
	if o.PostOnly && o.TIF != GTC && o.TIF != GTD {
		return "INVALID_POST_ONLY_ORDER_TYPE: invalid post-only order: only GTC and GTD orders can be post-only"
	}
	if in.Tick > 0 && (o.Price%in.Tick != 0 || o.Price < in.Tick || o.Price > one-in.Tick) {
		return fmt.Sprintf("INVALID_ORDER_MIN_TICK_SIZE: order %d is invalid. Price (%s) breaks minimum tick size rule: %s",
			o.ID, fmtP(o.Price), fmtP(in.Tick))
	}
	if o.TIF == GTD && o.ExpireNs <= nowNs+in.rules.GTDThresholdNs {
		return "INVALID_ORDER_EXPIRATION: invalid expiration (a GTD order must expire more than one minute from now)"
	}
	if o.TIF != GTD && o.ExpireNs != 0 {
		return "INVALID_ORDER_EXPIRATION: only GTD orders take an expiration"
	}
	dollar := (o.TIF == FOK || o.TIF == FAK) && o.Side == Buy
	if dollar {
		if o.Amount <= 0 || o.Size != 0 {
			return fmt.Sprintf("INVALID_ORDER_MIN_SIZE: order %d is invalid. A %s BUY is sized in dollars (Amount), not shares", o.ID, o.TIF)
		}
		return ""
	}
	if o.Amount != 0 {
		return fmt.Sprintf("order %d is invalid. Only FOK/FAK BUYs are sized in dollars", o.ID)
	}
	if o.Size <= 0 || (o.TIF != FOK && o.TIF != FAK && in.MinSize > 0 && o.Size < in.MinSize) {
		return fmt.Sprintf("INVALID_ORDER_MIN_SIZE: order %d is invalid. Size (%s) lower than the minimum: %s",
			o.ID, book.FormatDecimal(o.Size, sc.SizeDecimals), book.FormatDecimal(in.MinSize, sc.SizeDecimals))
	}
	if o.ReduceOnly {
		return "reduce-only orders are not supported on polymarket"
	}
	return ""
}

// Hyperliquid errors as the exchange endpoint returns them in
// response.data.statuses[].error (hyperliquid-python-sdk examples; API docs).
var hyperliquidRules = &Rules{
	Venue:           venue.Hyperliquid,
	TIFs:            []TIF{GTC, IOC, ALO},
	Check:           hlCheck,
	PostOnlyCrosses: "Post only order would have immediately matched",
	FAKUnfilled:     "Order could not immediately match against any resting orders.",
	FOKUnfilled:     "Order could not immediately match against any resting orders.",
	NoBalance:       "Insufficient margin to place order.",
	Unknown:         "Unknown asset",
	Resolved:        "Asset is delisted",
}

// hlMinNotional is Hyperliquid's minimum order value, $10.
const hlMinNotional = 10 * 1e10

func hlCheck(in *Instrument, o *Order, _ int64) string {
	sc := in.Scale
	if o.PostOnly {
		return "post-only on hyperliquid is tif ALO"
	}
	if o.ExpireNs != 0 || o.Amount != 0 {
		return "hyperliquid orders take neither an expiration nor a dollar amount"
	}
	if o.Price <= 0 || !hlValidPrice(o.Price, sc.PriceDecimals, in.SzDecimals, in.Spot) {
		return fmt.Sprintf("Order has invalid price. (%s: at most 5 significant figures and %d decimals)",
			book.FormatDecimal(o.Price, sc.PriceDecimals), hlMaxPriceDecimals(in.SzDecimals, in.Spot))
	}
	if o.Size <= 0 || (in.SzDecimals >= 0 && int(sc.SizeDecimals) >= in.SzDecimals &&
		o.Size%pow10(sc.SizeDecimals-uint8(in.SzDecimals)) != 0) {
		return fmt.Sprintf("Order has invalid size. (%s: szDecimals %d)", book.FormatDecimal(o.Size, sc.SizeDecimals), in.SzDecimals)
	}
	if !o.ReduceOnly && Notional(o.Price, o.Size, sc.PriceDecimals, sc.SizeDecimals) < hlMinNotional {
		return "Order must have minimum value of $10."
	}
	if o.ReduceOnly {
		if (o.Side == Buy && in.Position >= 0) || (o.Side == Sell && in.Position <= 0) {
			return "Reduce only order would increase position."
		}
	}
	return ""
}

func hlMaxPriceDecimals(szDecimals int, spot bool) int {
	maxDec := 6
	if spot {
		maxDec = 8
	}
	if szDecimals > 0 {
		maxDec -= szDecimals
	}
	return max(maxDec, 0)
}

// hlValidPrice: at most five significant figures and at most
// MAX_DECIMALS − szDecimals decimal places (6 perps, 8 spot); integer
// prices are always valid (docs "Tick and lot size").
func hlValidPrice(p int64, pd uint8, szDecimals int, spot bool) bool {
	unit := pow10(pd)
	if p%unit == 0 {
		return true
	}
	dec := hlMaxPriceDecimals(szDecimals, spot)
	if dec < int(pd) && p%pow10(pd-uint8(dec)) != 0 {
		return false
	}
	// significant figures: strip trailing zeros, count digits.
	v := p
	for v%10 == 0 {
		v /= 10
	}
	digits := 0
	for x := v; x > 0; x /= 10 {
		digits++
	}
	// Leading zeros of a value below 1 are not significant: digits counts
	// only from the first non-zero digit, which is what we have.
	return digits <= 5
}

// Instrument is the simulator's state of one instrument, readable by a
// strategy through Context.Instrument.
type Instrument struct {
	ID     string
	Venue  string
	Market string // Polymarket condition id
	Scale  book.Scale
	Book   *book.Book // last book the feed delivered (read-only)

	Tick       int64 // Polymarket tick size (price units); 0 unknown
	MinSize    int64 // Polymarket min_order_size (size units)
	SzDecimals int   // Hyperliquid size decimals; -1 unknown
	Spot       bool

	Complement *Instrument // the other outcome token of a Polymarket market
	Resolved   bool
	Settle     int64 // settlement price when Resolved (0 or one unit)

	Position   int64 // size units; negative is short
	Funding    int64 // funding paid so far (cash units; positive paid)
	FundRate   float64
	MarkPx     int64
	lastHour   int64
	LastTrade  int64
	ExchangeNs int64

	rules  *Rules
	open   []*Order // resting orders, in arrival order
	taken  []takenLevel
	scratch []book.Level
	marks  []markout
}

// takenLevel remembers recorded size the strategy's taker orders consumed
// at a level, until the level next changes (so two orders cannot take the
// same liquidity).
type takenLevel struct {
	side  book.Side
	price int64
	size  int64
}

func (in *Instrument) takenAt(side book.Side, price int64) int64 {
	for _, t := range in.taken {
		if t.side == side && t.price == price {
			return t.size
		}
	}
	return 0
}

func (in *Instrument) take(side book.Side, price, size int64) {
	for i := range in.taken {
		if in.taken[i].side == side && in.taken[i].price == price {
			in.taken[i].size += size
			return
		}
	}
	in.taken = append(in.taken, takenLevel{side, price, size})
}

func (in *Instrument) untake(side book.Side, price int64) {
	for i := range in.taken {
		if in.taken[i].side == side && in.taken[i].price == price {
			in.taken[i] = in.taken[len(in.taken)-1]
			in.taken = in.taken[:len(in.taken)-1]
			return
		}
	}
}

// Mid returns the book's mid price and whether both sides exist.
func (in *Instrument) Mid() (int64, bool) {
	if in.Book == nil {
		return 0, false
	}
	b, ok1 := in.Book.Best(book.Bid)
	a, ok2 := in.Book.Best(book.Ask)
	if !ok1 || !ok2 {
		return 0, false
	}
	return (b.Price + a.Price) / 2, true
}

// metadata from recorded REST bodies and frames.

type pmSummary struct {
	Market       string `json:"market"`
	AssetID      string `json:"asset_id"`
	TickSize     string `json:"tick_size"`
	MinOrderSize string `json:"min_order_size"`
}

// parsePMSummaries reads a Polymarket /book or /books body (one object or an
// array). Rare (REST records): allocation is fine.
func parsePMSummaries(body []byte) []pmSummary {
	body = bytes.TrimSpace(body)
	var out []pmSummary
	if len(body) > 0 && body[0] == '[' {
		_ = json.Unmarshal(body, &out)
		return out
	}
	var one pmSummary
	if json.Unmarshal(body, &one) == nil && one.AssetID != "" {
		out = append(out, one)
	}
	return out
}

type pmResolved struct {
	EventType string   `json:"event_type"`
	Market    string   `json:"market"`
	Assets    []string `json:"assets_ids"`
	Winner    string   `json:"winning_asset_id"`
}

type hlMeta struct {
	Universe []struct {
		Name       string `json:"name"`
		SzDecimals int    `json:"szDecimals"`
	} `json:"universe"`
}

type hlCtx struct {
	Data struct {
		Coin string `json:"coin"`
		Ctx  struct {
			Funding string `json:"funding"`
		} `json:"ctx"`
	} `json:"data"`
}

// bytesField finds "key":"value" in raw JSON without allocating.
func bytesField(raw []byte, key string) []byte {
	i := bytes.Index(raw, []byte(key))
	if i < 0 {
		return nil
	}
	j := i + len(key)
	for j < len(raw) && (raw[j] == '"' || raw[j] == ':' || raw[j] == ' ') {
		j++
	}
	k := j
	for k < len(raw) && raw[k] != '"' && raw[k] != ',' && raw[k] != '}' {
		k++
	}
	return raw[j:k]
}

func parseFloat(b []byte) float64 {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return math.NaN()
	}
	return f
}
