package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// captureFrom records spec from the test exchange s on loopback until enough
// reports that the recording holds what the test needs, and returns the
// dataset's directory.
func captureFrom(t *testing.T, s *fakeexchange.Server, spec recorder.Spec, enough func() bool) string {
	t.Helper()
	spec.Endpoint, spec.RESTEndpoint = s.WSURL(), s.RESTURL()
	r, err := recorder.New(spec, recorder.WithBackoff(5*time.Millisecond, 50*time.Millisecond),
		recorder.WithFlushInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := r.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), spec.Venue)
	w, err := datasets.Create(dir, r.Manifest(), datasets.WithFlushInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, w) }()
	for deadline := time.Now().Add(20 * time.Second); !enough(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("timed out waiting for the test exchange's frames")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sentContaining counts the frames s sent that contain sub.
func sentContaining(s *fakeexchange.Server, sub string) int {
	n := 0
	for _, c := range s.Conns() {
		for _, f := range c.Sent() {
			if bytes.Contains(f, []byte(sub)) {
				n++
			}
		}
	}
	return n
}

// recordsOf returns every record of a dataset (payloads copied).
func recordsOf(t *testing.T, dir string) []datasets.Record {
	t.Helper()
	rd, err := datasets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []datasets.Record
	for rd.Next() {
		r := *rd.Record()
		r.Payload = bytes.Clone(r.Payload)
		out = append(out, r)
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// messages splits a frame into its JSON objects (one, or an array's).
func messages(frame []byte) []map[string]any {
	var one map[string]any
	if json.Unmarshal(frame, &one) == nil {
		return []map[string]any{one}
	}
	var many []map[string]any
	_ = json.Unmarshal(frame, &many)
	return many
}

// instrumentsRows exports the instruments table of dir as Parquet, Arrow and
// CSV, reads the first with DuckDB and the second with Arrow JS, checks
// both readers and the CSV hold the same rows, and returns DuckDB's rows by
// instrument.
func instrumentsRows(t *testing.T, dir string, extra ...string) (jsTable, map[string][][]any) {
	t.Helper()
	out := t.TempDir()
	pq, ar, cs := filepath.Join(out, "i.parquet"), filepath.Join(out, "i.arrow"), filepath.Join(out, "i.csv")
	for _, p := range []string{pq, ar, cs} {
		expMust(t, append([]string{"export", dir, "--table", "instruments", "--out", p}, extra...)...)
	}
	var duck struct {
		Tables map[string]jsTable `json:"tables"`
	}
	if err := json.Unmarshal(nodeScript(t, "duckdb_check.mjs", "instruments="+pq), &duck); err != nil {
		t.Fatal(err)
	}
	var arrowJS struct {
		Tables map[string]jsTable `json:"tables"`
	}
	if err := json.Unmarshal(nodeScript(t, "arrow_check.mjs", "instruments="+ar), &arrowJS); err != nil {
		t.Fatal(err)
	}
	d, a := duck.Tables["instruments"], arrowJS.Tables["instruments"]
	for _, c := range []string{"exchange_ts_ns", "local_ts_ns", "valid_until_ns"} {
		if ty := d.Types[d.col(t, c)]; ty != "TIMESTAMP_NS" {
			t.Fatalf("%s is %s, want TIMESTAMP_NS (TIMESTAMP(NANOS), no zone)", c, ty)
		}
	}
	f, err := os.Open(cs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !equalStrings(d.Columns, a.Columns) || !equalStrings(d.Columns, recs[0]) || len(d.Rows) != len(a.Rows) || len(d.Rows) != len(recs)-1 {
		t.Fatalf("columns DuckDB %v Arrow JS %v CSV %v; rows %d %d %d", d.Columns, a.Columns, recs[0], len(d.Rows), len(a.Rows), len(recs)-1)
	}
	for i := range d.Rows {
		for c := range d.Columns {
			x, y, z := jsCell(d.Rows[i][c]), jsCell(a.Rows[i][c]), recs[i+1][c]
			if x == "" && (z == "0" || z == "-1") {
				z = "" // CSV writes an integer column's null as 0 (-1 where 0 is a value)
			}
			if d.Types[c] == "DOUBLE" && z != "" {
				z = floatOf(t, z) // CSV: exact decimal text
			}
			if x != y || x != z {
				t.Fatalf("row %d %s: DuckDB %q, Arrow JS %q, CSV %q", i, d.Columns[c], x, y, z)
			}
		}
	}
	by := map[string][][]any{}
	for _, r := range d.Rows {
		inst := jsCell(r[d.col(t, "instrument")])
		by[inst] = append(by[inst], r)
	}
	return d, by
}

// jsonNum renders a Gamma number (or numeric string) as the shortest float text.
func jsonNum(t *testing.T, v any) string {
	t.Helper()
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return floatOf(t, v)
	}
	t.Fatalf("not a number: %v", v)
	return ""
}

// TestInstrumentsFromPolymarketCapture: a capture from the test exchange
// (Gamma discovery by slug, CLOB book summaries before the connect, market
// channel frames with tick size changes), exported as the instruments table
// and read back by DuckDB: each token's first row holds what the recorded
// Gamma body and book summary say (condition id, outcome, the paired token,
// tick size, minimum order size, neg-risk, slug, question), and each later
// row is a recorded tick_size_change that changed the tick, at its time (one
// older than the last change by the venue's clock is old news, no change).
func TestInstrumentsFromPolymarketCapture(t *testing.T) {
	if testing.Short() {
		t.Skip("captures from the test exchange and runs node; skipped in -short")
	}
	cfg := fakeexchange.PolymarketConfig()
	const cond = "0x84c0ffe3f56cb357ff5ff8bc5d2182ae90be4dd6718e8403a6af472b452dbfa8" // the frames' market
	// Gamma's real shape, with the fields the shared listing leaves out:
	// negRisk, orderMinSize and orderPriceMinTickSize as numbers. (Discovery
	// by slug asks for one market: the second is not in the recording.)
	cfg.Markets = []byte(`[{"id":"516710","question":"Semi-synthetic stream market","conditionId":"` + cond + `","slug":"polypy-stream-market","active":true,"closed":false,"negRisk":true,"orderMinSize":5,"orderPriceMinTickSize":0.01,"outcomes":"[\"Yes\", \"No\"]","clobTokenIds":"[\"72936048731589292555781174533757608024096898681344338816447372274344589246891\", \"101155325224907042624192777106604175185803921887395325080529159889944296783944\"]"},
{"id":"612004","question":"Best-bid-ask docs market","conditionId":"0x0005c0d312de0be897668695bae9f32b624b4a1ae8b140c49f08447fcc74f442","slug":"best-bid-ask-docs-market","active":true,"closed":false,"negRisk":false,"orderMinSize":15,"orderPriceMinTickSize":0.001,"outcomes":"[\"Yes\", \"No\"]","clobTokenIds":"[\"85354956062430465315924116860125388538595433819574542752031640332592237464430\", \"115474063863764126958837769719736461272619491980773624567012766320777398670353\"]"}]`)
	// The real summary (of another market) made this market's: its market
	// and neg_risk as the listing says, so that the venue agrees with itself.
	sum := cfg.Summary.Frame
	sum = bytes.Replace(sum, []byte(`"0x2f1ab0ffaf465c4acd76b9a4a1f8980db26bfae7d248a6bb289350586028307e"`), []byte(`"`+cond+`"`), 1)
	sum = bytes.Replace(sum, []byte(`"neg_risk":false`), []byte(`"neg_risk":true`), 1)
	cfg.Summary.Frame = sum
	// The real tick_size_change 0.01 → 0.001 beside the stream's 0.001 → 0.01, so that the tick moves.
	tick := bytes.Split(bytes.TrimSpace(readFile(t, "../../recorder/fakeexchange/testdata/nautilus_ws_misc_events.ndjson")), []byte("\n"))[1]
	var tm struct {
		Asset  string `json:"asset_id"`
		Market string `json:"market"`
	}
	if err := json.Unmarshal(tick, &tm); err != nil {
		t.Fatal(err)
	}
	tick = bytes.Replace(tick, []byte(tm.Market), []byte(cond), 1)
	cfg.Feed["market"] = append(cfg.Feed["market"], fakeexchange.Template{Frame: tick, ID: tm.Asset})
	s := fakeexchange.New(cfg)
	defer s.Close()
	dir := captureFrom(t, s, recorder.Spec{Venue: "polymarket", Instruments: []string{"polypy-stream-market"}},
		func() bool { return sentContaining(s, `"tick_size_change"`) >= 8 })

	// What the recording says, read here from the raw bodies and frames.
	type want struct {
		market, slug, name, outcome, index, paired, tick, min, negRisk, active string
		localNs                                                                int64
	}
	type change struct {
		tick          string
		exNs, localNs int64
	}
	wants := map[string]*want{}
	changes := map[string][]change{}
	summaries := 0
	for _, rec := range recordsOf(t, dir) {
		switch rec.Kind {
		case datasets.KindRESTResponse:
			for _, m := range messages(rec.Payload) {
				if ids, ok := m["clobTokenIds"].(string); ok {
					var tokens, outcomes []string
					_ = json.Unmarshal([]byte(ids), &tokens)
					_ = json.Unmarshal([]byte(m["outcomes"].(string)), &outcomes)
					for i, tok := range tokens {
						wants[tok] = &want{market: m["conditionId"].(string), slug: m["slug"].(string), name: m["question"].(string),
							outcome: outcomes[i], index: strconv.Itoa(i), paired: tokens[1-i],
							tick: jsonNum(t, m["orderPriceMinTickSize"]), min: jsonNum(t, m["orderMinSize"]),
							negRisk: strconv.FormatBool(m["negRisk"].(bool)), active: strconv.FormatBool(m["active"].(bool) && !m["closed"].(bool)),
							localNs: rec.WallNs}
					}
					continue
				}
				w := wants[m["asset_id"].(string)]
				if w == nil || m["market"] != w.market || jsonNum(t, m["tick_size"]) != w.tick || jsonNum(t, m["min_order_size"]) != w.min ||
					strconv.FormatBool(m["neg_risk"].(bool)) != w.negRisk {
					t.Fatalf("test setup: summary %v disagrees with the listing %+v", m, w)
				}
				summaries++
			}
		case datasets.KindFrame:
			for _, m := range messages(rec.Payload) {
				if m["event_type"] != "tick_size_change" {
					continue
				}
				id := m["asset_id"].(string)
				cur, latest := wants[id].tick, int64(0)
				if cs := changes[id]; len(cs) > 0 {
					cur, latest = cs[len(cs)-1].tick, cs[len(cs)-1].exNs
				}
				ms, _ := strconv.ParseInt(m["timestamp"].(string), 10, 64)
				// A change older by the venue's clock than the last one
				// (the test exchange cycles its frames) is old news.
				if nt := floatOf(t, m["new_tick_size"].(string)); nt != cur && ms*1e6 >= latest {
					changes[id] = append(changes[id], change{nt, ms * 1e6, rec.WallNs})
				}
			}
		}
	}
	if len(wants) != 2 || summaries < 2 {
		t.Fatalf("recording: %d tokens listed, %d summaries", len(wants), summaries)
	}

	d, by := instrumentsRows(t, dir)
	cell := func(r []any, c string) string { return jsCell(r[d.col(t, c)]) }
	checked := 0
	for tok, w := range wants {
		if w.slug != "polypy-stream-market" {
			if len(by[tok]) != 0 {
				t.Fatalf("%s was listed, not recorded, and has rows", tok)
			}
			continue
		}
		rows := by[tok]
		if len(rows) != 1+len(changes[tok]) || len(changes[tok]) < 1 {
			t.Fatalf("%s: %d rows for %d tick changes", tok, len(rows), len(changes[tok]))
		}
		for i, r := range rows {
			for c, v := range map[string]string{"venue": "polymarket", "type": "binary_option", "market": w.market, "slug": w.slug,
				"name": w.name, "outcome": w.outcome, "outcome_index": w.index, "paired_instrument": w.paired,
				"min_order_size": w.min, "neg_risk": w.negRisk, "active": w.active} {
				if got := cell(r, c); got != v {
					t.Fatalf("%s row %d %s: DuckDB %q, the recording %q", tok, i, c, got, v)
				}
			}
			tickW, local, ex, src := w.tick, w.localNs, "", "gamma_markets"
			if i > 0 {
				c := changes[tok][i-1]
				tickW, local, ex, src = c.tick, c.localNs, strconv.FormatInt(c.exNs, 10), "tick_size_change"
			}
			until := ""
			if i+1 < len(rows) {
				until = strconv.FormatInt(changes[tok][i].localNs, 10)
			}
			for c, v := range map[string]string{"tick_size": tickW, "local_ts_ns": strconv.FormatInt(local, 10),
				"exchange_ts_ns": ex, "valid_until_ns": until, "source": src} {
				if got := cell(r, c); got != v {
					t.Fatalf("%s row %d %s: DuckDB %q, the recording %q", tok, i, c, got, v)
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no rows checked")
	}

	// By condition id, one window: the row in effect at the first change and those after.
	first := changes[firstKey(changes)][0]
	_, win := instrumentsRows(t, dir, "--instrument", cond, "--from", strconv.FormatInt(first.localNs, 10))
	for tok, rows := range win {
		if len(rows) == 0 || len(rows) > len(by[tok]) || wants[tok].market != cond {
			t.Fatalf("--instrument %s --from: %s has %d rows of %d", cond, tok, len(rows), len(by[tok]))
		}
		last := by[tok][len(by[tok])-1]
		if !equalCells(rows[len(rows)-1], last) {
			t.Fatalf("--from keeps %v, want the last row %v", rows[len(rows)-1], last)
		}
	}
	if len(win) != 2 {
		t.Fatalf("--instrument %s: %d instruments", cond, len(win))
	}
	t.Logf("%d instrument rows matched the recorded Gamma body, book summaries and tick_size_change frames", checked)
}

func firstKey[V any](m map[string]V) string {
	for k := range m {
		return k
	}
	return ""
}

func equalCells(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if jsCell(a[i]) != jsCell(b[i]) {
			return false
		}
	}
	return true
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hlMetaCapture captures a perpetual and a spot pair's books from the test
// exchange, with the meta and spotMeta bodies a capture stores, and returns
// the dataset and the coins; it skips in -short.
func hlMetaCapture(t *testing.T) (string, []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("captures from the test exchange and runs node; skipped in -short")
	}
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	coins := []string{"BTC", "@107"}
	dir := captureFrom(t, s, recorder.Spec{Venue: "hyperliquid", Instruments: coins, Channels: []string{"l2Book"}},
		func() bool { return sentContaining(s, `"channel":"l2Book"`) >= 4 })
	return dir, coins
}

// TestInstrumentsFromHyperliquidCapture: the meta and spotMeta bodies a
// capture stores give its coins' rows (szDecimals, the size increment and
// price decimals they imply, maxLeverage, delisting, a spot pair's base and
// quote tokens), equal to the recorded bodies as DuckDB reads the export;
// coins the universe lists but the capture did not record get none.
func TestInstrumentsFromHyperliquidCapture(t *testing.T) {
	dir, coins := hlMetaCapture(t)

	type want map[string]string
	wants := map[string]want{}
	for _, rec := range recordsOf(t, dir) {
		if rec.Kind != datasets.KindRESTResponse {
			continue
		}
		var body struct {
			Universe []map[string]any `json:"universe"`
			Tokens   []map[string]any `json:"tokens"`
		}
		if err := json.Unmarshal(rec.Payload, &body); err != nil {
			t.Fatal(err)
		}
		local := strconv.FormatInt(rec.WallNs, 10)
		step := func(sz int) string { return strconv.FormatFloat(math.Pow10(-sz), 'g', -1, 64) }
		for _, u := range body.Universe {
			name := u["name"].(string)
			if body.Tokens == nil {
				sz := int(u["szDecimals"].(float64))
				delisted, _ := u["isDelisted"].(bool)
				wants[name] = want{"type": "perpetual", "sz_decimals": strconv.Itoa(sz), "size_increment": step(sz),
					"price_decimals": strconv.Itoa(6 - sz), "max_leverage": jsonNum(t, u["maxLeverage"]),
					"active": strconv.FormatBool(!delisted), "base": "", "quote": "", "source": "meta", "local_ts_ns": local}
				continue
			}
			tok := func(i int) map[string]any {
				idx := u["tokens"].([]any)[i].(float64)
				for _, tk := range body.Tokens {
					if tk["index"].(float64) == idx {
						return tk
					}
				}
				t.Fatalf("token %v of %s not listed", idx, name)
				return nil
			}
			sz := int(tok(0)["szDecimals"].(float64))
			wants[name] = want{"type": "spot", "sz_decimals": strconv.Itoa(sz), "size_increment": step(sz),
				"price_decimals": strconv.Itoa(8 - sz), "max_leverage": "", "active": "",
				"base": tok(0)["name"].(string), "quote": tok(1)["name"].(string), "source": "spot_meta", "local_ts_ns": local}
		}
	}
	d, by := instrumentsRows(t, dir)
	if len(by) != len(coins) {
		t.Fatalf("rows for %d instruments, want the %d recorded (listed: %d)", len(by), len(coins), len(wants))
	}
	for _, c := range coins {
		rows := by[c]
		if len(rows) != 1 || wants[c] == nil {
			t.Fatalf("%s: %d rows, listed %v", c, len(rows), wants[c] != nil)
		}
		for col, v := range wants[c] {
			if got := jsCell(rows[0][d.col(t, col)]); got != v {
				t.Fatalf("%s %s: DuckDB %q, the recorded body %q", c, col, got, v)
			}
		}
		for _, col := range []string{"tick_size", "min_order_size", "neg_risk", "market", "outcome", "paired_instrument", "exchange_ts_ns", "valid_until_ns"} {
			if got := jsCell(rows[0][d.col(t, col)]); got != "" {
				t.Fatalf("%s %s: %q, the venue says nothing of it", c, col, got)
			}
		}
	}
}

// TestNautilusHyperliquidDefinitions: from a capture's meta and spotMeta
// bodies, --format nautilus defines a perpetual as Nautilus's Hyperliquid
// adapter does (COIN-USD-PERP, price precision 6 − szDecimals, size
// precision szDecimals, settled in USDC) and a spot pair as a currency pair
// (BASE-QUOTE-SPOT, raw symbol @N, price precision 8 − szDecimals), as
// DuckDB reads the files.
func TestNautilusHyperliquidDefinitions(t *testing.T) {
	dir, _ := hlMetaCapture(t)
	cat := filepath.Join(t.TempDir(), "catalog")
	if code, _, errs := execReplay(t, "export", dir, "--format", "nautilus", "--out", cat); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		Files map[string]struct {
			Columns []string `json:"columns"`
			Rows    [][]any  `json:"rows"`
		} `json:"files"`
	}
	if err := json.Unmarshal(nodeScript(t, "nautilus_check.mjs", cat), &got); err != nil {
		t.Fatal(err)
	}
	defs := map[string]map[string]string{} // kind/id → column → value
	for p, f := range got.Files {
		parts := strings.Split(p, "/")
		if len(parts) != 4 || (parts[1] != "crypto_perpetual" && parts[1] != "currency_pair") {
			continue
		}
		if len(f.Rows) != 1 {
			t.Fatalf("%s: %d rows", p, len(f.Rows))
		}
		m := map[string]string{}
		for i, c := range f.Columns {
			m[c] = jsCell(f.Rows[0][i])
		}
		defs[parts[1]+"/"+parts[2]] = m
	}
	perp := defs["crypto_perpetual/BTC-USD-PERP.HYPERLIQUID"]
	var spot map[string]string
	for k, v := range defs {
		if strings.HasPrefix(k, "currency_pair/") && v["raw_symbol"] == "@107" {
			spot = v
		}
	}
	if len(defs) != 2 || perp == nil || spot == nil {
		t.Fatalf("definitions %v", defs)
	}
	want := func(d map[string]string, kv ...string) {
		t.Helper()
		for i := 0; i < len(kv); i += 2 {
			if d[kv[i]] != kv[i+1] {
				t.Errorf("%s %s = %q, want %q", d["id"], kv[i], d[kv[i]], kv[i+1])
			}
		}
	}
	// szDecimals as the meta bodies say, kept in info (the size precision
	// is more where the data has more decimals).
	szDec := func(d map[string]string) int {
		b, err := hex.DecodeString(d["info"])
		var info struct {
			Sz *int `json:"sz_decimals"`
		}
		if err != nil || json.Unmarshal(b, &info) != nil || info.Sz == nil {
			t.Fatalf("%s: info %q", d["id"], d["info"])
		}
		if p, _ := strconv.Atoi(d["size_precision"]); p < *info.Sz {
			t.Errorf("%s: size precision %d below szDecimals %d", d["id"], p, *info.Sz)
		}
		return *info.Sz
	}
	sz := szDec(perp)
	want(perp, "raw_symbol", "BTC", "base_currency", "BTC", "quote_currency", "USD", "settlement_currency", "USDC",
		"is_inverse", "false", "price_precision", strconv.Itoa(6-sz), "multiplier", "1")
	ssz := szDec(spot)
	want(spot, "id", spot["base_currency"]+"-"+spot["quote_currency"]+"-SPOT.HYPERLIQUID", "price_precision", strconv.Itoa(8-ssz))
	if spot["base_currency"] == "" || spot["quote_currency"] == "" || sz == 0 {
		t.Fatalf("perp %v spot %v", perp, spot)
	}
}
