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

// stallingREST forwards to the fake exchange's REST endpoint; the first
// stalls requests send the answer's headers and 10 bytes of its body, then
// nothing (a proxy or NAT that stops forwarding).
func stallingREST(t *testing.T, upstream string, stalls int64) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	up, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
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
		if n.Add(1) <= stalls {
			io.CopyN(w, resp.Body, 10)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestRESTStallRetried: a discovery answer whose body stalls costs the
// client's timeout and one more try, and the error names the URL when it
// keeps stalling (issue 30, finding 1: every network read has a deadline
// and a bounded retry).
func TestRESTStallRetried(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	client := &http.Client{Timeout: time.Second}

	proxy, n := stallingREST(t, s.RESTURL(), 1)
	rest, err := url.Parse(s.RESTURL())
	if err != nil {
		t.Fatal(err)
	}
	spec := hlSpec(s, nil, "BTC")
	spec.RESTEndpoint = proxy.URL + rest.RequestURI()
	r, err := recorder.New(spec, recorder.WithHTTPClient(client))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Discover(context.Background()); err != nil || n.Load() < 2 {
		t.Fatalf("one stalled answer: %v after %d requests", err, n.Load())
	}

	proxy, _ = stallingREST(t, s.RESTURL(), 1000)
	spec.RESTEndpoint = proxy.URL + rest.RequestURI()
	r, err = recorder.New(spec, recorder.WithHTTPClient(client))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = r.Discover(context.Background())
	if err == nil || !strings.Contains(err.Error(), proxy.URL) || !strings.Contains(err.Error(), "tried 2 times") {
		t.Fatalf("an answer that always stalls: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v with a 1 s timeout", took)
	}
}
