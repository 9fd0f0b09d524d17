package backtest

import (
	"slices"
	"testing"

	"github.com/tapedeck/tapedeck/book"
)

func TestConfigUnnamed(t *testing.T) {
	a := &Result{Scales: map[string]book.Scale{"tokA": {}}, Markets: map[string]string{"tokA": "mkt1"}}
	b := &Result{Scales: map[string]book.Scale{"BTC": {}}}
	c := &Config{
		FeeRates:    map[string]float64{"mkt1": 0.1, "tokA": 0.1, "zzz": 0.1, "BTC": 0.1, "aaa": 0.1},
		Resolutions: map[string]bool{"mkt1": true, "tokA": true, "nope": false},
		Instruments: []string{"x", "mkt1", "BTC", "a"},
	}
	fees, res, inst := c.Unnamed(a, b)
	if want := []string{"aaa", "zzz"}; !slices.Equal(fees, want) {
		t.Errorf("fees %q, want %q", fees, want)
	}
	// A resolution settles an instrument: a market id is not one.
	if want := []string{"mkt1", "nope"}; !slices.Equal(res, want) {
		t.Errorf("resolutions %q, want %q", res, want)
	}
	if want := []string{"x", "a"}; !slices.Equal(inst, want) {
		t.Errorf("instruments %q, want %q", inst, want)
	}
	if f, r, i := c.Unnamed(); len(f) != 5 || len(r) != 3 || len(i) != 4 {
		t.Errorf("no results: %q %q %q, want every id", f, r, i)
	}
	if f, r, i := (&Config{}).Unnamed(a); f != nil || r != nil || i != nil {
		t.Errorf("empty config: %q %q %q", f, r, i)
	}
}
