package columnar

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/book"
)

// FuzzCSVString: any text a control record or instrument carries (error
// messages, close reasons, JSON subscription echoes) survives a CSV round
// trip through encoding/csv as one field.
func FuzzCSVString(f *testing.F) {
	for _, s := range []string{"", "plain", `{"type":"l2Book","coin":"BTC"}`, "a,b", "say \"hi\"", "line\nbreak", "cr\r\nlf", ",", "\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // encoding/csv rewrites invalid UTF-8; our strings come from JSON
		}
		line := appendCSVString([]byte("x,"), s)
		line = append(line, ",y\n"...)
		r := csv.NewReader(bytes.NewReader(line))
		r.LazyQuotes = false
		rec, err := r.Read()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		want := normalizeNewlines(s)
		if len(rec) != 3 || rec[0] != "x" || rec[1] != want || rec[2] != "y" {
			t.Fatalf("%q → %q", s, rec)
		}
	})
}

// encoding/csv turns \r\n inside a quoted field into \n, as RFC 4180 readers do.
func normalizeNewlines(s string) string {
	return string(bytes.ReplaceAll([]byte(s), []byte("\r\n"), []byte("\n")))
}

// FuzzFixedToFloat: the float64 column holds exactly the double nearest the
// decimal that CSV prints, at every scale.
func FuzzFixedToFloat(f *testing.F) {
	f.Add(int64(4800), uint8(4))
	f.Add(int64(1<<53+1), uint8(8))
	f.Add(int64(-1<<63), uint8(18))
	f.Fuzz(func(t *testing.T, v int64, dec uint8) {
		dec %= book.MaxDecimals + 1
		want, err := strconv.ParseFloat(book.FormatDecimal(v, dec), 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := FixedToFloat(v, dec); got != want {
			t.Fatalf("FixedToFloat(%d, %d) = %v, want %v", v, dec, got, want)
		}
	})
}

// FuzzReadTyped: whatever the bytes, ReadTyped returns a table or an
// error, within its row bound, without a panic; a table it returns writes
// back without error.
func FuzzReadTyped(f *testing.F) {
	for _, fm := range []Format{Parquet, Arrow, CSV} {
		var b bytes.Buffer
		writeTyped(f, &b, fm, typedRows(5), Options{BatchRows: 2})
		f.Add(b.Bytes())
		f.Add(b.Bytes()[:b.Len()*3/4])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadTyped(data, typedTestColumns, 64)
		if err != nil {
			return
		}
		if len(c.Rows) > 64 {
			t.Fatalf("%d rows read, the bound is 64", len(c.Rows))
		}
		rewrite(t, c, CSV)
	})
}
