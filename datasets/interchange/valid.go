package interchange

// validJSON reports whether p is exactly one JSON value (RFC 8259),
// optionally surrounded by whitespace: the answer of encoding/json.Valid,
// which FuzzValidJSON checks, at several times its speed (it is the cost of
// deciding whether a frame embeds raw in an NDJSON wrapper line). Like
// json.Valid it does not check UTF-8.
func validJSON(p []byte) bool {
	var stack [64]byte // nesting beyond 64 spills to the heap
	st := stack[:0]
	n := len(p)
	i := 0
value:
	for {
		i = skipWS(p, i)
		if i >= n {
			return false
		}
		switch c := p[i]; {
		case c == '{' || c == '[':
			if len(st) >= maxDepth {
				return false
			}
			i = skipWS(p, i+1)
			if i < n && p[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				i++
				break
			}
			st = append(st, c)
			if c == '{' {
				if i = scanKey(p, i); i < 0 {
					return false
				}
			}
			continue value
		case c == '"':
			if i = scanStr(p, i); i < 0 {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = scanNum(p, i); i < 0 {
				return false
			}
		case c == 't':
			if i = scanLit(p, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = scanLit(p, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = scanLit(p, i, "null"); i < 0 {
				return false
			}
		default:
			return false
		}
		// After a value: close containers or move to the next element.
		for {
			i = skipWS(p, i)
			if len(st) == 0 {
				return i == n
			}
			if i >= n {
				return false
			}
			top := st[len(st)-1]
			switch p[i] {
			case ',':
				i++
				if top == '{' {
					if i = scanKey(p, i); i < 0 {
						return false
					}
				}
				continue value
			case top + 2:
				st = st[:len(st)-1]
				i++
			default:
				return false
			}
		}
	}
}

// scanKey reads `"key" :` from p[i:], whitespace allowed around, and
// returns the index after the colon, or -1.
func scanKey(p []byte, i int) int {
	i = skipWS(p, i)
	if i >= len(p) || p[i] != '"' {
		return -1
	}
	if i = scanStr(p, i); i < 0 {
		return -1
	}
	i = skipWS(p, i)
	if i >= len(p) || p[i] != ':' {
		return -1
	}
	return i + 1
}

// scanStr returns the index after the JSON string starting at p[i], or -1.
func scanStr(p []byte, i int) int {
	for i++; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(p) {
				return -1
			}
			switch p[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(p) {
					return -1
				}
				for _, h := range p[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// scanNum returns the index after the JSON number starting at p[i], or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNum(p []byte, i int) int {
	n := len(p)
	digits := func(i int) int { // at least one digit
		j := i
		for j < n && p[j] >= '0' && p[j] <= '9' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
	if p[i] == '-' {
		i++
	}
	if i >= n {
		return -1
	}
	if p[i] == '0' {
		i++
	} else if i = digits(i); i < 0 {
		return -1
	}
	if i < n && p[i] == '.' {
		if i = digits(i + 1); i < 0 {
			return -1
		}
	}
	if i < n && (p[i] == 'e' || p[i] == 'E') {
		i++
		if i < n && (p[i] == '+' || p[i] == '-') {
			i++
		}
		if i = digits(i); i < 0 {
			return -1
		}
	}
	return i
}

func scanLit(p []byte, i int, lit string) int {
	if len(p)-i < len(lit) || string(p[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}
