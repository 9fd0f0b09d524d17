package hyperliquid

// This file holds what a capture session needs to talk to the Hyperliquid
// WebSocket: the URLs, the subscription model and its frames, the heartbeat,
// the per-IP limits and the plan that spreads subscriptions over connections
// (PROTOCOLS.md §2). The decoder in this package turns received frames into
// book updates; nothing here decodes.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/venue/internal/jscan"
)

// Public endpoints. Tests and mirrors override them.
const (
	// wsEndpoint is the mainnet WebSocket URL.
	wsEndpoint = "wss://api.hyperliquid.xyz/ws"
	// infoEndpoint is the mainnet REST info URL (POST a JSON request).
	infoEndpoint = "https://api.hyperliquid.xyz/info"
)

// Per-IP limits and timings.
const (
	// maxConns is the most WebSocket connections per IP.
	maxConns = 10
	// maxSubscriptions is the most subscriptions per IP.
	maxSubscriptions = 1000
	// sentPerMinute is the budget of messages sent to the venue per minute
	// across all sockets; subscribes and pings spend from it.
	sentPerMinute = 2000
	// subscribeBurst messages at most are sent per subscribeBurstWindow.
	subscribeBurst       = 20
	subscribeBurstWindow = 100 * time.Millisecond
	// pingInterval is how often a client pings; the server closes a socket
	// that has sent nothing for 60 s, and a ping is answered with a pong.
	pingInterval = 30 * time.Second
	// pingText is the heartbeat frame; the answer is pongText.
	pingText = `{"method":"ping"}`
	pongText = `{"channel":"pong"}`
	// maxFrameBytes bounds one received frame; the largest real frames
	// (allDexsAssetCtxs) are about 116 KB.
	maxFrameBytes = 16 << 20
)

// The subscription types a capture can request.
const (
	subL2Book         = "l2Book"
	subBBO            = "bbo"
	subTrades         = "trades"
	subAllMids        = "allMids"
	subActiveAssetCtx = "activeAssetCtx"
	subCandle         = "candle"
)

// ErrSubscription reports a subscription the venue would reject (an unknown
// type, a missing coin, invalid nSigFigs/mantissa): on Hyperliquid several of
// these close the socket with 1006 and no message, so they are caught first.
var ErrSubscription = errors.New("hyperliquid: invalid subscription")

// subSpec is one Hyperliquid WebSocket subscription. Zero NSigFigs and
// Mantissa mean null (full precision); Interval is for candle, Dex for a
// builder dex's allMids.
type subSpec struct {
	Type     string
	Coin     string
	NSigFigs int
	Mantissa int
	Fast     bool
	Interval string
	Dex      string
}

var candleIntervals = []string{"1m", "3m", "5m", "15m", "30m", "1h", "2h", "4h", "8h", "12h", "1d", "3d", "1w", "1M"}

// Validate reports, wrapping ErrSubscription, what the venue would reject.
func (s subSpec) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w %s: %s", ErrSubscription, s, fmt.Sprintf(format, a...))
	}
	switch s.Type {
	case subL2Book, subBBO, subTrades, subActiveAssetCtx, subCandle:
		if s.Coin == "" {
			return bad("needs a coin")
		}
	case subAllMids:
		if s.Coin != "" {
			return bad("takes no coin")
		}
	default:
		return bad("unknown type %q (want l2Book, bbo, trades, allMids, activeAssetCtx or candle)", s.Type)
	}
	if s.Type != subL2Book && (s.NSigFigs != 0 || s.Mantissa != 0 || s.Fast) {
		return bad("nSigFigs, mantissa and fast apply to l2Book only")
	}
	if s.NSigFigs != 0 && (s.NSigFigs < 2 || s.NSigFigs > 5) {
		return bad("nSigFigs %d, want 2..5", s.NSigFigs)
	}
	if s.Mantissa != 0 {
		if s.NSigFigs != 5 {
			return bad("mantissa needs nSigFigs=5")
		}
		if s.Mantissa != 1 && s.Mantissa != 2 && s.Mantissa != 5 {
			return bad("mantissa %d, want 1, 2 or 5", s.Mantissa)
		}
	}
	if s.Type == subCandle {
		if !slices.Contains(candleIntervals, s.Interval) {
			return bad("candle interval %q, want one of %s", s.Interval, strings.Join(candleIntervals, " "))
		}
	} else if s.Interval != "" {
		return bad("interval applies to candle only")
	}
	if s.Dex != "" && s.Type != subAllMids {
		return bad("dex applies to allMids only")
	}
	return nil
}

// String returns the subscription in the form parseSubscription reads:
// TYPE[+OPTION…][@COIN], options fast, nSigFigs=N, mantissa=N, interval=I,
// dex=D. Examples: "l2Book+fast@BTC", "candle+interval=1m@ETH", "allMids".
func (s subSpec) String() string {
	b := []byte(s.Type)
	if s.NSigFigs != 0 {
		b = append(append(b, "+nSigFigs="...), strconv.Itoa(s.NSigFigs)...)
	}
	if s.Mantissa != 0 {
		b = append(append(b, "+mantissa="...), strconv.Itoa(s.Mantissa)...)
	}
	if s.Fast {
		b = append(b, "+fast"...)
	}
	if s.Interval != "" {
		b = append(append(b, "+interval="...), s.Interval...)
	}
	if s.Dex != "" {
		b = append(append(b, "+dex="...), s.Dex...)
	}
	if s.Coin != "" {
		b = append(append(b, '@'), s.Coin...)
	}
	return string(b)
}

// parseSubscription reads the form String writes. A coin may itself contain
// '@' ("@107") or ':' ("xyz:SP500"): everything after the first '@' is the
// coin. The result is validated.
func parseSubscription(spec string) (subSpec, error) {
	head, coin, _ := strings.Cut(spec, "@")
	s, err := parseChannel(head)
	if err != nil {
		return s, err
	}
	s.Coin = coin
	return s, s.Validate()
}

func parseChannel(spec string) (subSpec, error) {
	parts := strings.Split(spec, "+")
	s := subSpec{Type: parts[0]}
	for _, opt := range parts[1:] {
		k, v, hasV := strings.Cut(opt, "=")
		var err error
		switch {
		case k == "fast" && !hasV:
			s.Fast = true
		case k == "nSigFigs" || k == "nsig":
			s.NSigFigs, err = strconv.Atoi(v)
		case k == "mantissa":
			s.Mantissa, err = strconv.Atoi(v)
		case k == "interval":
			s.Interval = v
		case k == "dex":
			s.Dex = v
		default:
			return s, fmt.Errorf("%w %q: unknown option %q (want fast, nSigFigs=N, mantissa=N, interval=I, dex=D)", ErrSubscription, spec, opt)
		}
		if err != nil {
			return s, fmt.Errorf("%w %q: option %q: not a number", ErrSubscription, spec, opt)
		}
	}
	return s, nil
}

// expandChannels crosses channel specs (a subSpec without coin, e.g.
// "l2Book+fast", "bbo", "candle+interval=1m", "allMids") with coins: every
// coin-taking channel once per coin, allMids once. Duplicates are dropped;
// order is channels-major. Every result is validated.
func expandChannels(channels, coins []string) ([]subSpec, error) {
	var out []subSpec
	seen := map[subSpec]bool{}
	add := func(s subSpec) error {
		if err := s.Validate(); err != nil {
			return err
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
		return nil
	}
	for _, ch := range channels {
		s, err := parseChannel(ch)
		if err != nil {
			return nil, err
		}
		if s.Type == subAllMids {
			if err := add(s); err != nil {
				return nil, err
			}
			continue
		}
		if len(coins) == 0 {
			return nil, fmt.Errorf("%w %s: needs at least one coin", ErrSubscription, ch)
		}
		for _, c := range coins {
			s.Coin = c
			if err := add(s); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// AppendSubscribe appends {"method":"subscribe","subscription":{…}} to dst.
func (s subSpec) AppendSubscribe(dst []byte) []byte {
	return s.appendMethod(dst, "subscribe")
}

// AppendUnsubscribe appends {"method":"unsubscribe","subscription":{…}},
// with the identical subscription object, to dst.
func (s subSpec) AppendUnsubscribe(dst []byte) []byte {
	return s.appendMethod(dst, "unsubscribe")
}

func (s subSpec) appendMethod(dst []byte, method string) []byte {
	dst = append(dst, `{"method":"`...)
	dst = append(dst, method...)
	dst = append(dst, `","subscription":{"type":`...)
	dst = jscan.AppendString(dst, s.Type)
	if s.Coin != "" {
		dst = jscan.AppendString(append(dst, `,"coin":`...), s.Coin)
	}
	if s.NSigFigs != 0 {
		dst = strconv.AppendInt(append(dst, `,"nSigFigs":`...), int64(s.NSigFigs), 10)
	}
	if s.Mantissa != 0 {
		dst = strconv.AppendInt(append(dst, `,"mantissa":`...), int64(s.Mantissa), 10)
	}
	if s.Fast {
		dst = append(dst, `,"fast":true`...)
	}
	if s.Interval != "" {
		dst = jscan.AppendString(append(dst, `,"interval":`...), s.Interval)
	}
	if s.Dex != "" {
		dst = jscan.AppendString(append(dst, `,"dex":`...), s.Dex)
	}
	return append(dst, "}}"...)
}

// SocketKey returns what a data frame of s is told apart by on one socket:
// the channel and the coin (plus the candle interval and the dex, which the
// data carries). Two subscriptions with one SocketKey (a default and a fast
// l2Book of one coin, or two nSigFigs of it) cannot share a socket.
func (s subSpec) SocketKey() string {
	return s.Type + "\x00" + s.Coin + "\x00" + s.Interval + "\x00" + s.Dex
}

// planConns spreads subs over conns connections (0 means as few as
// possible), never putting two subscriptions with the same channel and coin
// on one socket, balancing the count per connection. The plan is
// deterministic for a given input. It fails if more than maxSubscriptions
// subscriptions or more than maxConns connections would be needed, or a
// subscription is invalid. The result owns its slices.
func planConns(subs []subSpec, conns int) ([][]subSpec, error) {
	if conns < 0 || conns > maxConns {
		return nil, fmt.Errorf("hyperliquid: plan connections: %d connections, want 0..%d", conns, maxConns)
	}
	if len(subs) > maxSubscriptions {
		return nil, fmt.Errorf("hyperliquid: plan connections: %d subscriptions, the venue allows %d per IP", len(subs), maxSubscriptions)
	}
	group := map[string]int{}
	seen := map[subSpec]bool{}
	uniq := make([]subSpec, 0, len(subs))
	need := 1
	for _, s := range subs {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("hyperliquid: plan connections: %w", err)
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		uniq = append(uniq, s)
		group[s.SocketKey()]++
		need = max(need, group[s.SocketKey()])
	}
	if need > maxConns {
		return nil, fmt.Errorf("hyperliquid: plan connections: %d variants of one channel and coin need %d sockets, the venue allows %d", need, need, maxConns)
	}
	if conns == 0 {
		conns = need
	}
	if conns < need {
		return nil, fmt.Errorf("hyperliquid: plan connections: %d variants of one channel and coin cannot share a socket and need %d connections, %d allowed", need, need, conns)
	}
	if len(uniq) == 0 {
		return nil, nil
	}
	conns = min(conns, len(uniq))
	plan := make([][]subSpec, conns)
	keys := make([]map[string]bool, conns)
	for i := range keys {
		keys[i] = map[string]bool{}
	}
	for _, s := range uniq {
		best := -1
		for i := range plan {
			if keys[i][s.SocketKey()] {
				continue
			}
			if best < 0 || len(plan[i]) < len(plan[best]) {
				best = i
			}
		}
		// best >= 0: conns >= need guarantees a free socket for every variant.
		plan[best] = append(plan[best], s)
		keys[best][s.SocketKey()] = true
	}
	return plan, nil
}
