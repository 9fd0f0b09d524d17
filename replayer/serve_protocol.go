package replayer

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
)

// serveProto is one venue's side of a served connection: what the client's
// frames mean and which recorded frames it wants. A connection calls it under
// its lock, so implementations need no locking of their own.
type serveProto interface {
	// client handles one client frame, queueing any answer through reply,
	// and reports whether it added a subscription.
	client(typ int, msg []byte, reply func(typ int, b []byte)) (subscribed bool)
	// wants reports whether a recorded frame goes to this client.
	wants(frame []byte) bool
}

// hlProto speaks the Hyperliquid WebSocket API.
type hlProto struct {
	subs map[string]struct{} // hlKey of each subscription
	key  []byte              // scratch for wants
}

func newHLProto() *hlProto { return &hlProto{subs: map[string]struct{}{}} }

// hlSubscription is the part of a subscription object that selects frames.
type hlSubscription struct {
	Type     string `json:"type"`
	Coin     string `json:"coin"`
	Interval string `json:"interval"`
	Dex      string `json:"dex"`
}

// hlKey appends the routing key of a (channel, coin, interval, dex): the
// channel is the subscription type (activeSpotAssetCtx frames answer an
// activeAssetCtx subscription), interval counts only for candles, dex only
// for allMids.
func hlKey(dst []byte, channel, coin, interval, dex []byte) []byte {
	if string(channel) == "activeSpotAssetCtx" {
		channel = []byte("activeAssetCtx")
	}
	dst = append(dst, channel...)
	dst = append(dst, 0)
	dst = append(dst, coin...)
	dst = append(dst, 0)
	switch string(channel) {
	case "candle":
		dst = append(dst, interval...)
	case "allMids":
		dst = append(dst, dex...)
	}
	return dst
}

func (p *hlProto) client(typ int, msg []byte, reply func(int, []byte)) bool {
	var req struct {
		Method       string          `json:"method"`
		Subscription json.RawMessage `json:"subscription"`
	}
	if err := json.Unmarshal(msg, &req); err != nil || typ != websocket.TextMessage {
		reply(websocket.TextMessage, hlError("Error parsing JSON into valid websocket request: ", msg))
		return false
	}
	switch req.Method {
	case "ping":
		reply(websocket.TextMessage, []byte(`{"channel":"pong"}`))
		return false
	case "subscribe", "unsubscribe":
	case "post":
		// The recording holds no answers to requests; say so in the venue's
		// error shape, which names the request so a client can fail it.
		reply(websocket.TextMessage, hlError("tapedeck replay serves subscriptions only, not post requests: ", msg))
		return false
	default:
		reply(websocket.TextMessage, hlError("Error parsing JSON into valid websocket request: ", msg))
		return false
	}
	var sub hlSubscription
	if err := json.Unmarshal(req.Subscription, &sub); err != nil || sub.Type == "" {
		reply(websocket.TextMessage, hlError("Error parsing JSON into valid websocket request: ", msg))
		return false
	}
	key := string(hlKey(nil, []byte(sub.Type), []byte(sub.Coin), []byte(sub.Interval), []byte(sub.Dex)))
	var compact bytes.Buffer
	if json.Compact(&compact, req.Subscription) != nil {
		compact.Write(req.Subscription)
	}
	_, have := p.subs[key]
	if req.Method == "subscribe" {
		if have {
			reply(websocket.TextMessage, hlError("Already subscribed: ", compact.Bytes()))
			return false
		}
		p.subs[key] = struct{}{}
	} else {
		if !have {
			reply(websocket.TextMessage, hlError("Already unsubscribed: ", compact.Bytes()))
			return false
		}
		delete(p.subs, key)
	}
	// The ack echoes the subscription as the client sent it; SDKs match it
	// to their request by subset, as the venue fills in defaults.
	ack := append([]byte(`{"channel":"subscriptionResponse","data":{"method":"`), req.Method...)
	ack = append(ack, `","subscription":`...)
	ack = append(ack, compact.Bytes()...)
	ack = append(ack, "}}"...)
	reply(websocket.TextMessage, ack)
	return req.Method == "subscribe"
}

// hlError builds {"channel":"error","data":"<prefix><text>"}.
func hlError(prefix string, text []byte) []byte {
	data, _ := json.Marshal(prefix + string(text))
	return append(append([]byte(`{"channel":"error","data":`), data...), '}')
}

func (p *hlProto) wants(frame []byte) bool {
	if len(p.subs) == 0 {
		return false
	}
	r, err := hyperliquid.RouteFrame(frame)
	if err != nil {
		return false // non-JSON greetings and damaged frames are not data
	}
	switch string(r.Channel) {
	case "subscriptionResponse", "pong", "post", "error":
		return false // answers to the recorder's own requests
	}
	p.key = hlKey(p.key[:0], r.Channel, r.Coin, r.Interval, r.Dex)
	_, ok := p.subs[string(p.key)]
	return ok
}

// pmProto speaks the Polymarket CLOB market channel.
type pmProto struct {
	assets map[string]struct{}
}

func newPMProto() *pmProto { return &pmProto{assets: map[string]struct{}{}} }

func (p *pmProto) client(typ int, msg []byte, reply func(int, []byte)) bool {
	t := bytes.TrimSpace(msg)
	if string(t) == "PING" {
		reply(websocket.TextMessage, []byte("PONG"))
		return false
	}
	var req struct {
		AssetsIDs []string `json:"assets_ids"`
		Type      string   `json:"type"`
		Operation string   `json:"operation"`
	}
	// The venue ignores what it does not understand; so do we.
	if json.Unmarshal(t, &req) != nil {
		return false
	}
	if strings.EqualFold(req.Operation, "unsubscribe") {
		for _, id := range req.AssetsIDs {
			delete(p.assets, id)
		}
		return false
	}
	if req.Operation != "" && !strings.EqualFold(req.Operation, "subscribe") {
		return false
	}
	if req.Operation == "" && !strings.EqualFold(req.Type, "market") {
		return false
	}
	added := false
	for _, id := range req.AssetsIDs {
		if _, ok := p.assets[id]; !ok {
			p.assets[id] = struct{}{}
			added = true
		}
	}
	return added
}

func (p *pmProto) wants(frame []byte) bool {
	if len(p.assets) == 0 {
		return false
	}
	t := bytes.TrimLeft(frame, " \t\r\n")
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return false // PONG and other text answers to the recorder
	}
	named, match := false, false
	pmAssetIDs(t, func(id []byte) bool {
		named = true
		_, match = p.assets[string(id)]
		return !match
	})
	return match || !named
}

// pmAssetIDs calls fn with every asset id a Polymarket frame names: the
// values of "asset_id" keys and the elements of "assets_ids" arrays, wherever
// they are (book, price_change entries, trades, new_market). It stops when fn
// returns false. It is a byte scan, not a parse: ids are digit strings and
// these keys occur nowhere else in the channel's schema.
func pmAssetIDs(frame []byte, fn func(id []byte) bool) {
	for i := 0; i < len(frame); {
		j := bytes.Index(frame[i:], []byte(`"asset`))
		if j < 0 {
			return
		}
		i += j + len(`"asset`)
		var list bool
		switch {
		case bytes.HasPrefix(frame[i:], []byte(`_id"`)):
			i += len(`_id"`)
		case bytes.HasPrefix(frame[i:], []byte(`s_ids"`)):
			i += len(`s_ids"`)
			list = true
		default:
			continue
		}
		i = skipSpace(frame, i)
		if i >= len(frame) || frame[i] != ':' {
			continue
		}
		i = skipSpace(frame, i+1)
		if list {
			if i >= len(frame) || frame[i] != '[' {
				continue
			}
			i++
		}
		for {
			i = skipSpace(frame, i)
			if i >= len(frame) || frame[i] != '"' {
				break
			}
			end := bytes.IndexByte(frame[i+1:], '"')
			if end < 0 {
				return
			}
			if !fn(frame[i+1 : i+1+end]) {
				return
			}
			i += end + 2
			if !list {
				break
			}
			i = skipSpace(frame, i)
			if i >= len(frame) || frame[i] != ',' {
				break
			}
			i++
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
