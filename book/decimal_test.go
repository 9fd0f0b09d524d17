package book

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		decimals uint8
		want     int64
		err      error
	}{
		{"leading dot", ".48", 4, 4800, nil},
		{"trailing zero beyond scale", "0.920", 2, 92, nil},
		{"trailing zeros far beyond scale", "0.92000000000000000000", 2, 92, nil},
		{"integer", "1", 4, 10000, nil},
		{"trailing dot", "12.", 4, 120000, nil},
		{"zero", "0", 6, 0, nil},
		{"zero with point", "0.0", 6, 0, nil},
		{"leading zeros", "007.5", 1, 75, nil},
		{"size six decimals", "219.217767", 6, 219217767, nil},
		{"exact scale", "0.0001", 4, 1, nil},
		{"scale zero", "42", 0, 42, nil},
		{"scale zero trailing zeros", "42.000", 0, 42, nil},
		{"hyperliquid spot", "0.00001234", 8, 1234, nil},
		{"max int64", "9223372036854775807", 0, math.MaxInt64, nil},
		{"max int64 scaled", "922337203.6854775807", 10, math.MaxInt64, nil},
		{"max scale", "0.000000000000000001", 18, 1, nil},

		{"empty", "", 4, 0, ErrSyntax},
		{"lone dot", ".", 4, 0, ErrSyntax},
		{"two dots", "1.2.3", 4, 0, ErrSyntax},
		{"negative", "-1", 4, 0, ErrNegative},
		{"negative zero", "-0", 4, 0, ErrNegative},
		{"plus sign", "+1", 4, 0, ErrSyntax},
		{"exponent", "1e400", 4, 0, ErrSyntax},
		{"exponent small", "1e2", 4, 0, ErrSyntax},
		{"space", " 1", 4, 0, ErrSyntax},
		{"trailing space", "1 ", 4, 0, ErrSyntax},
		{"letters", "abc", 4, 0, ErrSyntax},
		{"quoted", `"1"`, 4, 0, ErrSyntax},
		{"nan", "NaN", 4, 0, ErrSyntax},
		{"hex", "0x10", 4, 0, ErrSyntax},
		{"comma", "1,5", 4, 0, ErrSyntax},
		{"overflow integer", "99999999999999999999", 0, 0, ErrRange},
		{"overflow after scaling", "922337203685477581", 1, 0, ErrRange},
		{"overflow by scale", "9223372036854775807", 1, 0, ErrRange},
		{"overflow max+1", "9223372036854775808", 0, 0, ErrRange},
		{"too many decimals", "0.75001", 4, 0, ErrPrecision},
		{"too many decimals size", "1.0000001", 6, 0, ErrPrecision},
		{"precision after zeros", "0.10000000000000000001", 4, 0, ErrPrecision},
		{"scale beyond max", "1", MaxDecimals + 1, 0, ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDecimal([]byte(tt.in), tt.decimals)
			if !errors.Is(err, tt.err) {
				t.Fatalf("ParseDecimal(%q, %d) error = %v, want %v", tt.in, tt.decimals, err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Fatalf("ParseDecimal(%q, %d) = %d, want %d", tt.in, tt.decimals, got, tt.want)
			}
		})
	}
}

func TestAppendDecimal(t *testing.T) {
	tests := []struct {
		name     string
		v        int64
		decimals uint8
		want     string
	}{
		{"fraction", 4800, 4, "0.48"},
		{"one", 10000, 4, "1"},
		{"zero", 0, 4, "0"},
		{"zero scale", 42, 0, "42"},
		{"smallest", 1, 4, "0.0001"},
		{"mixed", 219217767, 6, "219.217767"},
		{"trailing zeros trimmed", 1230000, 6, "1.23"},
		{"negative", -4800, 4, "-0.48"},
		{"max", math.MaxInt64, 0, "9223372036854775807"},
		{"max scaled", math.MaxInt64, 18, "9.223372036854775807"},
		{"min", math.MinInt64, 0, "-9223372036854775808"},
		{"min scaled", math.MinInt64, 4, "-922337203685477.5808"},
		{"scale wider than value", 5, 18, "0.000000000000000005"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendDecimal([]byte("x="), tt.v, tt.decimals))
			if got != "x="+tt.want {
				t.Fatalf("AppendDecimal(%d, %d) = %q, want %q", tt.v, tt.decimals, got, "x="+tt.want)
			}
			if s := FormatDecimal(tt.v, tt.decimals); s != tt.want {
				t.Fatalf("FormatDecimal(%d, %d) = %q, want %q", tt.v, tt.decimals, s, tt.want)
			}
		})
	}
}

// TestDecimalRoundTrip checks both directions against strconv on a sweep of
// values and scales: a second path to the same answer.
func TestDecimalRoundTrip(t *testing.T) {
	vals := []int64{0, 1, 9, 10, 99, 100, 4800, 123456789, 1e15, math.MaxInt64 / 7, math.MaxInt64}
	for d := uint8(0); d <= MaxDecimals; d++ {
		for _, v := range vals {
			s := AppendDecimal(nil, v, d)
			got, err := ParseDecimal(s, d)
			if err != nil || got != v {
				t.Fatalf("round trip %d at %d decimals: %q -> %d, %v", v, d, s, got, err)
			}
			// Integer digits must equal v / 10^d.
			ip := strconv.FormatInt(v/Pow10(d), 10)
			if string(s[:len(ip)]) != ip {
				t.Fatalf("AppendDecimal(%d, %d) = %q, integer part want %s", v, d, s, ip)
			}
		}
	}
}

func TestDecimalError(t *testing.T) {
	long := make([]byte, 100)
	for i := range long {
		long[i] = '9'
	}
	e := NewDecimalError("price", long, ErrRange)
	if len(e.Text) != 64 {
		t.Fatalf("Text has %d bytes, want 64", len(e.Text))
	}
	if !errors.Is(e, ErrRange) {
		t.Fatalf("errors.Is(%v, ErrRange) = false", e)
	}
	want := `price "` + string(long[:64]) + `": book: decimal out of range`
	if e.Error() != want {
		t.Fatalf("Error() = %q, want %q", e.Error(), want)
	}
}

func TestDecimalAllocs(t *testing.T) {
	in := []byte("219.217767")
	buf := make([]byte, 0, 64)
	n := testing.AllocsPerRun(100, func() {
		v, _ := ParseDecimal(in, 6)
		buf = AppendDecimal(buf[:0], v, 6)
	})
	if n != 0 {
		t.Fatalf("ParseDecimal+AppendDecimal: %v allocs per run, want 0", n)
	}
}

func FuzzParseDecimal(f *testing.F) {
	// Seeds live in testdata/fuzz/FuzzParseDecimal; a few more here keep the
	// target meaningful if that directory is trimmed.
	f.Add([]byte(".48"), uint8(4))
	f.Add([]byte("0.920"), uint8(2))
	f.Fuzz(func(t *testing.T, s []byte, decimals uint8) {
		decimals %= MaxDecimals + 2 // also exercise one invalid scale
		v, err := ParseDecimal(s, decimals)
		// Two paths to one answer: the fast path agrees with the checked one.
		if cv, cerr := parseDecimalChecked(s, decimals); cv != v || cerr != err {
			t.Fatalf("ParseDecimal(%q, %d) = %d, %v; checked path %d, %v", s, decimals, v, err, cv, cerr)
		}
		if err != nil {
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrPrecision) &&
				!errors.Is(err, ErrRange) && !errors.Is(err, ErrNegative) {
				t.Fatalf("ParseDecimal(%q) returned an unnamed error %v", s, err)
			}
			return
		}
		if v < 0 {
			t.Fatalf("ParseDecimal(%q, %d) = %d < 0", s, decimals, v)
		}
		out := AppendDecimal(nil, v, decimals)
		v2, err := ParseDecimal(out, decimals)
		if err != nil || v2 != v {
			t.Fatalf("round trip %q -> %d -> %q -> %d, %v", s, v, out, v2, err)
		}
		// The canonical form is a fixed point of format∘parse.
		if out2 := AppendDecimal(nil, v2, decimals); string(out2) != string(out) {
			t.Fatalf("not canonical: %q then %q", out, out2)
		}
		// The value agrees with strconv where float64 is exact enough.
		if v < 1<<52 && len(s) < 30 {
			f, ferr := strconv.ParseFloat(string(s), 64)
			if ferr == nil {
				want := f * float64(Pow10(decimals))
				if d := want - float64(v); d > 0.5 || d < -0.5 {
					t.Fatalf("ParseDecimal(%q, %d) = %d, strconv says %v", s, decimals, v, want)
				}
			}
		}
	})
}
