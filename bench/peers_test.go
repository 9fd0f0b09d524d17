package bench

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

// BenchmarkPeer runs the peers' exact workloads (testdata/peers, semantics
// in its README) through the public decoders: one frame parsed and applied
// to a persistent book per op, so ns/op is ns/frame.
func BenchmarkPeer(b *testing.B) {
	// polymarket-cpp-client benchmark_ws_parse: one persistent book.
	cpp := func(name string) []byte { return readFrames(b, "testdata/peers/cpp_ws_parse/"+name)[0] }
	book100, pc2, book2 := cpp("book_100_levels.json"), cpp("price_change_2.json"), cpp("book_2_levels.json")
	b.Run("cpp/book_100_levels", func(b *testing.B) {
		benchFrames(b, venue.Polymarket, nil, [][]byte{book100}, 100)
	})
	b.Run("cpp/price_change_2", func(b *testing.B) {
		// The book the peer's loop leaves before the price changes.
		benchFrames(b, venue.Polymarket, [][]byte{book100}, [][]byte{pc2}, 0)
	})
	b.Run("cpp/book_2_levels", func(b *testing.B) {
		benchFrames(b, venue.Polymarket, [][]byte{book100, pc2}, [][]byte{book2}, 2)
	})

	// polyfill-rs ws_hot_path: a pre-warmed book, the 16-digit timestamp
	// rewritten in place to START+1, START+2, … before each iteration.
	for _, n := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("polyfill/levels=%d", n), func(b *testing.B) {
			frame := readFrames(b, fmt.Sprintf("testdata/peers/polyfill_ws/book_%d_levels_per_side.json", n))[0]
			ts := timestampDigits(b, frame)
			start := uint64(0)
			for _, c := range ts {
				start = start*10 + uint64(c-'0')
			}
			d := newDecoder(venue.Polymarket)
			var out venue.Frame
			if err := d.Decode(frame, 0, &out); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := CPUTime()
			for i := 0; i < b.N; i++ {
				putDigits(ts, start+uint64(i)+1)
				if err := d.Decode(frame, 0, &out); err != nil {
					b.Fatal(err)
				}
			}
			reportCPUPerUnit(b, cpu0, b.N, "frame")
			reportPerUnit(b, b.N, "frame")
			reportPerUnit(b, b.N*2*n, "level")
		})
	}
	b.Run("polyfill/churn_64x32", func(b *testing.B) {
		frames := readFrames(b, "testdata/peers/polyfill_ws/churn_64_levels_x32.jsonl")
		benchFrames(b, venue.Polymarket, frames[:1], frames, 128)
	})

	// A Hyperliquid l2Book frame, 20 levels per side: decode + replace.
	b.Run("hl/l2book_20x2", func(b *testing.B) {
		frame := readFrames(b, "testdata/peers/hl_l2book/l2book_btc_20x2.json")[0]
		benchFrames(b, venue.Hyperliquid, nil, [][]byte{frame}, 40)
	})
}

// benchFrames decodes frames in turn, one per op, on a decoder that first
// applied warm (and one pass of frames). levels > 0 also reports ns/level
// for frames of that many levels. cpu-ns/frame is the process's CPU time
// per frame: on a shared host, where the wall time per frame doubles when
// the benchmark's thread waits for a core, it is the figure that repeats.
func benchFrames(b *testing.B, v string, warm, frames [][]byte, levels int) {
	d := newDecoder(v)
	var out venue.Frame
	for _, f := range append(append([][]byte(nil), warm...), frames...) {
		if err := d.Decode(f, 0, &out); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
	}
	var total int64
	for _, f := range frames {
		total += int64(len(f))
	}
	if len(frames) == 1 {
		b.SetBytes(total)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := CPUTime()
	for i := 0; i < b.N; i++ {
		if err := d.Decode(frames[i%len(frames)], 0, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPUPerUnit(b, cpu0, b.N, "frame")
	if len(frames) > 1 {
		// Bytes actually decoded, as frames differ in size.
		var done int64
		done = int64(b.N/len(frames)) * total
		for _, f := range frames[:b.N%len(frames)] {
			done += int64(len(f))
		}
		reportMBs(b, done)
	}
	reportPerUnit(b, b.N, "frame")
	if levels > 0 {
		reportPerUnit(b, b.N*levels, "level")
	}
}

// reportPerUnit reports the benchmark's time per unit, for units other than ops.
func reportPerUnit(b *testing.B, units int, unit string) {
	if units > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(units), "ns/"+unit)
	}
}

// reportCPUPerUnit reports the process's CPU time since cpu0 (CPUTime) per
// unit, where the system gives it.
func reportCPUPerUnit(b *testing.B, cpu0 int64, units int, unit string) {
	if cpu := CPUTime() - cpu0; cpu0 > 0 && units > 0 {
		b.ReportMetric(float64(cpu)/float64(units), "cpu-ns/"+unit)
	}
}

// reportMBs reports throughput for a benchmark whose ops differ in size.
func reportMBs(b *testing.B, bytes int64) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(bytes)/1e6/s, "MB/s")
	}
}

// timestampDigits returns the digits of the bare-number "timestamp" in frame
// (aliasing frame, to be rewritten in place).
func timestampDigits(b *testing.B, frame []byte) []byte {
	i := bytes.Index(frame, []byte(`"timestamp":`))
	if i < 0 {
		b.Fatal(`no "timestamp":`)
	}
	i += len(`"timestamp":`)
	j := i
	for j < len(frame) && frame[j] >= '0' && frame[j] <= '9' {
		j++
	}
	if j == i {
		b.Fatal("timestamp is not a bare number")
	}
	return frame[i:j]
}

// putDigits writes v right-aligned into dst, zero-padded.
func putDigits(dst []byte, v uint64) {
	for k := len(dst) - 1; k >= 0; k-- {
		dst[k] = byte('0' + v%10)
		v /= 10
	}
}
