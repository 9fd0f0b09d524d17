package polymarket

// The market channel as a capture speaks it (venue.ClientProtocol): plans,
// subscribe frames, discovery through Gamma, the classification of received
// frames, market lifecycle events and the REST book summaries stored before
// every connect. The frames and limits themselves are in session.go.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/internal/jscan"
)

// marketChannel is the one channel a capture records.
const marketChannel = "market"

// maxGammaPages bounds the walk of the Gamma market list.
const maxGammaPages = 400

type client struct{}

// The capabilities Polymarket's client protocol has beyond the core.
var (
	_ venue.Discoverer     = client{}
	_ venue.ListingWatcher = client{}
	_ venue.BookFetcher    = client{}
	_ venue.Mirrorer       = client{}
)

func (driver) Client() venue.ClientProtocol { return client{} }

func (client) Facts() venue.ClientFacts {
	return venue.ClientFacts{
		PingInterval:     pingInterval,
		PingFrame:        []byte(PingText),
		MaxFrameBytes:    maxFrameBytes,
		MaxConnItems:     maxConnAssets,
		DefaultConnItems: DefaultConnAssets,
		ShardByItems:     true,
		UncheckedNote:    "token ids not checked against the market list (capture plan --check asks the venue)",
		BooksOffNote:     "REST book summaries off: WebSocket books lack min_order_size and neg_risk, so a replay cannot check book hashes",
	}
}

func (client) Channels(specs []string) ([]string, error) {
	for _, c := range specs {
		if c != marketChannel {
			return nil, fmt.Errorf("channel %q: Polymarket records the market channel only", c)
		}
	}
	return []string{marketChannel}, nil
}

func (client) NeedsDiscovery(instruments []string) bool {
	for _, id := range instruments {
		if !isTokenID(id) {
			return true
		}
	}
	return false
}

// Discover resolves slugs and condition ids to token ids through Gamma at
// base, and with all lists every active market's tokens.
func (client) Discover(ctx context.Context, fetch venue.Fetch, base string, instruments []string, all bool) ([]string, error) {
	base = strings.TrimRight(base, "/")
	var ids []string
	get := func(path string) ([]gammaMarket, error) {
		body, err := fetch(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return nil, err
		}
		ms, err := parseGammaMarkets(body)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", base+path, err)
		}
		return ms, nil
	}
	for _, inst := range instruments {
		if isTokenID(inst) {
			ids = append(ids, inst)
			continue
		}
		path, what := gammaSlugPath(inst), "slug"
		if isConditionID(inst) {
			path, what = gammaConditionPath(inst), "condition id"
		}
		ms, err := get(path)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, m := range ms {
			if m.Slug == inst || strings.EqualFold(m.ConditionID, inst) {
				ids = append(ids, m.TokenIDs...)
				n += len(m.TokenIDs)
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("no market with %s %q at %s", what, inst, base)
		}
	}
	if all {
		for page := 0; ; page++ {
			if page == maxGammaPages {
				return nil, fmt.Errorf("market list longer than %d pages", maxGammaPages)
			}
			ms, err := get(gammaMarketsPath(page*gammaPageLimit, gammaPageLimit))
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				if m.Active && !m.Closed {
					ids = append(ids, m.TokenIDs...)
				}
			}
			if len(ms) < gammaPageLimit {
				break
			}
		}
	}
	return venue.Dedupe(ids), nil
}

func (client) Plan(req venue.PlanRequest) ([]venue.ConnPlan, error) {
	cps, err := planConns(req.Instruments, req.ConnItems)
	if err != nil {
		return nil, err
	}
	out := make([]venue.ConnPlan, len(cps))
	for i, c := range cps {
		out[i] = venue.ConnPlan{Instruments: c.Assets, Items: c.Assets}
	}
	return out, nil
}

func chunks(items []string, n int) [][]string {
	var out [][]string
	for i := 0; i < len(items); i += n {
		out = append(out, items[i:min(i+n, len(items))])
	}
	return out
}

func (client) SubscribeFrames(items []string) []venue.SendFrame {
	var out []venue.SendFrame
	for i, c := range chunks(items, MaxSubscribeIDs) {
		if i == 0 {
			out = append(out, venue.SendFrame{Data: appendSubscribe(nil, c), Items: c})
		} else {
			out = append(out, venue.SendFrame{Data: AppendDynamicSubscribe(nil, c), Items: c})
		}
	}
	return out
}

func (client) AddFrames(items []string) []venue.SendFrame {
	var out []venue.SendFrame
	for _, c := range chunks(items, MaxSubscribeIDs) {
		out = append(out, venue.SendFrame{Data: AppendDynamicSubscribe(nil, c), Items: c})
	}
	return out
}

func (client) RemoveFrames(items []string) []venue.SendFrame {
	var out []venue.SendFrame
	for _, c := range chunks(items, MaxSubscribeIDs) {
		out = append(out, venue.SendFrame{Data: AppendUnsubscribe(nil, c), Items: c})
	}
	return out
}

// WatchKey: every frame of the market channel is routed by asset id alone,
// and a quiet market sends nothing, so no item is steady.

var (
	scanAssetKey = []byte(`"asset_id"`)
	scanTSKey    = []byte(`"timestamp"`)
	scanPong     = []byte(pongText)
)

// Scan calls touch for every "asset_id" value of a JSON frame; PONG is the
// heartbeat answer, other text and JSON naming no asset are FrameOther.
func (client) Scan(frame []byte, touch func(channel, instrument []byte)) (venue.FrameClass, int64) {
	t := bytes.TrimSpace(frame)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		if bytes.Equal(t, scanPong) {
			return venue.FramePong, 0
		}
		return venue.FrameOther, 0
	}
	found := false
	for rest := t; ; {
		i := bytes.Index(rest, scanAssetKey)
		if i < 0 {
			break
		}
		rest = rest[i+len(scanAssetKey):]
		if v, n, ok := jscan.StringAfter(rest); ok {
			touch(nil, v)
			found = true
			rest = rest[n:]
		}
	}
	var exNs int64
	if i := bytes.Index(t, scanTSKey); i >= 0 {
		if ms, ok := jscan.IntAfter(t[i+len(scanTSKey):]); ok {
			exNs = ms * int64(time.Millisecond)
		}
	}
	if !found {
		return venue.FrameOther, exNs
	}
	return venue.FrameData, exNs
}

// Listing returns the assets of new_market (added) and market_resolved
// (removed) events, nil without allocating for every other frame.
func (client) Listing(frame []byte) (added, removed []string, err error) {
	ls, err := parseMarketLifecycle(frame)
	for _, l := range ls {
		if l.Resolved {
			removed = append(removed, l.AssetIDs...)
		} else {
			added = append(added, l.AssetIDs...)
		}
	}
	return added, removed, err
}

// BookRequests are the POST /books requests, BooksBatchLimit tokens each,
// whose summaries carry the hash fields WebSocket books lack.
func (client) BookRequests(base string, items []string) []venue.Request {
	if base == "" {
		return nil
	}
	u := strings.TrimRight(base, "/") + BooksPath
	var out []venue.Request
	for _, ids := range chunks(items, BooksBatchLimit) {
		out = append(out, venue.Request{Method: http.MethodPost, URL: u, Body: booksRequest(ids), Items: ids})
	}
	return out
}

func (client) BookResponse(req venue.Request, body []byte) ([]string, error) {
	sums, err := ParseBookSummaries(body)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(sums))
	for _, s := range sums {
		have[s.AssetID] = true
	}
	var missing []string
	for _, id := range req.Items {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// Mirror: Gamma discovery and the CLOB book summaries both at the root.
func (client) Mirror(origin, _ string) venue.Endpoints {
	return venue.Endpoints{Discovery: origin, Books: origin}
}
