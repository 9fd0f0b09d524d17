package polymarket

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// realEntries returns every price_changes entry of the real frames, as the
// wire wrote it.
func realEntries(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, name := range []string{"real/polypy_hash_vector_ws_2025-10.ndjson", "real/polypy_semisynthetic_stream_single_asset.ndjson"} {
		for _, line := range readLines(t, name) {
			type msg struct {
				Changes []json.RawMessage `json:"price_changes"`
			}
			var msgs []msg
			if line[0] != '[' {
				line = append(append([]byte("["), line...), ']')
			}
			if err := json.Unmarshal(line, &msgs); err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				for _, c := range m.Changes {
					out = append(out, bytes.Clone(c))
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no price_changes entries in the real frames")
	}
	return out
}

// slowChange parses entry with the generic path, as parseChanges does when
// scanChange declines, and returns the change and the offset after it.
func slowChange(entry []byte) (c change, end int, ok bool) {
	d := NewDecoder()
	d.frame = entry
	d.s.Reset(entry)
	c, _, herr, err := d.parseChange()
	return c, d.s.Offset(), herr == nil && err == nil
}

// checkScanChange fails t if scanChange accepts entry (set in a larger
// buffer at an offset, as in a frame) but the generic path does not give
// the same change, with the entry's asset unknown to the decoder and known
// as its last instrument (the id then matched, not scanned).
func checkScanChange(t *testing.T, entry []byte) (fast bool) {
	t.Helper()
	buf := append(append([]byte(`{"price_changes":[`), entry...), `]}`...)
	at := len(`{"price_changes":[`)
	d := NewDecoder()
	d.frame = buf
	var c change
	end, ok := d.scanChange(&c, at)
	if !ok {
		return false
	}
	if c.inst != nil {
		t.Fatalf("scanChange(%s) found an instrument in an empty decoder", entry)
	}
	checkChangeAgrees(t, entry, c, end-at)
	d.last = d.intern(c.asset, nil)
	d.prev = d.intern([]byte(string(c.asset)+"0"), nil) // a longer id with the same start
	for range 2 {
		c = change{}
		end, ok = d.scanChange(&c, at)
		if !ok || c.inst == nil || c.inst.id != string(c.asset) {
			t.Fatalf("scanChange(%s) with the asset known: ok %v, instrument %v", entry, ok, c.inst)
		}
		checkChangeAgrees(t, entry, c, end-at)
		d.last, d.prev = d.prev, d.last // then found as the one before last
	}
	return true
}

func checkChangeAgrees(t *testing.T, entry []byte, c change, end int) {
	t.Helper()
	want, wantEnd, wantOK := slowChange(entry)
	switch {
	case !wantOK:
		t.Fatalf("scanChange accepted %s, the generic path rejects it", entry)
	case end != wantEnd:
		t.Fatalf("scanChange(%s) ends at %d, the generic path at %d", entry, end, wantEnd)
	case string(c.asset) != string(want.asset) || string(c.hash) != string(want.hash) ||
		c.price != want.price || c.size != want.size || c.side != want.side ||
		c.bestBid != want.bestBid || c.bestAsk != want.bestAsk || c.hasTop != want.hasTop:
		t.Fatalf("scanChange(%s) = %+v, the generic path %+v", entry, c, want)
	}
}

// The fast entry path agrees with the generic one on every entry it
// accepts, takes every real entry, and declines the shapes it is not built
// for (which the generic path then judges and names).
func TestScanChangeAgrees(t *testing.T) {
	for _, e := range realEntries(t) {
		if !checkScanChange(t, e) {
			t.Errorf("fast path declined the real entry %s", e)
		}
		// Live frames put a space after each comma (PROTOCOLS.md §1.9).
		if spaced := bytes.ReplaceAll(e, []byte(`,"`), []byte(`, "`)); !checkScanChange(t, spaced) {
			t.Errorf("fast path declined the spaced entry %s", spaced)
		}
		for n := range len(e) {
			if checkScanChange(t, e[:n]) {
				t.Fatalf("fast path accepted the truncated entry %s", e[:n])
			}
		}
	}
	e := realEntries(t)[0]
	declined := map[string][]byte{
		"lower-case side": bytes.Replace(e, []byte(`"side":"BUY"`), []byte(`"side":"buy"`), 1),
		"two spaces":      bytes.ReplaceAll(e, []byte(`,"`), []byte(`,  "`)),
		"space before":    bytes.ReplaceAll(e, []byte(`,"`), []byte(` ,"`)),
		"tab":             bytes.ReplaceAll(e, []byte(`,"`), []byte(`,	"`)),
		"newline": bytes.Replace(e, []byte(`,"side"`), []byte(`,
"side"`), 1),
		"space in key":  bytes.Replace(e, []byte(`"side":`), []byte(`"side" :`), 1),
		"key order":     bytes.Replace(e, []byte(`{"asset_id"`), []byte(`{"x":1,"asset_id"`), 1),
		"null hash":     bytes.Replace(e, []byte(`"hash":"eb10ffd5c6ab383af860ca60a1ceb6e59b7a53ef"`), []byte(`"hash":null`), 1),
		"no best_ask":   bytes.Replace(e, []byte(`,"best_ask":"0.67"`), nil, 1),
		"too precise":   bytes.Replace(e, []byte(`"price":"0.08"`), []byte(`"price":"0.08001"`), 1),
		"number price":  bytes.Replace(e, []byte(`"price":"0.08"`), []byte(`"price":0.08`), 1),
		"negative size": bytes.Replace(e, []byte(`"size":"0"`), []byte(`"size":"-1"`), 1),
		"empty asset":   append([]byte(`{"asset_id":""`), e[bytes.Index(e, []byte(`,"price"`)):]...),
		"escaped asset": bytes.Replace(e, []byte(`{"asset_id":"3`), []byte(`{"asset_id":"\u0033`), 1),
		"trailing key":  bytes.Replace(e, []byte(`"}`), []byte(`","x":1}`), 1),
	}
	for name, in := range declined {
		if bytes.Equal(in, e) {
			t.Fatalf("%s: mutation did not apply to %s", name, e)
		}
		if checkScanChange(t, in) {
			t.Errorf("%s: fast path accepted %s", name, in)
		}
	}
	// A best_bid/best_ask pair of "0" means unknown, on both paths.
	zero := bytes.Replace(bytes.Replace(e, []byte(`"best_bid":"0.66"`), []byte(`"best_bid":"0"`), 1),
		[]byte(`"best_ask":"0.67"`), []byte(`"best_ask":"0"`), 1)
	if !checkScanChange(t, zero) {
		t.Errorf("fast path declined %s", zero)
	}
}

// FuzzScanChange: the fast entry path never panics or reads out of bounds,
// and whatever it accepts the generic path accepts with the same change.
func FuzzScanChange(f *testing.F) {
	for _, e := range realEntries(f) {
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, entry []byte) {
		if len(entry) > 1<<16 {
			return
		}
		checkScanChange(t, entry)
	})
}

// keyColonAt knows every key of keyNames, and only those, wherever the key
// sits in the buffer: followed by its colon, and not by anything else.
func TestKeyColonAt(t *testing.T) {
	for kc := kcOther + 1; kc < numKeyCodes; kc++ {
		name := keyNames[kc]
		for _, pad := range []string{"", "{", `{"x":1,`} {
			q := `"` + name + `":`
			buf := []byte(pad + q + `1`)
			long := []byte(pad + q + `"1234567890123456"}`)
			if got, n := keyColonAt(long, len(pad)); got != kc || n != len(q) {
				t.Errorf("keyColonAt(%s) = %v,%d, want %v,%d", long, got, n, kc, len(q))
			}
			if got, n := keyColonAt(buf, len(pad)); got != kc || n != len(q) {
				t.Errorf("keyColonAt(%s) = %v,%d, want %v,%d", buf, got, n, kc, len(q))
			}
			for _, other := range []string{`"` + name + `_x":`, `"` + name[:len(name)-1] + `":`, `"x` + name + `":`,
				`"` + name + `" :`, `"` + name + `",`, `"` + name + `"`, `"` + name, `"` + name[:len(name)-1] + `x":`,
				`"` + name + "\x00\x00"} {
				for _, buf := range [][]byte{[]byte(pad + other), []byte(pad + other + `"1234567890123456"}`)} {
					if got, _ := keyColonAt(buf, len(pad)); got != kcOther && !bytes.HasPrefix(buf[len(pad):], []byte(`"`+keyNames[got]+`":`)) {
						t.Errorf("keyColonAt(%s) = %v (%q)", buf, got, keyNames[got])
					}
				}
			}
		}
	}
}

// Ids matched against the last instruments (knownID) find exactly the asset
// the frame names: not one whose id is a prefix or an extension of it, in
// books and price changes alike, and the last of a repeated asset_id wins as
// on the generic path.
func TestKnownIDsExact(t *testing.T) {
	const a = "7132471234123412341234123412341234123412341234123412341234123412341234123"
	ids := []string{a, a + "9", a[:len(a)-1], a[:len(a)-1] + "8"}
	d := NewDecoder()
	var out venue.Frame
	bookOf := func(id string, px int) []byte {
		return fmt.Appendf(nil, `{"event_type":"book","market":"0xm","asset_id":%q,"timestamp":"1","bids":[{"price":"0.%02d","size":"1"}],"asks":[]}`, id, px)
	}
	for round := 0; round < 3; round++ {
		for k, id := range ids {
			mustDecode(t, d, bookOf(id, 10+k), &out)
			if got := out.Events[0].Instrument; got != id {
				t.Fatalf("book for %s…%s decoded as %s…%s", id[:4], id[len(id)-3:], got[:4], got[len(got)-3:])
			}
		}
	}
	for k, id := range ids {
		if bb, _ := d.Book(id).Best(book.Bid); bb.Price != int64(10+k)*100 {
			t.Fatalf("asset %d best bid %v", k, bb)
		}
	}
	pc := func(x, y string) []byte {
		return fmt.Appendf(nil, `{"event_type":"price_change","market":"0xm","timestamp":"2","price_changes":[`+
			`{"asset_id":%q,"price":"0.5","size":"3","side":"SELL","hash":"h","best_bid":"0","best_ask":"0"},`+
			`{"asset_id":%q,"price":"0.6","size":"4","side":"SELL","hash":"h","best_bid":"0","best_ask":"0"}]}`, x, y)
	}
	for i := range ids {
		x, y := ids[i], ids[(i+1)%len(ids)]
		mustDecode(t, d, pc(x, y), &out)
		if out.Events[0].Instrument != x || out.Events[1].Instrument != y {
			t.Fatalf("price_change for %d,%d applied to other assets", i, (i+1)%len(ids))
		}
		if s, _ := d.Book(y).Level(book.Ask, 6000); s != 4e6 {
			t.Fatalf("asset %d ask 0.6 = %d", (i+1)%len(ids), s)
		}
	}
	// A repeated key: the last value names the asset.
	frame := fmt.Appendf(nil, `{"event_type":"book","asset_id":%q,"asset_id":%q,"market":"0xm","timestamp":"3","bids":[],"asks":[{"price":"0.9","size":"1"}]}`, ids[0], ids[1])
	mustDecode(t, d, frame, &out)
	if out.Events[0].Instrument != ids[1] || d.Book(ids[1]).Len(book.Ask) != 1 || d.Book(ids[1]).Len(book.Bid) != 0 {
		t.Fatalf("repeated asset_id applied to %.6s…", out.Events[0].Instrument)
	}
}

// digitsAt (a word at a time up to 16 digits) values and measures every run
// of digits as a loop over its bytes does, wherever it sits in the buffer and
// whatever follows it; and timestamps read by fastTs decode as parseTs reads
// them, strings and bare integers alike.
func TestDigitsAt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 100000; n++ {
		buf := make([]byte, r.IntN(40))
		for i := range buf {
			if r.IntN(12) == 0 {
				buf[i] = "\"/:.e,x\x00\xff"[r.IntN(9)]
			} else {
				buf[i] = byte('0' + r.IntN(10))
			}
		}
		j := 0
		if len(buf) > 0 {
			j = r.IntN(len(buf))
		}
		v, k := digitsAt(buf, j)
		var want uint64
		m := 0
		for j+m < len(buf) && buf[j+m]-'0' <= 9 {
			want = want*10 + uint64(buf[j+m]-'0')
			m++
		}
		if k != m || m <= 18 && v != want {
			t.Fatalf("digitsAt(%q, %d) = %d, %d; want %d, %d", buf, j, v, k, want, m)
		}
	}
	// Every run length around the word boundaries, at the end of the
	// buffer and before a non-digit.
	for n := 0; n <= 20; n++ {
		for _, tail := range []string{"", `"`, "x", "/", ":"} {
			digits := strings.Repeat("7", n)
			if n > 1 {
				digits = "1" + digits[2:] + "9"
			}
			for _, head := range []string{"", "ab"} {
				buf := []byte(head + digits + tail)
				v, k := digitsAt(buf, len(head))
				want, _ := strconv.ParseUint(digits, 10, 64)
				if k != n || n <= 18 && v != want {
					t.Fatalf("digitsAt(%q, %d) = %d, %d; want %d, %d", buf, len(head), v, k, want, n)
				}
			}
		}
	}
	for _, ts := range []string{`"1761177600857"`, `1761177600857`, `"0001"`, `"1"`, `1000000000000000`, `"123456789012345678"`, `"1234567890123456789"`, `"9223372036854775808"`} {
		frame := []byte(`{"event_type":"last_trade_price","asset_id":"a","price":"0.5","size":"1","side":"BUY","timestamp":` + ts + `}`)
		d := NewDecoder()
		var out venue.Frame
		err := d.Decode(frame, 0, &out)
		v, ok := parseTs(bytes.Trim([]byte(ts), `"`))
		ns, inRange := tsNs(v)
		if ok && inRange {
			if err != nil || out.Events[0].ExchangeNs != ns {
				t.Fatalf("timestamp %s: %v, %d ns; want %d", ts, err, out.Events[0].ExchangeNs, ns)
			}
		} else if err == nil {
			t.Fatalf("timestamp %s accepted", ts)
		}
	}
}

// A snapshot side read by parseSide's back-to-back loop, then its general
// loop from wherever the first stops (a space, an odd level, a bad one),
// gives the levels and the error (field and offset) of the general loop
// alone: the same side behind a space before every level, which the first
// loop never takes.
func TestParseSideLoops(t *testing.T) {
	lv := func(p, s string) string { return `{"price":"` + p + `","size":"` + s + `"}` }
	sides := []string{
		`[]`, `[ ]`, `[` + lv("0.1", "1") + `]`,
		`[` + lv("0.1", "1") + `,` + lv("0.2", "2") + `,` + lv("0.3", "3") + `]`,
		`[` + lv("0.1", "1") + `, ` + lv("0.2", "2") + `,` + lv("0.3", "3") + `]`,
		`[` + lv("0.1", "1") + `,` + lv("0.2", "0") + `,` + lv("0.3", "3") + `]`,
		`[` + lv("0.1", "1") + `,` + lv("1.2", "2") + `]`,
		`[` + lv("0.1", "1") + `,{"size":"2","price":"0.2"},` + lv("0.3", "3") + `]`,
		`[` + lv("0.3", "1") + `,` + lv("0.2", "2") + `,` + lv("0.2", "3") + `]`,
		`[` + lv("0.1", "1") + ` ,` + lv("0.2", "2") + `]`,
		`[` + lv("0.1", "1") + `,` + lv("0.2", "2") + ` ]`,
		`[` + lv("0.1", "1") + `,` + lv("0.2", "2") + `,]`,
		`[` + lv("0.1", "1") + `,` + lv("0.2", "x") + `]`,
		`[` + lv("0.1", "1") + `,  ` + lv("0.2", "2") + `, ` + lv("0.3", "3") + `]`,
		`[` + lv("0.1", "1") + `, ` + lv("0.2", "2") + `, ` + lv("0.3", "0") + `]`,
	}
	frame := func(side string) []byte {
		return []byte(`{"event_type":"book","asset_id":"a","bids":` + side + `,"asks":[]}`)
	}
	for _, side := range sides {
		d, sd, _, _, ok := decodeSpaced(t, frame(side))
		if !ok {
			continue
		}
		if a, b := d.Book("a").Top(book.Bid, nil, -1), sd.Book("a").Top(book.Bid, nil, -1); !slices.Equal(a, b) {
			t.Fatalf("%s: %v; spaced %v", side, a, b)
		}
	}
}

// A price_changes array read by parseChanges' back-to-back loop, then its
// general loop from wherever the first stops (a space, an odd entry, one
// outside the domain, a bad one), gives the events and the error (field and
// offset) of the general loop alone: the same array behind a space before
// every entry, which the first loop never takes.
func TestParseChangesLoops(t *testing.T) {
	ch := func(a, p, s, side string) string {
		return `{"asset_id":"` + a + `","price":"` + p + `","size":"` + s + `","side":"` + side +
			`","hash":"h","best_bid":"0.1","best_ask":"0.9"}`
	}
	spacedCh := func(a, p, s, side string) string { return strings.ReplaceAll(ch(a, p, s, side), `,"`, `, "`) }
	x, y := "1111111111111111111111111", "2222222222222222222222222"
	arrays := []string{
		`[]`, `[ ]`, `[` + ch(x, "0.1", "1", "BUY") + `]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,` + ch(y, "0.2", "2", "SELL") + `,` + ch(x, "0.3", "0", "BUY") + `]`,
		`[` + ch(x, "0.1", "1", "BUY") + `, ` + ch(y, "0.2", "2", "SELL") + `,` + ch(x, "0.3", "3", "BUY") + `]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,` + ch(y, "1.2", "2", "SELL") + `,` + ch(x, "0.3", "3", "BUY") + `]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,{"price":"0.2","asset_id":"` + y + `","size":"2","side":"SELL"},` + ch(x, "0.3", "3", "BUY") + `]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,` + ch(y, "0.2", "2", "sell") + `]`,
		`[` + ch(x, "0.1", "1", "BUY") + ` ,` + ch(y, "0.2", "2", "SELL") + `]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,` + ch(y, "0.2", "2", "SELL") + ` ]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,` + ch(y, "0.2", "2", "SELL") + `,]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,` + ch(y, "0.2", "x", "SELL") + `]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,` + ch("", "0.2", "2", "SELL") + `]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,7]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,` + ch(y, "0.2", "2", "SELL") + `, ` + ch(y, "1.2", "2", "SELL") + `]`,
		`[` + ch(x, "0.1", "1", "BUY") + `,  ` + ch(y, "0.2", "2", "SELL") + `, ` + ch(x, "0.3", "3", "BUY") + `]`,
		`[` + spacedCh(x, "0.1", "1", "BUY") + `, ` + spacedCh(y, "0.2", "2", "SELL") + `, ` + spacedCh(y, "1.2", "2", "SELL") + `]`,
		`[` + spacedCh(x, "0.1", "1", "BUY") + `, ` + ch(y, "0.2", "2", "SELL") + `, ` + spacedCh(x, "0.3", "3", "BUY") + `]`,
	}
	frame := func(arr string) []byte {
		return []byte(`{"event_type":"price_change","market":"m","timestamp":"1","price_changes":` + arr + `}`)
	}
	for _, arr := range arrays {
		d, sd, out, sout, ok := decodeSpaced(t, frame(arr))
		if !ok {
			continue
		}
		if len(out.Events) != len(sout.Events) {
			t.Fatalf("%s: %d events; spaced %d", arr, len(out.Events), len(sout.Events))
		}
		for i, e := range out.Events {
			s := sout.Events[i]
			if e.Type != s.Type || e.Instrument != s.Instrument || e.Side != s.Side || e.Price != s.Price || e.Size != s.Size ||
				strings.ReplaceAll(string(e.Raw), "\n", "") != strings.ReplaceAll(string(s.Raw), "\n", "") {
				t.Fatalf("%s: event %d %+v; spaced %+v", arr, i, e, s)
			}
		}
		for _, id := range []string{x, y} {
			for _, side := range []book.Side{book.Bid, book.Ask} {
				if d.Book(id) == nil {
					continue
				}
				if a, b := d.Book(id).Top(side, nil, -1), sd.Book(id).Top(side, nil, -1); !slices.Equal(a, b) {
					t.Fatalf("%s: %s %v: %v; spaced %v", arr, id, side, a, b)
				}
			}
		}
	}
}

// decodeSpaced decodes frame, and frame with a line break before every
// object of an array (which no back-to-back loop takes), on two new
// decoders. When
// either fails, both must fail with the same DecodeError (field, asset,
// cause, and an offset that names the same text) and ok is false.
func decodeSpaced(t *testing.T, frame []byte) (d, sd *Decoder, out, sout venue.Frame, ok bool) {
	t.Helper()
	spaced := []byte(strings.ReplaceAll(strings.ReplaceAll(string(frame), `[{`, "[\n{"), `,{`, ",\n{"))
	d, sd = NewDecoder(), NewDecoder()
	err, serr := d.Decode(frame, 0, &out), sd.Decode(spaced, 0, &sout)
	if err == nil && serr == nil {
		return d, sd, out, sout, true
	}
	var de, sde *DecodeError
	same := func(f []byte, off int) string {
		t := strings.ReplaceAll(string(f[off:]), "\n", "")
		return t[:min(12, len(t))]
	}
	if !errors.As(err, &de) || !errors.As(serr, &sde) || de.Field != sde.Field || de.Asset != sde.Asset ||
		de.Err.Error() != sde.Err.Error() || same(frame, de.Offset) != same(spaced, sde.Offset) {
		t.Fatalf("%s: %v; spaced: %v", frame, err, serr)
	}
	return d, sd, out, sout, false
}

// at16 gives the 16 bytes at any offset, zero-padded past the end (and all
// zeros outside the buffer), so a literal matches exactly where it stands.
func TestAt16(t *testing.T) {
	d := NewDecoder()
	b := []byte(`","best_ask":"0.5"}]}0123456789abcdefghij`)
	for n := 0; n <= len(b); n++ {
		for i := -2; i <= n+2; i++ {
			var want [16]byte
			if i >= 0 && i < n {
				copy(want[:], b[i:n])
			}
			if got := d.at16(b[:n], i); *got != want {
				t.Fatalf("at16(%q, %d) = %q, want %q", b[:n], i, got[:], want[:])
			}
			const lit = `","best_ask":"`
			if got := string(d.at16(b[:n], i)[:len(lit)]) == lit; got != (i == 0 && n >= len(lit)) {
				t.Fatalf("at16(%q, %d) matches %s: %v", b[:n], i, lit, got)
			}
		}
	}
}

// fastString finds the closing quote of every string without escapes or
// control characters, and declines the others, wherever they sit: bytes of
// every class (punctuation below '0', the quote, the backslash, control
// characters, UTF-8) at every offset of a word, in strings of up to 12 words.
func TestFastString(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte("0123456789abcdefx_ -.,:!#\"\\\x00\x1f\x7f\xc3\xa9")
	for n := 0; n < 200000; n++ {
		buf := make([]byte, 1+r.IntN(100))
		buf[0] = '"'
		for i := 1; i < len(buf); i++ {
			if r.IntN(4) == 0 {
				buf[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				buf[i] = alphabet[r.IntN(16)]
			}
		}
		wantHi, wantOK := 0, false
		for j := 1; j < len(buf); j++ {
			if c := buf[j]; c == '"' {
				wantHi, wantOK = j, true
				break
			} else if c == '\\' || c < 0x20 {
				break
			}
		}
		lo, hi, ok := fastString(buf, 0)
		if ok != wantOK || ok && (lo != 1 || hi != wantHi) {
			t.Fatalf("fastString(%q) = %d, %d, %v; want 1, %d, %v", buf, lo, hi, ok, wantHi, wantOK)
		}
	}
}
