package recorder

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// deriveREST keeps a capture on the host its WebSocket endpoint names. When
// Spec.Endpoint is given and is not the venue's public WebSocket (a fake
// exchange, a replay server, a private gateway), every REST base the spec
// leaves empty is derived from it instead of defaulting to the venue's
// public hosts: the same host and port, http for ws and https for wss, at
// the paths the venue's driver says (venue.ClientProtocol.Mirror:
// Polymarket's Gamma discovery and CLOB book summaries at its root,
// Hyperliquid's info at /info, the endpoint's path with /ws replaced). REST
// bases given explicitly are kept, but one on a public venue host next to a
// loopback or private endpoint is logged as a mix.
func (r *Recorder) deriveREST(publicWS string) error {
	ep := r.spec.Endpoint
	if ep == "" || strings.TrimRight(ep, "/") == strings.TrimRight(publicWS, "/") {
		return nil
	}
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: endpoint %q is not a WebSocket URL", ErrSpec, ep)
	}
	scheme := map[string]string{"ws": "http", "wss": "https", "http": "http", "https": "https"}[u.Scheme]
	if scheme == "" {
		return fmt.Errorf("%w: endpoint %q: scheme %q, want ws or wss", ErrSpec, ep, u.Scheme)
	}
	origin := scheme + "://" + u.Host
	derived := false
	mirror := r.p.Mirror(origin, u.Path)
	if r.spec.RESTEndpoint == "" && mirror.Discovery != "" {
		r.restURL, derived = mirror.Discovery, true
	}
	if !r.spec.DisableRESTBooks && r.spec.CLOBEndpoint == "" && mirror.Books != "" {
		r.clobURL, derived = mirror.Books, true
	}
	if derived {
		r.log.Info("REST bases derived from the endpoint", "endpoint", ep, "discovery", r.restURL, "clob", r.clobURL)
	}
	if local(u.Hostname()) {
		for _, x := range []struct{ flag, v string }{{"rest endpoint", r.spec.RESTEndpoint}, {"clob endpoint", r.spec.CLOBEndpoint}} {
			if pu, err := url.Parse(x.v); err == nil && x.v != "" && !local(pu.Hostname()) {
				r.log.Warn("a private endpoint with a public REST base", "endpoint", ep, x.flag, x.v)
			}
		}
	}
	return nil
}

// local reports whether host is loopback or a private address.
func local(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast())
}
