package datasets

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// benchRecords cycles the real frames into about size bytes of payload,
// one record every stepNs. So that the cycle does not repeat byte for byte,
// each copy gets its record's time in place of every 13-digit epoch-ms
// number and a deterministic walk of the last digit of short numbers (prices
// and sizes); long ids and hashes stay as they are, as on the wire.
func benchRecords(tb testing.TB, size int, stepNs int64) []Record {
	frames := realFrames(tb)
	var recs []Record
	total := 0
	rng := uint64(0x9E3779B97F4A7C15)
	for i := 0; total < size; i++ {
		wall := baseWallNs + int64(i)*stepNs + int64(i%13)
		f := perturb(frames[i%len(frames)], wall/1e6, &rng)
		recs = append(recs, Record{Kind: KindFrame, Conn: uint32(i % 2), WallNs: wall, MonoNs: int64(i) * stepNs, Payload: f})
		total += len(f)
	}
	return recs
}

func perturb(f []byte, ms int64, rng *uint64) []byte {
	out := append([]byte(nil), f...)
	msDigits := strconv.AppendInt(nil, ms, 10)
	for i := 0; i < len(out); {
		if out[i] < '0' || out[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(out) && (out[j] >= '0' && out[j] <= '9' || out[j] == '.') {
			j++
		}
		switch n := j - i; {
		case n == 13 && len(msDigits) == 13:
			copy(out[i:j], msDigits)
		case n <= 8:
			*rng ^= *rng << 13
			*rng ^= *rng >> 7
			*rng ^= *rng << 17
			if *rng%3 == 0 && out[j-1] != '.' {
				out[j-1] = '0' + byte(*rng>>8%10)
			}
		}
		i = j
	}
	return out
}

// cpuClock measures the CPU time of this process, so that a benchmark can
// report throughput per CPU-second alongside wall-clock MB/s: on a shared
// machine the wall clock also counts time other processes held the core.
// stop and resume follow b.StopTimer and b.StartTimer.
type cpuClock struct{ start, total time.Duration }

func (c *cpuClock) stop()   { c.total += cpuNow() - c.start }
func (c *cpuClock) resume() { c.start = cpuNow() }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() *cpuClock { return &cpuClock{start: cpuNow()} }

// report adds "cpu-MB/s": bytes per op times b.N over the CPU time used
// while running; call it with the clock running.
func (c *cpuClock) report(b *testing.B, bytesPerOp int64) {
	if d := c.total + cpuNow() - c.start; d > 0 {
		b.ReportMetric(float64(bytesPerOp)*float64(b.N)/d.Seconds()/1e6, "cpu-MB/s")
	}
}

func payloadBytes(recs []Record) int64 {
	var n int64
	for i := range recs {
		n += int64(len(recs[i].Payload))
	}
	return n
}

// BenchmarkWrite measures Append+seal+write throughput in MB/s of raw
// frame bytes, one goroutine, per zstd level.
func BenchmarkWrite(b *testing.B) {
	recs := benchRecords(b, 8<<20, 250_000)
	for _, level := range []int{1, 2, 3} {
		b.Run("level="+strconv.Itoa(level), func(b *testing.B) {
			b.SetBytes(payloadBytes(recs))
			b.ReportAllocs()
			var disk int64
			cpu := startCPU()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				cpu.stop()
				dir := filepath.Join(b.TempDir(), "ds")
				cpu.resume()
				b.StartTimer()
				w, err := Create(dir, Manifest{}, WithFlushInterval(0), WithLevel(level), WithFsync(FsyncNever))
				if err != nil {
					b.Fatal(err)
				}
				for j := range recs {
					if _, err := w.Append(&recs[j]); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu.stop()
				disk = int64(w.Stats().DiskBytes)
				w.Close()
				cpu.resume()
				b.StartTimer()
			}
			cpu.report(b, payloadBytes(recs))
			b.ReportMetric(float64(disk)/float64(len(recs)), "disk-B/frame")
			b.ReportMetric(float64(payloadBytes(recs))/float64(disk), "ratio")
		})
	}
}

// BenchmarkRead measures Open+Next over a whole dataset: read, checksum,
// decompress, in MB/s of raw frame bytes.
func BenchmarkRead(b *testing.B) {
	recs := benchRecords(b, 8<<20, 250_000)
	for _, dict := range []int{0, DefaultDictSize} {
		b.Run(fmt.Sprintf("dict=%d", dict), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "ds")
			writeRecords(b, dir, recs, WithDictSize(dict))
			b.SetBytes(payloadBytes(recs))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			for i := 0; i < b.N; i++ {
				r, err := Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for r.Next() {
					n++
				}
				if r.Err() != nil || n != len(recs) {
					b.Fatal(n, r.Err())
				}
				r.Close()
			}
			cpu.report(b, payloadBytes(recs))
		})
	}
}

// BenchmarkSeek24h seeks to a random minute of a sparse 24-hour dataset (a
// frame every 4 s, each sealed in its own block as the 1 s flush ticker
// would, hourly segments) with a fresh Open each time, as a replay starting
// mid-day would, and reads the first record. "live" is the layout as
// written (24 segments of 900 one-frame blocks); "compacted" is what
// finished segments become (WithCompaction).
func BenchmarkSeek24h(b *testing.B) {
	const step = 4 * time.Second
	for _, layout := range []string{"live", "compacted"} {
		b.Run(layout, func(b *testing.B) {
			dir := sparseDay(b, step, layout == "compacted")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				minute := int64((i * 7919) % (24 * 60))
				target := baseWallNs + minute*int64(time.Minute) + 1
				r, err := Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.SeekTime(target); err != nil {
					b.Fatal(err)
				}
				if !r.Next() || r.Record().WallNs < target || r.Record().WallNs > target+int64(step) {
					b.Fatal("seek missed", r.Err())
				}
				r.Close()
			}
		})
	}
}

var (
	benchDataMu  sync.Mutex
	benchDataDir string
)

// sparseDay builds (once per test binary and layout: it takes a while) the
// 24-hour dataset of BenchmarkSeek24h.
func sparseDay(b *testing.B, step time.Duration, compact bool) string {
	benchDataMu.Lock()
	defer benchDataMu.Unlock()
	if benchDataDir == "" {
		d, err := os.MkdirTemp("", "tapedeck-seek24h-")
		if err != nil {
			b.Fatal(err)
		}
		benchDataDir = d
	}
	dir := filepath.Join(benchDataDir, fmt.Sprintf("compact=%v", compact))
	if _, err := os.Stat(filepath.Join(dir, ManifestName)); err == nil {
		return dir
	}
	frames := realFrames(b)
	w, err := Create(dir, Manifest{}, WithFlushInterval(0), WithFsync(FsyncNever), WithCompaction(compact))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < int(24*time.Hour/step); i++ {
		r := Record{Kind: KindFrame, WallNs: baseWallNs + int64(i)*int64(step), MonoNs: int64(i) * int64(step), Payload: frames[i%len(frames)]}
		if _, err := w.Append(&r); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil { // one block per frame, as the 1 s ticker would
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if s := len(segmentPaths(b, dir)); s != 24 {
		b.Fatalf("%d segments", s)
	}
	return dir
}

func removeBenchData() {
	if benchDataDir != "" {
		os.RemoveAll(benchDataDir)
	}
}

// TestCompressionVersusPeers prints (with -v) bytes on disk for the same
// frames as a tapedeck dataset, as hftbacktest's gzip-default
// "<recv_ns> <frame>" lines and as Tardis's zstd-default "<ISO ts> <frame>"
// lines, and fails if the dataset is not the smallest. It runs on the real
// fixture frames cycled at about 1 MB/s (a busy socket) with a block sealed
// every second as the flush ticker would, and on the shipped samples.
func TestCompressionVersusPeers(t *testing.T) {
	if raceEnabled {
		t.Skip("8 MB of compression is slow under the race detector and checks nothing racy")
	}
	// recordLive writes recs as a live capture would: a block sealed every
	// second of receive time (the flush ticker), default options.
	recordLive := func(t *testing.T, recs []Record) string {
		dir := filepath.Join(t.TempDir(), "ds")
		w, err := Create(dir, Manifest{}, WithFlushInterval(0))
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			if i > 0 && recs[i].WallNs/1e9 != recs[i-1].WallNs/1e9 {
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.Append(&recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("fixture frames at 1 MB/s", func(t *testing.T) {
		comparePeers(t, recordLive(t, benchRecords(t, 8<<20, int64(time.Millisecond))))
	})
	// The shipped samples: ten generated minutes at 10–13 KB/s, re-recorded.
	for _, v := range []string{"polymarket", "hyperliquid"} {
		t.Run("sample "+v, func(t *testing.T) {
			src := filepath.Join("samples", v)
			if _, err := os.Stat(filepath.Join(src, ManifestName)); err != nil {
				t.Skip("no shipped sample")
			}
			recs, err, _ := readAll(t, src)
			if err != nil {
				t.Fatal(err)
			}
			comparePeers(t, recordLive(t, recs))
		})
	}
}

// comparePeers compares the dataset in dir with the peers' line formats of
// its frame records.
func comparePeers(t *testing.T, dir string) {
	info, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var hft, tardis bytes.Buffer
	frames, raw := 0, 0
	for r.Next() {
		rec := r.Record()
		if rec.Kind != KindFrame {
			continue
		}
		frames++
		raw += len(rec.Payload)
		fmt.Fprintf(&hft, "%d %s\n", rec.WallNs, rec.Payload)
		fmt.Fprintf(&tardis, "%s %s\n", time.Unix(0, rec.WallNs).UTC().Format("2006-01-02T15:04:05.0000000Z"), rec.Payload)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(hft.Bytes())
	zw.Close()
	enc, _ := zstd.NewWriter(nil)
	zs := enc.EncodeAll(tardis.Bytes(), nil)
	enc.Close()
	// The dataset also holds control records and its manifest and indexes:
	// all of it is counted against us.
	t.Logf("%d frames, %d raw bytes: tapedeck %d B (ratio %.1f, %.1f B/frame), hftbacktest gzip %d B (%.1f), tardis zstd %d B (%.1f)",
		frames, raw, info.DiskBytes, float64(raw)/float64(info.DiskBytes), float64(info.DiskBytes)/float64(frames),
		gz.Len(), float64(raw)/float64(gz.Len()), len(zs), float64(raw)/float64(len(zs)))
	if info.DiskBytes >= int64(gz.Len()) || info.DiskBytes >= int64(len(zs)) {
		t.Errorf("dataset (%d B) not smaller than gzip lines (%d B) and zstd lines (%d B)", info.DiskBytes, gz.Len(), len(zs))
	}
}
