// Package jscan is a minimal pull scanner over JSON text for the venue
// decoders: it walks a frame in place, hands out sub-slices of it, and never
// allocates except to build an error. It validates what it visits (structure,
// string and number syntax, nesting depth) but does not decode escapes:
// callers compare keys and ids as raw bytes.
package jscan

import (
	"fmt"
)

// MaxDepth bounds nesting so hostile input cannot exhaust the stack.
const MaxDepth = 64

// SyntaxError reports malformed JSON at a byte offset of the scanned text.
type SyntaxError struct {
	Offset int
	Msg    string
}

// Error returns the message: what failed and where.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("json syntax error at offset %d: %s", e.Offset, e.Msg)
}

// Scanner reads one JSON text. The zero value is unusable; call Reset.
type Scanner struct {
	buf []byte
	pos int
}

// Reset points the scanner at b, from offset 0.
func (s *Scanner) Reset(b []byte) { s.buf = b; s.pos = 0 }

// Offset returns the current byte offset.
func (s *Scanner) Offset() int { return s.pos }

// Bytes returns the text being scanned.
func (s *Scanner) Bytes() []byte { return s.buf }

func (s *Scanner) errf(msg string) error { return &SyntaxError{Offset: s.pos, Msg: msg} }

// Errorf returns a SyntaxError at the current offset; for callers' semantic errors.
func (s *Scanner) Errorf(format string, a ...any) error {
	return &SyntaxError{Offset: s.pos, Msg: fmt.Sprintf(format, a...)}
}

func (s *Scanner) ws() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// Peek skips white space and returns the next byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.pos < len(s.buf) {
		return s.buf[s.pos]
	}
	return 0
}

// AtEnd reports whether only white space remains.
func (s *Scanner) AtEnd() bool { return s.Peek() == 0 && s.pos >= len(s.buf) }

// BeginObject consumes '{'.
func (s *Scanner) BeginObject() error {
	if s.Peek() != '{' {
		return s.errf("expected object")
	}
	s.pos++
	return nil
}

// BeginArray consumes '['.
func (s *Scanner) BeginArray() error {
	if s.Peek() != '[' {
		return s.errf("expected array")
	}
	s.pos++
	return nil
}

// NextKey advances to the next member of an object opened with BeginObject.
// It returns the raw key (no quotes, escapes undecoded) and true, positioned at
// the value; or false at the closing '}', which it consumes. first must be true
// for the first call after BeginObject.
func (s *Scanner) NextKey(first bool) (key []byte, ok bool, err error) {
	c := s.Peek()
	if c == '}' {
		s.pos++
		return nil, false, nil
	}
	if !first {
		if c != ',' {
			return nil, false, s.errf("expected ',' or '}' in object")
		}
		s.pos++
		c = s.Peek()
	}
	if c != '"' {
		return nil, false, s.errf("expected string key")
	}
	key, err = s.String()
	if err != nil {
		return nil, false, err
	}
	if s.Peek() != ':' {
		return nil, false, s.errf("expected ':' after key")
	}
	s.pos++
	return key, true, nil
}

// NextElem advances to the next element of an array opened with BeginArray:
// true when positioned at an element, false at the closing ']' (consumed).
func (s *Scanner) NextElem(first bool) (bool, error) {
	c := s.Peek()
	if c == ']' {
		s.pos++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, s.errf("expected ',' or ']' in array")
		}
		s.pos++
		if s.Peek() == ']' {
			return false, s.errf("trailing comma in array")
		}
	}
	if s.pos >= len(s.buf) {
		return false, s.errf("unexpected end in array")
	}
	return true, nil
}

// String consumes a string and returns its raw contents between the quotes.
func (s *Scanner) String() ([]byte, error) {
	if s.Peek() != '"' {
		return nil, s.errf("expected string")
	}
	start := s.pos + 1
	i := start
	for i < len(s.buf) {
		c := s.buf[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return s.buf[start:i], nil
		case c == '\\':
			if i+1 >= len(s.buf) {
				s.pos = i
				return nil, s.errf("unterminated escape")
			}
			switch s.buf[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s.buf) || !isHex4(s.buf[i+2:i+6]) {
					s.pos = i
					return nil, s.errf("bad \\u escape")
				}
				i += 6
			default:
				s.pos = i
				return nil, s.errf("bad escape")
			}
		case c < 0x20:
			s.pos = i
			return nil, s.errf("control character in string")
		default:
			i++
		}
	}
	s.pos = len(s.buf)
	return nil, s.errf("unterminated string")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Number consumes a JSON number and returns its text.
func (s *Scanner) Number() ([]byte, error) {
	s.ws()
	start := s.pos
	i := s.pos
	if i < len(s.buf) && s.buf[i] == '-' {
		i++
	}
	d := i
	for i < len(s.buf) && s.buf[i] >= '0' && s.buf[i] <= '9' {
		i++
	}
	if i == d {
		return nil, s.errf("expected number")
	}
	if s.buf[d] == '0' && i-d > 1 {
		s.pos = d
		return nil, s.errf("leading zero in number")
	}
	if i < len(s.buf) && s.buf[i] == '.' {
		i++
		f := i
		for i < len(s.buf) && s.buf[i] >= '0' && s.buf[i] <= '9' {
			i++
		}
		if i == f {
			s.pos = i
			return nil, s.errf("bad number fraction")
		}
	}
	if i < len(s.buf) && (s.buf[i] == 'e' || s.buf[i] == 'E') {
		i++
		if i < len(s.buf) && (s.buf[i] == '+' || s.buf[i] == '-') {
			i++
		}
		e := i
		for i < len(s.buf) && s.buf[i] >= '0' && s.buf[i] <= '9' {
			i++
		}
		if i == e {
			s.pos = i
			return nil, s.errf("bad number exponent")
		}
	}
	s.pos = i
	return s.buf[start:i], nil
}

// StringOrNumber consumes a string or a number and returns its raw text; venues
// send timestamps and some integers either way.
func (s *Scanner) StringOrNumber() ([]byte, error) {
	if s.Peek() == '"' {
		return s.String()
	}
	return s.Number()
}

// Int consumes a non-negative integer given as a number or a decimal string.
func (s *Scanner) Int() (int64, error) {
	at := s.pos
	b, err := s.StringOrNumber()
	if err != nil {
		return 0, err
	}
	if len(b) == 0 || len(b) > 18 {
		s.pos = at
		return 0, s.errf("integer out of range")
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			s.pos = at
			return 0, s.errf("expected non-negative integer")
		}
		v = v*10 + int64(c-'0')
	}
	return v, nil
}

// Literal consumes true, false or null and returns it.
func (s *Scanner) Literal() ([]byte, error) {
	s.ws()
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(s.buf)-s.pos >= len(lit) && string(s.buf[s.pos:s.pos+len(lit)]) == lit {
			s.pos += len(lit)
			return s.buf[s.pos-len(lit) : s.pos], nil
		}
	}
	return nil, s.errf("expected value")
}

// IsNull consumes a null if one is next and reports whether it did.
func (s *Scanner) IsNull() bool {
	if s.Peek() == 'n' && len(s.buf)-s.pos >= 4 && string(s.buf[s.pos:s.pos+4]) == "null" {
		s.pos += 4
		return true
	}
	return false
}

// Skip consumes one value of any type, validating it, and returns its text.
func (s *Scanner) Skip() ([]byte, error) {
	s.ws()
	start := s.pos
	if err := s.skip(0); err != nil {
		return nil, err
	}
	return s.buf[start:s.pos], nil
}

func (s *Scanner) skip(depth int) error {
	if depth > MaxDepth {
		return s.errf("nesting too deep")
	}
	switch s.Peek() {
	case '{':
		s.pos++
		for first := true; ; first = false {
			_, ok, err := s.NextKey(first)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case '[':
		s.pos++
		for first := true; ; first = false {
			ok, err := s.NextElem(first)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case '"':
		_, err := s.String()
		return err
	case 't', 'f', 'n':
		_, err := s.Literal()
		return err
	case 0:
		return s.errf("unexpected end of input")
	default:
		_, err := s.Number()
		return err
	}
}
