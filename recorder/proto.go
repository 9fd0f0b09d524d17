package recorder

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// frameClass is what the routing scan learned of a received frame.
type frameClass uint8

const (
	classData  frameClass = iota // market data for instruments
	classPong                    // heartbeat answer
	classAck                     // subscription acknowledged (Hyperliquid)
	classError                   // the venue reported an error (the socket stays up)
	classOther                   // greeting, non-JSON text, lifecycle-only frames
)

// proto is what a session needs of one venue's wire protocol. Items are what
// a connection carries: Polymarket token ids, Hyperliquid subscription specs
// (hyperliquid.Subscription.String()).
type proto interface {
	venue() string
	defaultEndpoint() string
	pingInterval() time.Duration
	pingFrame() []byte
	maxFrameBytes() int64
	pacing() *pacerConfig
	// subscribeFrames returns the frames that subscribe items on a fresh
	// connection, each with the items it names.
	subscribeFrames(items []string) []sendFrame
	// addFrames and removeFrames change the items of an open connection.
	addFrames(items []string) []sendFrame
	removeFrames(items []string) []sendFrame
	// watchKey returns the (channel, instrument) an item's data is routed
	// by, and whether the instrument watchdog should expect it to flow
	// steadily.
	watchKey(item string) (channel, instrument string, steady bool)
	// scan classifies a frame and calls touch once per (channel, instrument)
	// it carries data for. exNs is the venue's timestamp in ns (0 if none).
	// It must not allocate or retain frame.
	scan(frame []byte, touch func(channel, instrument []byte)) (c frameClass, exNs int64)
	// ackItem returns the item a subscription acknowledgement names.
	ackItem(frame []byte) (string, bool)
}

type sendFrame struct {
	data  []byte
	items []string
}

func protoFor(venueName string) (proto, bool) {
	switch venueName {
	case venue.Polymarket:
		return pmProto{}, true
	case venue.Hyperliquid:
		return hlProto{}, true
	}
	return nil, false
}

// ---- Polymarket ----

type pmProto struct{}

func (pmProto) venue() string               { return venue.Polymarket }
func (pmProto) defaultEndpoint() string     { return polymarket.MarketEndpoint }
func (pmProto) pingInterval() time.Duration { return polymarket.PingInterval }
func (pmProto) pingFrame() []byte           { return []byte(polymarket.PingText) }
func (pmProto) maxFrameBytes() int64        { return min(polymarket.MaxFrameBytes, datasets.MaxPayloadSize) }
func (pmProto) pacing() *pacerConfig        { return nil }

func chunks(items []string, n int) [][]string {
	var out [][]string
	for i := 0; i < len(items); i += n {
		out = append(out, items[i:min(i+n, len(items))])
	}
	return out
}

func (pmProto) subscribeFrames(items []string) []sendFrame {
	var out []sendFrame
	for i, c := range chunks(items, polymarket.MaxSubscribeIDs) {
		if i == 0 {
			out = append(out, sendFrame{polymarket.AppendSubscribe(nil, c), c})
		} else {
			out = append(out, sendFrame{polymarket.AppendDynamicSubscribe(nil, c), c})
		}
	}
	return out
}

func (pmProto) addFrames(items []string) []sendFrame {
	var out []sendFrame
	for _, c := range chunks(items, polymarket.MaxSubscribeIDs) {
		out = append(out, sendFrame{polymarket.AppendDynamicSubscribe(nil, c), c})
	}
	return out
}

func (pmProto) removeFrames(items []string) []sendFrame {
	var out []sendFrame
	for _, c := range chunks(items, polymarket.MaxSubscribeIDs) {
		out = append(out, sendFrame{polymarket.AppendUnsubscribe(nil, c), c})
	}
	return out
}

func (pmProto) watchKey(item string) (string, string, bool) { return "", item, false }

func (pmProto) ackItem([]byte) (string, bool) { return "", false }

var (
	pmAssetKey = []byte(`"asset_id"`)
	pmTSKey    = []byte(`"timestamp"`)
	pmPong     = []byte(polymarket.PongText)
)

func (pmProto) scan(frame []byte, touch func(channel, instrument []byte)) (frameClass, int64) {
	t := bytes.TrimSpace(frame)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		if bytes.Equal(t, pmPong) {
			return classPong, 0
		}
		return classOther, 0
	}
	found := false
	for rest := t; ; {
		i := bytes.Index(rest, pmAssetKey)
		if i < 0 {
			break
		}
		rest = rest[i+len(pmAssetKey):]
		if v, n, ok := stringValue(rest); ok {
			touch(nil, v)
			found = true
			rest = rest[n:]
		}
	}
	var exNs int64
	if i := bytes.Index(t, pmTSKey); i >= 0 {
		if ms, ok := numberValue(t[i+len(pmTSKey):]); ok {
			exNs = ms * int64(time.Millisecond)
		}
	}
	if !found {
		return classOther, exNs
	}
	return classData, exNs
}

// ---- Hyperliquid ----

type hlProto struct{}

func (hlProto) venue() string               { return venue.Hyperliquid }
func (hlProto) defaultEndpoint() string     { return hyperliquid.WSEndpoint }
func (hlProto) pingInterval() time.Duration { return hyperliquid.PingInterval }
func (hlProto) pingFrame() []byte           { return []byte(hyperliquid.PingText) }
func (hlProto) maxFrameBytes() int64        { return hyperliquid.MaxFrameBytes }
func (hlProto) pacing() *pacerConfig {
	return &pacerConfig{burst: hyperliquid.SubscribeBurst, window: hyperliquid.SubscribeBurstWindow,
		perMinute: hyperliquid.SentPerMinute}
}

func (hlProto) frames(items []string, unsub bool) []sendFrame {
	out := make([]sendFrame, 0, len(items))
	for _, it := range items {
		s, err := hyperliquid.ParseSubscription(it)
		if err != nil { // items are validated when planned
			continue
		}
		var b []byte
		if unsub {
			b = s.AppendUnsubscribe(nil)
		} else {
			b = s.AppendSubscribe(nil)
		}
		out = append(out, sendFrame{b, []string{it}})
	}
	return out
}

func (p hlProto) subscribeFrames(items []string) []sendFrame { return p.frames(items, false) }
func (p hlProto) addFrames(items []string) []sendFrame       { return p.frames(items, false) }
func (p hlProto) removeFrames(items []string) []sendFrame    { return p.frames(items, true) }

func (hlProto) watchKey(item string) (string, string, bool) {
	s, err := hyperliquid.ParseSubscription(item)
	if err != nil {
		return "", "", false
	}
	coin := s.Coin
	if s.Type == hyperliquid.SubAllMids {
		coin = s.Dex
	}
	// l2Book pushes every coin on a fixed clock even when unchanged; allMids
	// every few seconds. The other channels go quiet with the market.
	return s.Type, coin, s.Type == hyperliquid.SubL2Book || s.Type == hyperliquid.SubAllMids
}

var (
	hlChannelKey = []byte(`"channel"`)
	hlCoinKey    = []byte(`"coin"`)
	hlCandleKey  = []byte(`"s"`)
	hlDexKey     = []byte(`"dex"`)
	hlTimeKey    = []byte(`"time"`)
	hlSubKey     = []byte(`"subscription"`)
)

func (hlProto) scan(frame []byte, touch func(channel, instrument []byte)) (frameClass, int64) {
	i := bytes.Index(frame, hlChannelKey)
	if i < 0 {
		return classOther, 0
	}
	ch, _, ok := stringValue(frame[i+len(hlChannelKey):])
	if !ok {
		return classOther, 0
	}
	switch string(ch) {
	case "pong":
		return classPong, 0
	case "subscriptionResponse":
		return classAck, 0
	case "error":
		return classError, 0
	case "post":
		return classOther, 0
	}
	key := hlCoinKey
	switch string(ch) {
	case hyperliquid.SubCandle:
		key = hlCandleKey
	case hyperliquid.SubAllMids:
		key = hlDexKey
	}
	var coin []byte
	if j := bytes.Index(frame, key); j >= 0 {
		coin, _, _ = stringValue(frame[j+len(key):])
	}
	touch(ch, coin)
	var exNs int64
	if j := bytes.Index(frame, hlTimeKey); j >= 0 {
		if ms, ok := numberValue(frame[j+len(hlTimeKey):]); ok {
			exNs = ms * int64(time.Millisecond)
		}
	}
	return classData, exNs
}

func (hlProto) ackItem(frame []byte) (string, bool) {
	i := bytes.Index(frame, hlSubKey)
	if i < 0 {
		return "", false
	}
	var sub struct {
		Type     string `json:"type"`
		Coin     string `json:"coin"`
		NSigFigs *int   `json:"nSigFigs"`
		Mantissa *int   `json:"mantissa"`
		Fast     bool   `json:"fast"`
		Interval string `json:"interval"`
		Dex      string `json:"dex"`
	}
	dec := json.NewDecoder(bytes.NewReader(skipColon(frame[i+len(hlSubKey):])))
	if err := dec.Decode(&sub); err != nil {
		return "", false
	}
	s := hyperliquid.Subscription{Type: sub.Type, Coin: sub.Coin, Fast: sub.Fast, Interval: sub.Interval, Dex: sub.Dex}
	if sub.NSigFigs != nil {
		s.NSigFigs = *sub.NSigFigs
	}
	if sub.Mantissa != nil {
		s.Mantissa = *sub.Mantissa
	}
	return s.String(), true
}

// ---- light JSON scanning (no allocation) ----

func skipColon(b []byte) []byte {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	if i < len(b) && b[i] == ':' {
		i++
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return b[i:]
}

// stringValue reads `: "value"` after a key and returns the value (escapes
// kept as is: routing keys never hold any) and how many bytes it consumed.
func stringValue(b []byte) ([]byte, int, bool) {
	r := skipColon(b)
	if len(r) == 0 || r[0] != '"' {
		return nil, 0, false
	}
	end := bytes.IndexByte(r[1:], '"')
	if end < 0 {
		return nil, 0, false
	}
	return r[1 : 1+end], len(b) - len(r) + end + 2, true
}

// numberValue reads `: 123` or `: "123"` after a key.
func numberValue(b []byte) (int64, bool) {
	r := skipColon(b)
	if len(r) > 0 && r[0] == '"' {
		r = r[1:]
	}
	var v int64
	n := 0
	for n < len(r) && n < 18 && r[n] >= '0' && r[n] <= '9' {
		v = v*10 + int64(r[n]-'0')
		n++
	}
	return v, n > 0
}
