package polymarket

// REST discovery: the Gamma market list that names every active market's
// token ids, and the market-lifecycle events (new_market, market_resolved)
// a capture follows to subscribe and unsubscribe without restarting.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// gammaPageLimit is the page size used to walk the Gamma market list.
const gammaPageLimit = 500

// gammaMarket is the part of a Gamma market a capture needs.
type gammaMarket struct {
	ID          string
	Question    string
	Slug        string
	ConditionID string
	Active      bool
	Closed      bool
	// TokenIDs are the CLOB token ids, one per outcome, in outcome order.
	TokenIDs []string
	Outcomes []string
}

// gammaMarketsPath returns the request path (with query) of one page of
// active, open markets, starting at offset.
func gammaMarketsPath(offset, limit int) string {
	return "/markets?active=true&closed=false&limit=" + strconv.Itoa(limit) + "&offset=" + strconv.Itoa(offset)
}

// gammaSlugPath returns the request path that finds a market by slug.
func gammaSlugPath(slug string) string { return "/markets?slug=" + url.QueryEscape(slug) }

// gammaConditionPath returns the request path that finds a market by condition id.
func gammaConditionPath(conditionID string) string {
	return "/markets?condition_ids=" + url.QueryEscape(conditionID)
}

// ErrGammaBody reports a Gamma response that is not a market list.
var ErrGammaBody = errors.New("polymarket: gamma: not a market list")

// gammaStrings accepts both a JSON array of strings and a string holding one:
// Gamma sends clobTokenIds and outcomes as JSON text inside a string.
type gammaStrings []string

func (l *gammaStrings) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			*l = nil
			return nil
		}
		b = []byte(s)
	}
	if bytes.Equal(b, []byte("null")) {
		*l = nil
		return nil
	}
	var v []string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*l = v
	return nil
}

// gammaID accepts a string or a number (Gamma ids are strings, some
// mirrors send numbers).
type gammaID string

func (s *gammaID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var v string
		err := json.Unmarshal(b, &v)
		*s = gammaID(v)
		return err
	}
	*s = gammaID(b)
	return nil
}

type gammaMarketJSON struct {
	ID           gammaID      `json:"id"`
	Question     string       `json:"question"`
	Slug         string       `json:"slug"`
	ConditionID  string       `json:"conditionId"`
	Active       bool         `json:"active"`
	Closed       bool         `json:"closed"`
	ClobTokenIDs gammaStrings `json:"clobTokenIds"`
	Outcomes     gammaStrings `json:"outcomes"`
}

// parseGammaMarkets parses a Gamma GET /markets response body (a JSON array
// of markets). Token ids that are not token ids make the market's entry an
// error: the caller subscribes exactly what the venue listed or nothing.
// The result owns its memory.
func parseGammaMarkets(body []byte) ([]gammaMarket, error) {
	var raw []gammaMarketJSON
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGammaBody, err)
	}
	out := make([]gammaMarket, 0, len(raw))
	for i, m := range raw {
		for _, id := range m.ClobTokenIDs {
			if !isTokenID(id) {
				return nil, fmt.Errorf("polymarket: gamma: market %d (%s): clobTokenIds %q: %w", i, m.Slug, id, ErrTokenID)
			}
		}
		out = append(out, gammaMarket{
			ID: string(m.ID), Question: m.Question, Slug: m.Slug, ConditionID: m.ConditionID,
			Active: m.Active, Closed: m.Closed, TokenIDs: m.ClobTokenIDs, Outcomes: m.Outcomes,
		})
	}
	return out, nil
}

// marketLifecycle is a new_market or market_resolved event of the market
// channel (custom features): the assets to subscribe or unsubscribe.
type marketLifecycle struct {
	// Resolved is false for new_market, true for market_resolved.
	Resolved bool
	Market   string // condition id
	AssetIDs []string
}

var (
	newMarketTag      = []byte(`"new_market"`)
	marketResolvedTag = []byte(`"market_resolved"`)
)

type lifecycleJSON struct {
	EventType    string       `json:"event_type"`
	Market       string       `json:"market"`
	AssetsIDs    gammaStrings `json:"assets_ids"`
	ClobTokenIDs gammaStrings `json:"clob_token_ids"`
}

// parseMarketLifecycle returns the new_market and market_resolved events of
// one market-channel frame (an object or an array of objects), and nil
// without allocating when the frame holds neither, which is almost always:
// callers run it on every frame. A frame that mentions one of the event
// types but does not parse is an error naming the frame's length.
func parseMarketLifecycle(frame []byte) ([]marketLifecycle, error) {
	if !bytes.Contains(frame, newMarketTag) && !bytes.Contains(frame, marketResolvedTag) {
		return nil, nil
	}
	t := bytes.TrimSpace(frame)
	var objs []lifecycleJSON
	var err error
	if len(t) > 0 && t[0] == '[' {
		err = json.Unmarshal(t, &objs)
	} else {
		var o lifecycleJSON
		err = json.Unmarshal(t, &o)
		objs = []lifecycleJSON{o}
	}
	if err != nil {
		return nil, fmt.Errorf("polymarket: market lifecycle frame (%d bytes): %w", len(frame), err)
	}
	var out []marketLifecycle
	for _, o := range objs {
		if o.EventType != "new_market" && o.EventType != "market_resolved" {
			continue
		}
		ids := o.AssetsIDs
		if len(ids) == 0 {
			ids = o.ClobTokenIDs
		}
		valid := ids[:0:0]
		for _, id := range ids {
			if isTokenID(id) {
				valid = append(valid, id)
			}
		}
		out = append(out, marketLifecycle{Resolved: o.EventType == "market_resolved", Market: o.Market, AssetIDs: valid})
	}
	return out, nil
}

// clobEndpoint is the public CLOB REST API base URL, where book summaries
// live (GET /book, POST /books).
const clobEndpoint = "https://clob.polymarket.com"

// BooksPath is the batch book-summary endpoint: POST a JSON array of
// {"token_id":…} objects (see booksRequest); the answer is a JSON array of
// summaries shaped like GET /book's.
const BooksPath = "/books"

// BooksBatchLimit is how many token ids one POST /books request carries
// here. The venue documents no limit; this one keeps a request body under
// 10 KB and a response to a few MB, like the subscribe frames' 100 ids.
const BooksBatchLimit = 100

// bookPath returns the request path (with query) of one token's book summary.
func bookPath(tokenID string) string { return "/book?token_id=" + url.QueryEscape(tokenID) }

// booksRequest returns the POST /books body for tokenIDs:
// [{"token_id":"…"},…]. It allocates a new slice.
func booksRequest(tokenIDs []string) []byte {
	type item struct {
		TokenID string `json:"token_id"`
	}
	items := make([]item, len(tokenIDs))
	for i, id := range tokenIDs {
		items[i].TokenID = id
	}
	b, _ := json.Marshal(items) // strings only: cannot fail
	return b
}

// BookSummary is the part of a REST book summary (GET /book, one element of
// POST /books) that a WebSocket book lacks, plus what names it. Decoders
// learn these fields by decoding the raw body (Decoder.Decode takes a
// summary or an array of them as a snapshot); this type is for callers that
// only need to know what a body covers.
type BookSummary struct {
	Market       string // condition id
	AssetID      string // token id
	Hash         string
	MinOrderSize string // decimal text, e.g. "5"
	TickSize     string // decimal text, e.g. "0.01"
	NegRisk      bool
	Bids, Asks   int // level counts
}

// info returns the summary's hash fields as setInstrumentInfo takes them.
func (s BookSummary) info() instrumentInfo {
	return instrumentInfo{AssetID: s.AssetID, Market: s.Market, MinOrderSize: s.MinOrderSize,
		TickSize: s.TickSize, NegRisk: s.NegRisk}
}

// ErrBookSummary reports a REST body that is not a book summary or an array
// of them.
var ErrBookSummary = errors.New("polymarket: not a book summary")

type bookSummaryJSON struct {
	Market       string            `json:"market"`
	AssetID      string            `json:"asset_id"`
	Hash         string            `json:"hash"`
	MinOrderSize string            `json:"min_order_size"`
	TickSize     string            `json:"tick_size"`
	NegRisk      *bool             `json:"neg_risk"`
	Bids         []json.RawMessage `json:"bids"`
	Asks         []json.RawMessage `json:"asks"`
}

// ParseBookSummaries parses a GET /book body (one object) or a POST /books
// body (an array of them). Every summary must name its asset and carry
// min_order_size and neg_risk, the fields hash checks need; otherwise the
// error (wrapping ErrBookSummary) names the element and the field. The
// result owns its memory.
func ParseBookSummaries(body []byte) ([]BookSummary, error) {
	t := bytes.TrimSpace(body)
	var raw []bookSummaryJSON
	var err error
	if len(t) > 0 && t[0] == '{' {
		var o bookSummaryJSON
		err = json.Unmarshal(t, &o)
		raw = []bookSummaryJSON{o}
	} else {
		err = json.Unmarshal(t, &raw)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBookSummary, err)
	}
	out := make([]BookSummary, 0, len(raw))
	for i, s := range raw {
		switch {
		case !isTokenID(s.AssetID):
			return nil, fmt.Errorf("%w: element %d: asset_id %q: %w", ErrBookSummary, i, s.AssetID, ErrTokenID)
		case s.MinOrderSize == "":
			return nil, fmt.Errorf("%w: element %d (%s): min_order_size: %w", ErrBookSummary, i, s.AssetID, ErrMissingField)
		case s.NegRisk == nil:
			return nil, fmt.Errorf("%w: element %d (%s): neg_risk: %w", ErrBookSummary, i, s.AssetID, ErrMissingField)
		}
		out = append(out, BookSummary{Market: s.Market, AssetID: s.AssetID, Hash: s.Hash, MinOrderSize: s.MinOrderSize,
			TickSize: s.TickSize, NegRisk: *s.NegRisk, Bids: len(s.Bids), Asks: len(s.Asks)})
	}
	return out, nil
}
