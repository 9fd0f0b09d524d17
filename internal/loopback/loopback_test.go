package loopback

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:80": true, "[::1]:443": true, "localhost:8080": true, "127.3.2.1:1": true,
		"clob.polymarket.com:443": false, "10.0.0.1:80": false, "8.8.8.8:53": false, "nohost": false,
	} {
		if err := Check(addr); (err == nil) != ok {
			t.Errorf("Check(%q) = %v, want allowed=%v", addr, err, ok)
		}
	}
}

func TestGuardAllowsLoopbackAndRefusesTheRest(t *testing.T) {
	Guard()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatalf("loopback request refused: %v", err)
	}
	resp.Body.Close()
	// An address that would need no DNS and is not loopback: refused before dialing.
	_, err = http.Get("http://192.0.2.1:9/")
	if err == nil || !strings.Contains(err.Error(), "only loopback") {
		t.Fatalf("non-loopback request: %v, want the guard's refusal", err)
	}
}
