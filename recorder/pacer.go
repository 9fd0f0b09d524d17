package recorder

import (
	"context"
	"sync"
	"time"
)

type pacerConfig struct {
	burst     int
	window    time.Duration
	perMinute int
}

// pacer spends a send budget shared by every connection of a session: at
// most burst messages per window, and at most perMinute in any minute. The
// minute budget is a token bucket of perMinute/2 tokens refilled at
// perMinute/2 per minute, which bounds any 60 s window by perMinute (a full
// bucket plus a minute of refill) and so holds after a reconnect storm too.
type pacer struct {
	mu        sync.Mutex
	burst     bucket
	minute    bucket
	unlimited bool
}

type bucket struct {
	cap, tokens float64
	perNs       float64
	last        time.Time
}

func (b *bucket) refill(now time.Time) {
	if !b.last.IsZero() {
		b.tokens = min(b.cap, b.tokens+float64(now.Sub(b.last))*b.perNs)
	}
	b.last = now
}

// wait returns how long until one token is available (0 = now).
func (b *bucket) wait() time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1-b.tokens)/b.perNs) + 1
}

func newPacer(c *pacerConfig) *pacer {
	if c == nil {
		return &pacer{unlimited: true}
	}
	half := float64(c.perMinute) / 2
	return &pacer{
		burst:  bucket{cap: float64(c.burst), tokens: float64(c.burst), perNs: float64(c.burst) / float64(c.window)},
		minute: bucket{cap: half, tokens: half, perNs: half / float64(time.Minute)},
	}
}

// Wait blocks until one message may be sent, or ctx ends.
func (p *pacer) Wait(ctx context.Context) error {
	if p.unlimited {
		return ctx.Err()
	}
	for {
		p.mu.Lock()
		now := time.Now()
		p.burst.refill(now)
		p.minute.refill(now)
		d := max(p.burst.wait(), p.minute.wait())
		if d == 0 {
			p.burst.tokens--
			p.minute.tokens--
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// planDuration returns how long sending n messages from a full budget takes.
func (c *pacerConfig) planDuration(n int) time.Duration {
	if c == nil || n <= c.burst {
		return 0
	}
	half := c.perMinute / 2
	var d time.Duration
	// Burst limit: after the first burst, one window per further burst.
	d = time.Duration((n-1)/c.burst) * c.window
	if n > half {
		// Minute bucket empties after half; the rest refill at half per minute.
		d = max(d, time.Duration(float64(n-half)/float64(half)*float64(time.Minute)))
	}
	return d
}
