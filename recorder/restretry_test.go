package recorder_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// stallingREST forwards to the fake exchange's REST endpoint; a request
// marked by stallFirst gets the answer's headers and 10 bytes of its body,
// then nothing (a proxy or NAT that stops forwarding).
func stallingREST(t *testing.T, upstream string) *httptest.Server {
	t.Helper()
	up, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, up.Scheme+"://"+up.Host+r.URL.RequestURI(), r.Body)
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		if r.Header.Get(stallHeader) != "" {
			io.CopyN(w, resp.Body, 10)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const stallHeader = "X-Test-Stall"

// stallFirst is the recorder's HTTP transport: it marks its first stalls
// requests for the proxy to stall and gives each of them the timeout
// (a client timeout for these requests only), and counts the tries. The
// others go out with no deadline: with a client timeout on every request, a
// loaded host that took longer than it to answer one the proxy passed on
// failed the test.
type stallFirst struct {
	stalls int64
	tries  atomic.Int64
}

func (s *stallFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.tries.Add(1) > s.stalls {
		return http.DefaultTransport.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), 200*time.Millisecond)
	req = req.Clone(ctx)
	req.Header.Set(stallHeader, "1")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	defer c.cancel()
	return c.ReadCloser.Close()
}

// TestRESTStallRetried: a discovery answer whose body stalls costs the
// client's timeout and one more try, and the error names the URL when it
// keeps stalling (issue 30, finding 1: every network read has a deadline
// and a bounded retry).
func TestRESTStallRetried(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	proxy := stallingREST(t, s.RESTURL())
	rest, err := url.Parse(s.RESTURL())
	if err != nil {
		t.Fatal(err)
	}
	spec := hlSpec(s, nil, "BTC")
	spec.RESTEndpoint = proxy.URL + rest.RequestURI()

	once := &stallFirst{stalls: 1}
	r, err := recorder.New(spec, recorder.WithHTTPClient(&http.Client{Transport: once}))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Discover(context.Background()); err != nil || once.tries.Load() < 2 {
		t.Fatalf("one stalled answer: %v after %d requests", err, once.tries.Load())
	}

	always := &stallFirst{stalls: 1000}
	r, err = recorder.New(spec, recorder.WithHTTPClient(&http.Client{Transport: always}))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Discover(context.Background())
	if err == nil || !strings.Contains(err.Error(), proxy.URL) || !strings.Contains(err.Error(), "tried 2 times") {
		t.Fatalf("an answer that always stalls: %v", err)
	}
	if n := always.tries.Load(); n != 2 {
		t.Errorf("an answer that always stalls was tried %d times, want 2", n)
	}
}
