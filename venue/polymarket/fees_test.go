package polymarket

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

// gammaFeeMarket is a Gamma market object in the 2026 shape of the fee
// fields (feesEnabled, feeType, feeSchedule {exponent, rate, takerOnly,
// rebateRate}; docs.polymarket.com trading/fees), with schedule as given.
func gammaFeeMarket(cond, enabled, feeType, schedule string) string {
	m := `{"id":"1","conditionId":"` + cond + `","slug":"s","question":"Q?","active":true,"closed":false,` +
		`"orderMinSize":5,"orderPriceMinTickSize":0.01,"outcomes":"[\"Yes\", \"No\"]",` +
		`"clobTokenIds":"[\"` + tokYes + `\", \"` + tokNo + `\"]"`
	if enabled != "" {
		m += `,"feesEnabled":` + enabled
	}
	if feeType != "" {
		m += `,"feeType":"` + feeType + `"`
	}
	if schedule != "" {
		m += `,"feeSchedule":` + schedule
	}
	return m + `}`
}

func TestInstrumentFactsGammaFees(t *testing.T) {
	for _, c := range []struct {
		name, enabled, feeType, schedule string
		flag                             venue.Flag
		rate, exp                        float64
	}{
		{"number rate", "true", "crypto_fees", `{"exponent":1,"rate":0.07,"takerOnly":true,"rebateRate":0.2}`, venue.FlagTrue, 0.07, 1},
		{"string rate", "true", "crypto_fees", `{"rate":"0.072","exponent":"1"}`, venue.FlagTrue, 0.072, 1},
		{"fee free", "false", "", "", venue.FlagFalse, -1, 0},
		{"exponent 2", "true", "crypto_fees", `{"exponent":2,"rate":0.25,"takerOnly":true}`, venue.FlagTrue, 0.25, 2},
		{"empty rate", "true", "", `{"rate":"","exponent":1}`, venue.FlagTrue, -1, 1},
		{"null schedule", "", "", `null`, venue.FlagUnknown, -1, 0},
		{"nothing said", "", "", "", venue.FlagUnknown, -1, 0},
	} {
		fs, err := instrumentFacts([]byte("[" + gammaFeeMarket("0xc0", c.enabled, c.feeType, c.schedule) + "]"))
		if err != nil || len(fs) != 2 {
			t.Fatalf("%s: %v %+v", c.name, err, fs)
		}
		rebate := -1.0
		if c.name == "number rate" {
			rebate = 0.2
		}
		for _, f := range fs {
			if f.FeesEnabled != c.flag || f.FeeType != c.feeType || f.TakerFeeRate != c.rate || f.FeeExponent != c.exp ||
				f.MakerRebateShare != rebate || f.TickSize != 100 || f.MinSize != 5e6 {
				t.Fatalf("%s: %+v", c.name, f)
			}
		}
	}
	// Bad values: the error names the market and the field, the market's
	// other facts are kept (its fee unstated), the next market reads.
	for _, bad := range []struct{ schedule, field string }{
		{`{"rate":-0.01,"exponent":1}`, "feeSchedule.rate"},
		{`{"rate":"NaN","exponent":1}`, "feeSchedule.rate"},
		{`{"rate":"abc"}`, "feeSchedule.rate"},
		{`{"rate":1.5}`, "feeSchedule.rate"},
		{`{"rate":0.05,"exponent":-1}`, "feeSchedule.exponent"},
		{`{"rate":0.05,"exponent":"Infinity"}`, "feeSchedule.exponent"},
		{`{"rate":[1]}`, "feeSchedule.rate"},
		{`{"rate":0.05,"rebateRate":"1.5"}`, "feeSchedule.rebateRate"},
		{`{"rate":0.05,"rebateRate":"-"}`, "feeSchedule.rebateRate"},
	} {
		body := "[" + gammaFeeMarket("0xbad", "true", "", bad.schedule) + "," + gammaFeeMarket("0xc1", "true", "", `{"rate":0.03}`) + "]"
		fs, err := instrumentFacts([]byte(body))
		if !errors.Is(err, ErrInstrumentFacts) || !strings.Contains(err.Error(), "element 0") || !strings.Contains(err.Error(), "0xbad") ||
			!strings.Contains(err.Error(), bad.field) {
			t.Fatalf("%s: error %v", bad.schedule, err)
		}
		if len(fs) != 4 || fs[0].Market != "0xbad" || fs[0].TakerFeeRate != -1 || fs[0].MakerRebateShare != -1 || fs[0].TickSize != 100 ||
			fs[2].Market != "0xc1" || fs[2].TakerFeeRate != 0.03 {
			t.Fatalf("%s: facts %+v", bad.schedule, fs)
		}
	}
}

func TestTradeFeeRate(t *testing.T) {
	trade := func(v string) []byte {
		return []byte(`{"asset_id":"` + tokYes + `","event_type":"last_trade_price",` + v + `"market":"0xc0","price":"0.5","side":"BUY","size":"10","timestamp":"1"}`)
	}
	for _, c := range []struct {
		field string
		rate  float64
		ok    bool
	}{
		{`"fee_rate_bps":"0",`, 0, true},
		{`"fee_rate_bps":"700",`, 0.07, true},
		// 1000 and above: the base fee orders sign, not a rate.
		{`"fee_rate_bps" : "1000" ,`, 0, false},
		{`"fee_rate_bps":"999.9999",`, 0.09999999, true},
		{`"fee_rate_bps":12.5,`, 0.00125, true},
		{`"fee_rate_bps":"10000",`, 0, false},
		{``, 0, false},
		{`"fee_rate_bps":"",`, 0, false},
		{`"fee_rate_bps":null,`, 0, false},
	} {
		r, ok, err := tradingRules.TradeFeeRate(trade(c.field))
		if err != nil || ok != c.ok || math.Abs(r-c.rate) > 1e-15 {
			t.Fatalf("%s: %v %v %v, want %v %v", c.field, r, ok, err, c.rate, c.ok)
		}
	}
	for _, bad := range []string{`"fee_rate_bps":"-5",`, `"fee_rate_bps":"abc",`, `"fee_rate_bps":"NaN",`,
		`"fee_rate_bps":"10001",`, `"fee_rate_bps":"1e3",`, `"fee_rate_bps":"0x10",`, `"fee_rate_bps":true,`} {
		if r, ok, err := tradingRules.TradeFeeRate(trade(bad)); err == nil || ok || r != 0 || !strings.Contains(err.Error(), "fee_rate_bps") {
			t.Fatalf("%s: %v %v %v, want an error naming fee_rate_bps", bad, r, ok, err)
		}
	}
	// Truncated: an open string is an error, never a read past the end.
	if _, _, err := tradingRules.TradeFeeRate([]byte(`{"fee_rate_bps":"7`)); err == nil {
		t.Fatal("truncated value accepted")
	}
	// The real 2024 trade of the shared fixtures states "0": a fee-free market.
	b, err := os.ReadFile(filepath.Join("testdata", "real", "nautilus_ws_misc_events.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	line := strings.SplitN(string(b), "\n", 2)[0]
	if r, ok, err := tradingRules.TradeFeeRate([]byte(line)); !ok || r != 0 || err != nil {
		t.Fatalf("real trade: %v %v %v", r, ok, err)
	}
	raw := trade(`"fee_rate_bps":"700",`)
	if n := testing.AllocsPerRun(100, func() { _, _, _ = tradingRules.TradeFeeRate(raw) }); n != 0 {
		t.Fatalf("%v allocations per read", n)
	}
}

// FuzzFees: whatever a trade or a Gamma listing holds, the fee readers
// never panic, a rate read is a fraction within [0, 1], and a listing's
// facts state a rate only within [0, 1] and an exponent only above 0.
func FuzzFees(f *testing.F) {
	f.Add([]byte(`{"event_type":"last_trade_price","fee_rate_bps":"700","price":"0.5"}`))
	f.Add([]byte(`{"fee_rate_bps":`))
	f.Add([]byte(`{"fee_rate_bps" :  "99999999999999999999"}`))
	f.Add([]byte("[" + gammaFeeMarket("0xc0", "true", "crypto_fees", `{"exponent":1,"rate":"0.072","rebateRate":0.2}`) + "]"))
	f.Add([]byte("[" + gammaFeeMarket("0xc0", "true", "", `{"rate":"1e400"}`) + "]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, ok, err := tradingRules.TradeFeeRate(b); ok && (err != nil || !(r >= 0 && r <= 1)) {
			t.Fatalf("trade rate %v %v", r, err)
		}
		fs, _ := instrumentFacts(b)
		for _, in := range fs {
			if in.TakerFeeRate != -1 && !(in.TakerFeeRate >= 0 && in.TakerFeeRate <= 1) ||
				in.MakerRebateShare != -1 && !(in.MakerRebateShare >= 0 && in.MakerRebateShare <= 1) ||
				in.FeeExponent < 0 || math.IsNaN(in.FeeExponent) {
				t.Fatalf("fees %+v", in)
			}
		}
	})
}
