package polymarket

// Instrument facts (venue.Driver.Instruments) from what a recording holds:
// the Gamma /markets bodies of discovery (condition id, outcomes and their
// token ids, negRisk, orderMinSize, orderPriceMinTickSize, question, slug,
// active/closed, and the fees: feesEnabled, feeType, feeSchedule), the CLOB
// book summaries fetched before every connect
// (market, tick_size, min_order_size, neg_risk, timestamp), and two market
// channel messages: the initial-dump book (tick_size) and new_market
// (outcomes, token ids, order_price_min_tick_size).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// Instrument fact sources (venue.Instrument.Source).
const (
	sourceGamma       = "gamma_markets"
	sourceBookSummary = "book_summary"
	sourceBook        = "book"
	sourceNewMarket   = "new_market"
)

// ErrInstrumentFacts reports an element of a listing, summary or message that
// does not read as instrument facts.
var ErrInstrumentFacts = errors.New("polymarket: instrument facts")

// factsJSON is the union of the fields the four shapes carry. Go's JSON
// field matching ignores case, never underscores, so the camelCase Gamma
// keys and the snake_case CLOB keys stay apart.
type factsJSON struct {
	EventType string `json:"event_type"`

	// Gamma /markets
	ConditionID  string          `json:"conditionId"`
	ClobTokenIDs gammaStrings    `json:"clobTokenIds"`
	Outcomes     gammaStrings    `json:"outcomes"` // Gamma: JSON text in a string; new_market: an array
	Question     string          `json:"question"`
	Slug         string          `json:"slug"`
	Active       *bool           `json:"active"`
	Closed       *bool           `json:"closed"`
	GammaNegRisk *bool           `json:"negRisk"`
	OrderMinSize json.RawMessage `json:"orderMinSize"`
	GammaTick    json.RawMessage `json:"orderPriceMinTickSize"`
	FeesEnabled  *bool           `json:"feesEnabled"`
	FeeType      string          `json:"feeType"`
	FeeSchedule  *struct {
		Rate       json.RawMessage `json:"rate"`
		Exponent   json.RawMessage `json:"exponent"`
		RebateRate json.RawMessage `json:"rebateRate"`
	} `json:"feeSchedule"`

	// CLOB book summaries and market-channel messages
	Market       string          `json:"market"`
	AssetID      string          `json:"asset_id"`
	Timestamp    json.RawMessage `json:"timestamp"`
	MinOrderSize json.RawMessage `json:"min_order_size"`
	TickSize     json.RawMessage `json:"tick_size"`
	NegRisk      *bool           `json:"neg_risk"`

	// new_market
	AssetsIDs   gammaStrings    `json:"assets_ids"`
	ClobIDs     gammaStrings    `json:"clob_token_ids"`
	WSTick      json.RawMessage `json:"order_price_min_tick_size"`
	ConditionWS string          `json:"condition_id"`
}

// factKeys: a message without one of these says nothing about instruments.
var factKeys = [][]byte{[]byte(`"clobTokenIds"`), []byte(`"asset_id"`), []byte(`"assets_ids"`), []byte(`"new_market"`)}

func (driver) Instruments(msg []byte) ([]venue.Instrument, error) { return instrumentFacts(msg) }

// instrumentFacts reads a Gamma /markets body, a book summary body (GET
// /book's object or POST /books' array), or one market-channel message, and
// returns one venue.Instrument per token it describes. Other messages give
// nil. An element that does not read is skipped and named in the error (which
// wraps ErrInstrumentFacts); the others are returned.
func instrumentFacts(msg []byte) ([]venue.Instrument, error) {
	found := false
	for _, k := range factKeys {
		if bytes.Contains(msg, k) {
			found = true
			break
		}
	}
	if !found {
		return nil, nil
	}
	t := bytes.TrimSpace(msg)
	if len(t) == 0 || t[0] != '[' {
		var m factsJSON
		if err := json.Unmarshal(t, &m); err != nil {
			return nil, fmt.Errorf("%w: %d bytes: %v", ErrInstrumentFacts, len(msg), err)
		}
		out, err := factsOne(&m)
		if err != nil {
			return out, fmt.Errorf("%w: %w", ErrInstrumentFacts, err)
		}
		return out, nil
	}
	if out, ok, err := factsArray(t); ok {
		return out, err
	}
	return factsRaw(t, len(msg))
}

// factsRaw reads an array of raw elements, so that one odd element spoils
// only itself; a body that is not a well-formed array is the error (of a
// message of n bytes).
func factsRaw(t []byte, n int) ([]venue.Instrument, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(t, &raw); err != nil {
		return nil, fmt.Errorf("%w: %d bytes: %v", ErrInstrumentFacts, n, err)
	}
	var out []venue.Instrument
	var errs []error
	for i, r := range raw {
		var m factsJSON
		err := json.Unmarshal(r, &m)
		out, errs = appendFacts(out, errs, i, &m, err)
	}
	return out, errors.Join(errs...)
}

// factsArray reads an array's elements as factsRaw does, with one scan and
// one decode of each (a Decoder), where Unmarshal into raw elements and then
// of each scanned the body four times: a book summary body is mostly
// levels, none of them read. ok is false when the body is not a
// well-formed array, or an element's error could be the stream's (a syntax
// error, an early end): factsRaw then says what it says.
func factsArray(t []byte) (out []venue.Instrument, ok bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(t))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, false, nil
	}
	var errs []error
	for i := 0; dec.More(); i++ {
		var m factsJSON
		err := dec.Decode(&m)
		var se *json.SyntaxError
		if err != nil && (errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) {
			return nil, false, nil
		}
		out, errs = appendFacts(out, errs, i, &m, err)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return nil, false, nil
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, nil // more after the array
	}
	return out, true, errors.Join(errs...)
}

// appendFacts appends the facts of array element i, m as decoded with err,
// to out, or its error to errs.
func appendFacts(out []venue.Instrument, errs []error, i int, m *factsJSON, err error) ([]venue.Instrument, []error) {
	var facts []venue.Instrument
	if err == nil {
		facts, err = factsOne(m)
	}
	if err != nil {
		// A market whose fee schedule does not read keeps its other
		// facts (facts non-nil beside the error).
		errs = append(errs, fmt.Errorf("%w: element %d: %w", ErrInstrumentFacts, i, err))
	}
	return append(out, facts...), errs
}

// factsOne reads one object: a Gamma market, a book summary or a
// market-channel message.
func factsOne(m *factsJSON) ([]venue.Instrument, error) {
	switch {
	case m.EventType == "new_market":
		return newMarketFacts(m)
	case m.EventType == "book":
		return bookFacts(m, sourceBook)
	case m.EventType != "":
		return nil, nil // price_change, last_trade_price…: nothing about the instrument
	case len(m.ClobTokenIDs) > 0 || m.ConditionID != "":
		return gammaFacts(m)
	case m.AssetID != "":
		return bookFacts(m, sourceBookSummary)
	}
	return nil, nil
}

// marketFacts is one instrument per token of a market, in outcome order,
// each paired with the others.
func marketFacts(source, market string, tokens, outcomes []string) ([]venue.Instrument, error) {
	for _, id := range tokens {
		if !isTokenID(id) {
			return nil, fmt.Errorf("token id %q: %w", id, ErrTokenID)
		}
	}
	if len(outcomes) != len(tokens) {
		outcomes = nil // unlabelled rather than mislabelled
	}
	out := make([]venue.Instrument, len(tokens))
	for i, id := range tokens {
		in := venue.NewInstrument(id, source)
		in.Market, in.Type, in.OutcomeIndex = market, "binary_option", i
		if outcomes != nil {
			in.Outcome = outcomes[i]
		}
		for j, other := range tokens {
			if j != i {
				in.Paired = append(in.Paired, other)
			}
		}
		out[i] = in
	}
	return out, nil
}

func gammaFacts(m *factsJSON) ([]venue.Instrument, error) {
	tick, err := factDecimal(m.GammaTick, "orderPriceMinTickSize", priceDecimals)
	if err != nil {
		return nil, err
	}
	if tick != 0 {
		if err := checkTick(tick); err != nil {
			return nil, fmt.Errorf("orderPriceMinTickSize: %w", err)
		}
	}
	minSize, err := factDecimal(m.OrderMinSize, "orderMinSize", sizeDecimals)
	if err != nil {
		return nil, err
	}
	out, err := marketFacts(sourceGamma, m.ConditionID, m.ClobTokenIDs, m.Outcomes)
	if err != nil {
		return nil, fmt.Errorf("market %s: clobTokenIds: %w", m.Slug, err)
	}
	rate, exp, rebate, feeErr := gammaFees(m)
	for i := range out {
		in := &out[i]
		in.Slug, in.Name, in.TickSize, in.MinSize = m.Slug, m.Question, tick, minSize
		if m.GammaNegRisk != nil {
			in.NegRisk = venue.FlagOf(*m.GammaNegRisk)
		}
		if m.Active != nil && m.Closed != nil {
			in.Active = venue.FlagOf(*m.Active && !*m.Closed)
		}
		if m.FeesEnabled != nil {
			in.FeesEnabled = venue.FlagOf(*m.FeesEnabled)
		}
		in.FeeType, in.TakerFeeRate, in.FeeExponent, in.MakerRebateShare = m.FeeType, rate, exp, rebate
	}
	if feeErr != nil {
		return out, fmt.Errorf("market %s: %w", m.ConditionID, feeErr)
	}
	return out, nil
}

// gammaFees reads a Gamma market's feeSchedule: rate, the taker rate of
// fee = C × rate × p × (1 − p), a fraction (0.07 is 7%); exponent, of the
// curve's general form C × rate × (p × (1 − p))^exponent (1 on current
// markets; 2 on the early-2026 short crypto markets, rate 0.25); and
// rebateRate, the share of the taker fees paid back to makers (0.2, 0.25).
// Each comes as a JSON number or a decimal string ("0.072"). Source:
// docs.polymarket.com "Fees" (trading/fees: "Markets with fees enabled have
// feesEnabled set to true on the market object"; the category table of
// taker rates and maker rebates) and the Gamma market objects'
// feeSchedule {exponent, rate, takerOnly, rebateRate}. A rate or rebate
// outside [0, 1], an exponent not within (0, 10], or a value that is not a
// number (NaN, "abc") is an error and leaves the fees unstated (rate and
// rebate -1, exponent 0); absent, null or "" is unstated.
func gammaFees(m *factsJSON) (rate, exp, rebate float64, err error) {
	if m.FeeSchedule == nil {
		return -1, 0, -1, nil
	}
	fs := m.FeeSchedule
	r, okR, err := factFloat(fs.Rate, "feeSchedule.rate")
	if err == nil && okR && !(r >= 0 && r <= 1) {
		err = fmt.Errorf("feeSchedule.rate %v: want a fraction within [0, 1]", r)
	}
	if err != nil {
		return -1, 0, -1, err
	}
	e, okE, err := factFloat(fs.Exponent, "feeSchedule.exponent")
	if err == nil && okE && !(e > 0 && e <= 10) {
		err = fmt.Errorf("feeSchedule.exponent %v: want a number within (0, 10]", e)
	}
	if err != nil {
		return -1, 0, -1, err
	}
	rb, okB, err := factFloat(fs.RebateRate, "feeSchedule.rebateRate")
	if err == nil && okB && !(rb >= 0 && rb <= 1) {
		err = fmt.Errorf("feeSchedule.rebateRate %v: want a fraction within [0, 1]", rb)
	}
	if err != nil {
		return -1, 0, -1, err
	}
	rate, rebate = -1, -1
	if okR {
		rate = r
	}
	if okB {
		rebate = rb
	}
	return rate, e, rebate, nil
}

// factFloat reads a finite number sent as a JSON number or string; absent,
// null or "" is not stated (ok false).
func factFloat(raw json.RawMessage, field string) (v float64, ok bool, err error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return 0, false, nil
	}
	if t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return 0, false, fmt.Errorf("%s: %w", field, err)
		}
		if t = bytes.TrimSpace([]byte(s)); len(t) == 0 {
			return 0, false, nil
		}
	}
	v, err = strconv.ParseFloat(string(t), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, fmt.Errorf("%s %.40q: not a finite number", field, t)
	}
	return v, true, nil
}

func bookFacts(m *factsJSON, source string) ([]venue.Instrument, error) {
	if source == sourceBook && len(m.TickSize) == 0 {
		return nil, nil // a later book: it repeats nothing but the market
	}
	if !isTokenID(m.AssetID) {
		return nil, fmt.Errorf("asset_id %q: %w", m.AssetID, ErrTokenID)
	}
	tick, err := factDecimal(m.TickSize, "tick_size", priceDecimals)
	if err != nil {
		return nil, err
	}
	if tick != 0 {
		if err := checkTick(tick); err != nil {
			return nil, fmt.Errorf("asset %s: tick_size: %w", m.AssetID, err)
		}
	}
	minSize, err := factDecimal(m.MinOrderSize, "min_order_size", sizeDecimals)
	if err != nil {
		return nil, err
	}
	ts, err := factMillis(m.Timestamp)
	if err != nil {
		return nil, err
	}
	in := venue.NewInstrument(m.AssetID, source)
	in.Market, in.Type, in.TickSize, in.MinSize, in.ExchangeNs = m.Market, "binary_option", tick, minSize, ts
	if m.NegRisk != nil {
		in.NegRisk = venue.FlagOf(*m.NegRisk)
	}
	return []venue.Instrument{in}, nil
}

func newMarketFacts(m *factsJSON) ([]venue.Instrument, error) {
	tick, err := factDecimal(m.WSTick, "order_price_min_tick_size", priceDecimals)
	if err != nil {
		return nil, err
	}
	ts, err := factMillis(m.Timestamp)
	if err != nil {
		return nil, err
	}
	ids := m.AssetsIDs
	if len(ids) == 0 {
		ids = m.ClobIDs
	}
	market := m.Market
	if market == "" {
		market = m.ConditionWS
	}
	out, err := marketFacts(sourceNewMarket, market, ids, m.Outcomes)
	if err != nil {
		return nil, fmt.Errorf("new_market %s: assets_ids: %w", market, err)
	}
	for i := range out {
		in := &out[i]
		in.Slug, in.Name, in.TickSize, in.ExchangeNs = m.Slug, m.Question, tick, ts
		if m.Active != nil {
			in.Active = venue.FlagOf(*m.Active)
		}
	}
	return out, nil
}

// factDecimal reads a decimal sent as a JSON string or number; absent, null
// or "" is 0 (unknown).
func factDecimal(raw json.RawMessage, field string, decimals uint8) (int64, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return 0, nil
	}
	if t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return 0, fmt.Errorf("%s: %w", field, err)
		}
		t = []byte(s)
		if len(t) == 0 {
			return 0, nil
		}
	}
	v, err := book.ParseDecimal(t, decimals)
	if err != nil {
		return 0, book.NewDecimalError(field, t, err)
	}
	return v, nil
}

// factMillis reads a ms timestamp sent as a string or number, in ns; absent
// is 0.
func factMillis(raw json.RawMessage) (int64, error) {
	t := bytes.Trim(bytes.TrimSpace(raw), `"`)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return 0, nil
	}
	ms, err := strconv.ParseInt(string(t), 10, 64)
	if err != nil || ms < 0 || ms > (1<<62)/1_000_000 {
		return 0, fmt.Errorf("timestamp %.40q: not a time in ms", t)
	}
	return ms * 1e6, nil
}
