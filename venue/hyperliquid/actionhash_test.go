package hyperliquid

import (
	"encoding/hex"
	"testing"
)

// The hashes were computed by the TypeScript SDK's createL1ActionHash
// (@nktkas/hyperliquid 0.33.3, signing), which the venue verifies against:
// keys in the order sent, an oid above 2^32 as uint64, a vault and an
// expiry appended.
func TestActionHashVectors(t *testing.T) {
	exp := uint64(99)
	for _, c := range []struct {
		name, action string
		nonce        uint64
		vault        string
		expires      *uint64
		want         string
	}{
		{"order", `{"type":"order","orders":[{"a":0,"b":true,"p":"95607","s":"0.00012","r":false,"t":{"limit":{"tif":"Gtc"}},"c":"0x00000000000000000000000000000001"}],"grouping":"na"}`,
			1761179880123, "", nil, "34205132ec19dfe1d411f054479f4bcda669e348511eb0dec108e68c0ef20311"},
		{"cancel with vault and expiry", `{"type":"cancel","cancels":[{"a":3,"o":4294967297}]}`,
			5, "0x1111111111111111111111111111111111111111", &exp, "7bb923d120299ef0f56f5e131b6e55a299b3b44a224880977e851d39661c0bec"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, err := actionHash([]byte(c.action), c.nonce, c.vault, c.expires)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(h[:]); got != c.want {
				t.Fatalf("hash %s, want %s", got, c.want)
			}
		})
	}
	for _, bad := range []string{`{`, `{"a":}`, `[1,2`, `"x`} {
		if _, err := actionHash([]byte(bad), 1, "", nil); err == nil {
			t.Errorf("%s hashed", bad)
		}
	}
}
