// Package latency measures, in benchmarks, how long a reader takes while a
// writer runs flat out on another goroutine: the contention a strategy thread
// sees when it reads a book the replayer or recorder is updating.
package latency

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// ReaderUnderWriter calls write(0) once, then write(1), write(2), … on a
// goroutine until the benchmark ends, while the benchmark goroutine times b.N
// calls of read. It reports the reads' p50, p99, p99.9, p99.99 and maximum
// (read-p50-ns …, read-max-ns) and the writer's mean cost per call
// (write-ns/frame).
func ReaderUnderWriter(b *testing.B, write func(i int), read func()) {
	var stop atomic.Bool
	var frames, writerNs int64
	done := make(chan struct{})
	write(0) // a first state before the reader starts
	go func() {
		defer close(done)
		start := time.Now()
		i := 1
		for !stop.Load() {
			write(i)
			i++
		}
		writerNs = time.Since(start).Nanoseconds()
		frames = int64(i - 1)
	}()
	lat := make([]int64, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		read()
		lat[i] = time.Since(t0).Nanoseconds()
	}
	b.StopTimer()
	stop.Store(true)
	<-done
	slices.Sort(lat)
	pct := func(q float64) float64 { return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) }
	b.ReportMetric(pct(0.50), "read-p50-ns")
	b.ReportMetric(pct(0.99), "read-p99-ns")
	b.ReportMetric(pct(0.999), "read-p99.9-ns")
	b.ReportMetric(pct(0.9999), "read-p99.99-ns")
	b.ReportMetric(float64(lat[len(lat)-1]), "read-max-ns")
	if frames > 0 {
		b.ReportMetric(float64(writerNs)/float64(frames), "write-ns/frame")
	}
}
