package polymarket

// The market channel as the venue's server speaks it (venue.ServerProtocol),
// for replay serve and the test exchange: PING gets PONG, a subscribe adds
// assets (the initial book dump is data, the server's caller sends it), an
// unsubscribe removes them, a frame over MaxSubscribeIDs ids closes the
// socket, anything else is ignored as the venue ignores it. There are no
// acknowledgements.

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tapedeck/tapedeck/venue"
)

type server struct{}

func (driver) Server() venue.ServerProtocol { return server{} }

func (server) NewSession() venue.ServerSession {
	return &session{assets: map[string]struct{}{}}
}

type session struct {
	assets map[string]struct{}
	reply  venue.ServerReply
}

var pongAnswer = []byte(pongText)

func (p *session) Handle(msg []byte, _ bool) venue.ServerReply {
	p.reply = venue.ServerReply{Answers: p.reply.Answers[:0]}
	t := bytes.TrimSpace(msg)
	if string(t) == PingText {
		p.reply.Answers = append(p.reply.Answers, pongAnswer)
		return p.reply
	}
	var req struct {
		AssetsIDs []string `json:"assets_ids"`
		Type      string   `json:"type"`
		Operation string   `json:"operation"`
	}
	// The venue ignores what it does not understand; so do we.
	if json.Unmarshal(t, &req) != nil {
		return p.reply
	}
	if len(req.AssetsIDs) > MaxSubscribeIDs {
		return venue.ServerReply{Close: true} // the real server closes on oversized frames
	}
	if strings.EqualFold(req.Operation, "unsubscribe") {
		for _, id := range req.AssetsIDs {
			if _, ok := p.assets[id]; ok {
				delete(p.assets, id)
				p.reply.Removed = append(p.reply.Removed, topic(id))
			}
		}
		return p.reply
	}
	if req.Operation != "" && !strings.EqualFold(req.Operation, "subscribe") {
		return p.reply
	}
	if req.Operation == "" && !strings.EqualFold(req.Type, marketChannel) {
		return p.reply
	}
	for _, id := range req.AssetsIDs {
		if _, ok := p.assets[id]; !ok {
			p.assets[id] = struct{}{}
			p.reply.Added = append(p.reply.Added, topic(id))
		}
	}
	return p.reply
}

func topic(id string) venue.Topic {
	return venue.Topic{Channel: marketChannel, Instrument: id, Key: id}
}

// Wants: a JSON frame naming any subscribed asset is sent whole (an initial
// dump array, a price_change touching both tokens of a market), one naming
// no asset goes to every client with a subscription; text (PONG) never.
func (p *session) Wants(frame []byte) bool {
	if len(p.assets) == 0 {
		return false
	}
	t := bytes.TrimLeft(frame, " \t\r\n")
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return false // PONG and other text answers to the recorder
	}
	named, match := false, false
	assetIDs(t, func(id []byte) bool {
		named = true
		_, match = p.assets[string(id)]
		return !match
	})
	return match || !named
}

// assetIDs calls fn with every asset id a market-channel frame names: the
// values of "asset_id" keys and the elements of "assets_ids" arrays,
// wherever they are (book, price_change entries, trades, new_market). It
// stops when fn returns false. It is a byte scan, not a parse: ids are digit
// strings and these keys occur nowhere else in the channel's schema. It
// does not allocate.
func assetIDs(frame []byte, fn func(id []byte) bool) {
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
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}
