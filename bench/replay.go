package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/tapedeck/tapedeck/replayer"
)

// ReplayRun is one measured replay.
type ReplayRun struct {
	Frames uint64 `json:"frames"`
	Bytes  uint64 `json:"bytes"` // frame payload bytes
	WallNs int64  `json:"wall_ns"`
	CPUNs  int64  `json:"cpu_ns"` // process CPU time (user + system) during the run; 0 if unknown
	Allocs uint64 `json:"allocs"` // heap allocations during the run
}

// ReplayResult is what MeasureReplay found: every run, and the medians of
// the per-unit figures across runs.
type ReplayResult struct {
	Paths  []string    `json:"paths"`
	Runs   []ReplayRun `json:"runs"`
	Digest string      `json:"digest"` // the replay digest (the same on every run)
	// RecordedNs is the span of receive times the datasets cover.
	RecordedNs int64 `json:"recorded_ns"`

	FramesPerSec   float64 `json:"frames_per_sec"`
	MBPerSec       float64 `json:"mb_per_sec"` // 10^6 frame bytes per second
	NsPerFrame     float64 `json:"ns_per_frame"`
	AllocsPerFrame float64 `json:"allocs_per_frame"`
	// CPUPerRecordedHour is CPU seconds per hour of recorded time (0 when
	// the CPU time or the span is unknown).
	CPUPerRecordedHour float64 `json:"cpu_s_per_recorded_hour"`
	// PeakRSS is the process's peak resident set in bytes after the runs
	// (0 when the system does not say); it includes the whole process.
	PeakRSS int64 `json:"peak_rss_bytes"`
}

// MeasureReplay replays the datasets at paths runs times, flat out, through
// their decoders and books into a no-op subscriber (the end-to-end path of
// every replay), and measures each run. It fails on the replayer's errors,
// and when runs disagree on the digest (the replay must be deterministic).
// progress, when not nil, is called after each run.
func MeasureReplay(ctx context.Context, paths []string, runs int, progress func(run int, r ReplayRun), opts ...replayer.Option) (*ReplayResult, error) {
	if runs < 1 {
		return nil, fmt.Errorf("bench: measure replay: runs %d, want at least 1", runs)
	}
	res := &ReplayResult{Paths: paths}
	noop := replayer.SubscriberFunc(func(*replayer.Event) error { return nil })
	var ms runtime.MemStats
	for i := 0; i < runs; i++ {
		r, err := replayer.New(paths, opts...)
		if err != nil {
			return nil, err
		}
		r.Subscribe(replayer.Key{}, noop)
		runtime.GC() // start each run from the same heap
		runtime.ReadMemStats(&ms)
		mallocs := ms.Mallocs
		cpu0 := CPUTime()
		t0 := time.Now()
		sum, err := r.Run(ctx)
		wall := time.Since(t0)
		cpu := CPUTime() - cpu0
		runtime.ReadMemStats(&ms)
		if err != nil {
			return nil, err
		}
		if res.Digest != "" && sum.Digest != res.Digest {
			return nil, fmt.Errorf("bench: measure replay: run %d digest %s differs from %s", i+1, sum.Digest, res.Digest)
		}
		res.Digest = sum.Digest
		res.RecordedNs = r.EndNs() - r.StartNs()
		run := ReplayRun{Frames: sum.Frames, Bytes: sum.Bytes, WallNs: wall.Nanoseconds(), CPUNs: cpu, Allocs: ms.Mallocs - mallocs}
		res.Runs = append(res.Runs, run)
		if progress != nil {
			progress(i+1, run)
		}
	}
	per := func(f func(ReplayRun) float64) float64 {
		xs := make([]float64, 0, len(res.Runs))
		for _, r := range res.Runs {
			xs = append(xs, f(r))
		}
		return Median(xs)
	}
	res.NsPerFrame = per(func(r ReplayRun) float64 { return float64(r.WallNs) / max(float64(r.Frames), 1) })
	res.FramesPerSec = per(func(r ReplayRun) float64 { return float64(r.Frames) / max(float64(r.WallNs), 1) * 1e9 })
	res.MBPerSec = per(func(r ReplayRun) float64 { return float64(r.Bytes) / max(float64(r.WallNs), 1) * 1e3 })
	res.AllocsPerFrame = per(func(r ReplayRun) float64 { return float64(r.Allocs) / max(float64(r.Frames), 1) })
	if res.RecordedNs > 0 {
		res.CPUPerRecordedHour = per(func(r ReplayRun) float64 { return float64(r.CPUNs) / 1e9 / (float64(res.RecordedNs) / 3.6e12) })
	}
	res.PeakRSS = PeakRSS()
	return res, nil
}
