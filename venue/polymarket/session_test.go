package polymarket

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const (
	tokA = "72936048731589292555781174533757608024096898681344338816447372274344589246891"
	tokB = "101155325224907042624192777106604175185803921887395325080529159889944296783944"
)

func TestSessionFrames(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"subscribe", appendSubscribe(nil, []string{tokA, tokB}),
			`{"assets_ids":["` + tokA + `","` + tokB + `"],"type":"market","custom_feature_enabled":true}`},
		{"dynamic", AppendDynamicSubscribe(nil, []string{tokA}),
			`{"assets_ids":["` + tokA + `"],"operation":"subscribe","custom_feature_enabled":true}`},
		{"unsubscribe", AppendUnsubscribe(nil, []string{tokB}), `{"assets_ids":["` + tokB + `"],"operation":"unsubscribe"}`},
		{"escaped", AppendUnsubscribe([]byte("x"), []string{"a\"b\n"}), `x{"assets_ids":["a\"b\u000a"],"operation":"unsubscribe"}`},
	} {
		if string(tc.got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.got, tc.want)
		}
		if !json.Valid(tc.got[strings.IndexByte(string(tc.got), '{'):]) {
			t.Errorf("%s: not JSON", tc.name)
		}
	}
}

func TestPlanConnsShards(t *testing.T) {
	ids := make([]string, 0, 1234)
	for i := range 1234 {
		ids = append(ids, fmt.Sprintf("%077d", i))
	}
	ids = append(ids, ids[5]) // a duplicate is dropped
	for _, tc := range []struct {
		perConn, conns int
	}{{0, 7}, {500, 3}, {100, 13}, {1, 1234}} {
		plans, err := planConns(ids, tc.perConn)
		if err != nil {
			t.Fatal(err)
		}
		if len(plans) != tc.conns {
			t.Errorf("perConn %d: %d connections, want %d", tc.perConn, len(plans), tc.conns)
		}
		var all []string
		for _, p := range plans {
			all = append(all, p.Assets...)
			var sub []string
			for i, f := range p.Subscribe {
				var m struct {
					IDs       []string `json:"assets_ids"`
					Type      string   `json:"type"`
					Operation string   `json:"operation"`
				}
				if err := json.Unmarshal(f, &m); err != nil {
					t.Fatal(err)
				}
				if len(m.IDs) > MaxSubscribeIDs || (i == 0) != (m.Type == "market") || (i > 0) != (m.Operation == "subscribe") {
					t.Errorf("frame %d: %d ids, type %q, operation %q", i, len(m.IDs), m.Type, m.Operation)
				}
				sub = append(sub, m.IDs...)
			}
			if !slices.Equal(sub, p.Assets) {
				t.Errorf("subscribe frames name other assets than the connection carries")
			}
		}
		if !slices.Equal(all, ids[:1234]) {
			t.Errorf("perConn %d: assets not kept in order, once each", tc.perConn)
		}
	}
	for _, bad := range []struct {
		ids     []string
		perConn int
	}{{[]string{tokA}, 501}, {[]string{tokA}, -1}, {[]string{"0xabc"}, 0}, {[]string{""}, 0}} {
		if _, err := planConns(bad.ids, bad.perConn); err == nil {
			t.Errorf("planConns(%v, %d) accepted", bad.ids, bad.perConn)
		}
	}
	if _, err := planConns([]string{"some-slug"}, 0); !errors.Is(err, ErrTokenID) || !strings.Contains(err.Error(), "some-slug") {
		t.Errorf("slug: %v", err)
	}
}

func TestIDKinds(t *testing.T) {
	if !isTokenID(tokA) || isTokenID("12a") || isTokenID(strings.Repeat("1", 79)) {
		t.Error("isTokenID")
	}
	if !isConditionID("0x84c0ffe3f56cb357ff5ff8bc5d2182ae90be4dd6718e8403a6af472b452dbfa8") || isConditionID("0x84c0") || isConditionID(tokA) {
		t.Error("isConditionID")
	}
}

func TestParseGammaMarkets(t *testing.T) {
	body := `[{"id":"516710","question":"Q","conditionId":"0x84c0ffe3f56cb357ff5ff8bc5d2182ae90be4dd6718e8403a6af472b452dbfa8",
	"slug":"s","active":true,"closed":false,"outcomes":"[\"Yes\", \"No\"]","clobTokenIds":"[\"` + tokA + `\", \"` + tokB + `\"]"},
	{"id":7,"slug":"arr","active":false,"closed":true,"clobTokenIds":["` + tokA + `"],"outcomes":null},
	{"id":"8","slug":"none","clobTokenIds":""}]`
	ms, err := parseGammaMarkets([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[0].ID != "516710" || !slices.Equal(ms[0].TokenIDs, []string{tokA, tokB}) ||
		!slices.Equal(ms[0].Outcomes, []string{"Yes", "No"}) || !ms[0].Active || ms[0].Closed {
		t.Errorf("market 0: %+v", ms[0])
	}
	if ms[1].ID != "7" || !ms[1].Closed || len(ms[1].TokenIDs) != 1 || ms[2].TokenIDs != nil {
		t.Errorf("markets 1-2: %+v %+v", ms[1], ms[2])
	}
	for _, bad := range []string{`{}`, `[{"clobTokenIds":"[\"0xnot\"]"}]`, `[{"clobTokenIds":"[1,"}]`, ``} {
		if _, err := parseGammaMarkets([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := gammaMarketsPath(500, 500); got != "/markets?active=true&closed=false&limit=500&offset=500" {
		t.Errorf("path %s", got)
	}
	if got := gammaSlugPath("a b&c"); got != "/markets?slug=a+b%26c" {
		t.Errorf("slug path %s", got)
	}
}

func TestParseMarketLifecycle(t *testing.T) {
	newMarket := `{"event_type":"new_market","id":"1031769","market":"0x311d","assets_ids":["` + tokA + `","` + tokB + `"],"outcomes":["Yes","No"]}`
	resolved := `{"event_type":"market_resolved","market":"0x311d","assets_ids":["` + tokA + `","` + tokB + `"],"winning_asset_id":"` + tokA + `"}`
	for _, tc := range []struct {
		name, frame string
		want        []marketLifecycle
	}{
		{"book", `{"event_type":"book","asset_id":"` + tokA + `"}`, nil},
		{"new", newMarket, []marketLifecycle{{Market: "0x311d", AssetIDs: []string{tokA, tokB}}}},
		{"resolved in array", `[` + resolved + `,{"event_type":"book"}]`, []marketLifecycle{{Resolved: true, Market: "0x311d", AssetIDs: []string{tokA, tokB}}}},
		{"clob ids only", `{"event_type":"new_market","market":"m","clob_token_ids":["` + tokB + `","bad"]}`, []marketLifecycle{{Market: "m", AssetIDs: []string{tokB}}}},
		{"question mentions it", `{"event_type":"book","q":"new_market"}`, nil},
	} {
		got, err := parseMarketLifecycle([]byte(tc.frame))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if _, err := parseMarketLifecycle([]byte(`{"event_type":"new_market",`)); err == nil {
		t.Error("truncated lifecycle frame accepted")
	}
	book := []byte(`{"event_type":"book","asset_id":"` + tokA + `","bids":[]}`)
	if n := testing.AllocsPerRun(100, func() { parseMarketLifecycle(book) }); n != 0 {
		t.Errorf("%v allocations on an ordinary frame", n)
	}
}
