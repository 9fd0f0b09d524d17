package ethsig

import (
	"encoding/hex"
	"testing"
)

// The vectors were computed by viem 2.58 (hashTypedData, signTypedData with
// privateKeyToAccount), an implementation nobody here wrote. The key is the
// second well-known Hardhat development key, whose address is public.
const (
	testKey  = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
	testAddr = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
)

func TestTypedDataVectors(t *testing.T) {
	zero, _ := Address("0x0000000000000000000000000000000000000000")
	conn, _ := Bytes32("0x" + repeat("ab", 32))
	agent := Digest(
		Struct("EIP712Domain", Field{"string", "name", Str("Exchange")}, Field{"string", "version", Str("1")},
			Field{"uint256", "chainId", Uint64(1337)}, Field{"address", "verifyingContract", zero}),
		Struct("Agent", Field{"string", "source", Str("a")}, Field{"bytes32", "connectionId", conn}))
	addr, _ := Address(testAddr)
	clob := Digest(
		Struct("EIP712Domain", Field{"string", "name", Str("ClobAuthDomain")}, Field{"string", "version", Str("1")},
			Field{"uint256", "chainId", Uint64(137)}),
		Struct("ClobAuth", Field{"address", "address", addr}, Field{"string", "timestamp", Str("1700000000")},
			Field{"uint256", "nonce", Uint64(0)}, Field{"string", "message", Str("This message attests that I control the given wallet")}))
	for _, c := range []struct {
		name   string
		digest [32]byte
		want   string
		sig    string
	}{
		{"hyperliquid agent", agent, "72207a9050c3b502ccf89a135cf1a5dd878365add516939a140d57a3d0b434ac",
			"0x87d28595f44f48222c12ebefdbaead398449642d01c6bae5ceedabb72dcb7fad4a72e34efd809b433c92b4f846ee9b654f14d5933b11e57fba3107ef8e99a7e51b"},
		{"polymarket clob auth", clob, "2ef9d55ea27e9a5d0bc4973f725924f2b5b557cd7538550b5fde8c1903f4ebac",
			"0xa6eac9a1927262c9ea8ff8e59f701392c16873a714b0f976f1481df77b438a1829c5e7fc70854d68b320b4ca7beff251202adb8ff00ad00456eab408e3a95ce41c"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := hex.EncodeToString(c.digest[:]); got != c.want {
				t.Fatalf("digest %s, want %s", got, c.want)
			}
			got, err := RecoverHex(c.digest, c.sig)
			if err != nil || got != testAddr {
				t.Fatalf("recovered %s, %v; want %s", got, err, testAddr)
			}
			// Our own signature recovers the same signer; a flipped byte does not.
			key, _ := hex.DecodeString(testKey)
			own := Sign(key, c.digest)
			if got, err := RecoverHex(c.digest, own); err != nil || got != testAddr {
				t.Fatalf("own signature recovered %s, %v", got, err)
			}
			bad := []byte(c.sig)
			bad[10] ^= 1
			if got, err := RecoverHex(c.digest, string(bad)); err == nil && got == testAddr {
				t.Fatal("a damaged signature recovered the signer")
			}
		})
	}
	key, _ := hex.DecodeString(testKey)
	if got := AddressOfKey(key); got != testAddr {
		t.Fatalf("address of key %s", got)
	}
}

func TestBadInput(t *testing.T) {
	var d [32]byte
	for _, sig := range []string{"", "0x", "0x1234", "zz", "0x" + repeat("00", 65)} {
		if _, err := RecoverHex(d, sig); err == nil {
			t.Errorf("%q recovered", sig)
		}
	}
	for _, a := range []string{"", "0x12", "70997970c51812dc3a010c7d01b50e0d17dc79c8", "0xzz997970c51812dc3a010c7d01b50e0d17dc79c8"} {
		if _, err := Address(a); err == nil {
			t.Errorf("address %q accepted", a)
		}
	}
	if _, err := ParseUint("-1"); err == nil {
		t.Error("negative uint accepted")
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}
