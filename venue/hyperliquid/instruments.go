package hyperliquid

// Instrument facts (venue.Driver.Instruments) from the info bodies a capture
// stores at discovery: meta (perps: szDecimals, maxLeverage, isDelisted) and
// spotMeta (pairs: base and quote tokens, the base's szDecimals), also in
// the [meta, assetCtxs] form of metaAndAssetCtxs and spotMetaAndAssetCtxs.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tapedeck/tapedeck/venue"
)

// Instrument fact sources (venue.Instrument.Source).
const (
	sourceMeta     = "meta"
	sourceSpotMeta = "spot_meta"
)

// Price decimals of the venue's tick rule: at most 6 − szDecimals decimal
// places for perps, 8 − szDecimals for spot (and 5 significant figures,
// which no fixed tick expresses).
const (
	perpMaxDecimals = 6
	spotMaxDecimals = 8
)

var universeKey = []byte(`"universe"`)

type universeJSON struct {
	Universe *[]struct {
		Name        string `json:"name"`
		SzDecimals  *int   `json:"szDecimals"`
		MaxLeverage int    `json:"maxLeverage"`
		IsDelisted  bool   `json:"isDelisted"`
		Tokens      []int  `json:"tokens"`
	} `json:"universe"`
	Tokens *[]struct {
		Name       string `json:"name"`
		SzDecimals *int   `json:"szDecimals"`
		Index      int    `json:"index"`
	} `json:"tokens"`
}

func (driver) Instruments(msg []byte) ([]venue.Instrument, error) { return instrumentFacts(msg) }

// instrumentFacts reads an info meta or spotMeta body (or their
// ...AndAssetCtxs form) and returns one venue.Instrument per listed coin;
// other messages give nil. A universe entry that does not read is skipped
// and named in the error (wrapping ErrMetaBody); the others are returned.
func instrumentFacts(msg []byte) ([]venue.Instrument, error) {
	if !bytes.Contains(msg, universeKey) {
		return nil, nil
	}
	t := bytes.TrimSpace(msg)
	if len(t) > 0 && t[0] == '[' {
		// metaAndAssetCtxs: [meta, [ctx…]].
		var pair []json.RawMessage
		if err := json.Unmarshal(t, &pair); err != nil || len(pair) == 0 {
			return nil, fmt.Errorf("%w: %d bytes: not [meta, contexts]", ErrMetaBody, len(msg))
		}
		t = pair[0]
	}
	var u universeJSON
	if err := json.Unmarshal(t, &u); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMetaBody, err)
	}
	if u.Universe == nil {
		return nil, nil
	}
	var out []venue.Instrument
	var errs []error
	if u.Tokens == nil {
		for i, a := range *u.Universe {
			if a.Name == "" || a.SzDecimals == nil || *a.SzDecimals < 0 || *a.SzDecimals > perpMaxDecimals {
				errs = append(errs, fmt.Errorf("%w: universe[%d] %q: want a name and szDecimals in 0..%d", ErrMetaBody, i, a.Name, perpMaxDecimals))
				continue
			}
			in := sized(venue.NewInstrument(a.Name, sourceMeta), *a.SzDecimals, perpMaxDecimals)
			in.Type, in.MaxLeverage, in.Active = "perpetual", a.MaxLeverage, venue.FlagOf(!a.IsDelisted)
			out = append(out, in)
		}
		return out, errors.Join(errs...)
	}
	type token struct {
		name string
		sz   *int
	}
	tokens := make(map[int]token, len(*u.Tokens))
	for _, tk := range *u.Tokens {
		tokens[tk.Index] = token{tk.Name, tk.SzDecimals}
	}
	for i, p := range *u.Universe {
		if p.Name == "" || len(p.Tokens) != 2 {
			errs = append(errs, fmt.Errorf("%w: spot universe[%d] %q: want a name and two tokens", ErrMetaBody, i, p.Name))
			continue
		}
		base, okB := tokens[p.Tokens[0]]
		quote, okQ := tokens[p.Tokens[1]]
		if !okB || !okQ || base.sz == nil || *base.sz < 0 || *base.sz > spotMaxDecimals {
			errs = append(errs, fmt.Errorf("%w: spot universe[%d] %s: tokens %v not listed with szDecimals in 0..%d", ErrMetaBody, i, p.Name, p.Tokens, spotMaxDecimals))
			continue
		}
		in := sized(venue.NewInstrument(p.Name, sourceSpotMeta), *base.sz, spotMaxDecimals)
		in.Type, in.Base, in.Quote = "spot", base.name, quote.name
		out = append(out, in)
	}
	return out, errors.Join(errs...)
}

// sized sets the size rules that follow from szDecimals.
func sized(in venue.Instrument, sz, maxDecimals int) venue.Instrument {
	in.SzDecimals, in.PriceDecimals = sz, maxDecimals-sz
	in.SizeStep = pow10Scale[sz] // 10^-sz at Scale.SizeDecimals
	return in
}
