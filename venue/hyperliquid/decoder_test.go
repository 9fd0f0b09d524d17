package hyperliquid

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// lines returns the non-empty lines of a testdata file.
func lines(t testing.TB, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if len(bytes.TrimSpace(s.Bytes())) > 0 {
			out = append(out, bytes.Clone(s.Bytes()))
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustDecode(t testing.TB, d *Decoder, frame string) []venue.Event {
	t.Helper()
	var out venue.Frame
	if err := d.Decode([]byte(frame), 1, &out); err != nil {
		t.Fatalf("Decode(%.80s…): %v", frame, err)
	}
	return out.Events
}

func types(evs []venue.Event) []string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Type.String())
	}
	return s
}

// TestFixtures decodes every real fixture and checks the events each yields.
func TestFixtures(t *testing.T) {
	tests := []struct {
		file   string
		events [][]string // per line
		coins  []string   // Instruments() afterwards
	}{
		{"arbitrage_observatory_probe_2026-09_core.ndjson", [][]string{
			{"control"}, {"snapshot"}, {"quote"}, {"asset_ctx"}, {"trade"}, {"candle"}, {"control"}}, []string{"BTC"}},
		{"jkorf_allmids_trimmed_2025-12.ndjson", [][]string{{"control"}, {"mids"}}, nil},
		{"jkorf_bbo_2025-12.ndjson", [][]string{{"control"}, {"quote"}}, []string{"HYPE"}},
		{"jkorf_l2book_trimmed_2025-12.ndjson", [][]string{{"control"}, {"snapshot"}}, []string{"HYPE"}},
		{"jkorf_trades_2025-12.ndjson", [][]string{{"control"}, {"trade"}}, []string{"HYPE"}},
		{"nautilus_http_info_l2book_btc_2025-10.ndjson", [][]string{{"snapshot"}}, []string{"BTC"}},
		{"nautilus_ws_allmids_trimmed.ndjson", [][]string{{"mids"}}, nil},
		{"order_book_server_ack_l2book_trades_2025-07.ndjson", [][]string{{"control"}, {"snapshot"}, {"trade"}}, []string{"BTC"}},
		{"python_sdk_http_info_l2book_dydx_2023-07.ndjson", [][]string{{"snapshot"}}, []string{"DYDX"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			d := NewDecoder()
			ls := lines(t, tt.file)
			if len(ls) != len(tt.events) {
				t.Fatalf("%d lines, want %d", len(ls), len(tt.events))
			}
			for i, l := range ls {
				evs := mustDecode(t, d, string(l))
				if got := types(evs); !slices.Equal(got, tt.events[i]) {
					t.Errorf("line %d: events %v, want %v", i+1, got, tt.events[i])
				}
			}
			if got := d.Instruments(nil); !slices.Equal(got, tt.coins) {
				t.Errorf("Instruments = %v, want %v", got, tt.coins)
			}
			st := d.Stats()
			if st.Frames != uint64(len(ls)) || st.Errors != 0 {
				t.Errorf("stats frames=%d errors=%d", st.Frames, st.Errors)
			}
		})
	}
}

// wireLevel is a level as encoding/json sees it: the second path to the answer.
type wireLevel struct {
	Px string `json:"px"`
	Sz string `json:"sz"`
	N  int32  `json:"n"`
}

// jsonBook extracts coin and levels of an l2Book frame or POST /info body with
// encoding/json.
func jsonBook(t *testing.T, frame []byte) (string, [2][]wireLevel) {
	t.Helper()
	var env struct {
		Data *struct {
			Coin   string         `json:"coin"`
			Levels [2][]wireLevel `json:"levels"`
		} `json:"data"`
		Coin   string         `json:"coin"`
		Levels [2][]wireLevel `json:"levels"`
	}
	if err := json.Unmarshal(frame, &env); err != nil {
		t.Fatal(err)
	}
	if env.Data != nil {
		return env.Data.Coin, env.Data.Levels
	}
	return env.Coin, env.Levels
}

// norm trims a wire decimal the way book.FormatDecimal prints it.
func norm(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "" {
		return "0"
	}
	return s
}

// TestSnapshotLevels checks that every real book frame gives exactly its
// levels best-first, prices, sizes and counts, as encoding/json reads them.
func TestSnapshotLevels(t *testing.T) {
	cases := []struct {
		file  string
		line  int
		depth int
	}{
		{"order_book_server_ack_l2book_trades_2025-07.ndjson", 1, 20},
		{"l2book_btc_20x2.json", 0, 20},
		{"python_sdk_http_info_l2book_dydx_2023-07.ndjson", 0, 20},
		{"nautilus_http_info_l2book_btc_2025-10.ndjson", 0, 5},
		{"arbitrage_observatory_probe_2026-09_core.ndjson", 1, 3},
		{"jkorf_l2book_trimmed_2025-12.ndjson", 1, 2},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			frame := lines(t, c.file)[c.line]
			coin, want := jsonBook(t, frame)
			d := NewDecoder()
			evs := mustDecode(t, d, string(frame))
			if len(evs) != 1 || evs[0].Type != venue.EventSnapshot || evs[0].Instrument != coin {
				t.Fatalf("events %+v", evs)
			}
			b := d.Book(coin)
			if b == nil || !b.Valid() || evs[0].Book != b {
				t.Fatalf("book %v not valid or not the event's", coin)
			}
			for side := book.Bid; side <= book.Ask; side++ {
				got := b.Top(side, nil, -1)
				if len(got) != c.depth || len(want[side]) != c.depth {
					t.Fatalf("%v: %d levels, json %d, want %d", side, len(got), len(want[side]), c.depth)
				}
				for i, g := range got {
					w := want[side][i]
					if book.FormatDecimal(g.Price, 8) != norm(w.Px) || book.FormatDecimal(g.Size, 8) != norm(w.Sz) || g.Count != w.N {
						t.Errorf("%v[%d] = %s %s %d, want %s %s %d", side, i,
							book.FormatDecimal(g.Price, 8), book.FormatDecimal(g.Size, 8), g.Count, w.Px, w.Sz, w.N)
					}
				}
			}
			bb, _ := b.Best(book.Bid)
			ba, _ := b.Best(book.Ask)
			if e := evs[0]; !e.HasBid || !e.HasAsk || e.BidPrice != bb.Price || e.AskSize != ba.Size {
				t.Errorf("event touch %+v, book %v %v", e, bb, ba)
			}
		})
	}
}

// TestKeyOrder checks that channel after data, alphabetical keys and white
// space give the same book as the wire order.
func TestKeyOrder(t *testing.T) {
	frame := string(lines(t, "arbitrage_observatory_probe_2026-09_core.ndjson")[1])
	data := frame[strings.Index(frame, `"data":`)+7 : len(frame)-1]
	variants := map[string]string{
		"wire":          frame,
		"channel last":  `{"data":` + data + `,"channel":"l2Book"}`,
		"extra keys":    `{"x":[1,{"y":null}],"data":` + data + `,"z":"w","channel":"l2Book"}`,
		"spaces":        " {\n \"channel\" : \"l2Book\" ,\t\"data\" :" + strings.ReplaceAll(data, ",", " , ") + " }\r\n",
		"level key ord": strings.ReplaceAll(frame, `{"px":"84143.0","sz":"10.25923","n":36}`, `{"n":36,"sz":"10.25923","px":"84143.0"}`),
	}
	var want []book.Level
	for _, name := range []string{"wire", "channel last", "extra keys", "spaces", "level key ord"} {
		d := NewDecoder()
		evs := mustDecode(t, d, variants[name])
		if len(evs) != 1 || evs[0].Type != venue.EventSnapshot || evs[0].ExchangeNs != 1790232236546*1e6 {
			t.Fatalf("%s: events %+v", name, evs)
		}
		b := d.Book("BTC")
		got := b.Top(book.Ask, b.Top(book.Bid, nil, -1), -1)
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Errorf("%s: levels %v, want %v", name, got, want)
		}
	}
}

func levels(b *book.Book, side book.Side) string {
	var sb strings.Builder
	for i, l := range b.Top(side, nil, -1) {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%s:%s", book.FormatDecimal(l.Price, 8), book.FormatDecimal(l.Size, 8))
	}
	return sb.String()
}

const snap = `{"channel":"l2Book","data":{"coin":"X","time":1000,"levels":[` +
	`[{"px":"100","sz":"1","n":1},{"px":"99","sz":"2","n":2},{"px":"98","sz":"3","n":3}],` +
	`[{"px":"101","sz":"4","n":4},{"px":"102","sz":"5","n":5},{"px":"103","sz":"6","n":6}]]}}`

func bbo(bid, ask string) string {
	return `{"channel":"bbo","data":{"coin":"X","time":2000,"bbo":[` + bid + `,` + ask + `]}}`
}

// TestBboMerge checks the bbo merge between snapshots.
func TestBboMerge(t *testing.T) {
	tests := []struct {
		name       string
		bbo        string
		bids, asks string
		crossed    bool
	}{
		{"touch unchanged, sizes new", bbo(`{"px":"100","sz":"7","n":9}`, `{"px":"101","sz":"8","n":9}`),
			"100:7 99:2 98:3", "101:8 102:5 103:6", false},
		{"bid inside spread", bbo(`{"px":"100.5","sz":"1","n":1}`, `{"px":"101","sz":"4","n":4}`),
			"100.5:1 100:1 99:2 98:3", "101:4 102:5 103:6", false},
		{"bid and ask retreat", bbo(`{"px":"98.5","sz":"1","n":1}`, `{"px":"102.5","sz":"2","n":1}`),
			"98.5:1 98:3", "102.5:2 103:6", false},
		{"bid at old level", bbo(`{"px":"99","sz":"0.5","n":1}`, `{"px":"103","sz":"2","n":1}`),
			"99:0.5 98:3", "103:2", false},
		{"null bid empties side", bbo(`null`, `{"px":"101","sz":"4","n":4}`),
			"", "101:4 102:5 103:6", false},
		{"null both", bbo(`null`, `null`), "", "", false},
		{"crossed bbo", bbo(`{"px":"102","sz":"1","n":1}`, `{"px":"101.5","sz":"1","n":1}`),
			"102:1 100:1 99:2 98:3", "101.5:1 102:5 103:6", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder()
			mustDecode(t, d, snap)
			if q := d.Quality("X"); q.Estimated {
				t.Fatal("estimated after a snapshot")
			}
			evs := mustDecode(t, d, tt.bbo)
			if len(evs) != 1 || evs[0].Type != venue.EventQuote || evs[0].Book != d.Book("X") || evs[0].ExchangeNs != 2e9 {
				t.Fatalf("events %+v", evs)
			}
			b := d.Book("X")
			if got := levels(b, book.Bid); got != tt.bids {
				t.Errorf("bids %q, want %q", got, tt.bids)
			}
			if got := levels(b, book.Ask); got != tt.asks {
				t.Errorf("asks %q, want %q", got, tt.asks)
			}
			q := d.Quality("X")
			if !q.Estimated || !b.Valid() || q.Crossed != tt.crossed {
				t.Errorf("quality %+v valid %v, want estimated, valid, crossed=%v", q, b.Valid(), tt.crossed)
			}
			mustDecode(t, d, snap)
			if q := d.Quality("X"); q.Estimated || q.Crossed {
				t.Errorf("after the next snapshot: %+v", q)
			}
			if got := levels(b, book.Bid); got != "100:1 99:2 98:3" {
				t.Errorf("snapshot after bbo: bids %q", got)
			}
		})
	}
}

// TestBboBeforeSnapshot checks that a bbo for an unseen coin builds an invalid
// estimate rather than a valid book.
func TestBboBeforeSnapshot(t *testing.T) {
	d := NewDecoder()
	evs := mustDecode(t, d, string(lines(t, "jkorf_bbo_2025-12.ndjson")[1]))
	e := evs[0]
	if e.Instrument != "HYPE" || !e.HasBid || !e.HasAsk || e.BidPrice != 23_757_00000 || e.AskSize != 100_26000000 {
		t.Fatalf("event %+v", e)
	}
	b := d.Book("HYPE")
	if b.Valid() || levels(b, book.Bid) != "23.757:42.09" || levels(b, book.Ask) != "23.758:100.26" {
		t.Errorf("book valid=%v %q %q", b.Valid(), levels(b, book.Bid), levels(b, book.Ask))
	}
	if l, _ := b.Best(book.Ask); l.Count != 2 {
		t.Errorf("ask count %d, want 2", l.Count)
	}
}

func TestTrades(t *testing.T) {
	d := NewDecoder()
	frame := `{"channel":"trades","data":[` +
		`{"coin":"BTC","side":"A","px":"84143.0","sz":"0.00036","time":1790232216193,"hash":"0x7a","tid":1,"users":["a","b"]},` +
		` {"side":"B","coin":"@107","px":"0.00012345","sz":"12.5","time":"1790232216194","tid":2}]}`
	evs := mustDecode(t, d, frame)
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	want := []struct {
		coin      string
		side      book.Side
		px, sz    int64
		ns        int64
		rawPrefix string
	}{
		{"BTC", book.Ask, 84143_00000000, 36000, 1790232216193e6, `{"coin":"BTC"`},
		{"@107", book.Bid, 12345, 12_50000000, 1790232216194e6, `{"side":"B"`},
	}
	for i, w := range want {
		e := evs[i]
		if e.Type != venue.EventTrade || e.Instrument != w.coin || e.Side != w.side || e.Price != w.px ||
			e.Size != w.sz || e.ExchangeNs != w.ns || e.Book != nil {
			t.Errorf("trade %d = %+v, want %+v", i, e, w)
		}
		if !bytes.HasPrefix(e.Raw, []byte(w.rawPrefix)) || e.Raw[len(e.Raw)-1] != '}' || !json.Valid(e.Raw) {
			t.Errorf("trade %d raw %q", i, e.Raw)
		}
	}
	if got := d.Instruments(nil); !slices.Equal(got, []string{"@107", "BTC"}) {
		t.Errorf("instruments %v", got)
	}
	if b := d.Book("BTC"); b == nil || b.Valid() || b.Len(book.Bid) != 0 {
		t.Errorf("trade touched a book")
	}
}

func TestOtherChannels(t *testing.T) {
	ls := lines(t, "arbitrage_observatory_probe_2026-09_core.ndjson")
	d := NewDecoder()
	ctx := mustDecode(t, d, string(ls[3]))[0]
	if ctx.Instrument != "BTC" || ctx.Price != 84148_00000000 {
		t.Errorf("asset ctx %+v", ctx)
	}
	c := mustDecode(t, d, string(ls[5]))[0]
	if c.Instrument != "BTC" || c.ExchangeNs != 1790232180000e6 || c.Price != 84143_00000000 || c.Size != 14_27847000 || c.Count != 114 {
		t.Errorf("candle %+v", c)
	}
	m := mustDecode(t, d, string(lines(t, "nautilus_ws_allmids_trimmed.ndjson")[0]))[0]
	if m.Size != 5 || m.Instrument != "" {
		t.Errorf("mids %+v", m)
	}
	for _, tt := range []struct{ frame, typ, text string }{
		{`{"channel":"pong"}`, "control", "pong"},
		{string(ls[0]), "control", "subscriptionResponse"},
		{`{"channel":"error","data":"Already subscribed: {\"type\":\"bbo\"}"}`, "control", "error"},
		{`{"channel":"post","data":{"id":1,"response":{"type":"info","payload":{"type":"l2Book","data":null}}}}`, "control", "post"},
		{`{"channel":"fastAssetCtxs","data":"eJzLSM3JyVcozy/KSQEAGgQEXQ=="}`, "unknown", "fastAssetCtxs"},
		{`{"data":{"a":[1,2]},"channel":"notYetInvented"}`, "unknown", "notYetInvented"},
		{"Websocket connection established.\n", "control", "Websocket connection established."},
	} {
		evs := mustDecode(t, d, tt.frame)
		if len(evs) != 1 || evs[0].Type.String() != tt.typ || string(evs[0].Text) != tt.text || string(evs[0].Raw) != tt.frame {
			t.Errorf("%.40s: %+v", tt.frame, evs)
		}
	}
	st := d.Stats()
	if st.UnknownTypes != 2 || st.NonJSON != 1 || st.Events[venue.EventControl] != 5 || st.Errors != 0 {
		t.Errorf("stats %+v", st)
	}
}

// state is everything a rejected frame must leave unchanged.
type state struct {
	names []string
	books map[string]string
}

func capture(d *Decoder) state {
	s := state{names: d.Instruments(nil), books: map[string]string{}}
	for _, n := range s.names {
		b := d.Book(n)
		s.books[n] = fmt.Sprintf("valid=%v gen=%d q=%+v bids=%v asks=%v", b.Valid(), b.Generation(),
			d.Quality(n), b.Top(book.Bid, nil, -1), b.Top(book.Ask, nil, -1))
	}
	return s
}

// captureLevels is capture without validity and quality: a rejected frame
// may invalidate books, never change their levels.
func captureLevels(d *Decoder) state {
	s := state{names: d.Instruments(nil), books: map[string]string{}}
	for _, n := range s.names {
		b := d.Book(n)
		s.books[n] = fmt.Sprintf("bids=%v asks=%v", b.Top(book.Bid, nil, -1), b.Top(book.Ask, nil, -1))
	}
	return s
}

func (s state) equal(o state) bool {
	if !slices.Equal(s.names, o.names) || len(s.books) != len(o.books) {
		return false
	}
	for k, v := range s.books {
		if o.books[k] != v {
			return false
		}
	}
	return true
}

// TestBadInput checks that every malformed frame is an error naming the field
// and offset and leaves the books exactly as they were.
func TestBadInput(t *testing.T) {
	lv := func(px, sz string) string { return `{"px":` + px + `,"sz":` + sz + `,"n":1}` }
	book2 := func(bids, asks string) string {
		return `{"channel":"l2Book","data":{"coin":"X","time":3000,"levels":[[` + bids + `],[` + asks + `]]}}`
	}
	good := lv(`"100"`, `"1"`)
	ask := lv(`"101"`, `"1"`)
	tests := []struct {
		name  string
		frame string
		err   error  // errors.Is target, or nil
		msg   string // substring of the message
	}{
		{"empty", "  ", ErrEmptyFrame, "offset 2"},
		{"array", `[{"channel":"pong"}]`, ErrNotObject, "offset 0"},
		{"truncated", snap[:len(snap)/2], nil, "json syntax error at offset"},
		{"truncated after data", snap[:len(snap)-1], nil, "json syntax error at offset"},
		{"trailing garbage", snap + ` x`, ErrTrailingData, fmt.Sprintf("offset %d", len(snap)+1)},
		{"no channel", `{"data":{}}`, ErrMissingField, "channel"},
		{"empty object", `{}`, ErrMissingField, "channel"},
		{"duplicate channel", `{"channel":"pong","channel":"pong"}`, ErrDuplicateField, "channel"},
		{"no data", `{"channel":"l2Book"}`, ErrMissingField, "data"},
		{"channel not string", `{"channel":5,"data":{}}`, nil, "expected string"},
		{"data not object", `{"channel":"l2Book","data":[]}`, nil, "expected object"},
		{"no coin", `{"channel":"l2Book","data":{"time":1,"levels":[[],[]]}}`, ErrMissingField, "coin"},
		{"empty coin", `{"channel":"l2Book","data":{"coin":"","levels":[[],[]]}}`, ErrMissingField, "coin"},
		{"no levels", `{"channel":"l2Book","data":{"coin":"X","time":1}}`, ErrMissingField, "levels"},
		{"one side", `{"channel":"l2Book","data":{"coin":"X","levels":[[]]}}`, ErrLevelSides, "levels"},
		{"three sides", `{"channel":"l2Book","data":{"coin":"X","levels":[[],[],[]]}}`, ErrLevelSides, "levels"},
		{"px number", book2(lv(`100`, `"1"`), ask), nil, "levels[0][0].px"},
		{"px negative", book2(lv(`"-100"`, `"1"`), ask), book.ErrNegative, "levels[0][0].px at offset 68"},
		{"px exponent", book2(good, lv(`"1e400"`, `"1"`)), book.ErrSyntax, "levels[1][0].px"},
		{"px number 1e400", book2(good, lv(`1e400`, `"1"`)), nil, "levels[1][0].px"},
		{"px too many decimals", book2(good, lv(`"101.123456789"`, `"1"`)), book.ErrPrecision, "levels[1][0].px"},
		{"px overflow", book2(good, lv(`"99999999999999999999"`, `"1"`)), book.ErrRange, "levels[1][0].px"},
		{"px empty", book2(good, lv(`""`, `"1"`)), book.ErrSyntax, "levels[1][0].px"},
		{"px zero", book2(lv(`"0"`, `"1"`), ask), ErrNonPositive, "levels[0][0].px"},
		{"sz zero", book2(good, lv(`"101"`, `"0"`)), ErrNonPositive, "levels[1][0].sz"},
		{"sz missing", book2(`{"px":"100","n":1}`, ask), ErrMissingField, "levels[0][0].sz"},
		{"n negative", book2(`{"px":"100","sz":"1","n":-1}`, ask), nil, "levels[0][0].n"},
		{"n huge", book2(`{"px":"100","sz":"1","n":99999999999}`, ask), ErrRange, "levels[0][0].n"},
		{"level not object", book2(`["100","1",1]`, ask), nil, "levels[0][0]"},
		{"bids ascending", book2(good+","+lv(`"100.5"`, `"1"`), ask), ErrUnsorted, "levels[0][1].px"},
		{"asks descending", book2(good, ask+","+lv(`"100.9"`, `"1"`)), ErrUnsorted, "levels[1][1].px"},
		{"duplicate bid", book2(good+","+good, ask), book.ErrDuplicatePrice, "levels[0][1].px"},
		{"time negative", `{"channel":"l2Book","data":{"coin":"X","time":-1,"levels":[[],[]]}}`, nil, "time"},
		{"time overflow", `{"channel":"l2Book","data":{"coin":"X","time":99999999999999999,"levels":[[],[]]}}`, ErrRange, "time"},
		{"bad later in data, channel last", `{"data":{"coin":"X","levels":[[` + lv(`"1"`, `"x"`) + `],[]]},"channel":"l2Book"}`, book.ErrSyntax, "offset 46"},
		{"bbo three", bbo(good, ask+",null"), ErrLevelSides, "bbo"},
		{"bbo one", bbo(good, "")[:0] + `{"channel":"bbo","data":{"coin":"X","bbo":[null]}}`, ErrLevelSides, "bbo"},
		{"bbo bad size", bbo(good, lv(`"101"`, `"-1"`)), book.ErrNegative, "bbo[1].sz"},
		{"bbo missing", `{"channel":"bbo","data":{"coin":"X","time":1}}`, ErrMissingField, "bbo"},
		{"trade side", `{"channel":"trades","data":[{"coin":"X","side":"S","px":"1","sz":"1"}]}`, ErrSide, "data[0].side"},
		{"second trade bad", `{"channel":"trades","data":[{"coin":"X","side":"A","px":"1","sz":"1"},{"coin":"Y","side":"A","px":"1"}]}`, ErrMissingField, "data[1].sz"},
		{"trades not array", `{"channel":"trades","data":{}}`, nil, "expected array"},
		{"mids number", `{"channel":"allMids","data":{"mids":{"BTC":1}}}`, nil, "mids[0]"},
		{"ctx markPx", `{"channel":"activeAssetCtx","data":{"coin":"X","ctx":{"markPx":"1.0.0"}}}`, book.ErrSyntax, "ctx.markPx"},
		{"candle close", `{"channel":"candle","data":{"t":1,"s":"X","c":"abc"}}`, book.ErrSyntax, "c at"},
		{"unknown channel bad json", `{"channel":"zzz","data":{"a":}}`, nil, "json syntax error"},
		{"nesting bomb", `{"channel":"zzz","data":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, nil, "nesting too deep"},
		{"string control char", "{\"channel\":\"pong\x01\"}", nil, "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder()
			mustDecode(t, d, snap)
			mustDecode(t, d, bbo(`{"px":"100","sz":"9","n":1}`, `null`))
			before := captureLevels(d)
			stats := d.Stats()
			out := venue.Frame{Events: make([]venue.Event, 3)}
			err := d.Decode([]byte(tt.frame), 1, &out)
			if err == nil {
				t.Fatalf("no error")
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("error %v, want %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not mention %q", err, tt.msg)
			}
			if de.Offset < 0 || de.Offset > len(tt.frame) {
				t.Errorf("offset %d outside the frame", de.Offset)
			}
			var decErr *book.DecimalError
			if errors.As(err, &decErr) && tt.frame[de.Offset] != '"' {
				t.Errorf("offset %d is not at the decimal's value: %q", de.Offset, tt.frame[de.Offset:])
			}
			if len(out.Events) == 0 {
				t.Error("no EventReject on error")
			}
			for _, ev := range out.Events {
				if ev.Type != venue.EventReject || len(ev.Text) == 0 {
					t.Errorf("event %v on error", ev.Type)
				}
			}
			if after := captureLevels(d); !before.equal(after) {
				t.Errorf("levels changed:\n%v\n%v", before, after)
			}
			st := d.Stats()
			stats.Frames++
			stats.Errors++
			stats.Rejected++
			stats.Invalidated = st.Invalidated
			stats.Events[venue.EventReject] = uint64(len(out.Events))
			if st != stats {
				t.Errorf("stats %+v, want %+v", st, stats)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	frame := `{"channel":"l2Book","data":{"coin":"X","levels":[[{"px":"1.123456789","sz":"1"}],[]]}}`
	err := NewDecoder().Decode([]byte(frame), 0, &venue.Frame{})
	want := `hyperliquid: decode l2Book frame: levels[0][0].px at offset 56: px "1.123456789": book: decimal does not fit the scale exactly`
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
	if frame[56] != '"' {
		t.Errorf("offset 56 is %q, not the value", frame[56])
	}
}

func TestLimits(t *testing.T) {
	d := NewDecoder(WithMaxLevels(2), WithMaxInstruments(2))
	err := d.Decode([]byte(snap), 0, &venue.Frame{})
	if !errors.Is(err, ErrTooManyLevels) || d.Book("X") != nil {
		t.Errorf("3 levels with max 2: %v", err)
	}
	mustDecode(t, d, `{"channel":"trades","data":[{"coin":"A","side":"A","px":"1","sz":"1"},{"coin":"A","side":"B","px":"1","sz":"1"}]}`)
	err = d.Decode([]byte(`{"channel":"trades","data":[{"coin":"B","side":"A","px":"1","sz":"1"},{"coin":"C","side":"B","px":"1","sz":"1"}]}`), 0, &venue.Frame{})
	if !errors.Is(err, ErrTooManyInstruments) || len(d.Instruments(nil)) != 1 {
		t.Errorf("2 new coins with room for 1: %v, %v", err, d.Instruments(nil))
	}
	mustDecode(t, d, `{"channel":"trades","data":[{"coin":"B","side":"A","px":"1","sz":"1"},{"coin":"B","side":"B","px":"1","sz":"1"}]}`)

	d = NewDecoder(WithMaxTrades(1))
	err = d.Decode([]byte(`{"channel":"trades","data":[{"coin":"A","side":"A","px":"1","sz":"1"},{"coin":"A","side":"B","px":"1","sz":"1"}]}`), 0, &venue.Frame{})
	if !errors.Is(err, ErrTooManyTrades) || !strings.Contains(err.Error(), "data[1]") || d.Book("A") != nil {
		t.Errorf("2 trades with max 1: %v", err)
	}
}

func TestInvalidate(t *testing.T) {
	d := NewDecoder()
	mustDecode(t, d, snap)
	d.Invalidate()
	b := d.Book("X")
	if b.Valid() || !d.Quality("X").AfterGap || b.Len(book.Bid) != 3 {
		t.Fatalf("after Invalidate: valid=%v q=%+v", b.Valid(), d.Quality("X"))
	}
	mustDecode(t, d, bbo(`{"px":"100","sz":"2","n":1}`, `{"px":"101","sz":"2","n":1}`))
	if b.Valid() {
		t.Fatal("bbo validated an invalid book")
	}
	mustDecode(t, d, snap)
	if !b.Valid() || !d.Quality("X").AfterGap {
		t.Errorf("first snapshot after gap: valid=%v q=%+v", b.Valid(), d.Quality("X"))
	}
	mustDecode(t, d, snap)
	if d.Quality("X").AfterGap {
		t.Errorf("second snapshot still AfterGap")
	}
}

func TestEscapedCoin(t *testing.T) {
	d := NewDecoder()
	mustDecode(t, d, `{"channel":"bbo","data":{"coin":"PURR\/USDC","bbo":[null,{"px":"1","sz":"1"}]}}`)
	mustDecode(t, d, `{"channel":"bbo","data":{"coin":"PURR/USDC","bbo":[null,{"px":"2","sz":"1"}]}}`)
	mustDecode(t, d, `{"channel":"bbo","data":{"coin":"\u00e9\ud83d\ude00","bbo":[null,null]}}`)
	if got := d.Instruments(nil); !slices.Equal(got, []string{"PURR/USDC", "é😀"}) {
		t.Errorf("instruments %q", got)
	}
}

func TestFlush(t *testing.T) {
	d := NewDecoder()
	out := venue.Frame{Events: mustDecode(t, d, snap)}
	d.Flush(&out)
	if len(out.Events) != 0 {
		t.Errorf("Flush left %d events", len(out.Events))
	}
	if bk := d.Book("BTC"); bk != nil && bk.Scale() != Scale {
		t.Error("scale")
	}
}

// TestAllocs asserts zero allocations per frame in steady state.
func TestAllocs(t *testing.T) {
	frames := map[string][]byte{
		"l2Book 20x2": lines(t, "l2book_btc_20x2.json")[0],
		"l2Book real": lines(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1],
		"http body":   lines(t, "python_sdk_http_info_l2book_dydx_2023-07.ndjson")[0],
		"bbo":         lines(t, "arbitrage_observatory_probe_2026-09_core.ndjson")[2],
		"trades":      lines(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[2],
		"ctx":         lines(t, "arbitrage_observatory_probe_2026-09_core.ndjson")[3],
		"candle":      lines(t, "arbitrage_observatory_probe_2026-09_core.ndjson")[5],
		"allMids":     lines(t, "nautilus_ws_allmids_trimmed.ndjson")[0],
		"pong":        []byte(`{"channel":"pong"}`),
		"channel last": []byte(`{"data":{"coin":"BTC","time":1,"levels":[[{"px":"1","sz":"1","n":1}],[]]},` +
			`"channel":"l2Book"}`),
	}
	for name, f := range frames {
		d := NewDecoder()
		var out venue.Frame
		if err := d.Decode(f, 0, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n := testing.AllocsPerRun(100, func() {
			if err := d.Decode(f, 0, &out); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocs per frame, want 0", name, n)
		}
	}
}

// TestFastLevel pins which shapes the fast path takes and that it declines
// everything else (the generic path then decides).
func TestFastLevel(t *testing.T) {
	tests := []struct {
		in  string
		ok  bool
		lv  book.Level
		end int
	}{
		{`{"px":"84143.0","sz":"10.25923","n":36},`, true, book.Level{Price: 84143e8, Size: 1025923000, Count: 36}, 39},
		{`{"n":2,"px":"2.1052","sz":"2800.9"}]`, true, book.Level{Price: 210520000, Size: 280090000000, Count: 2}, 35},
		{`{"px":"110427.0","sz":"4.11882"}`, true, book.Level{Price: 110427e8, Size: 411882000}, 32},
		{`{"px":"0.00000001","sz":"9999999999.99999999","n":999999999}`, true, book.Level{Price: 1, Size: 999999999999999999, Count: 999999999}, 60},
		{`{"px":"1.123456789","sz":"1","n":1}`, false, book.Level{}, 0}, // 9 decimals
		{`{"px":"12345678901","sz":"1","n":1}`, false, book.Level{}, 0}, // 11 integer digits
		{`{"px":"0","sz":"1","n":1}`, false, book.Level{}, 0},           // zero price
		{`{"px":"1","sz":"0.0","n":1}`, false, book.Level{}, 0},         // zero size
		{`{"px":"1.","sz":"1","n":1}`, false, book.Level{}, 0},          // bare point
		{`{"px":".5","sz":"1","n":1}`, false, book.Level{}, 0},          // leading point
		{`{"px":"1","sz":"1","n":01}`, false, book.Level{}, 0},          // leading zero
		{`{"px":"1","sz":"1","n":1234567890}`, false, book.Level{}, 0},  // 10 digits
		{`{"px":"1","sz":"1","n":1.5}`, false, book.Level{}, 0},         // not an integer
		{`{"px":"1","sz":"1","n":1 }`, false, book.Level{}, 0},          // white space
		{`{ "px":"1","sz":"1"}`, false, book.Level{}, 0},                // white space
		{`{"px":"1\u0030","sz":"1"}`, false, book.Level{}, 0},           // escape
		{`{"n":1,"px":"1","sz":"1","n":2}`, false, book.Level{}, 0},     // duplicate n
		{`{"px":"1","sz":"1","n":1,"x":1}`, false, book.Level{}, 0},     // extra key
		{`["px":"1","sz":"1"}`, false, book.Level{}, 0},                 // not an object
		{`{"px":"1","sz":"1"`, false, book.Level{}, 0},                  // truncated
		{`{"px":"1","sz":"1`, false, book.Level{}, 0},                   // truncated
	}
	for _, tt := range tests {
		lv, end, ok := fastLevel([]byte(tt.in), 0)
		if ok != tt.ok || (ok && (lv != tt.lv || end != tt.end)) {
			t.Errorf("fastLevel(%s) = %+v, %d, %v; want %+v, %d, %v", tt.in, lv, end, ok, tt.lv, tt.end, tt.ok)
		}
	}
	// The real wire frames take the fast path for every level of both sides.
	for _, f := range [][]byte{lines(t, "l2book_btc_20x2.json")[0], lines(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")[1],
		lines(t, "python_sdk_http_info_l2book_dydx_2023-07.ndjson")[0]} {
		i := bytes.Index(f, []byte(`"levels":[[`)) + len(`"levels":[[`)
		bids, next, done := fastSide(f, i, nil, book.Bid, 100)
		if !done || len(bids) != 20 || f[next] != ',' {
			t.Errorf("bids: %d levels, done=%v", len(bids), done)
		}
		asks, _, done := fastSide(f, next+2, nil, book.Ask, 100)
		if !done || len(asks) != 20 {
			t.Errorf("asks: %d levels, done=%v", len(asks), done)
		}
	}
}

// TestFastDecimal checks the SWAR and per-character conversions against
// book.ParseDecimal on random strings, with the buffer ending right after the
// value and with room after it: whatever the fast path accepts must parse to
// the same value, and it must accept every plain [0-9]{1,10}(.[0-9]{1,8})?.
func TestFastDecimal(t *testing.T) {
	plain := regexp.MustCompile(`^[0-9]{1,10}(\.[0-9]{1,8})?$`)
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = `0123456789012345678901234567890123456789.."\-x é`
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for k := 0; k < n; k++ {
		var sb strings.Builder
		for range r.IntN(20) {
			sb.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		s := sb.String()
		for _, tail := range []string{`"`, `","sz":"1"}`} {
			buf := []byte(s + tail)
			q := strings.IndexByte(s+tail, '"')
			v, next, ok := fastDecimal(buf, 0)
			want, err := book.ParseDecimal([]byte(s[:min(q, len(s))]), 8)
			if ok && (err != nil || v != want || next != q+1) {
				t.Fatalf("fastDecimal(%q) = %d, %d; ParseDecimal = %d, %v", buf, v, next, want, err)
			}
			if q == len(s) && plain.MatchString(s) && !ok {
				t.Fatalf("fastDecimal(%q) declined a plain decimal", buf)
			}
		}
	}
}

// TestRealBboMerge applies the probe's real bbo after its real book: the ask
// size at the unchanged touch is updated, everything else kept, and the book
// is marked estimated.
func TestRealBboMerge(t *testing.T) {
	ls := lines(t, "arbitrage_observatory_probe_2026-09_core.ndjson")
	d := NewDecoder()
	mustDecode(t, d, string(ls[1]))
	mustDecode(t, d, string(ls[2]))
	b := d.Book("BTC")
	if got := levels(b, book.Bid); got != "84143:10.25923 84142:1.65875 84141:1.12923" {
		t.Errorf("bids %s", got)
	}
	if got := levels(b, book.Ask); got != "84144:50.66422 84150:0.00711 84151:0.01782" {
		t.Errorf("asks %s", got)
	}
	if q := d.Quality("BTC"); !q.Estimated || q.Crossed || !b.Valid() {
		t.Errorf("quality %+v", q)
	}
}

// Values outside the books never reject a frame for their digits: the real
// candle of the probe with the volume the venue printed on another real
// candle, "3495670.8399999999" (10 fractional digits, Scale has 8), decodes
// with the volume rounded half up at Scale and the exact text in Raw; so does
// an asset context's markPx. A book level or trade with as many digits is
// still ErrPrecision.
func TestOutsideBookDigits(t *testing.T) {
	ls := lines(t, "arbitrage_observatory_probe_2026-09_core.ndjson")
	candle := strings.Replace(string(ls[5]), `"v":"14.27847"`, `"v":"3495670.8399999999"`, 1)
	d := NewDecoder()
	c := mustDecode(t, d, candle)[0]
	if c.Size != 3495670_84000000 || !strings.Contains(string(c.Raw), `"3495670.8399999999"`) {
		t.Errorf("candle volume %d, raw %s", c.Size, c.Raw)
	}
	c = mustDecode(t, d, strings.Replace(candle, `"o":"84143.0"`, `"o":"84143.000000004"`, 1))[0]
	if c.Price != 84143_00000000 {
		t.Errorf("candle close %d", c.Price)
	}
	ctx := strings.Replace(string(ls[3]), `"markPx":"84148.0"`, `"markPx":"84148.123456789"`, 1)
	if ctx == string(ls[3]) {
		t.Fatalf("fixture's markPx changed: %s", ls[3])
	}
	if e := mustDecode(t, d, ctx)[0]; e.Price != 84148_12345679 {
		t.Errorf("markPx %d", e.Price)
	}
	for _, bad := range []string{
		`{"channel":"trades","data":[{"coin":"BTC","side":"A","px":"84143.0000000001","sz":"1","time":1,"tid":1}]}`,
		`{"channel":"l2Book","data":{"coin":"BTC","time":1,"levels":[[{"px":"100.123456789","sz":"1","n":1}],[]]}}`,
	} {
		if err := d.Decode([]byte(bad), 1, &venue.Frame{}); !errors.Is(err, book.ErrPrecision) {
			t.Errorf("%s: %v, want ErrPrecision", bad, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want int64
	}{{"1.123456784", 112345678}, {"1.123456785", 112345679}, {"0.999999999", 100000000}, {"2.00000000000", 200000000}} {
		if v, err := roundDecimal([]byte(tc.in), 8); err != nil || v != tc.want {
			t.Errorf("roundDecimal(%s) = %d, %v; want %d", tc.in, v, err, tc.want)
		}
	}
	if _, err := roundDecimal([]byte("1.1234567891x"), 8); !errors.Is(err, book.ErrSyntax) {
		t.Errorf("roundDecimal of a bad tail: %v", err)
	}
}
