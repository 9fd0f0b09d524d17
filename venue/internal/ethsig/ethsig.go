// Package ethsig recovers the Ethereum address that signed an EIP-712
// typed-data digest, for the venues' trading APIs: Hyperliquid's phantom
// agent over an action hash, Polymarket's ClobAuth and order structs. It
// hashes with Keccak-256 (golang.org/x/crypto/sha3) and recovers with
// secp256k1 (decred/dcrd).
package ethsig

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"golang.org/x/crypto/sha3"
)

// Keccak256 hashes the concatenation of parts.
func Keccak256(parts ...[]byte) [32]byte {
	h := sha3.NewLegacyKeccak256()
	for _, p := range parts {
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Field is one member of an EIP-712 struct: its type and name as in the
// type string, and its value already encoded to 32 bytes (Str, Uint,
// Address, Bytes32).
type Field struct {
	Type, Name string
	Value      [32]byte
}

// Struct hashes an EIP-712 struct of primitive members: keccak(typeHash ‖
// values), typeHash = keccak("Name(type name,…)").
func Struct(name string, fields ...Field) [32]byte {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('(')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.Type)
		b.WriteByte(' ')
		b.WriteString(f.Name)
	}
	b.WriteByte(')')
	th := Keccak256([]byte(b.String()))
	parts := make([][]byte, 0, len(fields)+1)
	parts = append(parts, th[:])
	for i := range fields {
		parts = append(parts, fields[i].Value[:])
	}
	return Keccak256(parts...)
}

// Digest is the EIP-712 signing digest keccak(0x19 0x01 ‖ domain ‖ message).
func Digest(domain, message [32]byte) [32]byte {
	return Keccak256([]byte{0x19, 0x01}, domain[:], message[:])
}

// Str encodes a string member (its keccak).
func Str(s string) [32]byte { return Keccak256([]byte(s)) }

// Uint encodes a uint256 member.
func Uint(v *big.Int) [32]byte {
	var out [32]byte
	v.FillBytes(out[:])
	return out
}

// Uint64 encodes a small uint256 member.
func Uint64(v uint64) [32]byte { return Uint(new(big.Int).SetUint64(v)) }

// ParseUint reads a decimal (or 0x hex) uint256 member.
func ParseUint(s string) ([32]byte, error) {
	v, ok := new(big.Int).SetString(s, 0)
	if !ok || v.Sign() < 0 || v.BitLen() > 256 {
		return [32]byte{}, fmt.Errorf("ethsig: not a uint256: %q", s)
	}
	return Uint(v), nil
}

// Address encodes an address member given as 0x and 40 hex digits.
func Address(s string) ([32]byte, error) {
	var out [32]byte
	b, err := hexBytes(s)
	if err != nil || len(b) != 20 {
		return out, fmt.Errorf("ethsig: not an address: %q", s)
	}
	copy(out[12:], b)
	return out, nil
}

// Bytes32 encodes a bytes32 member given as 0x and 64 hex digits.
func Bytes32(s string) ([32]byte, error) {
	var out [32]byte
	b, err := hexBytes(s)
	if err != nil || len(b) != 32 {
		return out, fmt.Errorf("ethsig: not 32 bytes: %q", s)
	}
	copy(out[:], b)
	return out, nil
}

func hexBytes(s string) ([]byte, error) {
	s, ok := strings.CutPrefix(s, "0x")
	if !ok {
		s, ok = strings.CutPrefix(s, "0X")
	}
	if !ok {
		return nil, errors.New("no 0x")
	}
	return hex.DecodeString(s)
}

// ErrSignature is a signature that does not recover an address.
var ErrSignature = errors.New("ethsig: invalid signature")

// Recover returns the address (0x and 40 lower-case hex digits) whose key
// signed digest, from r, s and v (27, 28, or 0, 1).
func Recover(digest [32]byte, r, s [32]byte, v int) (string, error) {
	if v < 27 {
		v += 27
	}
	if v != 27 && v != 28 {
		return "", fmt.Errorf("%w: v = %d", ErrSignature, v)
	}
	compact := make([]byte, 65)
	compact[0] = byte(v)
	copy(compact[1:33], r[:])
	copy(compact[33:], s[:])
	pub, _, err := ecdsa.RecoverCompact(compact, digest[:])
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrSignature, err)
	}
	return addressOf(pub), nil
}

// RecoverHex is Recover for a 65-byte signature r ‖ s ‖ v in hex (0x…).
func RecoverHex(digest [32]byte, sig string) (string, error) {
	b, err := hexBytes(sig)
	if err != nil || len(b) != 65 {
		return "", fmt.Errorf("%w: want 65 bytes of hex", ErrSignature)
	}
	var r, s [32]byte
	copy(r[:], b[:32])
	copy(s[:], b[32:64])
	return Recover(digest, r, s, int(b[64]))
}

func addressOf(pub *secp256k1.PublicKey) string {
	u := pub.SerializeUncompressed()
	h := Keccak256(u[1:])
	return "0x" + hex.EncodeToString(h[12:])
}

// Sign signs digest with a private key (32 bytes), returning r ‖ s ‖ v
// (v 27 or 28) in hex: for tests and examples that play a client.
func Sign(key []byte, digest [32]byte) string {
	priv := secp256k1.PrivKeyFromBytes(key)
	c := ecdsa.SignCompact(priv, digest[:], false)
	out := make([]byte, 65)
	copy(out, c[1:])
	out[64] = c[0]
	return "0x" + hex.EncodeToString(out)
}

// AddressOfKey returns the address of a private key (32 bytes).
func AddressOfKey(key []byte) string {
	return addressOf(secp256k1.PrivKeyFromBytes(key).PubKey())
}
