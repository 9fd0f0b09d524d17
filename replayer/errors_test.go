package replayer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// diskErr is a subscriber's own error type.
type diskErr struct{ n int }

func (e *diskErr) Error() string { return fmt.Sprintf("disk full after %d rows", e.n) }

func stopDataset(t *testing.T) string {
	return writeDataset(t, "fakevenue", []rec{
		frame(0, 1, "snap a 10 1 20 1"),
		frame(0, 2, "lvl a b 11 1"),
		frame(0, 3, "lvl a b 12 1"),
		frame(0, 4, "lvl a a 19 1"),
		frame(0, 5, "lvl a a 18 1"),
	})
}

// Without the option a failing subscriber is isolated and the replay goes
// on; its failure keeps the error typed.
func TestSubscriberFailureKeepsItsType(t *testing.T) {
	r := newFakeReplayer(t, []string{stopDataset(t)})
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		if e.Seq == 2 {
			return fmt.Errorf("sink: %w", &diskErr{n: 7})
		}
		return nil
	}))
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		panic(fs.ErrPermission) // a panic with an error value
	}))
	s := run(t, r)
	if s.Frames != 5 || len(s.SubscriberFailures) != 2 {
		t.Fatalf("frames %d, failures %+v", s.Frames, s.SubscriberFailures)
	}
	if s.SubscriberFailures[0].Subscriber != 0 {
		s.SubscriberFailures[0], s.SubscriberFailures[1] = s.SubscriberFailures[1], s.SubscriberFailures[0]
	}
	var de *diskErr
	if f := &s.SubscriberFailures[0]; !errors.As(f, &de) || de.n != 7 || f.Seq != 2 || !strings.Contains(f.Error(), "disk full after 7 rows") {
		t.Errorf("first failure %v: errors.As finds %v", f, de)
	}
	if f := &s.SubscriberFailures[1]; !f.Panic || !errors.Is(f, fs.ErrPermission) {
		t.Errorf("panic failure %v does not wrap the panic's error", f)
	}
}

// With WithStopOnSubscriberError the first failure ends the run at once:
// Run returns it typed, the Summary stops at that record, and no subscriber
// gets another event (not even the others on the same record).
func TestStopOnSubscriberError(t *testing.T) {
	r, err := New([]string{stopDataset(t)}, withDecoders(fakeFactory), WithStopOnSubscriberError())
	if err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		if e.Seq == 3 {
			return &diskErr{n: 3}
		}
		return nil
	}))
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error { seen = append(seen, e.Seq); return nil }))
	s, err := r.Run(context.Background())
	var de *diskErr
	var sf *SubscriberFailure
	if !errors.As(err, &de) || !errors.As(err, &sf) || sf.Seq != 3 || sf.Subscriber != 0 {
		t.Fatalf("Run: %v, want the subscriber's *diskErr inside a *SubscriberFailure at seq 3", err)
	}
	if s == nil || s.Frames != 3 || len(s.SubscriberFailures) != 1 {
		t.Fatalf("summary %+v, want it to stop after frame 3", s)
	}
	if fmt.Sprint(seen) != "[1 2]" {
		t.Errorf("the other subscriber saw seqs %v, want [1 2]", seen)
	}
}

// A rejected frame's DecodeError is an error wrapping the venue decoder's
// own, which names the field and offset.
func TestDecodeErrorIsTyped(t *testing.T) {
	dir := writeDataset(t, "polymarket", []rec{
		frame(1, 1, `{"event_type":"book","asset_id":"1","market":"0x1","timestamp":"1","bids":[{"price":"x","size":"1"}],"asks":[]}`),
	})
	r, err := New([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	s := run(t, r)
	if len(s.FirstDecodeErrors) != 1 {
		t.Fatalf("decode errors %+v", s.FirstDecodeErrors)
	}
	e := &s.FirstDecodeErrors[0]
	var pe *polymarket.DecodeError
	if !errors.As(e, &pe) || pe.Offset <= 0 || !strings.Contains(e.Error(), "seq 1") || !strings.Contains(e.Error(), "price") {
		t.Errorf("%v: errors.As finds %#v", e, pe)
	}
}
