package hyperliquid

// REST discovery: the perp and spot universes of POST /info {"type":"meta"}
// and {"type":"spotMeta"}. A capture subscribes only names read from them,
// because an unknown or mis-cased coin closes the socket with 1006, and it
// stores the bodies (szDecimals) so a replay needs no network.

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Request bodies of the info endpoint for the two universes.
const (
	metaRequest     = `{"type":"meta"}`
	spotMetaRequest = `{"type":"spotMeta"}`
)

// metaAsset is one tradable coin as the info endpoint lists it. Name is what
// subscriptions use: "BTC" for perps, "PURR/USDC" or "@107" for spot pairs.
type metaAsset struct {
	Name       string
	SzDecimals int // size decimals: sizes are rounded to this many places
	Spot       bool
	Delisted   bool
	Index      int // position in its universe (spot: the pair index)
}

// ErrMetaBody reports an info response that is not the expected universe.
var ErrMetaBody = errors.New("hyperliquid: info: not a meta response")

type metaJSON struct {
	Universe *[]struct {
		Name       string `json:"name"`
		SzDecimals int    `json:"szDecimals"`
		IsDelisted bool   `json:"isDelisted"`
	} `json:"universe"`
}

// parseMeta parses the body of POST /info {"type":"meta"}: the perp universe.
func parseMeta(body []byte) ([]metaAsset, error) {
	var m metaJSON
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMetaBody, err)
	}
	if m.Universe == nil {
		return nil, fmt.Errorf("%w: no universe", ErrMetaBody)
	}
	out := make([]metaAsset, 0, len(*m.Universe))
	for i, u := range *m.Universe {
		if u.Name == "" {
			return nil, fmt.Errorf("%w: universe[%d] has no name", ErrMetaBody, i)
		}
		out = append(out, metaAsset{Name: u.Name, SzDecimals: u.SzDecimals, Delisted: u.IsDelisted, Index: i})
	}
	return out, nil
}

type spotMetaJSON struct {
	Universe *[]struct {
		Name   string `json:"name"`
		Tokens []int  `json:"tokens"`
		Index  int    `json:"index"`
	} `json:"universe"`
	Tokens []struct {
		Name       string `json:"name"`
		SzDecimals int    `json:"szDecimals"`
		Index      int    `json:"index"`
	} `json:"tokens"`
}

// parseSpotMeta parses the body of POST /info {"type":"spotMeta"}: the spot
// pairs, each with its base token's szDecimals.
func parseSpotMeta(body []byte) ([]metaAsset, error) {
	var m spotMetaJSON
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMetaBody, err)
	}
	if m.Universe == nil {
		return nil, fmt.Errorf("%w: no universe", ErrMetaBody)
	}
	sz := make(map[int]int, len(m.Tokens))
	for _, t := range m.Tokens {
		sz[t.Index] = t.SzDecimals
	}
	out := make([]metaAsset, 0, len(*m.Universe))
	for i, u := range *m.Universe {
		if u.Name == "" || len(u.Tokens) != 2 {
			return nil, fmt.Errorf("%w: spot universe[%d]: want a name and two tokens", ErrMetaBody, i)
		}
		d, ok := sz[u.Tokens[0]]
		if !ok {
			return nil, fmt.Errorf("%w: spot universe[%d] %s: base token %d not listed", ErrMetaBody, i, u.Name, u.Tokens[0])
		}
		out = append(out, metaAsset{Name: u.Name, SzDecimals: d, Spot: true, Index: u.Index})
	}
	return out, nil
}
