package hyperliquid

import (
	"errors"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

func TestInstrumentFacts(t *testing.T) {
	meta := `{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40},{"name":"FTM","szDecimals":0,"maxLeverage":3,"isDelisted":true},{"name":"","szDecimals":1}],"marginTables":[]}`
	fs, err := Driver.Instruments([]byte(meta))
	if !errors.Is(err, ErrMetaBody) || len(fs) != 2 {
		t.Fatalf("%+v %v", fs, err)
	}
	if b := fs[0]; b.Instrument != "BTC" || b.Type != "perpetual" || b.SzDecimals != 5 || b.SizeStep != 1000 || b.PriceDecimals != 1 ||
		b.MaxLeverage != 40 || b.Active != venue.FlagTrue || b.Source != sourceMeta {
		t.Fatalf("BTC: %+v", b)
	}
	if fs[1].Active != venue.FlagFalse || fs[1].SizeStep != 1e8 {
		t.Fatalf("FTM: %+v", fs[1])
	}
	// metaAndAssetCtxs: [meta, contexts].
	if fs, err := instrumentFacts([]byte(`[` + `{"universe":[{"name":"ETH","szDecimals":4,"maxLeverage":25}]}` + `,[{"funding":"0"}]]`)); err != nil || len(fs) != 1 || fs[0].SzDecimals != 4 {
		t.Fatalf("metaAndAssetCtxs: %+v %v", fs, err)
	}
	spot := `{"universe":[{"tokens":[150,0],"name":"@107","index":107},{"tokens":[9,0],"name":"@9","index":9}],"tokens":[{"name":"USDC","szDecimals":8,"index":0},{"name":"HYPE","szDecimals":2,"index":150}]}`
	fs, err = instrumentFacts([]byte(spot))
	if !errors.Is(err, ErrMetaBody) || len(fs) != 1 {
		t.Fatalf("spot: %+v %v", fs, err)
	}
	if s := fs[0]; s.Instrument != "@107" || s.Type != "spot" || s.Base != "HYPE" || s.Quote != "USDC" || s.SzDecimals != 2 ||
		s.PriceDecimals != 6 || s.SizeStep != 1e6 || s.Source != sourceSpotMeta || s.Active != venue.FlagUnknown {
		t.Fatalf("@107: %+v", s)
	}
	for _, m := range []string{`{"channel":"l2Book","data":{}}`, `{"universe":null}`} {
		if fs, err := instrumentFacts([]byte(m)); fs != nil || err != nil {
			t.Fatalf("%s: %+v %v", m, fs, err)
		}
	}
}
