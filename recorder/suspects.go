package recorder

import (
	"fmt"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
)

// Suspect subscriptions (venues with acknowledgements: Hyperliquid).
//
// A venue that chokes on a subscription (Hyperliquid closes the socket with
// 1006 and no message on an unknown coin) leaves it the first one
// unacknowledged when the socket dies. So a death within the suspect window
// of that subscription's send names it suspect (describeExit), and two in a
// row remove it from the connection, so that the others can be recorded. A
// removal is a loss record (KindGap naming the subscription) and a metric;
// the subscription is tried again after a backoff that doubles with each
// removal, never dropped for the session. Data for a subscription counts as
// its acknowledgement: a proxy or a venue that does not answer subscribe
// frames cannot get a flowing subscription removed.

// Defaults of the suspect retry backoff.
const (
	DefaultSuspectRetryMin = 30 * time.Second
	DefaultSuspectRetryMax = 30 * time.Minute
)

// pendingSub is a subscription sent and not yet acknowledged.
type pendingSub struct {
	seq uint64    // send order on the connection
	at  time.Time // when its frame was sent
}

// WithSuspectRetry sets when a subscription removed as a suspect is tried
// again: min after its first removal, doubling per removal up to max
// (defaults DefaultSuspectRetryMin, DefaultSuspectRetryMax).
func WithSuspectRetry(min, max time.Duration) Option {
	return func(o *options) error {
		if min <= 0 || max < min {
			return fmt.Errorf("%w: suspect retry %v..%v", ErrOption, min, max)
		}
		o.suspectRetryMin, o.suspectRetryMax = min, max
		return nil
	}
}

// ackByData acknowledges the pending subscriptions among items, whose data
// the frame being scanned carries. Called by the reader (touch), which
// records them once the frame is queued.
func (s *slot) ackByData(items []string) {
	s.mu.Lock()
	for _, it := range items {
		if _, ok := s.pending[it]; ok {
			s.ackedLocked(it)
			s.dataAcks = append(s.dataAcks, it)
		}
	}
	s.mu.Unlock()
}

// acked clears a subscription's pending and suspect state.
func (s *slot) acked(it string) {
	s.mu.Lock()
	s.ackedLocked(it)
	s.mu.Unlock()
}

func (s *slot) ackedLocked(it string) {
	delete(s.pending, it)
	delete(s.suspects, it)
	delete(s.strikes, it)
	s.pendingN.Store(int32(len(s.pending)))
}

// noteSuspect counts a death blamed on it; on the second in a row it removes
// it from the slot's items and schedules its retry, returning the loss
// record to write. Called with s.mu held.
func (s *slot) noteSuspect(it string) *datasets.Control {
	s.suspects[it]++
	if s.suspects[it] < 2 {
		return nil
	}
	delete(s.suspects, it)
	kept := s.items[:0]
	for _, x := range s.items {
		if x != it {
			kept = append(kept, x)
		}
	}
	s.items = kept
	s.strikes[it]++
	n := s.strikes[it]
	d := s.r.o.suspectRetryMin
	for i := 1; i < n && d < s.r.o.suspectRetryMax; i++ {
		d *= 2
	}
	d = min(d, s.r.o.suspectRetryMax)
	now := time.Now()
	s.retryAt[it] = now.Add(d)
	return &datasets.Control{Instruments: []string{it}, FromNs: now.UnixNano(), ToNs: now.Add(d).UnixNano(), Attempt: n,
		Text: fmt.Sprintf("subscription %s removed: two connections in a row died within %v of subscribing it, unacknowledged; no data for it until it is subscribed again in %v (removal %d)",
			it, s.r.o.suspectWindow, d, n)}
}

// recordRemoval writes a removal's loss record, counts and logs it.
func (s *slot) recordRemoval(c datasets.Control) {
	s.cm.subsRemoved.Inc()
	s.r.log.Error("subscription removed", "conn", s.id, "item", c.Instruments[0], "text", c.Text)
	s.r.control(s.id, datasets.KindGap, c)
}

// dueRetries takes the removed items whose retry time has come, noting each.
func (s *slot) dueRetries(now time.Time) []string {
	s.mu.Lock()
	var due []string
	for it, at := range s.retryAt {
		if !now.Before(at) {
			due = append(due, it)
			delete(s.retryAt, it)
		}
	}
	n := make([]int, len(due))
	for i, it := range due {
		n[i] = s.strikes[it]
	}
	s.mu.Unlock()
	for i, it := range due {
		s.r.log.Info("subscribing a removed subscription again", "conn", s.id, "item", it, "removals", n[i])
		s.r.control(s.id, datasets.KindNote, datasets.Control{Instruments: []string{it}, Attempt: n[i],
			Text: fmt.Sprintf("subscribing %s again after removal %d", it, n[i])})
	}
	return due
}

// readdDue puts due retries back among the items before a connect.
func (s *slot) readdDue() {
	due := s.dueRetries(time.Now())
	if len(due) == 0 {
		return
	}
	s.mu.Lock()
	s.items = append(s.items, due...)
	s.mu.Unlock()
}
