package recorder

import (
	"testing"
	"time"
)

// TestHealBackoff: a permanently bad instrument is resubscribed at once,
// then no sooner than min, 2·min, 4·min … up to max after the previous one;
// another instrument has its own backoff; one healthy for a whole window
// starts over.
func TestHealBackoff(t *testing.T) {
	r := &Recorder{o: defaultOptions()}
	r.o.live.healMin, r.o.live.healMax = time.Second, 8*time.Second
	h := newHealer(r)
	now := time.Unix(1000, 0)
	h.now = func() time.Time { return now }
	bad := healKey{what: "resubscribe", inst: "bad"}
	var allowedAt []time.Duration
	start := now
	for range 40 * 10 { // 40 s in 100 ms steps, asking every time
		if _, ok := h.allow(bad); ok {
			allowedAt = append(allowedAt, now.Sub(start))
		}
		now = now.Add(100 * time.Millisecond)
	}
	want := []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 23 * time.Second, 31 * time.Second, 39 * time.Second}
	if len(allowedAt) != len(want) {
		t.Fatalf("resubscribes at %v, want %v", allowedAt, want)
	}
	for i := range want {
		if allowedAt[i] != want[i] {
			t.Fatalf("resubscribes at %v, want %v", allowedAt, want)
		}
	}
	if _, ok := h.allow(healKey{what: "resubscribe", inst: "other"}); !ok {
		t.Error("another instrument waits for the bad one's backoff")
	}
	now = now.Add(30 * time.Second) // healthy for longer than a window
	if a, ok := h.allow(bad); !ok || a != 1 {
		t.Errorf("after a healthy window: attempt %d, allowed %v; want attempt 1", a, ok)
	}
}
