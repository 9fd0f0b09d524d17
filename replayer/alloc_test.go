package replayer

import (
	"context"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// dispatchRig is a Replayer set up to run process() on in-memory records,
// so the engine's own cost and allocations are measured without the reader.
func dispatchRig(t testing.TB, w workload) (*Replayer, []datasets.Record) {
	t.Helper()
	dir := writeDataset(t, w.venue, nil)
	r, err := New([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	// The state Run sets up before its loop.
	r.started.Store(true)
	var recs []datasets.Record
	for i, f := range append(loadFrames(t, w.head), loadFrames(t, w.cycle)...) {
		recs = append(recs, datasets.Record{Kind: datasets.KindFrame, Seq: uint64(i + 1), WallNs: fixtureBaseNs + int64(i), Payload: f})
	}
	return r, recs
}

// TestDispatchDoesNotAllocate asserts zero allocations per frame in steady
// state through decode, book, routing, digest, quality and delivery to
// subscribers. On failure it says how many are the decoder's own.
func TestDispatchDoesNotAllocate(t *testing.T) {
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			r, recs := dispatchRig(t, w)
			var n int
			r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error { n++; return nil }))
			r.Subscribe(Key{Venue: w.venue, Channel: ChannelBook}, SubscriberFunc(func(e *Event) error { n++; return nil }))
			cycle := recs[len(loadFrames(t, w.head)):]
			for i := range recs { // warm up: instruments, routes, book capacity
				if err := r.run.eng.Process(0, &recs[i], true); err != nil {
					t.Fatal(err)
				}
			}
			i := 0
			allocs := testing.AllocsPerRun(1000, func() {
				r.run.eng.Process(0, &cycle[i%len(cycle)], true)
				i++
			})
			// The same frames through the venue decoder alone, to say
			// whose allocations they are on failure.
			dec := r.run.eng.Conns()[0].Dec
			var fr venue.Frame
			i = 0
			decAllocs := testing.AllocsPerRun(1000, func() {
				dec.Decode(cycle[i%len(cycle)].Payload, 1, &fr)
				i++
			})
			if r.run.eng.Counts.DecodeErrors != 0 {
				t.Fatalf("decode errors: %+v", r.run.firstErrors)
			}
			if n == 0 {
				t.Fatal("no event delivered")
			}
			if allocs != 0 {
				t.Errorf("%v allocations per frame (the decoder alone: %v), want 0", allocs, decAllocs)
			}
		})
	}
}

// BenchmarkDispatch is the engine alone on in-memory frames: decode, book,
// routing, digest and a no-op subscriber, without the dataset reader.
func BenchmarkDispatch(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			r, recs := dispatchRig(b, w)
			r.Subscribe(Key{}, SubscriberFunc(func(*Event) error { return nil }))
			cycle := recs[len(loadFrames(b, w.head)):]
			for i := range recs {
				r.run.eng.Process(0, &recs[i], true)
			}
			var bytes int64
			for _, c := range cycle {
				bytes += int64(len(c.Payload))
			}
			b.SetBytes(bytes / int64(len(cycle)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r.run.eng.Process(0, &cycle[i%len(cycle)], true)
			}
		})
	}
}

// BenchmarkDecodeOnly is the venue decoder alone on the same frames: the
// difference to BenchmarkDispatch is the engine's own cost.
func BenchmarkDecodeOnly(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			d, _ := venueDriver(w.venue)
			dec := d.NewDecoder(venue.DecoderOptions{HashCheck: true})
			var fr venue.Frame
			frames := append(loadFrames(b, w.head), loadFrames(b, w.cycle)...)
			cycle := frames[len(loadFrames(b, w.head)):]
			for _, f := range frames {
				dec.Decode(f, 1, &fr)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				dec.Decode(cycle[i%len(cycle)], 1, &fr)
			}
		})
	}
}

// stubDecoder replays pre-decoded frames of a real decoder, so a benchmark
// measures the engine without the parsing.
type stubDecoder struct {
	venue.Decoder
	frames [][]venue.Event
	i      int
}

func (s *stubDecoder) Decode(frame []byte, recvNs int64, out *venue.Frame) error {
	out.Events = append(out.Events[:0], s.frames[s.i%len(s.frames)]...)
	s.i++
	return nil
}

// BenchmarkEngine is the engine's own cost per frame: routing, digest,
// quality and a no-op subscriber on pre-decoded real events.
func BenchmarkEngine(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			r, recs := dispatchRig(b, w)
			r.Subscribe(Key{}, SubscriberFunc(func(*Event) error { return nil }))
			nh := len(loadFrames(b, w.head))
			for i := range recs {
				r.run.eng.Process(0, &recs[i], true)
			}
			cs := r.run.eng.Conns()[0]
			stub := &stubDecoder{Decoder: cs.Dec}
			var fr venue.Frame
			for _, c := range recs[nh:] {
				cs.Dec.Decode(c.Payload, 1, &fr)
				stub.frames = append(stub.frames, append([]venue.Event(nil), fr.Events...))
			}
			cs.Dec = stub
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r.run.eng.Process(0, &recs[nh+i%(len(recs)-nh)], true)
			}
		})
	}
}

// TestRunAllocationsDoNotGrow replays a recording and one ten times longer,
// end to end from disk: the extra frames may not cost allocations (setup
// and per-segment costs aside), so memory stays flat as recordings grow.
func TestRunAllocationsDoNotGrow(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 22,000 frames")
	}
	w := workloads[0]
	small, _ := benchDataset(t, w, 2_000)
	large, _ := benchDataset(t, w, 20_000)
	allocs := func(dir string) float64 {
		return testing.AllocsPerRun(2, func() {
			r, err := New([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			r.Subscribe(Key{}, SubscriberFunc(func(*Event) error { return nil }))
			if _, err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
	a, b := allocs(small), allocs(large)
	if perFrame := (b - a) / 18_000; perFrame > 0.01 {
		t.Fatalf("%v allocations for 2,000 frames, %v for 20,000: %.3f per extra frame", a, b, perFrame)
	}
}
