package recorder_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// restURLs returns the URLs of the REST responses a dataset stores.
func restURLs(t *testing.T, recs []rec) []string {
	t.Helper()
	var out []string
	for _, r := range recs {
		if r.Kind == datasets.KindNote {
			if c := r.control(t); c.URL != "" {
				out = append(out, c.URL)
			}
		}
	}
	return out
}

// Only the WebSocket endpoint given, pointing at a loopback exchange: the
// discovery and book-summary requests go to that exchange too, never to the
// venues' public hosts (the loopback guard of TestMain would refuse those,
// failing discovery), and the recording is whole.
func TestEndpointOnlyStaysOnItsHost(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  fakeexchange.Config
		spec func(s *fakeexchange.Server) recorder.Spec
	}{
		{"polymarket slug and rest books", fakeexchange.PolymarketConfig(), func(s *fakeexchange.Server) recorder.Spec {
			return recorder.Spec{Venue: "polymarket", Endpoint: s.WSURL(), Instruments: []string{fakeexchange.PolymarketSlug}}
		}},
		{"hyperliquid discovery", fakeexchange.HyperliquidConfig(), func(s *fakeexchange.Server) recorder.Spec {
			return recorder.Spec{Venue: "hyperliquid", Endpoint: s.WSURL(), Instruments: []string{"BTC"}, Channels: []string{"l2Book"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeexchange.New(tc.cfg)
			defer s.Close()
			c := startCapture(t, tc.spec(s), nil)
			waitFor(t, "data", func() bool { return sentTotal(s) > 30 })
			recs := c.stop()
			checkByteIdentical(t, s, recs, 0)
			urls := restURLs(t, recs)
			if len(urls) == 0 {
				t.Fatal("no REST response recorded")
			}
			host := strings.TrimPrefix(s.CLOBURL(), "http://")
			for _, u := range urls {
				if !strings.HasPrefix(u, "http://"+host+"/") {
					t.Errorf("REST request to %s, off the endpoint's host %s", u, host)
				}
			}
			if tc.cfg.Venue == fakeexchange.Polymarket && len(s.BookRequests()) == 0 {
				t.Error("no book summaries fetched from the endpoint's host")
			}
		})
	}
}

// A REST base given explicitly is kept; an endpoint that is not a WebSocket
// URL is refused naming it.
func TestEndpointDerivationLimits(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	r, err := recorder.New(recorder.Spec{Venue: "hyperliquid", Endpoint: s.WSURL(), RESTEndpoint: "http://127.0.0.1:1/info", Instruments: []string{"BTC"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Prepare(context.Background()); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Prepare with an explicit dead REST base: %v", err)
	}
	for _, ep := range []string{"ftp://127.0.0.1/ws", "not a url"} {
		if _, err := recorder.New(recorder.Spec{Venue: "hyperliquid", Endpoint: ep, Instruments: []string{"BTC"}}); err == nil ||
			!strings.Contains(err.Error(), "endpoint") {
			t.Errorf("endpoint %q: %v", ep, err)
		}
	}
}
