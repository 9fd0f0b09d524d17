package backtest

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// pmGamma is a Gamma /markets body listing pmMarket (YES pmYes, NO pmNo)
// with the given fee fields (raw JSON members, "" for none).
func pmGamma(fees string) string {
	m := `[{"id":"1","conditionId":"` + pmMarket + `","slug":"s","question":"Q?","active":true,"closed":false,` +
		`"orderMinSize":5,"orderPriceMinTickSize":0.01,"outcomes":"[\"Yes\", \"No\"]",` +
		`"clobTokenIds":"[\"` + pmYes + `\", \"` + pmNo + `\"]"`
	if fees != "" {
		m += "," + fees
	}
	return m + `}]`
}

// pmTradeFee prints a trade stating fee_rate_bps bps.
func (tp *tape) pmTradeFee(asset, side, price, size, bps string) {
	tp.frame(`{"event_type":"last_trade_price","asset_id":"` + asset + `","market":"` + pmMarket + `","price":"` + price +
		`","size":"` + size + `","side":"` + side + `","fee_rate_bps":"` + bps + `","timestamp":"` + tp.ms() + `"}`)
}

// buyYes takes 10 YES at the best ask (0.42 on pmTape's book) with a FOK
// and returns the fill.
func buyYes(t *testing.T, tp *tape, s *script) Fill {
	t.Helper()
	n := len(tp.e.fills)
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("4.2"), TIF: FOK})
	if len(tp.e.fills) != n+1 {
		t.Fatalf("%d fills, want %d", len(tp.e.fills), n+1)
	}
	return tp.e.fills[n]
}

// fee10 is the taker fee of 10 shares at 0.42: 10 × rate × 0.42 × 0.58.
func fee10(t *testing.T, rate string) int64 {
	t.Helper()
	r := cash(t, rate)
	return mulDivRound(r, 10*42*58, 0, 4) // rate × 2.436, exact at CashDecimals
}

// A market's taker rate from its recorded Gamma listing, to the last
// decimal, and the summary saying so.
func TestFeeRateFromRecordedListing(t *testing.T) {
	tp, s := pmTape(t, Config{FeeRate: 0.01})
	pre := buyYes(t, tp, s) // before the listing: the default, 10 × 0.01 × 0.42 × 0.58 = 0.02436
	if pre.Fee != cash(t, "0.02436") {
		t.Fatalf("fee before the listing %d", pre.Fee)
	}
	tp.rest(pmGamma(`"feesEnabled":true,"feeType":"crypto_fees","feeSchedule":{"exponent":1,"rate":0.07,"takerOnly":true,"rebateRate":0.2}`))
	listedAt := tp.recvNs
	f := buyYes(t, tp, s)
	// 10 × 0.07 × 0.42 × 0.58 = 0.17052.
	if f.Fee != cash(t, "0.17052") || f.Fee != fee10(t, "0.07") {
		t.Fatalf("fee %d, want 0.17052", f.Fee)
	}
	// A trade's fee_rate_bps ranks below the listing: nothing changes.
	tp.pmTradeFee(pmNo, "BUY", "0.60", "1", "300")
	if f := buyYes(t, tp, s); f.Fee != cash(t, "0.17052") {
		t.Fatalf("fee %d after a trade stating 300 bps, want the listing's 0.17052", f.Fee)
	}
	res := tp.e.Finish()
	got := res.Summary.FeeRates
	if len(got) != 2 || got[0].Source != "default" || got[0].Rate != 0.01 || got[0].Fills != 1 || got[0].SinceNs != 0 ||
		got[1].Market != pmMarket || got[1].Source != "recorded_listing" || got[1].Rate != 0.07 || got[1].Key != "crypto_fees" ||
		got[1].SinceNs != listedAt || got[1].Fills != 2 || math.Abs(got[1].Fees-2*0.17052) > 1e-12 {
		t.Fatalf("fee rates %+v", got)
	}
	var b strings.Builder
	res.Summary.WriteTable(&b)
	if !strings.Contains(b.String(), "fee rate       "+pmMarket+" 0.07 recorded_listing crypto_fees since ") {
		t.Fatalf("table:\n%s", b.String())
	}
	if len(res.Errors) != 0 {
		t.Fatalf("errors %v", res.Errors)
	}
}

// feesEnabled false is a fee-free market, whatever the default.
func TestFeeRateListingFeeFree(t *testing.T) {
	tp, s := pmTape(t, Config{FeeRate: 0.05})
	tp.rest(pmGamma(`"feesEnabled":false,"feeType":"geopolitics"`))
	if f := buyYes(t, tp, s); f.Fee != 0 {
		t.Fatalf("fee %d on a fee-free market", f.Fee)
	}
	if u := tp.e.Finish().Summary.FeeRates; len(u) != 1 || u[0].Source != "recorded_listing" || u[0].Rate != 0 {
		t.Fatalf("fee rates %+v", u)
	}
}

// No look-ahead: the rate a trade states at t applies from t on, never to
// a fill before t.
func TestFeeRateFromTradesNoLookAhead(t *testing.T) {
	tp, s := pmTape(t, Config{FeeRate: 0.02})
	tp.pmTrade(pmYes, "BUY", "0.42", "1") // no fee_rate_bps: says nothing
	before := buyYes(t, tp, s)
	tp.pmTradeFee(pmNo, "SELL", "0.58", "1", "500") // the NO token's trade: the market's rate
	seenAt := tp.recvNs
	after := buyYes(t, tp, s)
	if before.Fee != fee10(t, "0.02") || before.RecvNs >= seenAt {
		t.Fatalf("fill before the trade: fee %d at %d (trade at %d), want the default's %d", before.Fee, before.RecvNs, seenAt, fee10(t, "0.02"))
	}
	// 10 × 0.05 × 0.42 × 0.58 = 0.1218.
	if after.Fee != cash(t, "0.1218") {
		t.Fatalf("fill after the trade: fee %d, want 0.1218", after.Fee)
	}
	// The rate changes with the trades: "0" from here on.
	tp.pmTradeFee(pmYes, "BUY", "0.42", "1", "0")
	if f := buyYes(t, tp, s); f.Fee != 0 {
		t.Fatalf("fee %d after a trade stating 0 bps", f.Fee)
	}
	u := tp.e.Finish().Summary.FeeRates
	if len(u) != 3 || u[0].Source != "default" || u[1].Source != "recorded_trades" || u[1].Rate != 0.05 || u[1].SinceNs != seenAt ||
		u[2].Source != "recorded_trades" || u[2].Rate != 0 || u[2].SinceNs <= seenAt {
		t.Fatalf("fee rates %+v", u)
	}
}

// Precedence: --fee TOKEN > --fee MARKET > --fee-category > the recorded
// listing > the recorded trades > --fee-rate.
func TestFeeRatePrecedence(t *testing.T) {
	listing := pmGamma(`"feesEnabled":true,"feeType":"Crypto_Fees","feeSchedule":{"exponent":1,"rate":"0.07"}`)
	for _, c := range []struct {
		name    string
		cfg     Config
		listing bool
		rate    string
		src     string
		key     string
	}{
		{"token", Config{FeeRate: 0.01, FeeRates: map[string]float64{pmYes: 0.04, pmMarket: 0.03}, FeeCategories: map[string]float64{"crypto": 0.02}}, true, "0.04", "config_instrument", pmYes},
		{"market", Config{FeeRate: 0.01, FeeRates: map[string]float64{pmNo: 0.5, pmMarket: 0.03}, FeeCategories: map[string]float64{"crypto": 0.02}}, true, "0.03", "config_market", pmMarket},
		{"category", Config{FeeRate: 0.01, FeeCategories: map[string]float64{"CRYPTO": 0.02, "sports": 0.5}}, true, "0.02", "config_category", "CRYPTO"},
		{"category with suffix", Config{FeeCategories: map[string]float64{"crypto_fees": 0.025}}, true, "0.025", "config_category", "crypto_fees"},
		{"listing", Config{FeeRate: 0.01, FeeCategories: map[string]float64{"sports": 0.5}}, true, "0.07", "recorded_listing", "Crypto_Fees"},
		{"trades", Config{FeeRate: 0.01, FeeCategories: map[string]float64{"crypto": 0.5}}, false, "0.06", "recorded_trades", ""},
		{"default", Config{FeeRate: 0.01}, false, "0.01", "default", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp, s := pmTape(t, c.cfg)
			if c.listing {
				tp.rest(listing)
			}
			if c.src != "default" {
				tp.pmTradeFee(pmYes, "BUY", "0.42", "1", "600")
			}
			if f := buyYes(t, tp, s); f.Fee != fee10(t, c.rate) {
				t.Fatalf("fee %d, want %d (rate %s)", f.Fee, fee10(t, c.rate), c.rate)
			}
			u := tp.e.Finish().Summary.FeeRates
			if len(u) != 1 || u[0].Source != c.src || u[0].Key != c.key || u[0].Market != pmMarket {
				t.Fatalf("fee rates %+v, want source %s key %s", u, c.src, c.key)
			}
		})
	}
	if err := (&Config{FeeCategories: map[string]float64{"crypto": 0.1, "Crypto_fees": 0.2}}).Validate(); err == nil {
		t.Fatal("two keys of one category accepted")
	}
	if err := (&Config{FeeCategories: map[string]float64{"crypto": -0.1}}).Validate(); err == nil {
		t.Fatal("a negative category rate accepted")
	}
}

// Bad recorded metadata never panics: a value that does not read is a
// problem in Result.Errors (once per market and kind) and changes nothing;
// a schedule the model cannot price (exponent 2) is not used, and said so.
func TestFeeRateBadMetadata(t *testing.T) {
	tp, s := pmTape(t, Config{FeeRate: 0.02})
	tp.rest(pmGamma(`"feesEnabled":true,"feeSchedule":{"rate":"NaN","exponent":1}`))
	tp.rest(pmGamma(`"feesEnabled":true,"feeSchedule":{"rate":-0.05}`))
	tp.rest(`{"not":"a listing"}`)
	tp.rest(`[{"conditionId":"` + pmMarket + `","clobTokenIds":"[\"x\"]"}]`)
	tp.pmTradeFee(pmYes, "BUY", "0.42", "1", "abc")
	tp.pmTradeFee(pmYes, "BUY", "0.42", "1", "-5")
	if f := buyYes(t, tp, s); f.Fee != fee10(t, "0.02") {
		t.Fatalf("fee %d after bad metadata, want the default's", f.Fee)
	}
	// Tick and minimum size of the listing still apply (its fee did not read).
	if in := tp.e.insts[pmYes]; in.MinSize != tp.sz("5") || in.Tick != tp.px("0.01") {
		t.Fatalf("rules %d %d", in.MinSize, in.Tick)
	}
	tp.rest(pmGamma(`"feesEnabled":true,"feeSchedule":{"rate":0.25,"exponent":2}`))
	tp.rest(pmGamma(`"feesEnabled":true,"feeSchedule":{"rate":0.25,"exponent":2}`))
	if f := buyYes(t, tp, s); f.Fee != fee10(t, "0.02") {
		t.Fatalf("fee %d with an exponent-2 schedule, want the default's", f.Fee)
	}
	res := tp.e.Finish()
	var all []string
	for _, err := range res.Errors {
		all = append(all, err.Error())
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{"feeSchedule.rate \"NaN\"", "feeSchedule.rate -0.05", "token id \"x\"",
		"fee_rate_bps \"abc\"", "exponent 2"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("problems lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, `"-5"`) || strings.Count(joined, "exponent 2") != 1 {
		t.Fatalf("problems repeated per market and kind:\n%s", joined)
	}
}

// The complement taker's fee_rate=auto prices each leg at the rate the
// simulator will charge it, so a recorded 7% listing closes an edge that
// a fee-free market leaves open: asks 0.45 + 0.50 = 0.95; fees at 0.07
// add 0.07 × (0.45 × 0.55 + 0.50 × 0.50) = 0.034825, above the 0.03 left
// by edge 0.02.
func TestComplementAutoFeeRate(t *testing.T) {
	for _, c := range []struct {
		listing string
		orders  int
	}{
		{`"feesEnabled":true,"feeType":"crypto_fees","feeSchedule":{"exponent":1,"rate":0.07}`, 0},
		{`"feesEnabled":false`, 2},
	} {
		st, _, err := NewBuiltin("complement", Params{"edge": "0.02"})
		if err != nil {
			t.Fatal(err)
		}
		tp := newTape(t, "polymarket", st, Config{Cash: cash(t, "1000"), FeeRate: 0})
		tp.rest(pmGamma(c.listing))
		tp.pmBook(pmYes, "0.40:100", "0.45:100")
		tp.pmBook(pmNo, "0.48:100", "0.50:100")
		tp.idle(3)
		if n := len(tp.e.orders); n != c.orders {
			t.Fatalf("%s: %d orders, want %d", c.listing, n, c.orders)
		}
		if r, src, ok := tp.e.ctx.TakerFeeRate(pmNo); !ok || src != FeeListing || (c.orders == 0) != (r == 0.07) {
			t.Fatalf("%s: TakerFeeRate %v %v %v", c.listing, r, src, ok)
		}
	}
	if _, _, err := NewBuiltin("complement", Params{"fee_rate": "autox"}); err == nil {
		t.Fatal("fee_rate=autox accepted")
	}
}

// RecordedRebates: a maker fill's rebate share is the market's recorded
// listing's rebateRate from the moment it is received, MakerRebateShare
// before (and where none is stated).
func TestRecordedMakerRebate(t *testing.T) {
	tp, s := pmTape(t, Config{FeeRate: 0.05, MakerRebateShare: 0.5, RecordedRebates: true})
	maker := func() Fill {
		t.Helper()
		n := len(tp.e.fills)
		tp.submit(s, OrderRequest{Instrument: pmYes, Side: Sell, Price: tp.px("0.43"), Size: tp.sz("10"), TIF: GTC})
		tp.pmTrade(pmYes, "BUY", "0.44", "10") // prints through it: a maker fill
		if len(tp.e.fills) != n+1 || tp.e.fills[n].Liquidity != Maker {
			t.Fatalf("fills %+v", tp.e.fills)
		}
		return tp.e.fills[n]
	}
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("33.6"), TIF: FOK}) // 80 shares to sell
	// 10 × 0.05 × 0.43 × 0.57 = 0.12255: half of it before the listing,
	if f := maker(); f.Fee != -cash(t, "0.061275") {
		t.Fatalf("rebate %d before the listing, want −0.061275", f.Fee)
	}
	tp.rest(pmGamma(`"feesEnabled":true,"feeType":"sports_fees","feeSchedule":{"exponent":1,"rate":0.05,"takerOnly":true,"rebateRate":0.25}`))
	// a quarter of it after.
	if f := maker(); f.Fee != -cash(t, "0.0306375") {
		t.Fatalf("rebate %d after the listing, want −0.0306375", f.Fee)
	}
	// Without RecordedRebates the listing's share is not used.
	tp2, s2 := pmTape(t, Config{FeeRate: 0.05, MakerRebateShare: 0.5})
	tp2.rest(pmGamma(`"feesEnabled":true,"feeSchedule":{"rate":0.05,"rebateRate":0.25}`))
	tp2.submit(s2, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp2.px("0.42"), Amount: tp2.px("33.6"), TIF: FOK})
	tp2.submit(s2, OrderRequest{Instrument: pmYes, Side: Sell, Price: tp2.px("0.43"), Size: tp2.sz("10"), TIF: GTC})
	tp2.pmTrade(pmYes, "BUY", "0.44", "10")
	if f := tp2.e.fills[len(tp2.e.fills)-1]; f.Fee != -cash(t, "0.061275") {
		t.Fatalf("rebate %d, want MakerRebateShare's −0.061275", f.Fee)
	}
}

// A listing of the venue's every market costs nothing for the markets the
// recording never trades: no instrument until an event names one, and
// then its listed tick, minimum size and fees apply.
func TestListingOfManyMarkets(t *testing.T) {
	tp, _ := pmTape(t, Config{})
	n0 := len(tp.e.instList)
	var b strings.Builder
	b.WriteString("[")
	for i := range 2000 {
		fmt.Fprintf(&b, `{"conditionId":"0x%064x","orderMinSize":5,"orderPriceMinTickSize":0.01,"clobTokenIds":"[\"%077d\", \"%077d\"]","feesEnabled":true,"feeSchedule":{"rate":0.04}},`,
			i+1, 2*i+1, 2*i+2)
	}
	const other = "90000000000000000000000000000000000000000000000000000000000000000000000000003"
	b.WriteString(`{"conditionId":"0xabc","orderMinSize":15,"orderPriceMinTickSize":0.001,"clobTokenIds":"[\"` + other + `\", \"4\"]","feesEnabled":true,"feeSchedule":{"rate":0.05}}]`)
	tp.rest(b.String())
	if n := len(tp.e.instList); n != n0 {
		t.Fatalf("%d instruments after the listing, want %d", n, n0)
	}
	tp.frame(`{"event_type":"book","asset_id":"` + other + `","market":"0xabc","timestamp":"` + tp.ms() +
		`","bids":[{"price":"0.400","size":"100"}],"asks":[{"price":"0.420","size":"100"}]}`)
	in := tp.e.insts[other]
	if in == nil || in.Tick != tp.px("0.001") || in.MinSize != tp.sz("15") || in.Market != "0xabc" {
		t.Fatalf("listed rules not applied: %+v", in)
	}
	if r, src, ok := tp.e.ctx.TakerFeeRate(other); !ok || r != 0.05 || src != FeeListing {
		t.Fatalf("listed fee %v %v %v", r, src, ok)
	}
}

// A trade's fee_rate_bps of 1000 is the base fee orders sign on every
// fee-charging market, not the rate: the market's rate stays what it was.
// Fees are floored to 0.00001.
func TestFeeBaseRateAndRounding(t *testing.T) {
	tp, s := pmTape(t, Config{FeeRate: 0.07})
	tp.frame(`{"event_type":"last_trade_price","asset_id":"` + pmYes + `","market":"` + pmMarket +
		`","price":"0.42","size":"5","side":"BUY","fee_rate_bps":"1000","timestamp":"` + tp.ms() + `"}`)
	// $2.94 at 0.42: 7 shares; 7 × 0.07 × 0.42 × 0.58 = 0.119364, charged 0.11936.
	tp.submit(s, OrderRequest{Instrument: pmYes, Side: Buy, Price: tp.px("0.42"), Amount: tp.px("2.94"), TIF: FOK})
	if len(tp.e.fills) != 1 || tp.e.fills[0].Fee != cash(t, "0.11936") {
		t.Fatalf("fills %+v, want a fee of 0.11936 at the 0.07 rate", tp.e.fills)
	}
}
