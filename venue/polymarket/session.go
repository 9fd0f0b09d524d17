package polymarket

// This file holds what a capture session needs to talk to the Polymarket CLOB
// market channel: the URL, the subscribe/unsubscribe frames, the heartbeat and
// the per-frame and per-connection limits (PROTOCOLS.md §1). The decoder in
// this package turns received frames into book updates; nothing here decodes.

import (
	"errors"
	"fmt"
	"time"

	"github.com/tapedeck/tapedeck/venue/internal/jscan"
)

// Public endpoints. Tests and mirrors override them (capture --endpoint,
// --rest-endpoint).
const (
	// marketEndpoint is the public market-channel WebSocket URL (no auth).
	marketEndpoint = "wss://ws-subscriptions-clob.polymarket.com/ws/market"
	// gammaEndpoint is the public REST service listing markets and their
	// token ids (GET /markets).
	gammaEndpoint = "https://gamma-api.polymarket.com"
)

// Session limits and timings of the market channel.
const (
	// MaxSubscribeIDs is the most asset ids sent in one subscribe frame: a
	// frame with thousands of ids makes the server close the socket.
	MaxSubscribeIDs = 100
	// maxConnAssets is the most assets one connection carries; beyond about
	// 500 the server silently stops sending updates.
	maxConnAssets = 500
	// DefaultConnAssets is the number of assets per connection a plan uses
	// unless told otherwise, well below maxConnAssets.
	DefaultConnAssets = 200
	// pingInterval is how often the client sends the text frame PingText; a
	// connection without heartbeats drops after about 10 s.
	pingInterval = 10 * time.Second
	// PingText is the heartbeat the client sends, a text frame that is not JSON.
	PingText = "PING"
	// pongText is the server's answer to PingText.
	pongText = "PONG"
	// maxFrameBytes bounds one received frame. The largest real frame is the
	// initial dump: one book per subscribed asset, up to 1000 levels per side
	// on a 0.001 grid, for up to maxConnAssets assets.
	maxFrameBytes = 32 << 20
)

// ErrTokenID reports an instrument that is not a token id (a decimal
// uint256 string), where one is required.
var ErrTokenID = errors.New("polymarket: not a token id")

// isTokenID reports whether s looks like a CLOB token id: 1 to 78 decimal
// digits (real ids have 75 to 78).
func isTokenID(s string) bool {
	if len(s) == 0 || len(s) > 78 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isConditionID reports whether s is a market condition id: 0x and 64 hex digits.
func isConditionID(s string) bool {
	if len(s) != 66 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return false
	}
	for i := 2; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// appendSubscribe appends the initial market-channel subscribe frame for ids
// to dst: {"assets_ids":[…],"type":"market","custom_feature_enabled":true}.
// Custom features enable best_bid_ask, new_market and market_resolved.
// Callers send at most MaxSubscribeIDs ids per frame (planConns chunks them).
func appendSubscribe(dst []byte, ids []string) []byte {
	dst = appendIDs(append(dst, `{"assets_ids":`...), ids)
	return append(dst, `,"type":"market","custom_feature_enabled":true}`...)
}

// AppendDynamicSubscribe appends the frame that adds ids to an open
// connection without reconnecting:
// {"assets_ids":[…],"operation":"subscribe","custom_feature_enabled":true}.
func AppendDynamicSubscribe(dst []byte, ids []string) []byte {
	dst = appendIDs(append(dst, `{"assets_ids":`...), ids)
	return append(dst, `,"operation":"subscribe","custom_feature_enabled":true}`...)
}

// AppendUnsubscribe appends the frame that removes ids from an open
// connection: {"assets_ids":[…],"operation":"unsubscribe"}.
func AppendUnsubscribe(dst []byte, ids []string) []byte {
	dst = appendIDs(append(dst, `{"assets_ids":`...), ids)
	return append(dst, `,"operation":"unsubscribe"}`...)
}

func appendIDs(dst []byte, ids []string) []byte {
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jscan.AppendString(dst, id)
	}
	return append(dst, ']')
}

// connPlan is what one market-channel connection carries: its assets and the
// frames that subscribe them after every (re)connect, in order. The first
// frame is the initial subscribe, the rest dynamic subscribes, each with at
// most MaxSubscribeIDs ids.
type connPlan struct {
	Assets    []string
	Subscribe [][]byte
}

// planConns shards ids over connections of at most perConn assets (0 means
// DefaultConnAssets) and builds each one's subscribe frames. Duplicate ids
// are dropped, order is kept. It returns ErrTokenID (wrapped, naming the id)
// for an id that is not a token id, and an error for perConn outside
// 1..MaxConnAssets. The returned plans own their slices.
func planConns(ids []string, perConn int) ([]connPlan, error) {
	if perConn == 0 {
		perConn = DefaultConnAssets
	}
	if perConn < 1 || perConn > maxConnAssets {
		return nil, fmt.Errorf("polymarket: plan connections: %d assets per connection, want 1..%d", perConn, maxConnAssets)
	}
	seen := make(map[string]bool, len(ids))
	uniq := make([]string, 0, len(ids))
	for _, id := range ids {
		if !isTokenID(id) {
			return nil, fmt.Errorf("polymarket: plan connections: asset %q: %w", id, ErrTokenID)
		}
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	var plans []connPlan
	for start := 0; start < len(uniq); start += perConn {
		end := min(start+perConn, len(uniq))
		plans = append(plans, connPlan{Assets: uniq[start:end:end], Subscribe: subscribeFrames(uniq[start:end])})
	}
	return plans, nil
}

// subscribeFrames returns the frames that subscribe ids on a fresh
// connection: one initial subscribe, then dynamic subscribes, MaxSubscribeIDs
// ids per frame. Nil for no ids.
func subscribeFrames(ids []string) [][]byte {
	var frames [][]byte
	for i := 0; i < len(ids); i += MaxSubscribeIDs {
		chunk := ids[i:min(i+MaxSubscribeIDs, len(ids))]
		if i == 0 {
			frames = append(frames, appendSubscribe(nil, chunk))
		} else {
			frames = append(frames, AppendDynamicSubscribe(nil, chunk))
		}
	}
	return frames
}
