package hyperliquid

// The WebSocket API as a capture speaks it (venue.ClientProtocol): plans over
// up to maxConns sockets, subscribe frames, discovery through meta and
// spotMeta, acknowledgements and the classification of received frames. The
// subscription model, frames and limits themselves are in session.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/internal/jscan"
)

// defaultChannels are recorded when a capture names none.
var defaultChannels = []string{subL2Book, subTrades}

type client struct{}

// The capabilities Hyperliquid's client protocol has beyond the core.
var (
	_ venue.Acker        = client{}
	_ venue.Discoverer   = client{}
	_ venue.Mirrorer     = client{}
	_ venue.ChannelItems = client{}
)

func (driver) Client() venue.ClientProtocol { return client{} }

func (client) Facts() venue.ClientFacts {
	return venue.ClientFacts{
		PingInterval:   pingInterval,
		PingFrame:      []byte(pingText),
		MaxFrameBytes:  maxFrameBytes,
		Pacing:         venue.Pacing{Burst: subscribeBurst, Window: subscribeBurstWindow, PerMinute: sentPerMinute},
		MaxConns:       maxConns,
		MaxConnItems:   maxSubscriptions,
		SteadyFeeds:    true,
		DiscoverForRun: true,
		UncheckedNote:  "coins not checked against meta/spotMeta: an unknown coin makes the venue close the socket with 1006 (capture plan --check asks the venue)",
	}
}

func (client) Channels(specs []string) ([]string, error) {
	if len(specs) == 0 {
		return slices.Clone(defaultChannels), nil
	}
	if _, err := expandChannels(specs, []string{"BTC"}); err != nil {
		return nil, fmt.Errorf("channels: %w", err)
	}
	return slices.Clone(specs), nil
}

// NeedsDiscovery is false: coins are subscribed by name. A run still reads
// meta and spotMeta first (ClientFacts.DiscoverForRun).
func (client) NeedsDiscovery([]string) bool { return false }

// Discover checks coins against meta and spotMeta at base (the info URL),
// and with all takes every listed coin.
func (client) Discover(ctx context.Context, fetch venue.Fetch, base string, instruments []string, all bool) ([]string, error) {
	listed := map[string]bool{}
	var names []string
	for _, q := range []struct {
		req   string
		parse func([]byte) ([]metaAsset, error)
	}{{metaRequest, parseMeta}, {spotMetaRequest, parseSpotMeta}} {
		body, err := fetch(ctx, http.MethodPost, base, []byte(q.req))
		if err != nil {
			return nil, err
		}
		as, err := q.parse(body)
		if err != nil {
			return nil, fmt.Errorf("POST %s %s: %w", base, q.req, err)
		}
		for _, a := range as {
			listed[a.Name] = true
			if !a.Delisted {
				names = append(names, a.Name)
			}
		}
	}
	var coins, unknown []string
	for _, c := range instruments {
		if listed[c] {
			coins = append(coins, c)
			continue
		}
		hint := ""
		for name := range listed {
			if strings.EqualFold(name, c) {
				hint = " (did you mean " + name + "?)"
			}
		}
		unknown = append(unknown, c+hint)
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("coins not in meta/spotMeta (the venue would close the socket with 1006): %s",
			strings.Join(unknown, ", "))
	}
	if all {
		coins = append(coins, names...)
	}
	return venue.Dedupe(coins), nil
}

func (client) Plan(req venue.PlanRequest) ([]venue.ConnPlan, error) {
	subs, err := expandChannels(req.Channels, req.Instruments)
	if err != nil {
		return nil, err
	}
	conns, err := planConns(subs, req.Conns)
	if err != nil {
		return nil, err
	}
	out := make([]venue.ConnPlan, len(conns))
	for i, c := range conns {
		seen := map[string]bool{}
		for _, s := range c {
			out[i].Items = append(out[i].Items, s.String())
			if s.Coin != "" && !seen[s.Coin] {
				seen[s.Coin] = true
				out[i].Instruments = append(out[i].Instruments, s.Coin)
			}
		}
	}
	return out, nil
}

func (client) Items(channels, instruments []string) ([]string, error) {
	if len(instruments) == 0 {
		return nil, nil
	}
	subs, err := expandChannels(channels, instruments)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.String()
	}
	return out, nil
}

// Conflicts reports whether item has the SocketKey of one of items.
func (client) Conflicts(items []string, item string) bool {
	s, err := parseSubscription(item)
	if err != nil {
		return false
	}
	for _, x := range items {
		if o, err := parseSubscription(x); err == nil && o.SocketKey() == s.SocketKey() {
			return true
		}
	}
	return false
}

func (client) Subscriptions(_, items []string) []string { return items }

func frames(items []string, unsub bool) []venue.SendFrame {
	out := make([]venue.SendFrame, 0, len(items))
	for _, it := range items {
		s, err := parseSubscription(it)
		if err != nil { // items are validated when planned
			continue
		}
		var b []byte
		if unsub {
			b = s.AppendUnsubscribe(nil)
		} else {
			b = s.AppendSubscribe(nil)
		}
		out = append(out, venue.SendFrame{Data: b, Items: []string{it}})
	}
	return out
}

func (client) SubscribeFrames(items []string) []venue.SendFrame { return frames(items, false) }
func (client) AddFrames(items []string) []venue.SendFrame       { return frames(items, false) }
func (client) RemoveFrames(items []string) []venue.SendFrame    { return frames(items, true) }

func (client) WatchKey(item string) (string, string, bool) {
	s, err := parseSubscription(item)
	if err != nil {
		return "", "", false
	}
	coin := s.Coin
	if s.Type == subAllMids {
		coin = s.Dex
	}
	// l2Book pushes every coin on a fixed clock even when unchanged; allMids
	// every few seconds. The other channels go quiet with the market.
	return s.Type, coin, s.Type == subL2Book || s.Type == subAllMids
}

var (
	scanChannelKey = []byte(`"channel"`)
	scanCoinKey    = []byte(`"coin"`)
	scanCandleKey  = []byte(`"s"`)
	scanDexKey     = []byte(`"dex"`)
	scanTimeKey    = []byte(`"time"`)
	scanSubKey     = []byte(`"subscription"`)
)

// Scan classifies a frame by its channel: pong, subscriptionResponse (an
// ack), error and post are answers; anything else is data for its coin
// (candle: "s", allMids: "dex").
func (client) Scan(frame []byte, touch func(channel, instrument []byte)) (venue.FrameClass, int64) {
	i := bytes.Index(frame, scanChannelKey)
	if i < 0 {
		return venue.FrameOther, 0
	}
	ch, _, ok := jscan.StringAfter(frame[i+len(scanChannelKey):])
	if !ok {
		return venue.FrameOther, 0
	}
	switch string(ch) {
	case "pong":
		return venue.FramePong, 0
	case "subscriptionResponse":
		return venue.FrameAck, 0
	case "error":
		return venue.FrameError, 0
	case "post":
		return venue.FrameOther, 0
	}
	key := scanCoinKey
	switch string(ch) {
	case subCandle:
		key = scanCandleKey
	case subAllMids:
		key = scanDexKey
	}
	var coin []byte
	if j := bytes.Index(frame, key); j >= 0 {
		coin, _, _ = jscan.StringAfter(frame[j+len(key):])
	}
	touch(ch, coin)
	var exNs int64
	if j := bytes.Index(frame, scanTimeKey); j >= 0 {
		if ms, ok := jscan.IntAfter(frame[j+len(scanTimeKey):]); ok {
			exNs = ms * int64(time.Millisecond)
		}
	}
	return venue.FrameData, exNs
}

// AckItem returns the item (subSpec.String) a subscriptionResponse
// acknowledges.
func (client) AckItem(frame []byte) (string, bool) {
	i := bytes.Index(frame, scanSubKey)
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
	dec := json.NewDecoder(bytes.NewReader(jscan.ValueAfter(frame[i+len(scanSubKey):])))
	if err := dec.Decode(&sub); err != nil {
		return "", false
	}
	s := subSpec{Type: sub.Type, Coin: sub.Coin, Fast: sub.Fast, Interval: sub.Interval, Dex: sub.Dex}
	if sub.NSigFigs != nil {
		s.NSigFigs = *sub.NSigFigs
	}
	if sub.Mantissa != nil {
		s.Mantissa = *sub.Mantissa
	}
	return s.String(), true
}

// Listing is nil: Hyperliquid announces no listing changes in band (a
// capture of all markets re-reads meta periodically).

// Mirror: info at /info beside the WebSocket's /ws.
func (client) Mirror(origin, wsPath string) venue.Endpoints {
	return venue.Endpoints{Discovery: origin + strings.TrimSuffix(strings.TrimRight(wsPath, "/"), "/ws") + "/info"}
}
