package recorder_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCapture measures what one capture session sustains from a
// loopback server sending real frames on one socket into a real dataset
// (zstd, 1 s flush interval): frames/s, MB/s (SetBytes), CPU per frame (the
// whole process, so it includes the fake server, which writes prebuilt
// batches with one syscall per ~64 KB), frames dropped (must be 0) and the
// p99 time from socket read to the end of the flush that wrote the frame.
//
// "paced-100k" sends 100,000 frames/s, about 150x the busiest real load on
// one socket (Hyperliquid fast l2Book + bbo on 178 perps, 672 frames/s);
// "flood" sends as fast as the socket takes them. "live=on" runs the live
// engine (every frame decoded into books, hash checks, integrity checks, off
// the write path) as capture run does by default, "live=off" records only;
// compare them in one run (-count, benchstat): frames/s with live=on should
// stay within 10% of live=off, with 0 drops. "live-skipped" reports records
// the live engine fell behind on (kept in the recording).
func BenchmarkCapture(b *testing.B) {
	for _, bc := range []struct {
		name  string
		venue string
		rate  int
	}{
		{"hyperliquid/paced-100k", "hyperliquid", 100_000},
		{"hyperliquid/flood", "hyperliquid", 0},
		{"polymarket/paced-100k", "polymarket", 100_000},
		{"polymarket/flood", "polymarket", 0},
	} {
		for _, live := range []bool{false, true} {
			name := bc.name + "/live=off"
			if live {
				name = bc.name + "/live=on"
			}
			b.Run(name, func(b *testing.B) { benchCapture(b, bc.venue, bc.rate, live) })
		}
	}
}

func benchCapture(b *testing.B, venueName string, rate int, live bool) {
	var cfg fakeexchange.Config
	var spec recorder.Spec
	if venueName == "hyperliquid" {
		cfg = fakeexchange.HyperliquidConfig()
	} else {
		cfg = fakeexchange.PolymarketConfig()
	}
	cfg.Flood, cfg.FloodRate = true, rate
	s := fakeexchange.New(cfg)
	defer s.Close()
	if venueName == "hyperliquid" {
		spec = hlSpec(s, []string{"l2Book+fast", "bbo"}, "BTC", "ETH", "SOL", "HYPE")
	} else {
		spec = pmSpec(s, fakeexchange.PolymarketStreamAsset, fakeexchange.PolymarketOtherAsset)
	}
	r, err := recorder.New(spec, recorder.WithFlushInterval(time.Second), recorder.WithStallTimeout(time.Hour),
		recorder.WithLive(live))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := r.Prepare(ctx); err != nil {
		b.Fatal(err)
	}
	w, err := datasets.Create(filepath.Join(b.TempDir(), "ds"), r.Manifest(), datasets.WithFlushInterval(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, w) }()
	for r.Stats().Frames < 1000 {
		time.Sleep(time.Millisecond)
	}
	st0 := r.Stats()
	cpu0 := cpuTime()
	start := time.Now()
	b.ResetTimer()
	for r.Stats().Frames < st0.Frames+uint64(b.N) {
		time.Sleep(200 * time.Microsecond)
	}
	b.StopTimer()
	el := time.Since(start)
	cpu := cpuTime() - cpu0
	st := r.Stats()
	frames, bytes := st.Frames-st0.Frames, st.Bytes-st0.Bytes
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	w.Close()
	st = r.Stats() // drops and latency over the whole run, shutdown included
	b.SetBytes(int64(bytes / max(frames, 1)))
	b.ReportMetric(float64(frames)/el.Seconds(), "frames/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(frames), "cpu-ns/frame")
	b.ReportMetric(float64(st.Dropped), "drops")
	if live {
		b.ReportMetric(float64(r.LiveStats().Skipped), "live-skipped")
	}
	b.ReportMetric(float64(st.DiskLag.P99.Microseconds())/1000, "p99-read-to-disk-ms")
}
