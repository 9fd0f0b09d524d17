package interchange

import (
	"fmt"
	"time"
)

// parseISO parses a UTC time `YYYY-MM-DDTHH:MM:SS[.f…]Z` with 0 to 9
// fractional digits into ns since the Unix epoch. Tardis writes 7 digits
// (100 ns resolution). It does not allocate on success.
func parseISO(s []byte) (int64, error) {
	// 2019-06-01T00:00:00Z is the shortest form.
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') ||
		s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return 0, isoError(s)
	}
	num := func(a, b int) int {
		v := 0
		for i := a; i < b; i++ {
			c := s[i] - '0'
			if c > 9 {
				return -1
			}
			v = v*10 + int(c)
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, min, sec := num(11, 13), num(14, 16), num(17, 19)
	if year < 1970 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 ||
		min < 0 || min > 59 || sec < 0 || sec > 60 {
		return 0, isoError(s)
	}
	var frac int64
	i := 19
	if s[i] == '.' {
		i++
		digits := 0
		for ; i < len(s)-1; i++ {
			c := s[i] - '0'
			if c > 9 || digits == 9 {
				return 0, isoError(s)
			}
			frac = frac*10 + int64(c)
			digits++
		}
		if digits == 0 {
			return 0, isoError(s)
		}
		for ; digits < 9; digits++ {
			frac *= 10
		}
	}
	if i != len(s)-1 {
		return 0, isoError(s)
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, 0, time.UTC)
	if t.Day() != day { // 2019-02-30 normalises to March
		return 0, isoError(s)
	}
	return t.Unix()*1e9 + frac, nil
}

func isoError(s []byte) error {
	return fmt.Errorf("%w: %.40q is not an ISO 8601 UTC time (2006-01-02T15:04:05.0000000Z)", ErrTime, s)
}

// appendISO appends ns as `YYYY-MM-DDTHH:MM:SS.fffffffZ` with digits (1–9)
// fractional digits, truncating below them: Tardis tools slice the first 28
// bytes of a line, which is 7 digits.
func appendISO(dst []byte, ns int64, digits int) []byte {
	sec, frac := ns/1e9, ns%1e9
	if frac < 0 {
		sec, frac = sec-1, frac+1e9
	}
	t := time.Unix(sec, 0).UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	dst = appendInt(dst, y, 4)
	dst = append(dst, '-')
	dst = appendInt(dst, int(mo), 2)
	dst = append(dst, '-')
	dst = appendInt(dst, d, 2)
	dst = append(dst, 'T')
	dst = appendInt(dst, h, 2)
	dst = append(dst, ':')
	dst = appendInt(dst, mi, 2)
	dst = append(dst, ':')
	dst = appendInt(dst, s, 2)
	dst = append(dst, '.')
	for k := 9; k > digits; k-- {
		frac /= 10
	}
	dst = appendInt(dst, int(frac), digits)
	return append(dst, 'Z')
}

func appendInt(dst []byte, v, width int) []byte {
	var b [20]byte
	i := len(b)
	for v > 0 || i > len(b)-width {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, b[i:]...)
}
