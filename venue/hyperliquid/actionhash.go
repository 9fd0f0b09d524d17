package hyperliquid

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/tapedeck/tapedeck/venue/internal/ethsig"
	"github.com/vmihailenco/msgpack/v5"
)

// An exchange action is signed as an EIP-712 "phantom agent" (source "a" on
// mainnet, "b" on testnet) whose connectionId is keccak256(msgpack(action) ‖
// nonce as 8 big-endian bytes ‖ 0x00, or 0x01 and the vault address ‖ 0x00
// and expiresAfter as 8 bytes when set), in the domain
// {name "Exchange", version "1", chainId 1337, verifyingContract 0x0}
// (hyperliquid-python-sdk utils/signing.py action_hash, sign_l1_action; the
// TypeScript SDK's signing/_l1.js). The action's keys are encoded in the
// order the client sent them, as it hashed them: the JSON body is re-encoded
// token by token, never through a map.

// actionHash returns the connectionId of an action given as its JSON text.
func actionHash(action json.RawMessage, nonce uint64, vault string, expiresAfter *uint64) ([32]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	dec := json.NewDecoder(bytes.NewReader(action))
	dec.UseNumber()
	if err := msgpackValue(enc, dec, 0); err != nil {
		return [32]byte{}, err
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], nonce)
	buf.Write(n[:])
	if vault == "" {
		buf.WriteByte(0)
	} else {
		v, err := ethsig.Address(vault)
		if err != nil {
			return [32]byte{}, err
		}
		buf.WriteByte(1)
		buf.Write(v[12:])
	}
	if expiresAfter != nil {
		buf.WriteByte(0)
		binary.BigEndian.PutUint64(n[:], *expiresAfter)
		buf.Write(n[:])
	}
	return ethsig.Keccak256(buf.Bytes()), nil
}

// maxDepth bounds the nesting of an action.
const maxDepth = 16

// msgpackValue encodes the next JSON value as the SDKs' msgpack encoders
// do: integers in their smallest form (unsigned when not negative), other
// numbers as float64, objects as maps with keys in the order sent.
func msgpackValue(enc *msgpack.Encoder, dec *json.Decoder, depth int) error {
	if depth > maxDepth {
		return errors.New("action nested too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var keys []string
			var vals []json.RawMessage
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					return err
				}
				keys = append(keys, k)
				vals = append(vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			if err := enc.EncodeMapLen(len(keys)); err != nil {
				return err
			}
			for i, k := range keys {
				if err := enc.EncodeString(k); err != nil {
					return err
				}
				sub := json.NewDecoder(bytes.NewReader(vals[i]))
				sub.UseNumber()
				if err := msgpackValue(enc, sub, depth+1); err != nil {
					return err
				}
			}
			return nil
		case '[':
			var vals []json.RawMessage
			for dec.More() {
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					return err
				}
				vals = append(vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			if err := enc.EncodeArrayLen(len(vals)); err != nil {
				return err
			}
			for _, v := range vals {
				sub := json.NewDecoder(bytes.NewReader(v))
				sub.UseNumber()
				if err := msgpackValue(enc, sub, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		return fmt.Errorf("unexpected %v", t)
	case string:
		return enc.EncodeString(t)
	case bool:
		return enc.EncodeBool(t)
	case nil:
		return enc.EncodeNil()
	case json.Number:
		if u, err := strconv.ParseUint(string(t), 10, 64); err == nil {
			return enc.EncodeUint(u)
		}
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return enc.EncodeInt(i)
		}
		f, err := t.Float64()
		if err != nil || math.IsInf(f, 0) {
			return fmt.Errorf("number %s", t)
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			if f >= 0 {
				return enc.EncodeUint(uint64(f))
			}
			return enc.EncodeInt(int64(f))
		}
		return enc.EncodeFloat64(f)
	}
	return fmt.Errorf("unexpected token %v", tok)
}

// agentDigest is the EIP-712 digest of the phantom agent of connectionID.
func agentDigest(connectionID [32]byte, testnet bool) [32]byte {
	source := "a"
	if testnet {
		source = "b"
	}
	zero, _ := ethsig.Address("0x0000000000000000000000000000000000000000")
	domain := ethsig.Struct("EIP712Domain",
		ethsig.Field{Type: "string", Name: "name", Value: ethsig.Str("Exchange")},
		ethsig.Field{Type: "string", Name: "version", Value: ethsig.Str("1")},
		ethsig.Field{Type: "uint256", Name: "chainId", Value: ethsig.Uint64(1337)},
		ethsig.Field{Type: "address", Name: "verifyingContract", Value: zero})
	msg := ethsig.Struct("Agent",
		ethsig.Field{Type: "string", Name: "source", Value: ethsig.Str(source)},
		ethsig.Field{Type: "bytes32", Name: "connectionId", Value: connectionID})
	return ethsig.Digest(domain, msg)
}
