package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TimeSyntax is the one time grammar of every tapedeck flag that takes a
// moment (replay --from/--to/--at, capture import --start), for help texts.
const TimeSyntax = "RFC 3339, unix time (10 digits s, 13 ms, 16 µs, 19 ns, or with a unit: 1761179883001ms), or +DURATION after the recording's start"

// ParseTime reads a moment T in the grammar every tapedeck command shares:
//
//   - RFC 3339 with a zone, fractions to the nanosecond: 2025-10-23T00:38:03.001Z
//   - unix time as an integer, its unit given by its digit count, as Tardis
//     and pandas users write them: 10 digits seconds, 13 milliseconds, 16
//     microseconds, 19 nanoseconds (any other count is refused, not guessed)
//   - unix time with an explicit unit, any digit count: 1761179883s,
//     1761179883001ms, 1761179883001000us, 0ns
//   - +DURATION (Go syntax: +90s, +1h30m) after startNs, the recording's
//     start; only where there is one (hasStart), else an error says so.
//
// It returns nanoseconds since the Unix epoch.
func ParseTime(s string, startNs int64, hasStart bool) (int64, error) {
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		if !hasStart {
			return 0, fmt.Errorf("%q: a +DURATION needs a recording to start from; give an absolute time", s)
		}
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%q: want +DURATION such as +90s or +5m", s)
		}
		return startNs + int64(d), nil
	}
	digits := strings.TrimRight(s, "abcdefghijklmnopqrstuvwxyzµ")
	if digits != "" && strings.Trim(digits, "0123456789") == "" {
		unit := s[len(digits):]
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: unix time out of range", s)
		}
		var mul int64
		switch unit {
		case "s":
			mul = int64(time.Second)
		case "ms":
			mul = int64(time.Millisecond)
		case "us", "µs":
			mul = int64(time.Microsecond)
		case "ns":
			mul = 1
		case "":
			if n == 0 { // the epoch in any unit
				return 0, nil
			}
			switch len(digits) {
			case 10:
				mul = int64(time.Second)
			case 13:
				mul = int64(time.Millisecond)
			case 16:
				mul = int64(time.Microsecond)
			case 19:
				mul = 1
			default:
				return 0, fmt.Errorf("%q: unix time must have 10 digits (s), 13 (ms), 16 (µs) or 19 (ns), or a unit (s, ms, us, ns)", s)
			}
		default:
			return 0, fmt.Errorf("%q: unknown unit %q (want s, ms, us or ns)", s, unit)
		}
		if n > (1<<63-1)/mul {
			return 0, fmt.Errorf("%q: unix time out of range", s)
		}
		return n * mul, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q: want %s", s, TimeSyntax)
	}
	return t.UnixNano(), nil
}
