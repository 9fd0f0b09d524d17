package polymarket

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readLines returns the frames of an ndjson fixture.
func readLines(t testing.TB, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, bytes.Clone(sc.Bytes()))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDecode(t testing.TB, d *Decoder, frame []byte, out *venue.Frame) {
	t.Helper()
	if err := d.Decode(frame, 0, out); err != nil {
		t.Fatalf("Decode(%.80s…): %v", frame, err)
	}
}

// jsonLevel is a level as JSON text, for books decoded with encoding/json:
// the reference the tests compare the hand-written scanner against.
type jsonLevel struct {
	Price string `json:"price"`
	Size  string `json:"size"`
}

type jsonBook struct {
	Market       string      `json:"market"`
	AssetID      string      `json:"asset_id"`
	Timestamp    json.Number `json:"timestamp"`
	Hash         string      `json:"hash"`
	Bids         []jsonLevel `json:"bids"`
	Asks         []jsonLevel `json:"asks"`
	MinOrderSize string      `json:"min_order_size"`
	TickSize     string      `json:"tick_size"`
	NegRisk      bool        `json:"neg_risk"`
}

func parseJSONBook(t testing.TB, b []byte) jsonBook {
	t.Helper()
	var jb jsonBook
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&jb); err != nil {
		t.Fatal(err)
	}
	return jb
}

// levelsOf converts JSON levels to fixed point, best first.
func levelsOf(t testing.TB, ls []jsonLevel, bid bool) []book.Level {
	t.Helper()
	var out []book.Level
	for _, l := range ls {
		p, err := book.ParseDecimal([]byte(l.Price), Scale.PriceDecimals)
		if err != nil {
			t.Fatal(err)
		}
		s, err := book.ParseDecimal([]byte(l.Size), Scale.SizeDecimals)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, book.Level{Price: p, Size: s})
	}
	slices.SortFunc(out, func(a, b book.Level) int {
		if bid {
			return int(b.Price - a.Price)
		}
		return int(a.Price - b.Price)
	})
	return out
}

func assertBook(t *testing.T, b *book.Book, jb jsonBook) {
	t.Helper()
	if b == nil {
		t.Fatal("no book")
	}
	for _, side := range []book.Side{book.Bid, book.Ask} {
		want := levelsOf(t, jb.Bids, true)
		if side == book.Ask {
			want = levelsOf(t, jb.Asks, false)
		}
		got := b.Top(side, nil, -1)
		if !slices.Equal(got, want) {
			t.Fatalf("%v side: got %d levels %v\nwant %d levels %v", side, len(got), got, len(want), want)
		}
	}
}

// digest hashes every book of d (ids, validity, levels) to compare states.
func digest(d *Decoder) [32]byte { return digestOf(d, true) }

// levelsDigest is digest without validity: a rejected message may
// invalidate books, never change their levels.
func levelsDigest(d *Decoder) [32]byte { return digestOf(d, false) }

func digestOf(d *Decoder, validity bool) [32]byte {
	h := sha256.New()
	var buf []book.Level
	for _, id := range d.Instruments(nil) {
		b := d.Book(id)
		h.Write([]byte(id))
		if validity && b.Valid() {
			h.Write([]byte{1})
		}
		for _, side := range []book.Side{book.Bid, book.Ask} {
			buf = b.Top(side, buf[:0], -1)
			h.Write([]byte{0xff})
			for _, l := range buf {
				h.Write(binary.LittleEndian.AppendUint64(nil, uint64(l.Price)))
				h.Write(binary.LittleEndian.AppendUint64(nil, uint64(l.Size)))
			}
		}
	}
	return [32]byte(h.Sum(nil))
}

const (
	pyAsset  = "94022367472047775158269173293876979533288470167463650966689320774843018181757"
	pyOther  = "3329029450753225654467003002742946394863848082479209219558348197750220015613"
	pyMarket = "0x2f1ab0ffaf465c4acd76b9a4a1f8980db26bfae7d248a6bb289350586028307e"
)

// The polypy 2025-10 vector: a WS book and two price_change frames, each
// followed by a REST /book summary taken at the change's timestamp.
func TestReconstructPolypyHashVector(t *testing.T) {
	ws := readLines(t, "real/polypy_hash_vector_ws_2025-10.ndjson")
	rest := readLines(t, "real/polypy_hash_vector_rest_book_summaries_2025-10.ndjson")
	if len(ws) != 3 || len(rest) != 2 {
		t.Fatalf("fixture shape: %d ws, %d rest", len(ws), len(rest))
	}
	sum0 := parseJSONBook(t, rest[0])
	d := NewDecoder(withInstrumentInfo(instrumentInfo{
		AssetID: pyAsset, MinOrderSize: sum0.MinOrderSize, NegRisk: sum0.NegRisk,
	}))
	var out venue.Frame
	mustDecode(t, d, ws[0], &out)
	if q := d.Quality(pyAsset); q.HashChecked != 0 {
		// The WS book carries no tick_size, so its hash cannot be checked yet.
		t.Fatalf("hash checked without a tick size: %+v", q)
	}
	if err := d.setInstrumentInfo(instrumentInfo{AssetID: pyAsset, MinOrderSize: "5", TickSize: sum0.TickSize}); err != nil {
		t.Fatal(err)
	}
	mustDecode(t, d, ws[0], &out)
	if q := d.Quality(pyAsset); q.HashChecked != 1 || q.HashOK != 1 {
		t.Fatalf("WS book hash: %+v", q)
	}
	for i, frame := range ws[1:] {
		mustDecode(t, d, frame, &out)
		if len(out.Events) != 2 {
			t.Fatalf("frame %d: %d events", i+1, len(out.Events))
		}
		sum := parseJSONBook(t, rest[i])
		assertBook(t, d.Book(pyAsset), sum)
		// The recomputed hash of the reconstruction equals the summary's.
		got := BookHash(nil, HashFields{
			Market: sum.Market, AssetID: sum.AssetID, Timestamp: sum.Timestamp.String(),
			MinOrderSize: sum.MinOrderSize, TickSize: sum.TickSize, NegRisk: sum.NegRisk,
		}, d.Book(pyAsset))
		if string(got) != sum.Hash {
			t.Fatalf("frame %d: BookHash %s, summary %s", i+1, got, sum.Hash)
		}
	}
	d.Flush(nil) // the last batch's hash is judged when it closes
	q := d.Quality(pyAsset)
	if q.HashChecked != 3 || q.HashOK != 3 {
		t.Fatalf("quality %+v: want 3 hashes checked, 3 ok", q)
	}
	// The other asset of the market has no snapshot: changes go to an
	// invalid book and nothing is checked.
	if b := d.Book(pyOther); b == nil || b.Valid() || b.Len(book.Bid) != 0 || b.Len(book.Ask) != 1 {
		t.Fatalf("other asset book: %v", b)
	}
	if q := d.Quality(pyOther); q.HashChecked != 0 || q.TopChecked != 0 {
		t.Fatalf("other asset quality %+v", q)
	}
	// The first batch closed when the second timestamp arrived; the second on Flush.
	d.Flush(nil)
	q = d.Quality(pyAsset)
	if q.TopChecked != 2 || q.TopMismatch != 0 || q.Crossed {
		t.Fatalf("top checks %+v", q)
	}
	st := d.Stats()
	if st.Frames != 4 || st.HashChecked != 3 || st.HashOK != 3 || st.Events[venue.EventLevel] != 4 {
		t.Fatalf("stats %+v", st)
	}
}

// A REST /book summary decodes as a snapshot and teaches the decoder the
// fields WS frames lack, so its own hash is checked.
func TestRESTSummaryAsSnapshot(t *testing.T) {
	rest := readLines(t, "real/polypy_hash_vector_rest_book_summaries_2025-10.ndjson")
	d := NewDecoder()
	var out venue.Frame
	for i, frame := range rest {
		mustDecode(t, d, frame, &out)
		if len(out.Events) != 1 || out.Events[0].Type != venue.EventSnapshot {
			t.Fatalf("summary %d: events %+v", i, out.Events)
		}
		assertBook(t, d.Book(pyAsset), parseJSONBook(t, frame))
	}
	if q := d.Quality(pyAsset); q.HashChecked != 2 || q.HashOK != 2 {
		t.Fatalf("quality %+v", q)
	}
	// With hash checking off nothing is computed.
	d = NewDecoder(WithHashCheck(false))
	mustDecode(t, d, rest[0], &out)
	if q := d.Quality(pyAsset); q.HashChecked != 0 {
		t.Fatalf("hash checked while off: %+v", q)
	}
}

func TestBookHashForms(t *testing.T) {
	rest := readLines(t, "real/polypy_hash_vector_rest_book_summaries_2025-10.ndjson")
	sum := parseJSONBook(t, rest[0])
	b := book.New(Scale)
	if err := b.Replace(levelsOf(t, sum.Bids, true), levelsOf(t, sum.Asks, false)); err != nil {
		t.Fatal(err)
	}
	f := HashFields{Market: sum.Market, AssetID: sum.AssetID, Timestamp: sum.Timestamp.String(),
		MinOrderSize: sum.MinOrderSize, TickSize: sum.TickSize, NegRisk: sum.NegRisk}
	if got := BookHash([]byte("x"), f, b); string(got) != "x"+sum.Hash {
		t.Fatalf("BookHash = %s, want x%s", got, sum.Hash)
	}
	// Each field is hashed: changing any changes the hash.
	for name, g := range map[string]func(HashFields) HashFields{
		"timestamp":        func(f HashFields) HashFields { f.Timestamp += "1"; return f },
		"neg_risk":         func(f HashFields) HashFields { f.NegRisk = !f.NegRisk; return f },
		"last_trade_price": func(f HashFields) HashFields { f.LastTradePrice = "0.33"; return f },
		"min_order_size":   func(f HashFields) HashFields { f.MinOrderSize = "15"; return f },
	} {
		if got := BookHash(nil, g(f), b); string(got) == sum.Hash {
			t.Errorf("%s not hashed", name)
		}
	}
}

func TestNautilusBook(t *testing.T) {
	frame := readLines(t, "real/nautilus_ws_book_2024-10.ndjson")[0]
	jb := parseJSONBook(t, frame)
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, frame, &out)
	b := d.Book(jb.AssetID)
	assertBook(t, b, jb)
	if b.Len(book.Bid) != 76 || b.Len(book.Ask) != 86 || !b.Valid() {
		t.Fatalf("levels %d/%d valid %v", b.Len(book.Bid), b.Len(book.Ask), b.Valid())
	}
	ev := out.Events[0]
	if ev.Type != venue.EventSnapshot || ev.Instrument != jb.AssetID || ev.Market != jb.Market ||
		ev.ExchangeNs != 1728799418260*1e6 || ev.Book != b || !bytes.Equal(ev.Raw, frame) {
		t.Fatalf("event %+v", ev)
	}
	if bb, _ := b.Best(book.Bid); bb.Price != 5110 {
		t.Fatalf("best bid %v", bb)
	}
}

func TestPolypyBookWithoutEventType(t *testing.T) {
	frame := readLines(t, "real/polypy_ws_book_2024-11.ndjson")[0]
	jb := parseJSONBook(t, frame)
	d := NewDecoder()
	var out venue.Frame
	mustDecode(t, d, frame, &out)
	if len(out.Events) != 1 || out.Events[0].Type != venue.EventSnapshot {
		t.Fatalf("events %+v", out.Events)
	}
	assertBook(t, d.Book(jb.AssetID), jb)
	if d.Book(jb.AssetID).Len(book.Bid) != 14 || d.Book(jb.AssetID).Len(book.Ask) != 4 {
		t.Fatal("level counts")
	}
}

// The semi-synthetic stream: book → price_change×4 → last_trade_price →
// price_change×2 → book → tick_size_change. Its later book is not the
// reconstruction (the author dropped ~230 s of changes), so the test asserts
// what the data allows: the reconstruction equals an independent model of the
// changes; the levels no change touched agree with the later book wherever
// the later book did not move them; the later book replaces the state exactly.
func TestSemiSyntheticStream(t *testing.T) {
	lines := readLines(t, "real/polypy_semisynthetic_stream_single_asset.ndjson")
	if len(lines) != 10 {
		t.Fatalf("%d lines", len(lines))
	}
	const asset = "72936048731589292555781174533757608024096898681344338816447372274344589246891"
	var first []jsonBook
	if err := json.Unmarshal(lines[0], &first); err != nil {
		t.Fatal(err)
	}
	model := [2]map[int64]int64{{}, {}}
	for _, l := range levelsOf(t, first[0].Bids, true) {
		model[book.Bid][l.Price] = l.Size
	}
	for _, l := range levelsOf(t, first[0].Asks, false) {
		model[book.Ask][l.Price] = l.Size
	}
	d := NewDecoder()
	var out venue.Frame
	var types []venue.EventType
	for i, frame := range lines[:8] {
		mustDecode(t, d, frame, &out)
		for _, ev := range out.Events {
			types = append(types, ev.Type)
			if ev.Type == venue.EventLevel {
				if ev.Size == 0 {
					delete(model[ev.Side], ev.Price)
				} else {
					model[ev.Side][ev.Price] = ev.Size
				}
			}
			if ev.Type == venue.EventTrade && (ev.Price != 5200 || ev.Size != 25e6 || ev.Side != book.Bid) {
				t.Fatalf("line %d trade %+v", i, ev)
			}
		}
	}
	want := []venue.EventType{venue.EventSnapshot, venue.EventLevel, venue.EventLevel, venue.EventLevel,
		venue.EventLevel, venue.EventTrade, venue.EventLevel, venue.EventLevel, venue.EventLevel}
	if !slices.Equal(types, want) {
		t.Fatalf("event types %v, want %v", types, want)
	}
	b := d.Book(asset)
	for _, side := range []book.Side{book.Bid, book.Ask} {
		got := b.Top(side, nil, -1)
		if len(got) != len(model[side]) {
			t.Fatalf("%v: %d levels, model %d", side, len(got), len(model[side]))
		}
		for _, l := range got {
			if model[side][l.Price] != l.Size {
				t.Fatalf("%v %d: %d, model %d", side, l.Price, l.Size, model[side][l.Price])
			}
		}
	}
	// Deep levels (bids ≤ 0.527, asks ≥ 0.577) agree with the later book.
	var later jsonBook
	if err := json.Unmarshal(lines[8], &later); err != nil {
		t.Fatal(err)
	}
	deep := func(side book.Side, ls []book.Level) []book.Level {
		var out []book.Level
		for _, l := range ls {
			if side == book.Bid && l.Price <= 5270 || side == book.Ask && l.Price >= 5770 {
				out = append(out, l)
			}
		}
		return out
	}
	if g, w := deep(book.Bid, b.Top(book.Bid, nil, -1)), deep(book.Bid, levelsOf(t, later.Bids, true)); !slices.Equal(g, w) {
		t.Fatalf("deep bids differ:\n%v\n%v", g, w)
	}
	if g, w := deep(book.Ask, b.Top(book.Ask, nil, -1)), deep(book.Ask, levelsOf(t, later.Asks, false)); !slices.Equal(g, w) {
		t.Fatalf("deep asks differ:\n%v\n%v", g, w)
	}
	mustDecode(t, d, lines[8], &out)
	assertBook(t, b, later)
	mustDecode(t, d, lines[9], &out)
	if ev := out.Events[0]; ev.Type != venue.EventTickSize || ev.Price != 100 || ev.Instrument != asset {
		t.Fatalf("tick event %+v", ev)
	}
	// best_bid/best_ask are all "0" placeholders: unknown, never a mismatch.
	d.Flush(nil)
	if q := d.Quality(asset); q.TopChecked != 0 || q.TopMismatch != 0 || q.HashChecked != 0 {
		t.Fatalf("quality %+v", q)
	}
}

func TestMiscEvents(t *testing.T) {
	lines := readLines(t, "real/nautilus_ws_misc_events.ndjson")
	d := NewDecoder()
	var out venue.Frame
	wantTypes := []venue.EventType{venue.EventTrade, venue.EventTickSize, venue.EventQuote, venue.EventMarket, venue.EventMarket}
	for i, frame := range lines {
		mustDecode(t, d, frame, &out)
		if len(out.Events) != 1 || out.Events[0].Type != wantTypes[i] {
			t.Fatalf("line %d: %+v", i, out.Events)
		}
	}
	mustDecode(t, d, lines[0], &out)
	if ev := out.Events[0]; ev.Price != 4910 || ev.Size != 85360000 || ev.Side != book.Ask || ev.ExchangeNs != 1724564136087e6 || ev.Book != nil {
		t.Fatalf("trade %+v", ev)
	}
	mustDecode(t, d, lines[2], &out)
	if ev := out.Events[0]; ev.BidPrice != 7300 || ev.AskPrice != 7700 || !ev.HasBid || !ev.HasAsk {
		t.Fatalf("quote %+v", ev)
	}
	mustDecode(t, d, lines[4], &out)
	if ev := out.Events[0]; string(ev.Text) != "market_resolved" || ev.Market != "0x311d0c4b6671ab54af4970c06fcf58662516f5168997bdda209ec3db5aa6b0c1" {
		t.Fatalf("market %+v", ev)
	}
}

func TestTextFramesAndUnknown(t *testing.T) {
	d := NewDecoder()
	var out venue.Frame
	for _, s := range []string{"PONG", "PING", "INVALID OPERATION"} {
		mustDecode(t, d, []byte(s), &out)
		if len(out.Events) != 1 || out.Events[0].Type != venue.EventControl || string(out.Events[0].Text) != s {
			t.Fatalf("%s: %+v", s, out.Events)
		}
	}
	mustDecode(t, d, []byte(`[{"event_type":"settlement_preview","market":"0x1","bids":{"odd":1}},{"event_type":"book","asset_id":"1","bids":[],"asks":[]}]`), &out)
	if len(out.Events) != 2 || out.Events[0].Type != venue.EventUnknown || string(out.Events[0].Text) != "settlement_preview" {
		t.Fatalf("%+v", out.Events)
	}
	st := d.Stats()
	if st.NonJSON != 3 || st.UnknownTypes != 1 || st.Frames != 4 || st.Errors != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLegacySchemas(t *testing.T) {
	d := NewDecoder()
	var out venue.Frame
	frame := readLines(t, "real/nautilus_ws_price_change_legacy_2024-08.ndjson")[0]
	err := d.Decode(frame, 0, &out)
	if !errors.Is(err, ErrLegacyFlat) {
		t.Fatalf("flat legacy: %v", err)
	}
	changes := []byte(`{"asset_id":"1","changes":[{"price":"0.5","side":"BUY","size":"1"}],"event_type":"price_change","market":"0x1","timestamp":"1","hash":"x"}`)
	err = d.Decode(changes, 0, &out)
	if !errors.Is(err, ErrLegacyChanges) {
		t.Fatalf("changes legacy: %v", err)
	}
	if got, want := err.Error(), `polymarket: asset 1: legacy price_change schema (pre-2025-09-15 "changes" array) at offset 0`; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	if len(out.Events) != 1 || out.Events[0].Type != venue.EventReject || len(d.Instruments(nil)) != 0 {
		t.Fatalf("legacy frame: events %v, instruments %v", out.Events, d.Instruments(nil))
	}
}

// Key order and ", " separators must not matter.
func TestWhitespaceAndKeyOrder(t *testing.T) {
	compact := readLines(t, "real/polypy_hash_vector_ws_2025-10.ndjson")
	d1, d2 := NewDecoder(), NewDecoder()
	var out venue.Frame
	for _, frame := range compact {
		mustDecode(t, d1, frame, &out)
		spaced := bytes.ReplaceAll(frame, []byte(`,"`), []byte(`, "`))
		spaced = bytes.ReplaceAll(spaced, []byte(`,{`), []byte(`, {`))
		mustDecode(t, d2, spaced, &out)
	}
	if digest(d1) != digest(d2) {
		t.Fatal("spaced frames gave another book")
	}
	d3 := NewDecoder()
	mustDecode(t, d3, []byte(`{"":1,"x\"y":[{}],"bids":[{"size":"1.5","price":"0.40"},{"price": "0.45" , "size":"2"}],"asks":[ ],"event_type":"book","asset_id":"7","timestamp":1700000000000}`), &out)
	if got := d3.Book("7").Top(book.Bid, nil, -1); !slices.Equal(got, []book.Level{{Price: 4500, Size: 2e6}, {Price: 4000, Size: 1.5e6}}) {
		t.Fatalf("levels %v", got)
	}
	if out.Events[0].ExchangeNs != 1700000000000e6 {
		t.Fatal("numeric timestamp")
	}
}

// Pretty-printed frames (new lines, indentation, escapes in strings) take
// the generic paths and must give the same books as the compact wire text.
func TestPrettyPrinted(t *testing.T) {
	d1, d2 := NewDecoder(), NewDecoder()
	var out venue.Frame
	for _, name := range []string{"real/polypy_hash_vector_ws_2025-10.ndjson", "real/nautilus_ws_book_2024-10.ndjson",
		"real/polypy_semisynthetic_stream_single_asset.ndjson"} {
		for _, frame := range readLines(t, name) {
			mustDecode(t, d1, frame, &out)
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, frame, "", "\t"); err != nil {
				t.Fatal(err)
			}
			// An escape in a string forces the generic string path.
			p := bytes.Replace(pretty.Bytes(), []byte(`"market": "0x`), []byte(`"market": "0\u0078`), 1)
			mustDecode(t, d2, p, &out)
		}
	}
	if digest(d1) != digest(d2) {
		t.Fatal("pretty-printed frames gave other books")
	}
}

func TestTooManyInstruments(t *testing.T) {
	d := NewDecoder()
	for i := range maxInstruments {
		if err := d.setInstrumentInfo(instrumentInfo{AssetID: fmt.Sprint(i), MinOrderSize: "5"}); err != nil {
			t.Fatal(err)
		}
	}
	var out venue.Frame
	err := d.Decode([]byte(`{"event_type":"book","asset_id":"new","bids":[],"asks":[]}`), 0, &out)
	if !errors.Is(err, ErrTooManyInstruments) {
		t.Fatalf("err = %v", err)
	}
	// Known assets still decode.
	mustDecode(t, d, []byte(`{"event_type":"book","asset_id":"7","bids":[],"asks":[]}`), &out)
	if d.Book("7").Scale() != Scale || d.Book("new") != nil || d.Quality("new") != (venue.Quality{}) {
		t.Fatal("accessors")
	}
}

// Bad input: an error naming what and where, and no change to any book.
func TestBadInput(t *testing.T) {
	base := readLines(t, "real/polypy_hash_vector_ws_2025-10.ndjson")[0]
	const bookHead = `{"event_type":"book","asset_id":"` + pyAsset + `","market":"` + pyMarket + `","timestamp":"1761179883493",`
	pc := func(entry string) string {
		return `{"event_type":"price_change","market":"` + pyMarket + `","timestamp":"1","price_changes":[` +
			`{"asset_id":"` + pyAsset + `","price":"0.5","size":"1","side":"BUY"},` + entry + `]}`
	}
	cases := []struct {
		name, frame string
		is          error
		contains    string
	}{
		{"empty", "", ErrFrame, "offset 0"},
		{"number", "42", ErrFrame, ""},
		{"truncated", string(base[:len(base)/2]), ErrSyntax, ""},
		{"truncated-level", bookHead + `"bids":[{"price":"0.5","si`, ErrSyntax, ""},
		{"trailing", `{"event_type":"book","asset_id":"1","bids":[],"asks":[]} x`, ErrSyntax, ""},
		{"negative-price", bookHead + `"bids":[{"price":"-0.5","size":"1"}],"asks":[]}`, book.ErrNegative, "bids[0].price"},
		{"exponent", bookHead + `"bids":[{"price":"1e400","size":"1"}],"asks":[]}`, book.ErrSyntax, "bids[0].price"},
		{"overflow", bookHead + `"bids":[],"asks":[{"price":"0.5","size":"99999999999999999999"}]}`, book.ErrRange, "asks[0].size"},
		{"too-many-decimals", bookHead + `"bids":[{"price":"0.75001","size":"1"}],"asks":[]}`, book.ErrPrecision, "bids[0].price"},
		{"size-decimals", bookHead + `"bids":[{"price":"0.75","size":"1.0000001"}],"asks":[]}`, book.ErrPrecision, "bids[0].size"},
		{"number-price", bookHead + `"bids":[{"price":0.5,"size":"1"}],"asks":[]}`, ErrType, "bids[0].price"},
		{"bool-size", bookHead + `"bids":[{"price":"0.5","size":true}],"asks":[]}`, ErrType, "bids[0].size"},
		{"price-above-1", bookHead + `"bids":[{"price":"922337203685477.5807","size":"1"}],"asks":[]}`, ErrDomain, "bids[0].price"},
		{"price-zero", bookHead + `"bids":[],"asks":[{"price":"0","size":"1"}]}`, ErrDomain, "asks[0].price"},
		{"size-huge", bookHead + `"bids":[{"price":"0.5","size":"9200000000000"}],"asks":[]}`, ErrDomain, "bids[0].size"},
		{"tick-odd", bookHead + `"bids":[],"asks":[],"tick_size":"0.05"}`, ErrDomain, "tick_size"},
		{"ltp-number", bookHead + `"bids":[],"asks":[],"last_trade_price":0.5}`, ErrType, "last_trade_price"},
		{"null", "null", ErrFrame, "offset 0"},
		{"string", `"str"`, ErrFrame, ""},
		{"true", "true", ErrFrame, ""},
		{"pc-lower-side", pc(`{"asset_id":"1","price":"0.5","size":"1","side":"buy"}`), ErrSide, "price_changes[1].side"},
		{"pc-number-price", pc(`{"asset_id":"1","price":0.5,"size":"1","side":"BUY"}`), ErrType, "price_changes[1].price"},
		{"pc-price-above-1", pc(`{"asset_id":"1","price":"1.5","size":"1","side":"BUY"}`), ErrDomain, "price_changes[1].price"},
		{"pc-size-huge", pc(`{"asset_id":"1","price":"0.5","size":"1000000001","side":"SELL"}`), ErrDomain, "price_changes[1].size"},
		{"trade-lower-side", `{"event_type":"last_trade_price","asset_id":"1","price":"0.5","size":"1","side":"sell"}`, ErrSide, "side"},
		{"trade-number-size", `{"event_type":"last_trade_price","asset_id":"1","price":"0.5","size":1,"side":"SELL"}`, ErrType, "size"},
		{"trade-price-above-1", `{"event_type":"last_trade_price","asset_id":"1","price":"2","size":"1","side":"SELL"}`, ErrDomain, "price"},
		{"quote-above-1", `{"event_type":"best_bid_ask","asset_id":"1","best_bid":"1.01","best_ask":""}`, ErrDomain, "best_bid"},
		{"object-price", bookHead + `"bids":[{"price":{},"size":"1"}],"asks":[]}`, ErrType, "bids[0].price"},
		{"bids-not-array", bookHead + `"bids":"x","asks":[]}`, ErrType, "bids"},
		{"level-not-object", bookHead + `"bids":["0.5"],"asks":[]}`, ErrType, "bids[0]"},
		{"missing-size", bookHead + `"bids":[{"price":"0.5"}],"asks":[]}`, ErrMissingField, "bids[0].size"},
		{"zero-size", bookHead + `"bids":[{"price":"0.5","size":"0"}],"asks":[]}`, book.ErrBadLevel, "bids[0].size"},
		{"duplicate", bookHead + `"bids":[{"price":"0.5","size":"1"},{"price":"0.4","size":"1"},{"price":"0.50","size":"2"}],"asks":[]}`, book.ErrDuplicatePrice, "bids"},
		{"missing-asks", bookHead + `"bids":[]}`, ErrMissingField, "asks"},
		{"missing-asset", `{"event_type":"book","bids":[],"asks":[]}`, ErrMissingField, "asset_id"},
		{"bad-timestamp", `{"event_type":"book","asset_id":"1","timestamp":"12:00","bids":[],"asks":[]}`, ErrTimestamp, "timestamp"},
		{"timestamp-overflow", `{"event_type":"book","asset_id":"1","timestamp":"9999999999999","bids":[],"asks":[]}`, ErrTimestamp, "timestamp"},
		{"negative-timestamp", `{"event_type":"book","asset_id":"1","timestamp":-5,"bids":[],"asks":[]}`, ErrTimestamp, "timestamp"},
		{"array-of-strings", `["PONG"]`, ErrType, ""},
		{"asset-not-string", `{"event_type":"book","asset_id":5,"bids":[],"asks":[]}`, ErrType, "asset_id"},
		{"asset-empty", `{"event_type":"book","asset_id":"","bids":[],"asks":[]}`, ErrTokenID, "asset_id"},
		{"neg-risk-type", bookHead + `"bids":[],"asks":[],"neg_risk":"yes"}`, ErrType, "neg_risk"},
		{"bad-escape", `{"event_type":"book","asset_id":"1\x","bids":[],"asks":[]}`, ErrSyntax, ""},
		{"control-char", "{\"event_type\":\"book\",\"asset_id\":\"1\x01\",\"bids\":[],\"asks\":[]}", ErrSyntax, ""},
		{"pc-asset-type", pc(`{"asset_id":1,"price":"0.5","size":"1","side":"BUY"}`), ErrType, "price_changes[1].asset_id"},
		{"pc-price-type", pc(`{"asset_id":"1","price":[],"size":"1","side":"BUY"}`), ErrType, "price_changes[1].price"},
		{"pc-entry-type", pc(`"x"`), ErrType, "price_changes[1]"},
		{"tick-missing", `{"event_type":"tick_size_change","asset_id":"1"}`, ErrMissingField, "new_tick_size"},
		{"quote-bad", `{"event_type":"best_bid_ask","asset_id":"1","best_bid":"0.5","best_ask":"1e2"}`, book.ErrSyntax, "best_ask"},
		{"pc-bad-side", pc(`{"asset_id":"1","price":"0.5","size":"1","side":"HOLD"}`), ErrSide, "price_changes[1].side"},
		{"pc-missing-price", pc(`{"asset_id":"1","size":"1","side":"BUY"}`), ErrMissingField, "price_changes[1].price"},
		{"pc-negative-size", pc(`{"asset_id":"1","price":"0.5","size":"-1","side":"BUY"}`), book.ErrNegative, "price_changes[1].size"},
		{"pc-bad-best", pc(`{"asset_id":"1","price":"0.5","size":"1","side":"BUY","best_bid":"0.x"}`), book.ErrSyntax, "price_changes[1].best_bid"},
		{"pc-not-array", `{"event_type":"price_change","price_changes":{}}`, ErrType, "price_changes"},
		{"pc-missing", `{"event_type":"price_change","market":"0x1"}`, ErrMissingField, "price_changes"},
		{"trade-missing-size", `{"event_type":"last_trade_price","asset_id":"1","price":"0.5","side":"BUY"}`, ErrMissingField, "size"},
		{"trade-bad-side", `{"event_type":"last_trade_price","asset_id":"1","price":"0.5","size":"1","side":"X"}`, ErrSide, "side"},
		{"tick-bad", `{"event_type":"tick_size_change","asset_id":"1","new_tick_size":"0.00001"}`, book.ErrPrecision, "new_tick_size"},
		{"second-message-bad", `[` + string(base) + `,{"event_type":"book","asset_id":"2","bids":[{"price":2e,"size":"1"}],"asks":[]}]`, ErrSyntax, ""},
		{"second-message-semantic", `[` + string(base) + `,{"event_type":"book","asset_id":"2","bids":[{"price":"x","size":"1"}],"asks":[]}]`, book.ErrSyntax, "bids[0].price"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder()
			var out venue.Frame
			mustDecode(t, d, base, &out)
			mustDecode(t, d, []byte(pc(`{"asset_id":"`+pyAsset+`","price":"0.31","size":"3","side":"BUY"}`)), &out)
			before := levelsDigest(d)
			ids := len(d.Instruments(nil))
			err := d.Decode([]byte(c.frame), 0, &out)
			partial := strings.HasPrefix(c.name, "second-message")
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *DecodeError", err)
			}
			if !errors.Is(err, c.is) {
				t.Fatalf("err = %v, want %v", err, c.is)
			}
			if !strings.Contains(err.Error(), c.contains) || !strings.Contains(err.Error(), "at offset") {
				t.Fatalf("err %q does not name %q and an offset", err, c.contains)
			}
			if de.Offset < 0 || de.Offset > len(c.frame) {
				t.Fatalf("offset %d outside frame of %d bytes", de.Offset, len(c.frame))
			}
			rejects := 0
			for i, ev := range out.Events {
				switch {
				case ev.Type == venue.EventReject:
					rejects++
				case partial && i == 0 && ev.Type == venue.EventSnapshot:
				default:
					t.Fatalf("event %d on error: %v", i, ev.Type)
				}
			}
			if rejects == 0 {
				t.Fatal("no EventReject on error")
			}
			if !partial && (levelsDigest(d) != before || len(d.Instruments(nil)) != ids) {
				t.Fatal("levels changed on error")
			}
			if st := d.Stats(); st.Errors != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// The hash's fast decimal formatting must equal book.AppendDecimal.
func TestAppendDecimalAgrees(t *testing.T) {
	for _, v := range []int64{0, 1, 9, 10, 100, 1000, 9999, 10000, 10001, 4800, 123456, 1e6, 1e6 + 1, 999999,
		110000e6, 5110, 1<<63 - 1, -1, -4800} {
		for _, dec := range []uint8{4, 6, 2} {
			if got, want := string(appendDecimal(nil, v, dec)), book.FormatDecimal(v, dec); got != want {
				t.Errorf("appendDecimal(%d, %d) = %q, want %q", v, dec, got, want)
			}
		}
	}
}

// scanDec (eight bytes at a time) agrees with book.ParseDecimal on every
// input it accepts up to the closing quote, wherever the text sits in the
// buffer; and it accepts the common shapes.
func TestScanDecAgrees(t *testing.T) {
	inputs := []string{"0", "1", "0.48", ".48", "0.4800", "0.48001", "10500100", "9000023.58", "199.31",
		"12345678", "123456789012", "1234567890123", "0.000001", "0.0000010", "0.0000001", "7.", "1.2.3",
		"100.0000", "0.999", "00012", "5", "0.1234567", "0.12345670", "99999999.999999",
		"0.48000000000", "0.4800000009", "1.000000000000001", "0.", ".", "", "0.4800x", "0.48000x1"}
	accepted := map[string]bool{}
	for _, in := range inputs {
		for _, dec := range []int{4, 6} {
			for pad := -1; pad < 12; pad++ {
				buf := []byte(in) // at the buffer's end
				if pad >= 0 {
					buf = []byte(in + `"` + strings.Repeat("x", pad))
				}
				v, end, ok := scanDec(buf, 0, dec)
				want, err := book.ParseDecimal([]byte(in), uint8(dec))
				if !ok || end != len(in) {
					continue // the caller sees no closing quote and re-parses exactly
				}
				if err != nil || v != want {
					t.Fatalf("scanDec(%q, %d) pad %d = %d,%d; ParseDecimal = %d,%v", in, dec, pad, v, end, want, err)
				}
				accepted[in] = true
			}
		}
	}
	for _, in := range []string{"0", "0.48", "10500100", "9000023.58", "0.4800", "100.0000", "0.000001", "123456789012"} {
		if !accepted[in] {
			t.Errorf("fast path rejected %q", in)
		}
	}
}

// TestRejectsPastTheBoundStayProportional is issue 30 item 11: past
// maxInstruments every further frame with a new asset id was rejected and
// invalidated every book, one EventReject per book (a 68 KB dataset: 128.8 M
// rejected events, 33 s). A book already invalid is not invalidated again,
// so a run of rejected frames costs each valid book once: here 65,536 valid
// books, 3,000 rejected frames, and a price_change of a market whose books
// are all invalid already.
func TestRejectsPastTheBoundStayProportional(t *testing.T) {
	d := NewDecoder()
	var out venue.Frame
	for i := range maxInstruments {
		f := fmt.Sprintf(`{"event_type":"book","asset_id":"%d","market":"m%d","bids":[{"price":"0.4","size":"1"}],"asks":[{"price":"0.6","size":"1"}]}`, i, i/2)
		mustDecode(t, d, []byte(f), &out)
	}
	rejects, invalid := 0, 0
	for i := range 3000 {
		f := fmt.Sprintf(`{"event_type":"price_change","market":"x%d","timestamp":"1","price_changes":[{"asset_id":"new%d","price":"0.5","size":"1","side":"BUY"}]}`, i, i)
		if err := d.Decode([]byte(f), 0, &out); !errors.Is(err, ErrTooManyInstruments) {
			t.Fatalf("frame %d: %v", i, err)
		}
		for _, ev := range out.Events {
			if ev.Type == venue.EventReject {
				rejects++
				if ev.Book != nil {
					invalid++
				}
			}
		}
	}
	// The first rejected frame invalidates every book (one event each);
	// each later one has no valid book left and says so once.
	if invalid != maxInstruments || rejects != maxInstruments+2999 {
		t.Fatalf("%d reject events, %d for books; want %d and %d", rejects, invalid, maxInstruments+2999, maxInstruments)
	}
	if d.Book("7").Valid() {
		t.Fatal("book 7 still valid after a rejected frame")
	}
	// A snapshot makes one book valid again: the next rejected frame
	// invalidates that one only.
	mustDecode(t, d, []byte(`{"event_type":"book","asset_id":"7","market":"m3","bids":[{"price":"0.4","size":"1"}],"asks":[]}`), &out)
	d.Decode([]byte(`{"event_type":"price_change","market":"y","timestamp":"1","price_changes":[{"asset_id":"newer","price":"0.5","size":"1","side":"BUY"}]}`), 0, &out)
	if len(out.Events) != 1 || out.Events[0].Instrument != "7" || d.Book("7").Valid() {
		t.Fatalf("events %+v", out.Events)
	}
	// A rejected price_change of market m3 (books 6 and 7, both invalid):
	// one event, no book visited twice.
	d.Decode([]byte(`{"event_type":"price_change","market":"m3","timestamp":"1","price_changes":[{"asset_id":"6","price":"x","size":"1","side":"BUY"}]}`), 0, &out)
	if len(out.Events) != 1 || out.Events[0].Book != nil {
		t.Fatalf("price_change events %+v", out.Events)
	}
}
