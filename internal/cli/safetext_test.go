package cli

import (
	"bytes"
	"testing"
)

// SafeText shows a venue's control characters instead of passing them to
// the terminal (issue 30 item 18), and leaves ordinary text, newlines and
// tabs (tables) alone.
func TestSafeText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "BTC\t0.5\n", "BTC\t0.5\n"},
		{"utf-8", "Élection 2028 – oui\n", "Élection 2028 – oui\n"},
		{"csi", "evil\x1b[2J\x1b]0;title\x07name\n", `evil\x1b[2J\x1b]0;title\x07name` + "\n"},
		{"carriage return", "ok\rFAKE\n", `ok\x0dFAKE` + "\n"},
		{"del", "a\x7fb", `a\x7fb`},
		{"c1 csi", "a\u009b31mb", `a\u009b31mb`},
		{"bidi override", "a\u202eb", `a\u202eb`},
		{"not utf-8", "a\x9bb\xff", `a\x9bb\xff`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			n, err := SafeText(&b).Write([]byte(tc.in))
			if err != nil || n != len(tc.in) || b.String() != tc.want {
				t.Fatalf("wrote %q (%d, %v), want %q", b.String(), n, err, tc.want)
			}
		})
	}
}
