package replayer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeSleeper advances a fake monotonic clock instead of sleeping, plus a
// fixed oversleep to simulate scheduler delay.
type fakeSleeper struct {
	mu        sync.Mutex
	now       int64
	oversleep int64
	sleeps    []int64
}

func (f *fakeSleeper) Now() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeSleeper) Sleep(ctx context.Context, d int64, wake <-chan struct{}) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleeps = append(f.sleeps, d)
	f.now += d + f.oversleep
	return ctx.Err()
}

func (f *fakeSleeper) advance(d int64) {
	f.mu.Lock()
	f.now += d
	f.mu.Unlock()
}

func TestParseSpeed(t *testing.T) {
	tests := []struct {
		in   string
		want Speed
		err  bool
	}{
		{"max", SpeedMax, false},
		{"MAX", SpeedMax, false},
		{"1x", 1, false},
		{"10x", 10, false},
		{"0.5x", 0.5, false},
		{"x10", 10, false},
		{"", 0, true},
		{"10", 0, true},
		{"0x", 0, true},
		{"-1x", 0, true},
		{"infx", 0, true},
		{"nanx", 0, true},
		{"fast", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseSpeed(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseSpeed(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, ErrSpeed) {
			t.Errorf("ParseSpeed(%q) error %v does not wrap ErrSpeed", tc.in, err)
		}
		if err == nil {
			back, err := ParseSpeed(got.String())
			if err != nil || back != got {
				t.Errorf("ParseSpeed(%q.String()=%q) = %v, %v", tc.in, got.String(), back, err)
			}
		}
	}
}

// TestClockSchedule checks the dispatch times of a short recording at 1x
// and 10x: each record goes out exactly at its recorded gap divided by the
// speed, never before, and a record recorded out of order goes at once.
func TestClockSchedule(t *testing.T) {
	ms := int64(time.Millisecond)
	recs := []int64{1000 * ms, 1100 * ms, 1100 * ms, 1350 * ms, 1300 * ms, 2000 * ms}
	tests := []struct {
		speed Speed
		want  []int64 // dispatch times on the fake clock
	}{
		{1, []int64{0, 100 * ms, 100 * ms, 350 * ms, 350 * ms, 1000 * ms}},
		{10, []int64{0, 10 * ms, 10 * ms, 35 * ms, 35 * ms, 100 * ms}},
		{0.5, []int64{0, 200 * ms, 200 * ms, 700 * ms, 700 * ms, 2000 * ms}},
		{SpeedMax, []int64{0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.speed.String(), func(t *testing.T) {
			f := &fakeSleeper{}
			c := NewClockWith(tc.speed, f)
			for i, r := range recs {
				if err := c.Wait(context.Background(), r); err != nil {
					t.Fatal(err)
				}
				if got := f.Now(); got != tc.want[i] {
					t.Fatalf("record %d dispatched at %v, want %v", i, time.Duration(got), time.Duration(tc.want[i]))
				}
			}
			l := c.Lateness()
			if tc.speed == SpeedMax {
				if l.Count != 0 {
					t.Fatalf("max speed measured lateness: %+v", l)
				}
				return
			}
			if l.Count != uint64(len(recs)) || l.MaxNs != 0 {
				t.Fatalf("lateness %+v, want %d samples all 0", l, len(recs))
			}
		})
	}
}

func TestClockLateness(t *testing.T) {
	ms := int64(time.Millisecond)
	f := &fakeSleeper{oversleep: 2 * ms}
	c := NewClockWith(1, f)
	for i := range int64(100) {
		if err := c.Wait(context.Background(), i*10*ms); err != nil {
			t.Fatal(err)
		}
	}
	l := c.Lateness()
	// The first record is due when it arrives; every later one wakes 2ms late.
	if l.Count != 100 || l.MaxNs != 2*ms {
		t.Fatalf("lateness %+v", l)
	}
	if l.P50Ns < 2*ms || l.P50Ns > 2*ms+2*ms/16 || l.P99Ns != l.P50Ns {
		t.Fatalf("p50/p99 %v/%v, want about 2ms", time.Duration(l.P50Ns), time.Duration(l.P99Ns))
	}
}

func TestClockPauseShiftsSchedule(t *testing.T) {
	ms := int64(time.Millisecond)
	f := &fakeSleeper{}
	c := NewClockWith(1, f)
	ctx := context.Background()
	if err := c.Wait(ctx, 0); err != nil {
		t.Fatal(err)
	}
	c.Pause()
	if !c.Paused() {
		t.Fatal("not paused")
	}
	done := make(chan error)
	go func() { done <- c.Wait(ctx, 100*ms) }()
	f.advance(5000 * ms) // five seconds pass while paused
	c.Resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The record 100ms after the first goes out 100ms plus the pause later.
	if got := f.Now(); got != 5100*ms {
		t.Fatalf("dispatched at %v, want 5.1s", time.Duration(got))
	}
}

func TestClockPausedMaxBlocksUntilResumeOrCancel(t *testing.T) {
	c := NewClockWith(SpeedMax, &fakeSleeper{})
	c.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Wait(ctx, 1) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	go func() { done <- c.Wait(context.Background(), 2) }()
	c.Resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestHistBuckets(t *testing.T) {
	for _, v := range []int64{0, 1, 15, 16, 17, 31, 32, 33, 1000, 999_999, 1 << 40, 1<<62 + 12345} {
		i := histBucket(v)
		if up := histUpper(i); up < v || (v >= 16 && float64(up-v) > float64(v)/16) {
			t.Errorf("value %d: bucket %d upper %d", v, i, up)
		}
		if i > 0 && histUpper(i-1) >= v {
			t.Errorf("value %d: bucket %d but the previous bucket reaches %d", v, i, histUpper(i-1))
		}
	}
}

// TestRealSleeperWakes checks that a long real sleep ends on a wake-up or a
// cancelled context, which Pause, SeekTo and Ctrl-C rely on.
func TestRealSleeperWakes(t *testing.T) {
	s := newRealSleeper(true)
	wake := make(chan struct{}, 1)
	wake <- struct{}{}
	if err := s.Sleep(context.Background(), int64(time.Hour), wake); err != nil {
		t.Fatalf("woken sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Sleep(ctx, int64(time.Hour), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sleep: %v", err)
	}
	// A short sleep spins to its end: it may not return before it is due.
	start := s.Now()
	if err := s.Sleep(context.Background(), 100_000, nil); err != nil || s.Now()-start < 100_000 {
		t.Fatalf("short sleep returned after %dns: %v", s.Now()-start, err)
	}
}
