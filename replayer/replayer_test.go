package replayer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { cleanupBench() })) }

// newFakeReplayer builds a Replayer over datasets with the fake decoder.
func newFakeReplayer(t testing.TB, paths []string, opts ...Option) *Replayer {
	t.Helper()
	r, err := New(paths, append([]Option{withDecoders(fakeFactory)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t testing.TB, r *Replayer) *Summary {
	t.Helper()
	s, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recorder is a subscriber that keeps a line per event.
type recorder struct{ lines []string }

func (c *recorder) OnEvent(e *Event) error {
	line := fmt.Sprintf("%d/%d %s %s %s", e.Dataset, e.Seq, e.Kind, e.Channel, e.Instrument)
	if e.Decoded != nil {
		line += fmt.Sprintf(" %s %d@%d", e.Decoded.Type, e.Decoded.Price, e.Decoded.Size)
	}
	if e.Book != nil {
		line += fmt.Sprintf(" valid=%v", e.Book.Valid())
	}
	c.lines = append(c.lines, line)
	return nil
}

func TestRoutingRunsOnlyTheInstrumentsSubscribers(t *testing.T) {
	var recs []rec
	for i := range 50 {
		recs = append(recs, frame(0, int64(1000+i), fmt.Sprintf("snap i%d 10 1 20 1", i)))
	}
	recs = append(recs, frame(0, 2000, "lvl i7 b 11 5"))
	dir := writeDataset(t, "fakevenue", recs)

	r := newFakeReplayer(t, []string{dir})
	calls := make([]int, 50)
	var lastSeqCalls int
	for i := range 50 {
		r.Subscribe(Key{Instrument: fmt.Sprintf("i%d", i), Channel: ChannelBook}, SubscriberFunc(func(e *Event) error {
			if e.Instrument != fmt.Sprintf("i%d", i) {
				t.Errorf("subscriber of i%d got %s", i, e.Instrument)
			}
			calls[i]++
			if e.RecvNs == 2000 {
				lastSeqCalls++
			}
			return nil
		}))
	}
	var all, other int
	r.Subscribe(Key{}, SubscriberFunc(func(*Event) error { all++; return nil }))
	r.Subscribe(Key{Venue: "othervenue"}, SubscriberFunc(func(*Event) error { other++; return nil }))
	r.Subscribe(Key{Channel: ChannelTrades}, SubscriberFunc(func(*Event) error { other++; return nil }))
	s := run(t, r)

	if lastSeqCalls != 1 {
		t.Fatalf("the frame for i7 ran %d instrument subscribers, want exactly 1", lastSeqCalls)
	}
	for i, n := range calls {
		want := 1
		if i == 7 {
			want = 2
		}
		if n != want {
			t.Errorf("subscriber i%d called %d times, want %d", i, n, want)
		}
	}
	if all != 51 || other != 0 {
		t.Fatalf("wildcard got %d (want 51), non-matching got %d (want 0)", all, other)
	}
	if s.Frames != 51 || s.Events["snapshot"] != 50 || s.Events["level"] != 1 || s.Instruments != 50 {
		t.Fatalf("summary %+v", s)
	}
}

func TestSubscriberIsolation(t *testing.T) {
	dir := writeDataset(t, "fakevenue", []rec{
		frame(0, 1, "snap a 10 1 20 1"),
		frame(0, 2, "lvl a b 11 1"),
		frame(0, 3, "lvl a b 12 1"),
		frame(0, 4, "lvl a a 19 1"),
	})
	r := newFakeReplayer(t, []string{dir})
	var errCalls, panicCalls, goodCalls int
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		errCalls++
		if e.Seq == 2 {
			return errors.New("strategy bug")
		}
		return nil
	}))
	r.Subscribe(Key{Instrument: "a"}, SubscriberFunc(func(e *Event) error {
		panicCalls++
		if e.Seq == 3 {
			var m map[string]int
			m["boom"]++ // a real runtime panic
		}
		return nil
	}))
	r.Subscribe(Key{Channel: ChannelBook}, SubscriberFunc(func(e *Event) error { goodCalls++; return nil }))
	s := run(t, r)
	if errCalls != 2 || panicCalls != 3 || goodCalls != 4 {
		t.Fatalf("calls: erroring %d (want 2), panicking %d (want 3), good %d (want 4)", errCalls, panicCalls, goodCalls)
	}
	if len(s.SubscriberFailures) != 2 {
		t.Fatalf("failures %+v", s.SubscriberFailures)
	}
	f0, f1 := s.SubscriberFailures[0], s.SubscriberFailures[1]
	if f0.Subscriber != 0 || f0.Seq != 2 || f0.Panic || f0.Err != "strategy bug" {
		t.Errorf("first failure %+v", f0)
	}
	if f1.Subscriber != 1 || f1.Seq != 3 || !f1.Panic || !strings.Contains(f1.Err, "nil map") || f1.Stack == "" {
		t.Errorf("second failure %+v", f1)
	}
}

func TestDecodeErrorsAreCountedAndTheStreamGoesOn(t *testing.T) {
	recs := []rec{frame(0, 1, "snap a 10 1 20 1")}
	for i := range 25 {
		recs = append(recs, frame(0, int64(2+i), "bad"))
	}
	recs = append(recs, frame(0, 100, "lvl a b 11 1"))
	dir := writeDataset(t, "fakevenue", recs)
	r := newFakeReplayer(t, []string{dir})
	c := &recorder{}
	r.Subscribe(Key{}, c)
	s := run(t, r)
	if s.DecodeErrors != 25 || len(s.FirstDecodeErrors) != maxDecodeErrors {
		t.Fatalf("decode errors %d, listed %d", s.DecodeErrors, len(s.FirstDecodeErrors))
	}
	if e := s.FirstDecodeErrors[0]; e.Seq != 2 || e.Dataset != 0 || !strings.Contains(e.Err, "bad frame") {
		t.Fatalf("first error %+v", e)
	}
	if len(c.lines) != 2 || !strings.Contains(c.lines[1], "level 11@1") {
		t.Fatalf("delivered %q", c.lines)
	}
}

func TestLossInvalidatesAndIsDeliveredPerInstrument(t *testing.T) {
	disc := datasets.EncodeControl(datasets.Control{Code: 1006, Reason: "abnormal"})
	dir := writeDataset(t, "fakevenue", []rec{
		{datasets.KindConnect, 0, 1, string(datasets.EncodeControl(datasets.Control{URL: "wss://x"}))},
		frame(0, 2, "snap a 10 1 20 1;snap b 30 1 40 1"),
		frame(1, 3, "snap c 10 1 20 1"),
		{datasets.KindDisconnect, 0, 4, string(disc)},
		frame(0, 5, "lvl a b 11 1"),
		frame(0, 6, "snap a 10 1 20 1"),
	})
	r := newFakeReplayer(t, []string{dir})
	ctl := &recorder{}
	r.Subscribe(Key{Channel: ChannelControl}, ctl)
	var codes []int
	r.Subscribe(Key{Instrument: "a", Channel: ChannelControl}, SubscriberFunc(func(e *Event) error {
		codes = append(codes, e.Control.Code)
		if e.Book == nil || e.Book.Valid() || !e.Kind.IsLoss() {
			t.Errorf("loss for a: book %v, kind %s", e.Book, e.Kind)
		}
		return nil
	}))
	book := &recorder{}
	r.Subscribe(Key{Instrument: "a", Channel: ChannelBook}, book)
	s := run(t, r)
	want := []string{
		"0/1 connect control ",
		"0/4 disconnect control a valid=false",
		"0/4 disconnect control b valid=false",
		"0/4 disconnect control ",
	}
	if strings.Join(ctl.lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("control events:\n%s\nwant:\n%s", strings.Join(ctl.lines, "\n"), strings.Join(want, "\n"))
	}
	if len(codes) != 1 || codes[0] != 1006 {
		t.Fatalf("instrument a control codes %v", codes)
	}
	wantBook := []string{
		"0/2 frame book a snapshot 0@0 valid=true",
		"0/5 frame book a level 11@1 valid=false",
		"0/6 frame book a snapshot 0@0 valid=true",
	}
	if strings.Join(book.lines, "\n") != strings.Join(wantBook, "\n") {
		t.Fatalf("book events:\n%s\nwant:\n%s", strings.Join(book.lines, "\n"), strings.Join(wantBook, "\n"))
	}
	if s.Losses["disconnect"] != 1 || s.Controls != 4 {
		t.Fatalf("losses %v controls %d", s.Losses, s.Controls)
	}
	// Connection 1's book was not touched by connection 0's loss.
	for _, b := range r.Books() {
		if b.Instrument == "c" && !b.Book.Valid() {
			t.Fatal("book c invalidated by another connection's loss")
		}
	}
}

// twoDatasets builds two interleaved fake datasets.
func twoDatasets(t testing.TB) []string {
	var a, b []rec
	a = append(a, frame(0, 10, "snap x 10 5 20 5"))
	b = append(b, frame(0, 10, "snap y 50 5 60 5"))
	for i := range 40 {
		a = append(a, frame(0, int64(20+2*i), fmt.Sprintf("lvl x b %d %d", 10+i%7, 1+i%3)))
		b = append(b, frame(0, int64(21+2*i), fmt.Sprintf("lvl y a %d %d;trade y %d 1", 60+i%5, i%4, 60)))
	}
	return []string{writeDataset(t, "fakevenue", a), writeDataset(t, "othervenue", b)}
}

func TestDigestIsDeterministic(t *testing.T) {
	paths := twoDatasets(t)
	var digests []string
	var lines [][]string
	for range 2 {
		r := newFakeReplayer(t, paths)
		c := &recorder{}
		r.Subscribe(Key{}, c)
		s := run(t, r)
		digests = append(digests, s.Digest)
		lines = append(lines, c.lines)
	}
	if digests[0] != digests[1] || !strings.HasPrefix(digests[0], "xxh64:") || len(digests[0]) != len("xxh64:")+16 {
		t.Fatalf("digests %q", digests)
	}
	if strings.Join(lines[0], "\n") != strings.Join(lines[1], "\n") {
		t.Fatal("two runs delivered different events")
	}
	// The merge interleaves the datasets by time, ties to dataset 0.
	if !strings.HasPrefix(lines[0][0], "0/1 ") || !strings.HasPrefix(lines[0][1], "1/1 ") {
		t.Fatalf("first events %q", lines[0][:2])
	}
	// Subscribers do not change the digest; a different window does.
	r := newFakeReplayer(t, paths)
	if s := run(t, r); s.Digest != digests[0] {
		t.Fatalf("digest without subscribers %s, with %s", s.Digest, digests[0])
	}
	r = newFakeReplayer(t, paths, WithWindow(30, 0))
	if s := run(t, r); s.Digest == digests[0] {
		t.Fatal("a different window gave the same digest")
	}
	// Reversing the inputs changes dataset indexes, hence the digest.
	r = newFakeReplayer(t, []string{paths[1], paths[0]})
	if s := run(t, r); s.Digest == digests[0] {
		t.Fatal("swapped inputs gave the same digest")
	}
}

func TestWindowWarmsBooksSilently(t *testing.T) {
	dir := writeDataset(t, "fakevenue", []rec{
		frame(0, 10, "snap a 10 1 20 1"),
		frame(0, 20, "lvl a b 11 2"),
		frame(0, 30, "lvl a b 12 3"),
		frame(0, 40, "lvl a b 13 4"),
		frame(0, 50, "lvl a b 14 5"),
	})
	r := newFakeReplayer(t, []string{dir}, WithWindow(30, 50))
	c := &recorder{}
	r.Subscribe(Key{}, c)
	var best []int64
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		l, _ := e.Book.Best(0)
		best = append(best, l.Price)
		return nil
	}))
	s := run(t, r)
	if len(c.lines) != 2 || c.lines[0] != "0/3 frame book a level 12@3 valid=true" {
		t.Fatalf("delivered %q", c.lines)
	}
	if best[0] != 12 || best[1] != 13 {
		t.Fatalf("best bids %v: the warm-up did not build the book", best)
	}
	if s.Frames != 4 || s.WarmupFrames != 2 {
		t.Fatalf("frames %d warmup %d", s.Frames, s.WarmupFrames)
	}
	books := r.Books()
	if len(books) != 1 || books[0].Book.Len(0) != 4 {
		t.Fatalf("books at the window end: %+v", books)
	}
	if _, err := New([]string{dir}, WithWindow(50, 30)); !errors.Is(err, ErrOption) {
		t.Fatalf("empty window: %v", err)
	}
}

func TestSeek(t *testing.T) {
	var recs []rec
	recs = append(recs, frame(0, 10, "snap a 100 1 200 1"))
	for i := range 10 {
		recs = append(recs, frame(0, int64(20+10*i), fmt.Sprintf("lvl a b %d 1", 101+i)))
	}
	dir := writeDataset(t, "fakevenue", recs)

	tests := []struct {
		name   string
		atSeq  uint64 // seek from inside the subscriber at this seq
		target int64
		want   []uint64 // delivered seqs
		wantBB int64    // best bid of the first event after the seek
	}{
		{"forward", 3, 80, []uint64{1, 2, 3, 8, 9, 10, 11}, 107},
		{"backward", 6, 40, []uint64{1, 2, 3, 4, 5, 6, 4, 5, 6, 7, 8, 9, 10, 11}, 103},
		{"to the start", 11, 0, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newFakeReplayer(t, []string{dir})
			var seqs []uint64
			var bbAfter int64 = -1
			seeked := false
			r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
				seqs = append(seqs, e.Seq)
				if seeked && bbAfter == -1 {
					l, _ := e.Book.Best(0)
					bbAfter = l.Price
				}
				if e.Seq == tc.atSeq && !seeked {
					seeked = true
					r.SeekTo(tc.target)
				}
				return nil
			}))
			s := run(t, r)
			if fmt.Sprint(seqs) != fmt.Sprint(tc.want) {
				t.Fatalf("delivered %v, want %v", seqs, tc.want)
			}
			if bbAfter != tc.wantBB {
				t.Fatalf("best bid after the seek %d, want %d", bbAfter, tc.wantBB)
			}
			if s.Seeks != 1 {
				t.Fatalf("seeks %d", s.Seeks)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(nil); !errors.Is(err, ErrNoDatasets) {
		t.Fatalf("no paths: %v", err)
	}
	if _, err := New([]string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "replayer: open") {
		t.Fatalf("not a dataset: %v", err)
	}
	dir := writeDataset(t, "nosuchvenue", nil)
	if _, err := New([]string{dir}, withDecoders(fakeFactory)); !errors.Is(err, ErrVenue) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("unknown venue: %v", err)
	}
	empty := writeDataset(t, "fakevenue", nil)
	for _, sp := range []Speed{-1, Speed(math.NaN()), Speed(math.Inf(1))} {
		if _, err := New([]string{empty}, withDecoders(fakeFactory), WithSpeed(sp)); !errors.Is(err, ErrOption) {
			t.Fatalf("speed %v: %v", float64(sp), err)
		}
	}
	r := newFakeReplayer(t, []string{empty})
	run(t, r)
	if _, err := r.Run(context.Background()); !errors.Is(err, ErrReused) {
		t.Fatalf("second Run: %v", err)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	var recs []rec
	for i := range 3000 {
		recs = append(recs, frame(0, int64(i+1), "snap a 1 1 2 1"))
	}
	dir := writeDataset(t, "fakevenue", recs)
	r := newFakeReplayer(t, []string{dir})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		if n++; n == 10 {
			cancel()
		}
		return nil
	}))
	s, err := r.Run(ctx)
	if !errors.Is(err, context.Canceled) || s == nil || s.Frames >= 3000 {
		t.Fatalf("Run = %v, frames %d", err, s.Frames)
	}
}

// TestPacedReplay checks a 1x and a 10x replay of a short recording on an
// injected clock: events keep their order and each goes out no earlier than
// its recorded offset divided by the speed, and at exactly that time on a
// clock that never oversleeps.
func TestPacedReplay(t *testing.T) {
	ms := int64(1_000_000)
	walls := []int64{1000 * ms, 1000 * ms, 1250 * ms, 1300 * ms, 2300 * ms}
	var recs []rec
	for i, w := range walls {
		recs = append(recs, frame(0, w, fmt.Sprintf("snap a %d 1 200 1", 100+i)))
	}
	dir := writeDataset(t, "fakevenue", recs)
	for _, speed := range []Speed{1, 10} {
		t.Run(speed.String(), func(t *testing.T) {
			f := &fakeSleeper{}
			r := newFakeReplayer(t, []string{dir}, WithSpeed(speed), WithSleeper(f))
			var at []int64
			var seqs []uint64
			r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
				at = append(at, f.Now())
				seqs = append(seqs, e.Seq)
				return nil
			}))
			s := run(t, r)
			for i := range walls {
				want := int64(float64(walls[i]-walls[0]) / float64(speed))
				if seqs[i] != uint64(i+1) || at[i] != want {
					t.Fatalf("event %d: seq %d at %d, want seq %d at %d", i, seqs[i], at[i], i+1, want)
				}
			}
			if s.Lateness == nil || s.Lateness.Count != uint64(len(walls)) || s.Lateness.MaxNs != 0 || s.Speed != speed.String() {
				t.Fatalf("summary lateness %+v speed %s", s.Lateness, s.Speed)
			}
		})
	}
}

// TestPauseResume pauses a running replay from a subscriber and resumes it
// from another goroutine; nothing is delivered while paused.
func TestPauseResume(t *testing.T) {
	var recs []rec
	for i := range 10 {
		recs = append(recs, frame(0, int64(i+1), "snap a 1 1 2 1"))
	}
	dir := writeDataset(t, "fakevenue", recs)
	r := newFakeReplayer(t, []string{dir})
	paused := make(chan struct{})
	resumed := make(chan struct{})
	var n, whilePaused int
	var inPause bool
	var mu sync.Mutex
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		mu.Lock()
		defer mu.Unlock()
		n++
		if inPause {
			whilePaused++
		}
		if e.Seq == 3 {
			r.Pause()
			inPause = true
			close(paused)
		}
		return nil
	}))
	go func() {
		<-paused
		mu.Lock()
		inPause = false
		mu.Unlock()
		close(resumed)
		r.Resume()
	}()
	s := run(t, r)
	<-resumed
	if n != 10 || whilePaused != 0 || s.Frames != 10 {
		t.Fatalf("delivered %d (%d while paused), frames %d", n, whilePaused, s.Frames)
	}
}

// A gap that Repair writes in place of a damaged block carries ConnAll: every
// connection of that dataset loses its books, and the loss counts once.
func TestRepairGapInvalidatesEveryConnection(t *testing.T) {
	gap := datasets.EncodeControl(datasets.Control{Err: "block dropped by repair"})
	dir := writeDataset(t, "fakevenue", []rec{
		frame(0, 2, "snap a 10 1 20 1"),
		frame(1, 3, "snap c 10 1 20 1"),
		{datasets.KindGap, datasets.ConnAll, 4, string(gap)},
		frame(1, 5, "lvl c b 11 1"),
	})
	r := newFakeReplayer(t, []string{dir})
	var invalidated []string
	r.Subscribe(Key{Channel: ChannelControl}, SubscriberFunc(func(e *Event) error {
		if e.Kind == datasets.KindGap && e.Instrument != "" {
			invalidated = append(invalidated, e.Instrument)
		}
		return nil
	}))
	s := run(t, r)
	if strings.Join(invalidated, ",") != "a,c" {
		t.Fatalf("gap invalidated %v, want a and c", invalidated)
	}
	if s.Losses["gap"] != 1 {
		t.Fatalf("losses %v, want one gap", s.Losses)
	}
	for _, b := range r.Books() {
		if b.Book.Valid() {
			t.Errorf("book %s on conn %d still valid after a dataset-wide gap", b.Instrument, b.Conn)
		}
		if b.Conn == datasets.ConnAll {
			t.Errorf("a phantom connection %d was created", b.Conn)
		}
	}
}
