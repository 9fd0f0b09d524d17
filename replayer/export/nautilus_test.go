package export

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// nautExport runs datasets through the real replayer into a Nautilus
// writing a catalog under a temporary directory, and records the books and
// the raw trade messages beside it.
func nautExport(t *testing.T, paths []string, from, to int64, opts ...Option) (string, *truth, *tradeLog, *Nautilus) {
	t.Helper()
	dir := t.TempDir()
	var open []*os.File
	n, err := NewNautilus(func(kind, id string, first, last int64) (io.Writer, error) {
		d := filepath.Join(dir, filepath.FromSlash(NautilusDir(kind, id)))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		p := filepath.Join(d, NautilusFileName(first, last))
		if _, err := os.Stat(p); err == nil {
			return nil, fmt.Errorf("file %s opened twice", p)
		}
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		open = append(open, f)
		return f, nil
	}, append(opts, WithWindow(from, to))...)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTruth(-1)
	tl := &tradeLog{from: from, to: to}
	replay(t, paths, tr, tl, n)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range open {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir, tr, tl, n
}

// tradeLog keeps each live trade's message as the venue sent it, received
// in [from, to) (to 0: to the end).
type tradeLog struct {
	raw      map[string][][]byte // instrument → messages, in order
	from, to int64
}

func (l *tradeLog) OnEvent(e *replayer.Event) error {
	if e.RecvNs < l.from || (l.to != 0 && e.RecvNs >= l.to) {
		return nil
	}
	if d := e.Decoded; d != nil && d.Type == venue.EventTrade && !d.Backfill {
		if l.raw == nil {
			l.raw = map[string][][]byte{}
		}
		l.raw[e.Instrument] = append(l.raw[e.Instrument], bytes.Clone(d.Raw))
	}
	return nil
}

type nautFile struct {
	Schema []struct {
		Name       string `json:"name"`
		Type       string `json:"type"`
		TypeLength any    `json:"type_length"`
		Converted  any    `json:"converted_type"`
		Repetition string `json:"repetition"`
	} `json:"schema"`
	Columns []string          `json:"columns"`
	Types   []string          `json:"types"`
	KV      map[string]string `json:"kv"`
	Rows    [][]any           `json:"rows"`
}

// nautRead reads every file of the catalog under dir with DuckDB
// (tests/js/nautilus_check.mjs), or skips.
func nautRead(t *testing.T, dir string) map[string]nautFile {
	t.Helper()
	js := filepath.Join("..", "..", "tests", "js")
	if _, err := os.Stat(filepath.Join(js, "node_modules", "@duckdb", "node-api")); err != nil {
		t.Skip("tests/js/node_modules missing: run `make test-deps` (npm ci in tests/js) to read the catalog with DuckDB")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	cmd := exec.Command("node", "nautilus_check.mjs", dir)
	cmd.Dir = js
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nautilus_check.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		Files map[string]nautFile `json:"files"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return got.Files
}

// The Parquet columns of each kind of file as Nautilus's Arrow schemas
// make them (crates/serialization/src/arrow): name, physical type and
// converted type; FIXED_LEN_BYTE_ARRAY is 16 bytes (high precision).
var nautWant = map[string][]string{
	NautilusDeltasDir: {"action INT32 UINT_8", "side INT32 UINT_8", "price FIXED_LEN_BYTE_ARRAY", "size FIXED_LEN_BYTE_ARRAY",
		"order_id INT64 UINT_64", "flags INT32 UINT_8", "sequence INT64 UINT_64", "ts_event INT64 UINT_64", "ts_init INT64 UINT_64"},
	NautilusQuotesDir: {"bid_price FIXED_LEN_BYTE_ARRAY", "ask_price FIXED_LEN_BYTE_ARRAY", "bid_size FIXED_LEN_BYTE_ARRAY",
		"ask_size FIXED_LEN_BYTE_ARRAY", "ts_event INT64 UINT_64", "ts_init INT64 UINT_64"},
	NautilusTradesDir: {"price FIXED_LEN_BYTE_ARRAY", "size FIXED_LEN_BYTE_ARRAY", "aggressor_side INT32 UINT_8",
		"trade_id BYTE_ARRAY UTF8", "ts_event INT64 UINT_64", "ts_init INT64 UINT_64"},
	NautilusBinaryDir: {"id BYTE_ARRAY UTF8", "raw_symbol BYTE_ARRAY UTF8", "asset_class BYTE_ARRAY UTF8", "currency BYTE_ARRAY UTF8",
		"price_precision INT32 UINT_8", "size_precision INT32 UINT_8", "price_increment BYTE_ARRAY UTF8", "size_increment BYTE_ARRAY UTF8",
		"activation_ns INT64 UINT_64", "expiration_ns INT64 UINT_64", "maker_fee BYTE_ARRAY UTF8", "taker_fee BYTE_ARRAY UTF8",
		"max_quantity? BYTE_ARRAY UTF8", "min_quantity? BYTE_ARRAY UTF8", "outcome? BYTE_ARRAY UTF8", "description? BYTE_ARRAY UTF8",
		"tick_scheme? BYTE_ARRAY UTF8", "info? BYTE_ARRAY", "ts_event INT64 UINT_64", "ts_init INT64 UINT_64"},
	NautilusPerpDir: {"id BYTE_ARRAY UTF8", "raw_symbol BYTE_ARRAY UTF8", "base_currency BYTE_ARRAY UTF8", "quote_currency BYTE_ARRAY UTF8",
		"settlement_currency BYTE_ARRAY UTF8", "is_inverse BOOLEAN", "price_precision INT32 UINT_8", "size_precision INT32 UINT_8",
		"price_increment BYTE_ARRAY UTF8", "size_increment BYTE_ARRAY UTF8", "multiplier BYTE_ARRAY UTF8", "lot_size? BYTE_ARRAY UTF8",
		"max_quantity? BYTE_ARRAY UTF8", "min_quantity? BYTE_ARRAY UTF8", "max_notional? BYTE_ARRAY UTF8", "min_notional? BYTE_ARRAY UTF8",
		"max_price? BYTE_ARRAY UTF8", "min_price? BYTE_ARRAY UTF8", "margin_init BYTE_ARRAY UTF8", "margin_maint BYTE_ARRAY UTF8",
		"maker_fee BYTE_ARRAY UTF8", "taker_fee BYTE_ARRAY UTF8", "tick_scheme? BYTE_ARRAY UTF8", "info? BYTE_ARRAY",
		"ts_event INT64 UINT_64", "ts_init INT64 UINT_64"},
}

var nautPath = regexp.MustCompile(`^data/([a-z_]+)/([^/]+)/(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{9}Z)_(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{9}Z)\.parquet$`)

// nautRawDec decodes a little-endian two's complement raw value (hex), 16
// bytes at 10^-16 or 8 at 10^-9, into an integer at prec decimals, failing
// when it has more.
func nautRawDec(t *testing.T, h string, prec uint8) int64 {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 16 && len(b) != 8) {
		t.Fatalf("raw %q: want 16 or 8 bytes", h)
	}
	fixed := int64(16)
	if len(b) == 8 {
		fixed = 9
	}
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	v := new(big.Int).SetBytes(be)
	if b[len(b)-1]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	div := new(big.Int).Exp(big.NewInt(10), big.NewInt(fixed-int64(prec)), nil)
	q, r := new(big.Int).QuoRem(v, div, new(big.Int))
	if r.Sign() != 0 {
		t.Fatalf("raw %s is not a multiple of 10^%d: Nautilus would round it at precision %d", v, fixed-int64(prec), prec)
	}
	return q.Int64()
}

func u64(t *testing.T, v any) int64 {
	t.Helper()
	switch x := v.(type) {
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	case float64:
		return int64(x)
	}
	t.Fatalf("%v (%T) is not an integer", v, v)
	return 0
}

// The shipped samples of both venues, read back by DuckDB: the catalog's
// layout, schemas and metadata are Nautilus's, and the deltas rebuild every
// valid book the replay had, exactly, as of the same receive time; quotes are
// the rebuilt books' tops; trades carry ids Nautilus takes.
func TestNautilusSamples(t *testing.T) {
	for _, v := range []string{venue.Polymarket, venue.Hyperliquid} {
		t.Run(v, func(t *testing.T) {
			dir, tr, tl, n := nautExport(t, []string{filepath.Join("..", "..", "datasets", "samples", v)}, 0, 0)
			if p := n.Problems(); len(p) > 0 {
				t.Errorf("problems: %q", p)
			}
			files := nautRead(t, dir)
			checkNautilus(t, v, 16, files, tr, tl)
		})
	}
	// Standard precision: 8-byte integers at 10^-9, the same books.
	t.Run("hyperliquid standard", func(t *testing.T) {
		if testing.Short() {
			t.Skip("a second export of the sample; skipped in -short")
		}
		dir, tr, tl, _ := nautExport(t, []string{filepath.Join("..", "..", "datasets", "samples", venue.Hyperliquid)}, 0, 0,
			WithNautilusPrecision(NautilusStandard))
		checkNautilus(t, venue.Hyperliquid, 8, nautRead(t, dir), tr, tl)
	})
}

// A window of the recording (the replay reads it all, for the definitions):
// each instrument opens with its book as it stood, as a snapshot, and the
// deltas rebuild every valid book of the window.
func TestNautilusWindow(t *testing.T) {
	for _, v := range []string{venue.Polymarket, venue.Hyperliquid} {
		t.Run(v, func(t *testing.T) {
			path, from, to := sampleMiddle(t, v)
			dir, tr, tl, n := nautExport(t, []string{path}, from, to)
			if p := n.Problems(); len(p) > 0 {
				t.Errorf("problems: %q", p)
			}
			in := tr.states[:0]
			for _, st := range tr.states {
				if st.recvNs >= from && st.recvNs < to {
					in = append(in, st)
				}
			}
			tr.states = in
			files := nautRead(t, dir)
			for p, f := range files {
				if strings.HasPrefix(p, "data/"+NautilusDeltasDir+"/") {
					if a := u64(t, f.Rows[0][nautCol(t, &f, "action")]); a != NautilusClear {
						t.Errorf("%s opens with action %d, want a CLEAR", p, a)
					}
				}
			}
			checkNautilus(t, v, 16, files, tr, tl)
		})
	}
}

// checkNautilus checks a catalog read back by DuckDB against the truth.
func checkNautilus(t *testing.T, v string, width int, files map[string]nautFile, tr *truth, tl *tradeLog) {
	t.Helper()
	insts := map[string]*catInst{}
	get := func(id string) *catInst {
		if insts[id] == nil {
			insts[id] = &catInst{}
		}
		return insts[id]
	}
	defs := 0
	for path, f := range files {
		m := nautPath.FindStringSubmatch(path)
		if m == nil {
			t.Fatalf("%s: not a catalog path", path)
		}
		kind, id := m[1], m[2]
		want, ok := nautWant[kind]
		if !ok && kind != NautilusCurPairDir {
			t.Fatalf("%s: unknown kind %s", path, kind)
		}
		var got []string
		for _, c := range f.Schema {
			s := c.Name
			if c.Repetition == "OPTIONAL" {
				s += "?"
			}
			s += " " + c.Type
			if c.Converted != nil {
				s += " " + fmt.Sprint(c.Converted)
			}
			if c.Type == "FIXED_LEN_BYTE_ARRAY" && fmt.Sprint(c.TypeLength) != strconv.Itoa(width) {
				t.Errorf("%s: %s is %v bytes, want %d", path, c.Name, c.TypeLength, width)
			}
			got = append(got, s)
		}
		if want != nil && !slices.Equal(got, want) {
			t.Errorf("%s: columns\n%q\nwant\n%q", path, got, want)
		}
		f := f
		in := get(id)
		switch kind {
		case NautilusDeltasDir:
			in.deltas = &f
		case NautilusQuotesDir:
			in.quotes = &f
		case NautilusTradesDir:
			in.trades = &f
		default:
			defs++
			if len(f.Rows) != 1 || f.Rows[0][nautCol(t, &f, "id")] != id {
				t.Fatalf("%s: rows %v", path, f.Rows)
			}
			if f.KV["class"] == "" {
				t.Errorf("%s: no class in the metadata: %v", path, f.KV)
			}
			in.raw = f.Rows[0][nautCol(t, &f, "raw_symbol")].(string)
			continue
		}
		if f.KV["instrument_id"] != id {
			t.Errorf("%s: instrument_id %q", path, f.KV["instrument_id"])
		}
		pp, err1 := strconv.ParseUint(f.KV["price_precision"], 10, 8)
		sp, err2 := strconv.ParseUint(f.KV["size_precision"], 10, 8)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: precisions %q %q", path, f.KV["price_precision"], f.KV["size_precision"])
		}
		in.pp, in.sp = uint8(pp), uint8(sp)
		first, last := int64(-1), int64(0)
		for _, r := range f.Rows {
			ts := u64(t, r[nautCol(t, &f, "ts_init")])
			if first < 0 {
				first = ts
			}
			if ts < last {
				t.Fatalf("%s: ts_init %d after %d", path, ts, last)
			}
			last = ts
		}
		if NautilusFileName(first, last) != path[strings.LastIndexByte(path, '/')+1:] {
			t.Errorf("%s: rows span %d..%d", path, first, last)
		}
	}
	if defs == 0 {
		t.Fatal("no instrument definition")
	}
	byRaw := map[string]*catInst{}
	for id, in := range insts {
		if in.raw == "" {
			t.Fatalf("%s: data but no definition", id)
		}
		byRaw[in.raw] = in
		if in.deltas != nil {
			in.rebuild(t, id)
		}
	}
	// Every valid book of the replay, as of its receive time, is the book the
	// deltas rebuild.
	compared := 0
	for _, st := range tr.lastValid() {
		in := byRaw[st.instrument]
		if in == nil || in.deltas == nil {
			t.Fatalf("%s: no deltas", st.instrument)
		}
		k := in.at(st.recvNs)
		if k < 0 {
			t.Fatalf("%s at %d: no batch before", st.instrument, st.recvNs)
		}
		if g, w := in.bids[k], levelMap(st.bids); !maps.Equal(g, w) {
			t.Fatalf("%s at %d: bids rebuilt %v, replay %v", st.instrument, st.recvNs, g, w)
		}
		if g, w := in.asks[k], levelMap(st.asks); !maps.Equal(g, w) {
			t.Fatalf("%s at %d: asks rebuilt %v, replay %v", st.instrument, st.recvNs, g, w)
		}
		compared++
	}
	if compared < 100 {
		t.Fatalf("only %d books compared", compared)
	}
	quotes, trades := 0, 0
	for id, in := range insts {
		if q := in.quotes; q != nil {
			quotes += in.checkQuotes(t, id)
		}
		if tf := in.trades; tf != nil {
			trades += in.checkTrades(t, id, v, tl.raw[in.raw])
		} else if len(tl.raw[in.raw]) > 0 {
			t.Errorf("%s: %d trades, no trade file", id, len(tl.raw[in.raw]))
		}
	}
	if quotes == 0 || trades == 0 {
		t.Fatalf("%d quotes, %d trades checked", quotes, trades)
	}
	t.Logf("%d files, %d definitions, %d books, %d quotes, %d trades compared", len(files), defs, compared, quotes, trades)
}

func nautCol(t *testing.T, f *nautFile, name string) int {
	t.Helper()
	i := slices.Index(f.Columns, name)
	if i < 0 {
		t.Fatalf("no column %s in %v", name, f.Columns)
	}
	return i
}

// catInst is one instrument of a catalog read back.
type catInst struct {
	raw                    string // the venue's instrument (raw_symbol)
	deltas, quotes, trades *nautFile
	pp, sp                 uint8
	// The books after each batch of deltas.
	ts         []int64
	bids, asks []map[string]string
}

// rebuild applies the deltas as Nautilus's L2 book does, checking each
// action against the book (an ADD of a new level, an UPDATE or DELETE of
// one present, CLEAR flagged F_SNAPSHOT) and keeping the book after every
// batch (F_LAST).
func (in *catInst) rebuild(t *testing.T, id string) {
	t.Helper()
	f := in.deltas
	cA, cS, cF := nautCol(t, f, "action"), nautCol(t, f, "side"), nautCol(t, f, "flags")
	cP, cZ, cT := nautCol(t, f, "price"), nautCol(t, f, "size"), nautCol(t, f, "ts_init")
	bid, ask := map[string]string{}, map[string]string{}
	open := false
	for i, r := range f.Rows {
		action, side, flags := u64(t, r[cA]), u64(t, r[cS]), u64(t, r[cF])
		px := book.FormatDecimal(nautRawDec(t, r[cP].(string), in.pp), in.pp)
		sz := book.FormatDecimal(nautRawDec(t, r[cZ].(string), in.sp), in.sp)
		lv := bid
		if side == nautSell {
			lv = ask
		}
		_, had := lv[px]
		switch action {
		case NautilusClear:
			if flags&NautilusFSnapshot == 0 || side != nautNoSide || px != "0" || sz != "0" {
				t.Fatalf("%s row %d: CLEAR with flags %d side %d %s@%s", id, i, flags, side, sz, px)
			}
			clear(bid)
			clear(ask)
		case NautilusAdd, NautilusUpdate:
			if had != (action == NautilusUpdate) || sz == "0" || side == nautNoSide {
				t.Fatalf("%s row %d: action %d on a level present %v, size %s, side %d", id, i, action, had, sz, side)
			}
			lv[px] = sz
		case NautilusDelete:
			if !had || side == nautNoSide {
				t.Fatalf("%s row %d: DELETE of an absent level %s", id, i, px)
			}
			delete(lv, px)
		default:
			t.Fatalf("%s row %d: action %d", id, i, action)
		}
		open = flags&NautilusFLast == 0
		if !open {
			in.ts = append(in.ts, u64(t, r[cT]))
			in.bids = append(in.bids, maps.Clone(bid))
			in.asks = append(in.asks, maps.Clone(ask))
		}
	}
	if open {
		t.Errorf("%s: the last delta has no F_LAST", id)
	}
}

// at is the index of the last batch at or before ts, -1 if none.
func (in *catInst) at(ts int64) int {
	k, _ := slices.BinarySearch(in.ts, ts+1)
	return k - 1
}

// checkQuotes checks each quote (the last of its ts_init) against the top
// of the book rebuilt as of its ts_init.
func (in *catInst) checkQuotes(t *testing.T, id string) int {
	t.Helper()
	f := in.quotes
	cols := [4]int{nautCol(t, f, "bid_price"), nautCol(t, f, "bid_size"), nautCol(t, f, "ask_price"), nautCol(t, f, "ask_size")}
	cT := nautCol(t, f, "ts_init")
	n := 0
	for i, r := range f.Rows {
		ts := u64(t, r[cT])
		if i+1 < len(f.Rows) && u64(t, f.Rows[i+1][cT]) == ts {
			continue
		}
		k := in.at(ts)
		if k < 0 {
			t.Fatalf("%s: quote at %d before any delta", id, ts)
		}
		var q [4]string
		for j, c := range cols {
			prec := in.pp
			if j&1 == 1 {
				prec = in.sp
			}
			q[j] = book.FormatDecimal(nautRawDec(t, r[c].(string), prec), prec)
		}
		if want := topOf(in.bids[k], in.asks[k]); q != want {
			t.Fatalf("%s: quote at %d is %v, the rebuilt book's top %v", id, ts, q, want)
		}
		n++
	}
	return n
}

// topOf is the best bid and ask (price, size) of a book of decimal text.
func topOf(bids, asks map[string]string) [4]string {
	var q [4]string
	best := func(m map[string]string, better func(a, b float64) bool) (string, string) {
		var bp string
		var bv float64
		for p := range m {
			v, _ := strconv.ParseFloat(p, 64)
			if bp == "" || better(v, bv) {
				bp, bv = p, v
			}
		}
		return bp, m[bp]
	}
	q[0], q[1] = best(bids, func(a, b float64) bool { return a > b })
	q[2], q[3] = best(asks, func(a, b float64) bool { return a < b })
	return q
}

// checkTrades checks the trades against the venue's messages: price, size
// and aggressor as sent, and the id as Nautilus's adapter makes it (the
// venue's tid on Hyperliquid; on Polymarket FNV-1a 64 of the asset, side,
// price, size and timestamp strings of the message, computed here with
// hash/fnv from the raw JSON).
func (in *catInst) checkTrades(t *testing.T, id, v string, raw [][]byte) int {
	t.Helper()
	f := in.trades
	if len(f.Rows) != len(raw) {
		t.Fatalf("%s: %d trades, the replay had %d", id, len(f.Rows), len(raw))
	}
	cP, cZ, cA, cI := nautCol(t, f, "price"), nautCol(t, f, "size"), nautCol(t, f, "aggressor_side"), nautCol(t, f, "trade_id")
	for i, r := range f.Rows {
		var m map[string]any
		if err := json.Unmarshal(raw[i], &m); err != nil {
			t.Fatal(err)
		}
		str := func(k string) string {
			switch x := m[k].(type) {
			case string:
				return x
			case float64:
				return strconv.FormatFloat(x, 'f', -1, 64)
			}
			t.Fatalf("%s: trade %s: no %s", id, raw[i], k)
			return ""
		}
		var px, sz, side, wantID string
		switch v {
		case venue.Polymarket:
			px, sz, side = str("price"), str("size"), str("side")
			h := fnv.New64a()
			h.Write([]byte(strings.Join([]string{str("asset_id"), side[:1], px, sz, str("timestamp")}, "\x1f")))
			wantID = fmt.Sprintf("%016x", h.Sum64())
			side = map[string]string{"BUY": "1", "SELL": "2"}[side]
		default:
			px, sz, side = str("px"), str("sz"), map[string]string{"B": "1", "A": "2"}[str("side")]
			var tid json.Number
			dec := json.NewDecoder(bytes.NewReader(raw[i]))
			dec.UseNumber()
			var mm map[string]any
			if err := dec.Decode(&mm); err != nil {
				t.Fatal(err)
			}
			tid = mm["tid"].(json.Number)
			wantID = tid.String()
		}
		if got := r[cI].(string); got != wantID {
			t.Fatalf("%s: trade %d id %q, want %q (%s)", id, i, got, wantID, raw[i])
		}
		if got := fmt.Sprint(r[cA]); got != side {
			t.Fatalf("%s: trade %d aggressor %s, want %s", id, i, got, side)
		}
		if got, want := nautRawDec(t, r[cP].(string), in.pp), decOf(t, px, in.pp); got != want {
			t.Fatalf("%s: trade %d price %d, sent %s", id, i, got, px)
		}
		if got, want := nautRawDec(t, r[cZ].(string), in.sp), decOf(t, sz, in.sp); got != want {
			t.Fatalf("%s: trade %d size %d, sent %s", id, i, got, sz)
		}
	}
	return len(f.Rows)
}

// decOf is decimal text s at prec decimals.
func decOf(t *testing.T, s string, prec uint8) int64 {
	t.Helper()
	v, err := book.ParseDecimal([]byte(s), prec)
	if err != nil {
		t.Fatalf("%q at %d decimals: %v", s, prec, err)
	}
	return v
}
func levelMap(lv [][3]string) map[string]string {
	out := map[string]string{}
	for _, l := range lv {
		out[l[0]] = l[1]
	}
	return out
}
