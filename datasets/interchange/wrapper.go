package interchange

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/datasets"
)

// The NDJSON wrapper form is specified in the package documentation.

// wrapper is one parsed wrapper line; slices alias the line or scratch.
type wrapper struct {
	hasTime  bool
	recvNs   int64
	kind     datasets.Kind
	conn     uint32
	assigned bool
	binary   bool
	payload  []byte
	hasPay   bool
}

var errWrapper = errors.New("not a wrapper object")

// isWrapper reports whether line is a JSON object with a top-level
// "recv_ns" or "localTimestamp" key, which no venue frame carries.
func isWrapper(line []byte) bool {
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	i++
	for {
		i = skipWS(line, i)
		if i >= len(line) || line[i] != '"' {
			return false
		}
		ks, ke, ok := scanString(line, i)
		if !ok {
			return false
		}
		key := string(line[ks+1 : ke-1])
		if key == "recv_ns" || key == "localTimestamp" {
			return true
		}
		i = skipWS(line, ke)
		if i >= len(line) || line[i] != ':' {
			return false
		}
		end, ok := skipValue(line, skipWS(line, i+1))
		if !ok {
			return false
		}
		i = skipWS(line, end)
		if i >= len(line) || line[i] != ',' {
			return false
		}
		i++
	}
}

// parseWrapper parses a wrapper line into w. scratch holds unescaped or
// decoded payloads and is returned grown.
func parseWrapper(line []byte, w *wrapper, scratch []byte) ([]byte, error) {
	*w = wrapper{kind: datasets.KindFrame}
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return scratch, fmt.Errorf("%w: wrapper line must be a JSON object", ErrSyntax)
	}
	i++
	i = skipWS(line, i)
	if i < len(line) && line[i] == '}' {
		return scratch, fmt.Errorf("%w: empty wrapper object", ErrSyntax)
	}
	for {
		i = skipWS(line, i)
		if i >= len(line) || line[i] != '"' {
			return scratch, fmt.Errorf("%w: expected a key at byte %d", ErrSyntax, i)
		}
		ks, ke, ok := scanString(line, i)
		if !ok {
			return scratch, fmt.Errorf("%w: unterminated key at byte %d", ErrSyntax, i)
		}
		key := line[ks+1 : ke-1]
		i = skipWS(line, ke)
		if i >= len(line) || line[i] != ':' {
			return scratch, fmt.Errorf("%w: expected ':' at byte %d", ErrSyntax, i)
		}
		vs := skipWS(line, i+1)
		ve, ok := skipValue(line, vs)
		if !ok {
			return scratch, fmt.Errorf("%w: bad value of %q at byte %d", ErrSyntax, key, vs)
		}
		val := line[vs:ve]
		var err error
		scratch, err = w.set(key, val, scratch)
		if err != nil {
			return scratch, err
		}
		i = skipWS(line, ve)
		if i >= len(line) {
			return scratch, fmt.Errorf("%w: unterminated wrapper object", ErrSyntax)
		}
		if line[i] == '}' {
			if skipWS(line, i+1) != len(line) {
				return scratch, fmt.Errorf("%w: data after the wrapper object at byte %d", ErrSyntax, i+1)
			}
			break
		}
		if line[i] != ',' {
			return scratch, fmt.Errorf("%w: expected ',' or '}' at byte %d", ErrSyntax, i)
		}
		i++
	}
	if !w.hasTime {
		return scratch, fmt.Errorf("%w: wrapper line without \"recv_ns\"", ErrTime)
	}
	if !w.hasPay {
		return scratch, fmt.Errorf("%w: wrapper line without \"frame\", \"text\", \"b64\" or \"control\"", ErrSyntax)
	}
	return scratch, nil
}

func (w *wrapper) set(key, val []byte, scratch []byte) ([]byte, error) {
	switch string(key) {
	case "recv_ns":
		v, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil || v < 0 {
			return scratch, fmt.Errorf("%w: recv_ns %.40q", ErrTime, val)
		}
		w.recvNs, w.hasTime = v, true
	case "localTimestamp":
		s, ok := plainString(val)
		if !ok {
			return scratch, fmt.Errorf("%w: localTimestamp %.40q", ErrTime, val)
		}
		v, err := parseISO(s)
		if err != nil {
			return scratch, err
		}
		w.recvNs, w.hasTime = v, true
	case "kind":
		s, ok := plainString(val)
		if !ok {
			return scratch, fmt.Errorf("%w: kind %.40q", ErrSyntax, val)
		}
		k, ok := datasets.ParseKind(string(s))
		if !ok {
			return scratch, fmt.Errorf("%w: unknown kind %.40q", ErrSyntax, s)
		}
		w.kind = k
	case "conn":
		v, err := strconv.ParseUint(string(val), 10, 32)
		if err != nil {
			return scratch, fmt.Errorf("%w: conn %.40q", ErrSyntax, val)
		}
		w.conn = uint32(v)
	case "assigned", "binary":
		var on bool
		switch string(val) {
		case "true":
			on = true
		case "false":
		default:
			return scratch, fmt.Errorf("%w: %s %.40q", ErrSyntax, key, val)
		}
		if key[0] == 'a' {
			w.assigned = on
		} else {
			w.binary = on
		}
	case "frame", "message", "control":
		if w.hasPay {
			return scratch, fmt.Errorf("%w: more than one payload key", ErrSyntax)
		}
		if len(val) == 0 || (val[0] != '{' && val[0] != '[') {
			return scratch, fmt.Errorf("%w: %q must be a JSON object or array (use \"text\" for other frames)", ErrSyntax, key)
		}
		w.payload, w.hasPay = val, true
	case "text":
		if w.hasPay {
			return scratch, fmt.Errorf("%w: more than one payload key", ErrSyntax)
		}
		if len(val) == 0 || val[0] != '"' {
			return scratch, fmt.Errorf("%w: text must be a JSON string", ErrSyntax)
		}
		if s, ok := plainString(val); ok {
			w.payload = s
		} else {
			var str string
			if err := json.Unmarshal(val, &str); err != nil {
				return scratch, fmt.Errorf("%w: text: %v", ErrSyntax, err)
			}
			scratch = append(scratch[:0], str...)
			w.payload = scratch
		}
		w.hasPay = true
	case "b64":
		if w.hasPay {
			return scratch, fmt.Errorf("%w: more than one payload key", ErrSyntax)
		}
		s, ok := plainString(val)
		if !ok {
			return scratch, fmt.Errorf("%w: b64 must be a plain base64 string", ErrSyntax)
		}
		n := base64.StdEncoding.DecodedLen(len(s))
		if cap(scratch) < n {
			scratch = make([]byte, n)
		}
		m, err := base64.StdEncoding.Decode(scratch[:n], s)
		if err != nil {
			return scratch, fmt.Errorf("%w: b64: %v", ErrSyntax, err)
		}
		w.payload, w.hasPay = scratch[:m], true
	}
	return scratch, nil
}

// plainString returns the contents of a JSON string token without escapes.
func plainString(val []byte) ([]byte, bool) {
	if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
		return nil, false
	}
	s := val[1 : len(val)-1]
	for _, c := range s {
		if c == '\\' || c < 0x20 {
			return nil, false
		}
	}
	return s, true
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// scanString returns the bounds [start, end) of the JSON string at b[i].
func scanString(b []byte, i int) (int, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return i, j + 1, true
		}
	}
	return 0, 0, false
}

// maxDepth bounds nesting so a hostile line cannot make skipValue recurse
// without end; it never recurses, but the depth counter is int.
const maxDepth = 10000

// skipValue returns the end of the JSON value starting at b[i]. It checks
// string and bracket structure, not every token: payloads are stored byte
// for byte, so only the framing needs to be right.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		_, e, ok := scanString(b, i)
		return e, ok
	case '{', '[':
		var stack [64]byte // nesting beyond 64 spills to the slice
		st := stack[:0]
		for j := i; j < len(b); j++ {
			switch c := b[j]; c {
			case '"':
				_, e, ok := scanString(b, j)
				if !ok {
					return 0, false
				}
				j = e - 1
			case '{', '[':
				if len(st) >= maxDepth {
					return 0, false
				}
				st = append(st, c)
			case '}', ']':
				if len(st) == 0 {
					return 0, false
				}
				open := st[len(st)-1]
				if (c == '}') != (open == '{') {
					return 0, false
				}
				st = st[:len(st)-1]
				if len(st) == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default:
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
				break
			}
			j++
		}
		return j, j > i
	}
}

// frameForm is how appendWrapper embeds a payload.
type frameForm uint8

const (
	formRaw  frameForm = iota // a one-line JSON object or array, embedded as is
	formText                  // valid UTF-8, written as a JSON string
	formB64                   // anything else, base64
)

func payloadForm(p []byte, binary bool) frameForm {
	if binary {
		return formB64
	}
	if len(p) >= 2 && ((p[0] == '{' && p[len(p)-1] == '}') || (p[0] == '[' && p[len(p)-1] == ']')) &&
		!hasLineBreak(p) && validJSON(p) && utf8.Valid(p) {
		return formRaw
	}
	if utf8.Valid(p) {
		return formText
	}
	return formB64
}

func hasLineBreak(p []byte) bool {
	return bytes.IndexByte(p, '\n') >= 0 || bytes.IndexByte(p, '\r') >= 0
}

// appendWrapper appends r as one wrapper line (with its '\n').
func appendWrapper(dst []byte, r *datasets.Record) []byte {
	dst = append(dst, `{"recv_ns":`...)
	dst = strconv.AppendInt(dst, r.WallNs, 10)
	if r.Kind != datasets.KindFrame {
		dst = append(dst, `,"kind":"`...)
		dst = append(dst, r.Kind.String()...)
		dst = append(dst, '"')
	}
	if r.Conn != 0 {
		dst = append(dst, `,"conn":`...)
		dst = strconv.AppendUint(dst, uint64(r.Conn), 10)
	}
	if r.Flags&datasets.FlagAssigned != 0 {
		dst = append(dst, `,"assigned":true`...)
	}
	if r.Flags&datasets.FlagBinary != 0 {
		dst = append(dst, `,"binary":true`...)
	}
	switch payloadForm(r.Payload, r.Flags&datasets.FlagBinary != 0) {
	case formRaw:
		if r.Kind == datasets.KindFrame || r.Kind == datasets.KindSent {
			dst = append(dst, `,"frame":`...)
		} else {
			dst = append(dst, `,"control":`...)
		}
		dst = append(dst, r.Payload...)
	case formText:
		dst = append(dst, `,"text":`...)
		dst = appendJSONString(dst, r.Payload)
	case formB64:
		dst = append(dst, `,"b64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, r.Payload)
		dst = append(dst, '"')
	}
	return append(dst, "}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s (valid UTF-8) as a JSON string, escaping only
// what JSON requires so that the text stays readable.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
