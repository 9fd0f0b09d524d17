package jscan

import "bytes"

// This file holds the byte tests a capture's frame classifier runs on every
// received frame: they look for a value right after a key found with
// bytes.Index, without scanning the frame as JSON (which Scanner does). They
// never allocate.

// skipColon skips white space, one ':' and white space.
func skipColon(b []byte) []byte {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i < len(b) && b[i] == ':' {
		i++
	}
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return b[i:]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// StringAfter reads `: "value"` at the start of b (what follows a key) and
// returns the raw value (escapes kept as is: routing keys hold none) and how
// many bytes of b it consumed.
func StringAfter(b []byte) (v []byte, n int, ok bool) {
	r := skipColon(b)
	if len(r) == 0 || r[0] != '"' {
		return nil, 0, false
	}
	end := bytes.IndexByte(r[1:], '"')
	if end < 0 {
		return nil, 0, false
	}
	return r[1 : 1+end], len(b) - len(r) + end + 2, true
}

// IntAfter reads `: 123` or `: "123"` at the start of b: the leading digits
// (at most 18) of a non-negative integer.
func IntAfter(b []byte) (int64, bool) {
	r := skipColon(b)
	if len(r) > 0 && r[0] == '"' {
		r = r[1:]
	}
	var v int64
	n := 0
	for n < len(r) && n < 18 && r[n] >= '0' && r[n] <= '9' {
		v = v*10 + int64(r[n]-'0')
		n++
	}
	return v, n > 0
}

// ValueAfter returns b from the value that follows a key (after the colon).
func ValueAfter(b []byte) []byte { return skipColon(b) }
