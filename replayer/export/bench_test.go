package export

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/samplegen"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// countWriter counts what a sink writes and drops it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkDepthEveryEvent is the headline export figure: depth, 25 levels,
// a row on every book change, of a 40-level book taking single-level changes
// (the Polymarket price_change shape). One op is one book state exported;
// rows/s is book states per second on one core, MB/s the file bytes written.
func BenchmarkDepthEveryEvent(b *testing.B) {
	// What the harness itself costs (changing the book, as a decoder would),
	// to subtract from the figures below.
	b.Run("harness", func(b *testing.B) {
		sb := newSynthBook("x", 40)
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			sb.next(i)
		}
		b.ReportMetric(float64(b.N)/(cpuTime()-cpu0).Seconds(), "rows/cpu-s")
	})
	for _, f := range []Format{FormatParquet, FormatArrow, FormatCSV} {
		for _, cmp := range []columnar.Compression{0, columnar.Zstd} {
			if cmp == columnar.Zstd && f != FormatParquet {
				continue
			}
			name := f.String()
			if cmp == columnar.Zstd {
				name += "-zstd"
			}
			b.Run(name, func(b *testing.B) {
				w := &countWriter{}
				opts := []Option{WithLevels(25)}
				if cmp != 0 {
					opts = append(opts, WithCompression(cmp))
				}
				s, err := New(w, TableDepth, f, opts...)
				if err != nil {
					b.Fatal(err)
				}
				sb := newSynthBook("72936048731589292555781174533757608024096898681344338816447372274344589246891", 40)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					if err := s.OnEvent(sb.next(i)); err != nil {
						b.Fatal(err)
					}
				}
				el, cpu := b.Elapsed(), cpuTime()-cpu0
				b.StopTimer()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/el.Seconds(), "rows/s")
				// On a shared machine wall time includes waiting for a core;
				// rows per CPU-second (this process, GC included) does not.
				b.ReportMetric(float64(b.N)/cpu.Seconds(), "rows/cpu-s")
				b.ReportMetric(float64(w.n)/1e6/el.Seconds(), "MB/s")
				b.ReportMetric(float64(w.n)/float64(b.N), "B/row")
			})
		}
	}
}

// generated writes a samplegen session of d into a temp dataset.
func generated(tb testing.TB, v string, d time.Duration) string {
	tb.Helper()
	opts := samplegen.Options{Seed: 1, Duration: d, FastHashes: true}
	m, err := samplegen.Manifest(v, opts)
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(tb.TempDir(), v)
	w, err := datasets.Create(dir, m)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := samplegen.Generate(v, opts, w); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// heapPeak samples the live heap (after a collection, so GC pacing does not
// blur it) every 16384 events: what the replay and the sink hold, which is
// what would grow if rows accumulated.
type heapPeak struct {
	n    int
	peak uint64
	ms   runtime.MemStats
}

func (h *heapPeak) OnEvent(*replayer.Event) error {
	h.n++
	if h.n%16384 == 0 {
		h.sample()
	}
	return nil
}

func (h *heapPeak) sample() {
	runtime.GC()
	runtime.ReadMemStats(&h.ms)
	h.peak = max(h.peak, h.ms.HeapAlloc)
}

// cpuTime is the user+system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * 1024 // Linux reports KiB
}

// BenchmarkExportMemory replays a generated Polymarket session of 1× and 10×
// the sample's length through a depth (every event, 25 levels) Parquet
// sink and reports the peak live heap (sampled after a GC every 16384
// events) and the process's peak RSS after each: with streaming batches both
// stay flat while the input grows tenfold.
// Run the sizes in order (-bench ExportMemory) for the RSS figure to mean
// anything, since the peak RSS of a process only grows.
func BenchmarkExportMemory(b *testing.B) {
	for _, mult := range []int{1, 10} {
		b.Run(fmt.Sprintf("%dx", mult), func(b *testing.B) {
			b.StopTimer()
			path := generated(b, venue.Polymarket, time.Duration(mult)*10*time.Minute)
			runtime.GC()
			b.StartTimer()
			var rows uint64
			var hp heapPeak
			for i := 0; i < b.N; i++ {
				s, err := New(&countWriter{}, TableDepth, FormatParquet)
				if err != nil {
					b.Fatal(err)
				}
				replay(b, []string{path}, s, &hp)
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				rows = s.Rows()
			}
			b.ReportMetric(float64(rows), "rows")
			b.ReportMetric(float64(hp.peak)/(1<<20), "peak-live-heap-MiB")
			b.ReportMetric(float64(maxRSS())/(1<<20), "maxrss-MiB")
		})
	}
}

// TestMemoryFlat is the pass/fail form: the sink's live heap (measured after
// a collection, so GC pacing does not blur it) when the input grows tenfold
// stays within a small margin of the 1× figure: batches are flushed as they
// fill and nothing accumulates per row. With batches written on other
// goroutines it is measured once the batch in flight is written (a row
// group being encoded holds its pages until it is copied out, whatever the
// input's length), sequentially at any point.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("memory growth check skipped in -short")
	}
	for _, encoders := range []int{1, 2} {
		peak := func(events int) uint64 {
			runtime.GC()
			s, err := New(io.Discard, TableDepth, FormatParquet, WithBatchRows(8192), WithEncoders(encoders))
			if err != nil {
				t.Fatal(err)
			}
			books := []*synthBook{newSynthBook("a", 40), newSynthBook("b", 40), newSynthBook("c", 40)}
			var live uint64
			var ms runtime.MemStats
			for i := 0; i < events; i++ {
				if err := s.OnEvent(books[i%len(books)].next(i)); err != nil {
					t.Fatal(err)
				}
				if i%(events/8) == events/16 { // mid-batch and between batches alike
					if err := s.cw.Wait(); err != nil {
						t.Fatal(err)
					}
					runtime.GC()
					runtime.ReadMemStats(&ms)
					live = max(live, ms.HeapAlloc)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return live
		}
		const n = 20_000
		p1, p10 := peak(n), peak(10*n)
		t.Logf("encoders %d: peak live heap: %d events %.1f MiB, %d events %.1f MiB", encoders, n, float64(p1)/(1<<20), 10*n, float64(p10)/(1<<20))
		if float64(p10) > 1.2*float64(p1)+4<<20 {
			t.Fatalf("encoders %d: peak heap grew from %.1f MiB to %.1f MiB with 10× the input", encoders, float64(p1)/(1<<20), float64(p10)/(1<<20))
		}
	}
}

// BenchmarkExportSample is the end-to-end figure on the real-shaped sample
// session (samplegen seed 1, ten minutes): replay (decode, books, Polymarket
// hash checks) plus the depth sink (25 levels, every event, Parquet), and the
// replay alone with a no-op subscriber, so that the sink's own cost per row
// on real books is (sink − replay-only) / rows.
func BenchmarkExportSample(b *testing.B) {
	for _, v := range []string{venue.Polymarket, venue.Hyperliquid} {
		path := generated(b, v, 10*time.Minute)
		for _, mode := range []string{"replay-only", "depth-parquet"} {
			b.Run(v+"/"+mode, func(b *testing.B) {
				var rows uint64
				var out int64
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					r, err := replayer.New([]string{path})
					if err != nil {
						b.Fatal(err)
					}
					w := &countWriter{}
					var s *Sink
					if mode == "replay-only" {
						r.Subscribe(replayer.Key{}, replayer.SubscriberFunc(func(*replayer.Event) error { return nil }))
					} else {
						if s, err = New(w, TableDepth, FormatParquet); err != nil {
							b.Fatal(err)
						}
						r.Subscribe(replayer.Key{}, s)
					}
					if _, err := r.Run(context.Background()); err != nil {
						b.Fatal(err)
					}
					if s != nil {
						if err := s.Close(); err != nil {
							b.Fatal(err)
						}
						rows, out = s.Rows(), w.n
					}
				}
				cpu := (cpuTime() - cpu0).Seconds() / float64(b.N)
				b.ReportMetric(cpu*1e3, "cpu-ms/op")
				if rows > 0 {
					el := b.Elapsed().Seconds() / float64(b.N)
					b.ReportMetric(float64(rows), "rows")
					b.ReportMetric(float64(rows)/el, "rows/s")
					b.ReportMetric(float64(out)/1e6/el, "MB/s")
				}
			})
		}
	}
}
