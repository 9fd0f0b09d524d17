package recorder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxRESTBody bounds one discovery response (a Gamma page of 500 markets is
// a few MB).
const maxRESTBody = 64 << 20

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

// Discover asks the venue's REST endpoint what to record, through its
// driver (venue.ClientProtocol.Discover): Polymarket slugs and condition ids
// are resolved to token ids and --all-markets lists every active market;
// Hyperliquid's meta and spotMeta are fetched, coins are checked against
// them (an unknown coin would close the socket with 1006) and --all-markets
// takes every listed coin. The responses are kept for Run to store. Discover
// may be called again to refresh.
func (r *Recorder) Discover(ctx context.Context) error {
	var rest []RESTResponse
	fetch := func(ctx context.Context, method, url string, body []byte) ([]byte, error) {
		rr, err := r.fetch(ctx, ErrDiscovery, method, url, body)
		if err != nil {
			return nil, err
		}
		rest = append(rest, rr)
		return rr.Body, nil
	}
	insts, err := r.p.Discover(ctx, fetch, r.restURL, r.spec.Instruments, r.spec.AllMarkets)
	if err != nil {
		if !errors.Is(err, ErrDiscovery) {
			err = fmt.Errorf("%w: %w", ErrDiscovery, err)
		}
		return err
	}
	r.mu.Lock()
	r.discovered = true
	r.instruments = insts
	r.rest = rest
	r.mu.Unlock()
	return nil
}

// restAttempts bounds the tries of one REST request whose transfer failed
// (no answer within the client's timeout, a body that stalled or was cut).
// An answer, whatever its status, is not tried again.
const restAttempts = 2

// fetch does one REST request, tried again once if the transfer fails (the
// client's timeout bounds each try); its errors wrap sentinel
// (ErrDiscovery, ErrRESTBooks) and name the URL. A non-200 answer is an
// error that still returns the body.
func (r *Recorder) fetch(ctx context.Context, sentinel error, method, url string, body []byte) (RESTResponse, error) {
	for try := 1; ; try++ {
		rr, answered, err := r.fetchOnce(ctx, sentinel, method, url, body)
		if err == nil || answered || try == restAttempts || ctx.Err() != nil {
			if err != nil && !answered && try > 1 {
				err = fmt.Errorf("%w (tried %d times)", err, try)
			}
			return rr, err
		}
		r.log.Warn("rest request failed; trying again", "method", method, "url", url, "err", err)
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return rr, err
		}
	}
}

// fetchOnce is one try of fetch; answered says the whole answer arrived.
func (r *Recorder) fetchOnce(ctx context.Context, sentinel error, method, url string, body []byte) (RESTResponse, bool, error) {
	rr := RESTResponse{Method: method, URL: url, Request: body}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return rr, true, fmt.Errorf("%w: %s %s: %w", sentinel, method, url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.o.httpClient.Do(req)
	if err != nil {
		return rr, false, fmt.Errorf("%w: %s %s: %w", sentinel, method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRESTBody+1))
	if err != nil {
		return rr, false, fmt.Errorf("%w: %s %s: read body: %w", sentinel, method, url, err)
	}
	if len(b) > maxRESTBody {
		return rr, true, fmt.Errorf("%w: %s %s: body over %d bytes", sentinel, method, url, maxRESTBody)
	}
	rr.Status, rr.Body = resp.StatusCode, b
	if resp.StatusCode != http.StatusOK {
		return rr, true, fmt.Errorf("%w: %s %s: HTTP %d: %.200s", sentinel, method, url, resp.StatusCode, b)
	}
	return rr, true, nil
}
