package polymarket

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

const (
	tokYes = "72936048731589292555781174533757608024096898681344338816447372274344589246891"
	tokNo  = "101155325224907042624192777106604175185803921887395325080529159889944296783944"
)

func TestInstrumentFactsGamma(t *testing.T) {
	body := `[{"conditionId":"0xc0","slug":"s","question":"Q?","active":true,"closed":false,"negRisk":true,"orderMinSize":5,"orderPriceMinTickSize":0.001,` +
		`"outcomes":"[\"Yes\", \"No\"]","clobTokenIds":"[\"` + tokYes + `\", \"` + tokNo + `\"]"},` +
		`{"conditionId":"0xbad","orderPriceMinTickSize":0.00001,"clobTokenIds":"[\"` + tokYes + `\"]"},` +
		`{"conditionId":"0xbad2","clobTokenIds":"[\"not-a-token\"]"}]`
	fs, err := Driver.Instruments([]byte(body))
	if !errors.Is(err, ErrInstrumentFacts) || !strings.Contains(err.Error(), "element 1") || !strings.Contains(err.Error(), "orderPriceMinTickSize") ||
		!strings.Contains(err.Error(), "element 2") {
		t.Fatalf("error %v, want elements 1 and 2 named", err)
	}
	if len(fs) != 2 {
		t.Fatalf("%d facts, want the good market's two tokens: %+v", len(fs), fs)
	}
	yes, no := fs[0], fs[1]
	if yes.Instrument != tokYes || yes.Outcome != "Yes" || yes.OutcomeIndex != 0 || !slices.Equal(yes.Paired, []string{tokNo}) ||
		no.Outcome != "No" || !slices.Equal(no.Paired, []string{tokYes}) {
		t.Fatalf("pairs: %+v %+v", yes, no)
	}
	if yes.Market != "0xc0" || yes.TickSize != 10 || yes.MinSize != 5e6 || yes.NegRisk != venue.FlagTrue || yes.Active != venue.FlagTrue ||
		yes.Source != sourceGamma || yes.Type != "binary_option" || yes.Name != "Q?" || yes.Slug != "s" {
		t.Fatalf("fields: %+v", yes)
	}
}

func TestInstrumentFactsSummariesAndMessages(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "real", "polypy_hash_vector_rest_book_summaries_2025-10.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	line := strings.SplitN(string(b), "\n", 2)[0]
	fs, err := instrumentFacts([]byte("[" + line + "]"))
	if err != nil || len(fs) != 1 {
		t.Fatalf("%v %+v", err, fs)
	}
	f := fs[0]
	if f.Source != sourceBookSummary || f.TickSize != 100 || f.MinSize != 5e6 || f.NegRisk != venue.FlagFalse ||
		f.Market != "0x2f1ab0ffaf465c4acd76b9a4a1f8980db26bfae7d248a6bb289350586028307e" || f.ExchangeNs != 1761179949036*1e6 {
		t.Fatalf("summary: %+v", f)
	}
	// A price_change, a later book without tick_size, a trade: no facts.
	for _, m := range []string{
		`{"event_type":"price_change","market":"0xc0","price_changes":[{"asset_id":"` + tokYes + `","price":"0.5","size":"1","side":"BUY"}],"timestamp":"1"}`,
		`{"event_type":"book","market":"0xc0","asset_id":"` + tokYes + `","bids":[],"asks":[],"timestamp":"1"}`,
		`{"event_type":"last_trade_price","asset_id":"` + tokYes + `","price":"0.5"}`,
		`PONG`,
	} {
		if fs, err := instrumentFacts([]byte(m)); fs != nil || err != nil {
			t.Fatalf("%s: %+v %v", m, fs, err)
		}
	}
	fs, err = instrumentFacts([]byte(`{"event_type":"book","market":"0xc0","asset_id":"` + tokYes + `","bids":[],"asks":[],"timestamp":"1700000000000","tick_size":"0.01"}`))
	if err != nil || len(fs) != 1 || fs[0].TickSize != 100 || fs[0].ExchangeNs != 1700000000000*1e6 || fs[0].Source != sourceBook {
		t.Fatalf("initial book: %+v %v", fs, err)
	}
	// new_market (the docs' example shape, as the shared fixture has it).
	nm, err := os.ReadFile(filepath.Join("testdata", "real", "nautilus_ws_misc_events.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(nm), "\n") {
		if !strings.Contains(l, `"new_market"`) {
			continue
		}
		fs, err := instrumentFacts([]byte(l))
		if err != nil || len(fs) < 2 || fs[0].Source != sourceNewMarket || len(fs[0].Paired) != len(fs)-1 || fs[0].Market == "" {
			t.Fatalf("new_market: %+v %v", fs, err)
		}
	}
	// Not JSON: an error, no facts.
	if fs, err := instrumentFacts([]byte(`<html>"asset_id"`)); fs != nil || !errors.Is(err, ErrInstrumentFacts) {
		t.Fatalf("html: %+v %v", fs, err)
	}
}

// factsArray (one scan and one decode per element) and factsRaw (the
// raw elements, each read again) agree on every body factsArray accepts,
// facts and errors alike, and factsArray leaves to factsRaw every body that
// is not a well-formed array.
func TestFactsArrayAgreesWithRaw(t *testing.T) {
	summaries, err := os.ReadFile(filepath.Join("testdata", "real", "polypy_hash_vector_rest_book_summaries_2025-10.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(summaries)), "\n")
	gamma := `{"conditionId":"0xc0","slug":"s","orderMinSize":5,"orderPriceMinTickSize":0.001,"outcomes":"[\"Yes\", \"No\"]",` +
		`"clobTokenIds":"[\"` + tokYes + `\", \"` + tokNo + `\"]","feesEnabled":true,"feeSchedule":{"rate":0.03}}`
	for _, c := range []struct {
		name, body string
		ok         bool
	}{
		{"summaries", "[" + strings.Join(lines, ",") + "]", true},
		{"gamma", "[" + gamma + "]", true},
		{"empty", "[]", true},
		{"nulls and scalars", `[null, 5, "x", [1], ` + gamma + `]`, true},
		{"a type error", `[{"conditionId":7,"clobTokenIds":"[\"` + tokYes + `\"]"}, ` + gamma + `]`, true},
		{"a bad fee schedule", `[{"conditionId":"0xbad","clobTokenIds":"[\"` + tokYes + `\"]","feeSchedule":{"rate":2}}]`, true},
		{"bad ids inside a string", `[{"conditionId":"0xbad","clobTokenIds":"[oops"}, ` + gamma + `]`, false},
		{"cut short", "[" + gamma + ", {\"asset_id\"", false},
		{"no comma", "[" + gamma + " " + gamma + "]", false},
		{"trailing text", "[" + gamma + "] x", false},
		{"a second value", "[" + gamma + "] []", false},
		{"not an array", `{"asset_id":"` + tokYes + `"}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(c.body)
			fs, ok, err := factsArray(body)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v (%v)", ok, c.ok, err)
			}
			if !ok {
				return
			}
			rfs, rerr := factsRaw(body, len(body))
			if !slices.EqualFunc(fs, rfs, sameFacts) || fmt.Sprint(err) != fmt.Sprint(rerr) {
				t.Fatalf("factsArray %+v, %v\nfactsRaw   %+v, %v", fs, err, rfs, rerr)
			}
			if c.name == "summaries" && len(fs) != len(lines) {
				t.Fatalf("%d facts of %d summaries", len(fs), len(lines))
			}
		})
	}
}

func sameFacts(a, b venue.Instrument) bool { return reflect.DeepEqual(a, b) }

// FuzzFactsArray: wherever factsArray reads a body, factsRaw reads the
// same facts and errors from it.
func FuzzFactsArray(f *testing.F) {
	f.Add(`[{"asset_id":"` + tokYes + `","market":"0xc0","tick_size":"0.01","min_order_size":"5"}]`)
	f.Add(`[null,{"conditionId":"0xc0","clobTokenIds":"[\"` + tokYes + `\"]","feeSchedule":{"rate":"0.02"}}]`)
	f.Add(`[{"conditionId":1}, 2]`)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 {
			return
		}
		fs, ok, err := factsArray([]byte(s))
		if !ok {
			return
		}
		rfs, rerr := factsRaw([]byte(s), len(s))
		if !slices.EqualFunc(fs, rfs, sameFacts) || fmt.Sprint(err) != fmt.Sprint(rerr) {
			t.Fatalf("%q:\nfactsArray %+v, %v\nfactsRaw   %+v, %v", s, fs, err, rfs, rerr)
		}
	})
}
