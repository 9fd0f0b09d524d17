package book

import (
	"errors"
	"fmt"
)

// Scale is the fixed-point scale of a book: a price p is stored as the integer
// p·10^PriceDecimals and a size s as s·10^SizeDecimals.
type Scale struct {
	PriceDecimals uint8
	SizeDecimals  uint8
}

// MaxDecimals is the largest number of decimal places a Scale may use.
const MaxDecimals = 18

// ErrSyntax means the text is not a plain decimal number.
var ErrSyntax = errors.New("book: invalid decimal")

// ErrPrecision means the decimal has more fractional digits than the scale holds
// exactly (trailing zeros beyond the scale are accepted).
var ErrPrecision = errors.New("book: decimal does not fit the scale exactly")

// ErrRange means the decimal overflows int64 at the requested scale.
var ErrRange = errors.New("book: decimal out of range")

// ErrNegative means a price or size was negative.
var ErrNegative = errors.New("book: negative value")

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// Pow10 returns 10^n for 0 ≤ n ≤ MaxDecimals.
func Pow10(n uint8) int64 { return pow10[n] }

// ParseDecimal parses an unsigned plain decimal ("12", "0.48", ".48", "0.920")
// into an integer scaled by 10^decimals. It accepts no sign, exponent or
// whitespace; a value that needs more than decimals fractional digits (beyond
// trailing zeros) is ErrPrecision, never rounded. It does not allocate.
func ParseDecimal(s []byte, decimals uint8) (int64, error) {
	// Fast path for what venues send: at most 18 digits (so no overflow
	// before scaling), an optional point, no more fractional digits than
	// the scale. Anything else, valid or not, takes the checked path, which
	// also names the error.
	if len(s) <= 19 && decimals <= MaxDecimals {
		var v int64
		i := 0
		for ; i < len(s); i++ {
			c := s[i] - '0'
			if c > 9 {
				break
			}
			v = v*10 + int64(c)
		}
		digits, frac := i, 0
		if i < len(s) && s[i] == '.' {
			i++
			for ; i < len(s); i++ {
				c := s[i] - '0'
				if c > 9 {
					break
				}
				v = v*10 + int64(c)
				frac++
			}
			digits += frac
		}
		if i == len(s) && digits > 0 && digits <= 18 && frac <= int(decimals) {
			m := pow10[int(decimals)-frac]
			if v > (1<<63-1)/m {
				return 0, ErrRange
			}
			return v * m, nil
		}
	}
	return parseDecimalChecked(s, decimals)
}

// parseDecimalChecked is ParseDecimal digit by digit, with every overflow
// and precision check: the reference the fast path must agree with.
func parseDecimalChecked(s []byte, decimals uint8) (int64, error) {
	if len(s) == 0 || decimals > MaxDecimals {
		return 0, ErrSyntax
	}
	if s[0] == '-' {
		return 0, ErrNegative
	}
	var v int64
	i := 0
	digits := 0
	for ; i < len(s) && s[i] != '.'; i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, ErrSyntax
		}
		if v > (1<<63-1-int64(c))/10 {
			return 0, ErrRange
		}
		v = v*10 + int64(c)
		digits++
	}
	frac := uint8(0)
	if i < len(s) {
		i++ // '.'
		if i == len(s) && digits == 0 {
			return 0, ErrSyntax
		}
		for ; i < len(s); i++ {
			c := s[i] - '0'
			if c > 9 {
				return 0, ErrSyntax
			}
			digits++
			if frac == decimals {
				if c != 0 {
					return 0, ErrPrecision
				}
				continue
			}
			if v > (1<<63-1-int64(c))/10 {
				return 0, ErrRange
			}
			v = v*10 + int64(c)
			frac++
		}
	}
	if digits == 0 {
		return 0, ErrSyntax
	}
	m := pow10[decimals-frac]
	if v > (1<<63-1)/m {
		return 0, ErrRange
	}
	return v * m, nil
}

// AppendDecimal appends v/10^decimals as a plain decimal with trailing zeros
// (and a trailing point) trimmed: 4800 at 4 decimals is "0.48", 10000 is "1".
func AppendDecimal(dst []byte, v int64, decimals uint8) []byte {
	if v < 0 {
		dst = append(dst, '-')
		if v == -1<<63 {
			// |MinInt64| does not fit; format via unsigned arithmetic.
			return appendUnsigned(dst, uint64(1<<63), decimals)
		}
		v = -v
	}
	return appendUnsigned(dst, uint64(v), decimals)
}

func appendUnsigned(dst []byte, u uint64, decimals uint8) []byte {
	var buf [48]byte
	n := len(buf)
	frac := int(decimals)
	// Emit fractional digits, skipping trailing zeros.
	started := false
	for k := 0; k < frac; k++ {
		d := byte(u % 10)
		u /= 10
		if d != 0 || started {
			started = true
			n--
			buf[n] = '0' + d
		}
	}
	if started {
		n--
		buf[n] = '.'
	}
	if u == 0 {
		n--
		buf[n] = '0'
	}
	for u > 0 {
		n--
		buf[n] = '0' + byte(u%10)
		u /= 10
	}
	return append(dst, buf[n:]...)
}

// FormatDecimal is AppendDecimal into a new string; for tests and output, not hot paths.
func FormatDecimal(v int64, decimals uint8) string {
	return string(AppendDecimal(nil, v, decimals))
}

// DecimalError names a decimal field that failed to parse.
type DecimalError struct {
	Field string // e.g. "price"
	Text  string // the offending text (truncated to 64 bytes)
	Err   error  // ErrSyntax, ErrPrecision, ErrRange or ErrNegative
}

// Error returns the message: what failed and where.
func (e *DecimalError) Error() string {
	return fmt.Sprintf("%s %q: %v", e.Field, e.Text, e.Err)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *DecimalError) Unwrap() error { return e.Err }

// NewDecimalError builds a DecimalError, copying at most 64 bytes of text.
// It allocates; call it only on the error path.
func NewDecimalError(field string, text []byte, err error) *DecimalError {
	if len(text) > 64 {
		text = text[:64]
	}
	return &DecimalError{Field: field, Text: string(text), Err: err}
}
