package hyperliquid

// The WebSocket API as the venue's server speaks it (venue.ServerProtocol),
// for replay serve and the test exchange: subscribe and unsubscribe get a
// subscriptionResponse echoing the subscription with the venue's defaults
// filled in (l2Book: "nSigFigs":null,"mantissa":null), a duplicate gets
// "Already subscribed: …", an unknown unsubscribe "Already unsubscribed: …",
// {"method":"ping"} gets {"channel":"pong"}, anything unreadable the venue's
// parse error. The socket stays open after errors, as on the venue.
//
// Frames are selected on (channel, coin), interval for candles and dex for
// allMids, read by RouteFrame; l2Book options (nSigFigs, mantissa, fast) are
// not compared.

import (
	"bytes"
	"encoding/json"

	"github.com/tapedeck/tapedeck/venue"
)

type server struct{}

func (driver) Server() venue.ServerProtocol { return server{} }

func (server) NewSession() venue.ServerSession {
	return &session{subs: map[string]struct{}{}}
}

type session struct {
	subs  map[string]struct{} // routeKey of each subscription
	key   []byte              // scratch for Wants
	reply venue.ServerReply
}

// serverSub is the part of a subscription object that selects frames.
type serverSub struct {
	Type     string          `json:"type"`
	Coin     string          `json:"coin"`
	Interval string          `json:"interval"`
	Dex      string          `json:"dex"`
	NSigFigs json.RawMessage `json:"nSigFigs"`
	Mantissa json.RawMessage `json:"mantissa"`
}

// routeKey appends the routing key of a (channel, coin, interval, dex): the
// channel is the subscription type (activeSpotAssetCtx frames answer an
// activeAssetCtx subscription), interval counts only for candles, dex only
// for allMids.
func routeKey(dst []byte, channel, coin, interval, dex []byte) []byte {
	if string(channel) == "activeSpotAssetCtx" {
		channel = []byte(subActiveAssetCtx)
	}
	dst = append(dst, channel...)
	dst = append(dst, 0)
	dst = append(dst, coin...)
	dst = append(dst, 0)
	switch string(channel) {
	case subCandle:
		dst = append(dst, interval...)
	case subAllMids:
		dst = append(dst, dex...)
	}
	return dst
}

const parseError = "Error parsing JSON into valid websocket request: "

func (p *session) answer(b []byte) venue.ServerReply {
	p.reply.Answers = append(p.reply.Answers, b)
	return p.reply
}

func (p *session) Handle(msg []byte, binary bool) venue.ServerReply {
	p.reply = venue.ServerReply{Answers: p.reply.Answers[:0]}
	var req struct {
		Method       string          `json:"method"`
		Subscription json.RawMessage `json:"subscription"`
	}
	if err := json.Unmarshal(msg, &req); err != nil || binary {
		return p.answer(errorFrame(parseError, msg))
	}
	switch req.Method {
	case "ping":
		return p.answer([]byte(pongText))
	case "subscribe", "unsubscribe":
	case "post":
		// Nothing here answers requests; say so in the venue's error
		// shape, which names the request so a client can fail it.
		return p.answer(errorFrame("tapedeck serves subscriptions only, not post requests: ", msg))
	default:
		return p.answer(errorFrame(parseError, msg))
	}
	var sub serverSub
	if err := json.Unmarshal(req.Subscription, &sub); err != nil || sub.Type == "" {
		return p.answer(errorFrame(parseError, msg))
	}
	key := string(routeKey(nil, []byte(sub.Type), []byte(sub.Coin), []byte(sub.Interval), []byte(sub.Dex)))
	var compact bytes.Buffer
	if json.Compact(&compact, req.Subscription) != nil {
		compact.Write(req.Subscription)
	}
	t := venue.Topic{Channel: sub.Type, Instrument: sub.Coin, Key: sub.Type + "@" + sub.Coin}
	_, have := p.subs[key]
	if req.Method == "subscribe" {
		if have {
			return p.answer(errorFrame("Already subscribed: ", compact.Bytes()))
		}
		p.subs[key] = struct{}{}
		p.reply.Added = append(p.reply.Added, t)
	} else {
		if !have {
			return p.answer(errorFrame("Already unsubscribed: ", compact.Bytes()))
		}
		delete(p.subs, key)
		p.reply.Removed = append(p.reply.Removed, t)
	}
	echo := compact.Bytes()
	if sub.Type == subL2Book && len(echo) > 0 && echo[len(echo)-1] == '}' {
		// The venue echoes the subscription with its defaults filled in.
		echo = echo[: len(echo)-1 : len(echo)-1]
		if sub.NSigFigs == nil {
			echo = append(echo, `,"nSigFigs":null`...)
		}
		if sub.Mantissa == nil {
			echo = append(echo, `,"mantissa":null`...)
		}
		echo = append(echo, '}')
	}
	ack := append([]byte(`{"channel":"subscriptionResponse","data":{"method":"`), req.Method...)
	ack = append(ack, `","subscription":`...)
	ack = append(ack, echo...)
	return p.answer(append(ack, "}}"...))
}

// errorFrame builds {"channel":"error","data":"<prefix><text>"}.
func errorFrame(prefix string, text []byte) []byte {
	data, _ := json.Marshal(prefix + string(text))
	return append(append([]byte(`{"channel":"error","data":`), data...), '}')
}

// Wants reports whether a frame's route is subscribed; answers (acks,
// pongs, post replies, errors) and frames that are not JSON envelopes never
// are.
func (p *session) Wants(frame []byte) bool {
	if len(p.subs) == 0 {
		return false
	}
	r, err := RouteFrame(frame)
	if err != nil {
		return false // non-JSON greetings and damaged frames are not data
	}
	switch string(r.Channel) {
	case "subscriptionResponse", "pong", "post", "error":
		return false
	}
	p.key = routeKey(p.key[:0], r.Channel, r.Coin, r.Interval, r.Dex)
	_, ok := p.subs[string(p.key)]
	return ok
}
