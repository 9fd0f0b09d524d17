package cli

import (
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// SafeText returns a writer that passes text to w with every control
// character but newline and tab shown as an escape (\x1b, \u009b) and every
// byte that is not UTF-8 as \xNN: text made for a terminal from what a
// venue supplied (instrument names, market titles) cannot move the cursor,
// recolour or retitle the terminal, or hide a line. Our own output has no
// other control characters, so only venue text changes. A character split
// between two writes is shown as its bytes.
func SafeText(w io.Writer) io.Writer { return &safeText{w: w} }

type safeText struct {
	w   io.Writer
	buf []byte
}

func (s *safeText) Write(p []byte) (int, error) {
	clean := true
	for _, c := range p {
		if c < 0x20 && c != '\n' && c != '\t' || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s.w.Write(p)
	}
	s.buf = s.buf[:0]
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			s.buf = fmt.Appendf(s.buf, `\x%02x`, p[i])
		case r == '\n' || r == '\t':
			s.buf = append(s.buf, p[i])
		case r < 0x80 && unicode.IsControl(r):
			s.buf = fmt.Appendf(s.buf, `\x%02x`, r)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r):
			s.buf = fmt.Appendf(s.buf, `\u%04x`, r)
		default:
			s.buf = append(s.buf, p[i:i+n]...)
		}
		i += n
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}
