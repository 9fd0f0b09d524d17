// Package loopback keeps tests on this machine. Tests that run the recorder
// call Guard from TestMain, so a test that forgets to point an endpoint at
// its fake exchange fails instead of reaching a venue.
package loopback

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Guard makes http.DefaultTransport, which every HTTP client without its own
// Transport uses, refuse to dial anything but loopback addresses and ignore
// proxy settings. Call it before any request, from TestMain.
func Guard() {
	t := http.DefaultTransport.(*http.Transport)
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := Check(addr); err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, addr)
	}
}

// Check returns an error unless addr ("host:port") names a loopback address.
func Check(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("loopback: %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("loopback: a test tried to reach %s; tests reach only loopback addresses", addr)
}
