package recorder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// maxRESTBody bounds one discovery response (a Gamma page of 500 markets is
// a few MB).
const maxRESTBody = 64 << 20

// maxGammaPages bounds the walk of the Gamma market list.
const maxGammaPages = 400

// RESTResponse is a REST response discovery relied on. Run stores each one
// in the dataset (a KindNote naming the request, then a KindRESTResponse
// with Body) so a replay needs nothing from the network.
type RESTResponse struct {
	Method  string
	URL     string
	Request []byte // the POST body, nil for GET
	Status  int
	Body    []byte
}

// ErrDiscovery reports a failed discovery: an unreachable endpoint, an
// unexpected response, or an instrument the venue does not list.
var ErrDiscovery = errors.New("recorder: discovery")

// Discover asks the venue's REST endpoint what to record: Polymarket slugs
// and condition ids are resolved to token ids and --all-markets lists every
// active market; Hyperliquid's meta and spotMeta are fetched, coins are
// checked against them (an unknown coin would close the socket with 1006)
// and --all-markets takes every listed coin. The responses are kept for Run
// to store. Discover may be called again to refresh.
func (r *Recorder) Discover(ctx context.Context) error {
	var (
		insts []string
		rest  []RESTResponse
		meta  map[string]hyperliquid.MetaAsset
		err   error
	)
	switch r.spec.Venue {
	case venue.Polymarket:
		insts, rest, err = r.discoverPolymarket(ctx)
	case venue.Hyperliquid:
		insts, meta, rest, err = r.discoverHyperliquid(ctx)
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.discovered = true
	r.instruments = insts
	r.meta = meta
	r.rest = rest
	r.mu.Unlock()
	return nil
}

// fetch does one REST request; its errors wrap sentinel (ErrDiscovery,
// ErrRESTBooks). A non-200 answer is an error that still returns the body.
func (r *Recorder) fetch(ctx context.Context, sentinel error, method, url string, body []byte) (RESTResponse, error) {
	rr := RESTResponse{Method: method, URL: url, Request: body}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return rr, fmt.Errorf("%w: %s %s: %w", sentinel, method, url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.o.httpClient.Do(req)
	if err != nil {
		return rr, fmt.Errorf("%w: %s %s: %w", sentinel, method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRESTBody+1))
	if err != nil {
		return rr, fmt.Errorf("%w: %s %s: read body: %w", sentinel, method, url, err)
	}
	if len(b) > maxRESTBody {
		return rr, fmt.Errorf("%w: %s %s: body over %d bytes", sentinel, method, url, maxRESTBody)
	}
	rr.Status, rr.Body = resp.StatusCode, b
	if resp.StatusCode != http.StatusOK {
		return rr, fmt.Errorf("%w: %s %s: HTTP %d: %.200s", sentinel, method, url, resp.StatusCode, b)
	}
	return rr, nil
}

func (r *Recorder) discoverPolymarket(ctx context.Context) ([]string, []RESTResponse, error) {
	base := strings.TrimRight(r.restURL, "/")
	var ids []string
	var rest []RESTResponse
	get := func(path string) ([]polymarket.GammaMarket, error) {
		rr, err := r.fetch(ctx, ErrDiscovery, http.MethodGet, base+path, nil)
		if err != nil {
			return nil, err
		}
		ms, err := polymarket.ParseGammaMarkets(rr.Body)
		if err != nil {
			return nil, fmt.Errorf("%w: GET %s: %w", ErrDiscovery, rr.URL, err)
		}
		rest = append(rest, rr)
		return ms, nil
	}
	for _, inst := range r.spec.Instruments {
		if polymarket.IsTokenID(inst) {
			ids = append(ids, inst)
			continue
		}
		path, what := polymarket.GammaSlugPath(inst), "slug"
		if polymarket.IsConditionID(inst) {
			path, what = polymarket.GammaConditionPath(inst), "condition id"
		}
		ms, err := get(path)
		if err != nil {
			return nil, nil, err
		}
		n := 0
		for _, m := range ms {
			if m.Slug == inst || strings.EqualFold(m.ConditionID, inst) {
				ids = append(ids, m.TokenIDs...)
				n += len(m.TokenIDs)
			}
		}
		if n == 0 {
			return nil, nil, fmt.Errorf("%w: no market with %s %q at %s", ErrDiscovery, what, inst, base)
		}
	}
	if r.spec.AllMarkets {
		for page := 0; ; page++ {
			if page == maxGammaPages {
				return nil, nil, fmt.Errorf("%w: market list longer than %d pages", ErrDiscovery, maxGammaPages)
			}
			ms, err := get(polymarket.GammaMarketsPath(page*polymarket.GammaPageLimit, polymarket.GammaPageLimit))
			if err != nil {
				return nil, nil, err
			}
			for _, m := range ms {
				if m.Active && !m.Closed {
					ids = append(ids, m.TokenIDs...)
				}
			}
			if len(ms) < polymarket.GammaPageLimit {
				break
			}
		}
	}
	return dedupe(ids), rest, nil
}

func (r *Recorder) discoverHyperliquid(ctx context.Context) ([]string, map[string]hyperliquid.MetaAsset, []RESTResponse, error) {
	var rest []RESTResponse
	meta := map[string]hyperliquid.MetaAsset{}
	var listed []string
	for _, q := range []struct {
		req   string
		parse func([]byte) ([]hyperliquid.MetaAsset, error)
	}{{hyperliquid.MetaRequest, hyperliquid.ParseMeta}, {hyperliquid.SpotMetaRequest, hyperliquid.ParseSpotMeta}} {
		rr, err := r.fetch(ctx, ErrDiscovery, http.MethodPost, r.restURL, []byte(q.req))
		if err != nil {
			return nil, nil, nil, err
		}
		as, err := q.parse(rr.Body)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: POST %s %s: %w", ErrDiscovery, rr.URL, q.req, err)
		}
		rest = append(rest, rr)
		for _, a := range as {
			meta[a.Name] = a
			if !a.Delisted {
				listed = append(listed, a.Name)
			}
		}
	}
	var coins []string
	var unknown []string
	for _, c := range r.spec.Instruments {
		if _, ok := meta[c]; ok {
			coins = append(coins, c)
			continue
		}
		hint := ""
		for name := range meta {
			if strings.EqualFold(name, c) {
				hint = " (did you mean " + name + "?)"
			}
		}
		unknown = append(unknown, c+hint)
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, nil, nil, fmt.Errorf("%w: coins not in meta/spotMeta (the venue would close the socket with 1006): %s",
			ErrDiscovery, strings.Join(unknown, ", "))
	}
	if r.spec.AllMarkets {
		coins = append(coins, listed...)
	}
	return dedupe(coins), meta, rest, nil
}

func dedupe(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := s[:0:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
