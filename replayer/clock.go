package replayer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Speed is a replay rate relative to the recorded schedule: 1 is wire speed,
// 10 ten times faster, 0.5 half speed. SpeedMax (0) never waits.
type Speed float64

// SpeedMax replays as fast as the CPU allows.
const SpeedMax Speed = 0

// MinSpeed and MaxSpeed bound a paced replay's factor: slower than a
// hundredth of wire speed is a stuck replay, faster than 100000x is max.
const (
	MinSpeed Speed = 0.01
	MaxSpeed Speed = 100_000
)

// DefaultMaxGap is how long a recorded idle stretch may last in a paced
// replay by default (in recorded time; see Clock.SetMaxGap).
const DefaultMaxGap = time.Minute

// ErrSpeed means a speed text is not "max", "Nx" or "xN" with N in
// [MinSpeed, MaxSpeed].
var ErrSpeed = errors.New("replayer: invalid speed (want max, or 0.01x to 100000x: 1x, 10x, 0.5x)")

// Valid reports whether s is SpeedMax or a factor within [MinSpeed, MaxSpeed].
func (s Speed) Valid() bool { return s == SpeedMax || (s >= MinSpeed && s <= MaxSpeed) }

// ParseSpeed parses "max", "1x", "10x", "0.5x" (or "x10"). The error wraps
// ErrSpeed and quotes the text.
func ParseSpeed(s string) (Speed, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "max" {
		return SpeedMax, nil
	}
	var num string
	switch {
	case strings.HasSuffix(t, "x"):
		num = t[:len(t)-1]
	case strings.HasPrefix(t, "x"):
		num = t[1:]
	default:
		return 0, fmt.Errorf("%w: %q", ErrSpeed, s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: %q", ErrSpeed, s)
	}
	if !Speed(f).Valid() {
		return 0, fmt.Errorf("%w: %q is outside %v..%v", ErrSpeed, s, MinSpeed, MaxSpeed)
	}
	return Speed(f), nil
}

// String returns "max" or the factor with an "x" suffix ("1x", "0.5x").
func (s Speed) String() string {
	if s == SpeedMax {
		return "max"
	}
	return strconv.FormatFloat(float64(s), 'g', -1, 64) + "x"
}

// Sleeper is the time source a Clock paces with. The real one reads the
// monotonic clock; tests inject a fake one to assert schedules without
// depending on wall-clock speed.
type Sleeper interface {
	// Now returns a monotonic reading in ns.
	Now() int64
	// Sleep blocks for d ns, or until wake receives, or until ctx is done,
	// returning ctx.Err() in that case and nil otherwise.
	Sleep(ctx context.Context, d int64, wake <-chan struct{}) error
}

// realSleeper uses time with one reusable timer, and spins the last spinNs
// of each wait when precise.
type realSleeper struct {
	base   time.Time
	timer  *time.Timer
	spinNs int64
}

func newRealSleeper(precise bool) *realSleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	s := &realSleeper{base: time.Now(), timer: t}
	if precise {
		s.spinNs = preciseSpinNs
	}
	return s
}

func (s *realSleeper) Now() int64 { return int64(time.Since(s.base)) }

// preciseSpinNs is how much of a wait a precise sleeper spends yielding
// instead of on a timer. Go's timers wake through the netpoller, whose waits
// have millisecond granularity: a 0.8 ms timer fires ~1.1 ms later, which
// alone would miss the 1 ms p99 lateness target at wire speed. The price is
// up to this much busy CPU per dispatch, and a busy core when records come
// closer together than this, so only the Replayer's own clock is precise.
const preciseSpinNs = 1_200_000

func (s *realSleeper) Sleep(ctx context.Context, d int64, wake <-chan struct{}) error {
	due := s.Now() + d
	if d > s.spinNs {
		s.timer.Reset(time.Duration(d - s.spinNs))
		select {
		case <-s.timer.C:
		case <-wake:
			s.timer.Stop()
			return nil
		case <-ctx.Done():
			s.timer.Stop()
			return ctx.Err()
		}
	}
	for s.Now() < due {
		select {
		case <-wake:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		default:
			runtime.Gosched()
		}
	}
	return nil
}

// errInterrupted tells Wait's caller that Interrupt cut a wait short.
var errInterrupted = errors.New("replayer: wait interrupted")

// Clock paces a replay: Wait blocks until a record's scheduled time, the
// first record's time plus the recorded gap divided by the speed, and measures
// how late each dispatch was against that schedule. Pause stops the schedule
// and Resume shifts it by the time spent paused. At SpeedMax Wait never waits
// (except while paused) and records no lateness.
//
// Two kinds of recorded idle time are not waited out: the stretches around a
// recorded loss (Loss: a disconnect, gap or stall is skipped at once), and
// any other stretch longer than the max gap (SetMaxGap), which is cut to it.
// Skipped counts both.
//
// Wait must be called from one goroutine; Pause, Resume, Interrupt and
// Lateness are safe from any goroutine.
type Clock struct {
	speed   Speed
	sleeper Sleeper

	mu       sync.Mutex
	anchored bool
	firstNs  int64 // recorded time of the anchor record
	startNs  int64 // sleeper time at which the anchor record was due
	lastDue  int64 // when the previous record was due: the schedule never goes back
	paused   bool
	pausedAt int64
	resume   chan struct{} // closed by Resume
	wake     chan struct{} // buffered(1): Pause, Resume and Interrupt poke a sleeping Wait
	intr     bool
	hist     latencyHist
	maxGap   int64 // recorded ns; 0 = no cap
	lastRec  int64 // recorded time of the latest record scheduled
	skipNext bool  // the stretch to the next later record is a recorded loss
	skipped  Skipped
	// attn mirrors paused || intr so an unpaused SpeedMax wait costs one
	// atomic load instead of a lock.
	attn atomic.Bool
}

// NewClock returns a Clock at speed s using the monotonic clock and timers,
// which wake up to about a millisecond late. (A Replayer's own clock spins
// the last 1.2 ms of each wait instead, for sub-millisecond dispatch.)
func NewClock(s Speed) *Clock { return newClock(s, nil, false) }

// NewClockWith is NewClock with an injected time source (for tests and
// simulations); a nil Sleeper means the monotonic clock.
func NewClockWith(s Speed, sl Sleeper) *Clock { return newClock(s, sl, false) }

func newClock(s Speed, sl Sleeper, precise bool) *Clock {
	if sl == nil {
		sl = newRealSleeper(precise)
	}
	return &Clock{speed: s, sleeper: sl, wake: make(chan struct{}, 1), maxGap: int64(DefaultMaxGap)}
}

// Skipped is the recorded idle time a paced replay did not wait out.
type Skipped struct {
	Losses   uint64 `json:"losses"`    // recorded losses whose stretches were skipped at once
	LossNs   int64  `json:"loss_ns"`   // the recorded time skipped around them
	Capped   uint64 `json:"capped"`    // other idle stretches cut to the max gap
	CappedNs int64  `json:"capped_ns"` // the recorded time cut from them
}

// SetMaxGap caps every recorded idle stretch (the time between two records)
// at d of recorded time, so a paced replay of a recording with a long quiet
// stretch waits d/speed there instead (default DefaultMaxGap; 0 waits every
// stretch out). Call it before the replay starts.
func (c *Clock) SetMaxGap(d time.Duration) {
	c.mu.Lock()
	c.maxGap = max(int64(d), 0)
	c.mu.Unlock()
}

// Loss tells the clock of a recorded loss at recNs (a disconnect, gap,
// stall or overload record): the stretch from the previous record to it and
// from it to the next one are recorded time nobody saw data for, and are
// skipped: the next records are due at once.
func (c *Clock) Loss(recNs int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.speed == SpeedMax {
		return
	}
	c.skipped.Losses++
	if c.anchored && recNs > c.lastRec {
		c.shiftLocked(recNs-c.lastRec, &c.skipped.LossNs)
		c.lastRec = recNs
	}
	c.skipNext = true
}

// Skipped returns the recorded idle time skipped so far.
func (c *Clock) Skipped() Skipped {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.skipped
}

// shiftLocked moves the schedule d recorded ns earlier, counting it in acc.
func (c *Clock) shiftLocked(d int64, acc *int64) {
	c.firstNs += d
	*acc += d
}

// scheduleLocked anchors the clock on its first record and cuts the stretch
// before recNs when it follows a loss or is longer than the max gap.
func (c *Clock) scheduleLocked(recNs int64) {
	if !c.anchored {
		now := c.sleeper.Now()
		c.anchored = true
		c.firstNs, c.startNs, c.lastDue, c.lastRec = recNs, now, now, recNs
		return
	}
	gap := recNs - c.lastRec
	if gap <= 0 {
		return
	}
	switch {
	case c.skipNext:
		c.shiftLocked(gap, &c.skipped.LossNs)
		c.skipNext = false
	case c.maxGap > 0 && gap > c.maxGap:
		c.shiftLocked(gap-c.maxGap, &c.skipped.CappedNs)
		c.skipped.Capped++
	}
	c.lastRec = recNs
}

// Speed returns the clock's speed.
func (c *Clock) Speed() Speed { return c.speed }

// Reset forgets the anchor: the next Wait dispatches at once and schedules
// later records from it (after a seek or a window start).
func (c *Clock) Reset() {
	c.mu.Lock()
	c.anchored = false
	c.mu.Unlock()
}

// Wait blocks until the record received at recNs (wall ns) is due. It returns
// ctx.Err() if ctx ends first.
func (c *Clock) Wait(ctx context.Context, recNs int64) error {
	err := c.wait(ctx, recNs)
	if err == errInterrupted {
		return nil
	}
	return err
}

// wait is Wait that reports an Interrupt as errInterrupted.
func (c *Clock) wait(ctx context.Context, recNs int64) error {
	if c.speed == SpeedMax && !c.attn.Load() {
		return nil
	}
	if c.speed != SpeedMax {
		c.mu.Lock()
		c.scheduleLocked(recNs)
		c.mu.Unlock()
	}
	for {
		c.mu.Lock()
		if c.intr {
			c.intr = false
			c.attn.Store(c.paused)
			c.mu.Unlock()
			return errInterrupted
		}
		if c.paused {
			resume := c.resume
			c.mu.Unlock()
			select {
			case <-resume:
			case <-c.wake:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if c.speed == SpeedMax {
			c.mu.Unlock()
			return nil
		}
		now := c.sleeper.Now()
		if !c.anchored { // Reset while paused
			c.scheduleLocked(recNs)
		}
		due := c.startNs + int64(float64(recNs-c.firstNs)/float64(c.speed))
		// A record stamped before its predecessor (a clock step, another
		// dataset's skew) is due with it, not "late" by the difference.
		due = max(due, c.lastDue)
		if now >= due {
			c.lastDue = due
			c.hist.add(now - due)
			c.mu.Unlock()
			return nil
		}
		c.mu.Unlock()
		if err := c.sleeper.Sleep(ctx, due-now, c.wake); err != nil {
			return err
		}
	}
}

// Pause stops dispatching: a Wait in progress or to come blocks until Resume.
func (c *Clock) Pause() {
	c.mu.Lock()
	if !c.paused {
		c.paused = true
		c.pausedAt = c.sleeper.Now()
		c.resume = make(chan struct{})
		c.attn.Store(true)
	}
	c.mu.Unlock()
	c.poke()
}

// Resume continues after Pause, shifting the schedule by the paused time so
// the recorded gaps are kept.
func (c *Clock) Resume() {
	c.mu.Lock()
	if c.paused {
		c.paused = false
		shift := c.sleeper.Now() - c.pausedAt
		c.startNs += shift
		c.lastDue += shift
		close(c.resume)
		c.attn.Store(c.intr)
	}
	c.mu.Unlock()
	c.poke()
}

// Paused reports whether the clock is paused.
func (c *Clock) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// interrupt makes a blocked or the next wait return errInterrupted, so the
// replay loop can act on a seek without waiting out a long recorded gap.
func (c *Clock) interrupt() {
	c.mu.Lock()
	c.intr = true
	c.attn.Store(true)
	c.mu.Unlock()
	c.poke()
}

func (c *Clock) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Lateness returns the dispatch lateness measured so far.
func (c *Clock) Lateness() Lateness {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hist.summary()
}

// Lateness summarises how late paced dispatches were against the recorded
// schedule. Percentiles come from a log-linear histogram and are upper bounds
// of their bucket (within 1/16 of the value); Max is exact.
type Lateness struct {
	Count uint64 `json:"count"`
	P50Ns int64  `json:"p50_ns"`
	P99Ns int64  `json:"p99_ns"`
	MaxNs int64  `json:"max_ns"`
}

// latencyHist is a fixed-size log-linear histogram: 16 linear sub-buckets per
// power of two, so adding a sample never allocates.
type latencyHist struct {
	counts [64 * 16]uint64
	n      uint64
	max    int64
}

func histBucket(v int64) int {
	if v < 16 {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 5 // shift that leaves 4 significant bits below the top bit
	return (e+1)*16 + int(uint64(v)>>uint(e)&15)
}

// histUpper is the largest value in bucket i.
func histUpper(i int) int64 {
	if i < 16 {
		return int64(i)
	}
	e := i/16 - 1
	m := int64(i%16) | 16
	return (m+1)<<uint(e) - 1
}

func (h *latencyHist) add(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[histBucket(v)]++
	h.n++
	if v > h.max {
		h.max = v
	}
}

func (h *latencyHist) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histUpper(i), h.max)
		}
	}
	return h.max
}

func (h *latencyHist) summary() Lateness {
	return Lateness{Count: h.n, P50Ns: h.quantile(0.50), P99Ns: h.quantile(0.99), MaxNs: h.max}
}
