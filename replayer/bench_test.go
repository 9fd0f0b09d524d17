package replayer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// workload is a recording made of real fixture frames, repeated.
type workload struct {
	name  string
	venue string
	head  []string // files whose frames come once, first
	cycle []string // files whose frames repeat to fill the recording
}

var workloads = []workload{
	// A real initial book, then the two real price_change frames that follow
	// it, alternating: the shape of an active Polymarket market.
	{"pm_price_change", venue.Polymarket, []string{"polypy_hash_vector_ws_2025-10.ndjson"}, []string{"polypy_hash_vector_ws_2025-10.ndjson#1", "polypy_hash_vector_ws_2025-10.ndjson#2"}},
	// Full real book snapshots (76/86 levels and 18/17 levels) one after another.
	{"pm_book", venue.Polymarket, nil, []string{"nautilus_ws_book_2024-10.ndjson", "polypy_hash_vector_ws_2025-10.ndjson#0"}},
	// The real 20+20-level BTC l2Book frame, every frame a full snapshot.
	{"hl_l2book", venue.Hyperliquid, nil, []string{"order_book_server_ack_l2book_trades_2025-07.ndjson#1"}},
}

// benchFrames is the size of a benchmark recording.
const benchFrames = 100_000

var (
	benchMu   sync.Mutex
	benchDirs = map[string]string{}
	benchRoot string
)

// loadFrames resolves "file" (every line) and "file#i" (line i).
func loadFrames(t testing.TB, specs []string) [][]byte {
	var out [][]byte
	for _, s := range specs {
		file, line := s, -1
		if i := len(s) - 2; i > 0 && s[i] == '#' {
			file = s[:i]
			line = int(s[i+1] - '0')
		}
		lines := fixtureLines(t, file)
		if line >= 0 {
			lines = lines[line : line+1]
		}
		out = append(out, lines...)
	}
	return out
}

// benchDataset writes (once per process) a recording of n frames for w, and
// returns its directory and total frame bytes.
func benchDataset(b testing.TB, w workload, n int) (string, int64) {
	benchMu.Lock()
	defer benchMu.Unlock()
	key := fmt.Sprintf("%s-%d", w.name, n)
	head := loadFrames(b, w.head)
	cycle := loadFrames(b, w.cycle)
	var total int64
	for i := range n {
		if i < len(head) {
			total += int64(len(head[i]))
		} else {
			total += int64(len(cycle[(i-len(head))%len(cycle)]))
		}
	}
	if dir, ok := benchDirs[key]; ok {
		return dir, total
	}
	if benchRoot == "" {
		var err error
		if benchRoot, err = os.MkdirTemp("", "replayer-bench-"); err != nil {
			b.Fatal(err)
		}
	}
	dir := benchRoot + "/" + key
	wr, err := datasets.Create(dir, datasets.Manifest{Venue: w.venue, Endpoint: "bench", StartNs: fixtureBaseNs},
		datasets.WithFlushInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		f := head
		j := i
		if i >= len(head) {
			f, j = cycle, (i-len(head))%len(cycle)
		}
		wall := fixtureBaseNs + int64(i)*int64(time.Millisecond)
		if _, err := wr.Append(&datasets.Record{Kind: datasets.KindFrame, WallNs: wall, MonoNs: wall, Payload: f[j]}); err != nil {
			b.Fatal(err)
		}
	}
	if err := wr.Close(); err != nil {
		b.Fatal(err)
	}
	benchDirs[key] = dir
	return dir, total
}

func cleanupBench() {
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
}

// BenchmarkReplay measures the whole path a backtest runs: zstd blocks on
// disk → reader → decoder → book → routing → a no-op subscriber, with the
// digest. One op is a replay of the whole recording.
func BenchmarkReplay(b *testing.B) {
	for _, w := range workloads {
		for _, ra := range []int{0, datasets.DefaultReadAhead} {
			b.Run(fmt.Sprintf("%s/readahead=%d", w.name, ra), func(b *testing.B) {
				dir, bytes := benchDataset(b, w, benchFrames)
				benchReplay(b, dir, bytes, WithReadAhead(ra))
			})
		}
	}
}

// BenchmarkReplayRecording replays the dataset named by
// $TAPEDECK_BENCH_RECORDING (make bench-peers builds the 1.35 M-frame one in
// bench/out/peers/dataset-15m), sequentially and reading ahead, with the
// default integrity checks: issue 17's end-to-end figure.
func BenchmarkReplayRecording(b *testing.B) {
	dir := os.Getenv("TAPEDECK_BENCH_RECORDING")
	if dir == "" {
		b.Skip("TAPEDECK_BENCH_RECORDING is not set")
	}
	if _, err := datasets.ReadManifest(dir); err != nil {
		b.Fatal(err)
	}
	var bytes int64
	{
		r, err := New([]string{dir}, WithHashMode(HashOff, 0))
		if err != nil {
			b.Fatal(err)
		}
		s, err := r.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		bytes = int64(s.Bytes)
	}
	for _, ra := range []int{0, datasets.DefaultReadAhead} {
		b.Run(fmt.Sprintf("readahead=%d", ra), func(b *testing.B) {
			benchReplay(b, dir, bytes, WithReadAhead(ra))
		})
	}
}

func benchReplay(b *testing.B, dir string, bytes int64, opts ...Option) {
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNs()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs0 := ms.Mallocs
	var frames uint64
	for range b.N {
		s := replayOnce(b, dir, opts...)
		if s.DecodeErrors != 0 {
			b.Fatalf("decode errors: %+v", s.FirstDecodeErrors[0])
		}
		frames += s.Frames
	}
	cpu := cpuNs() - cpu0
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Mallocs-mallocs0)/float64(frames), "allocs/frame")
	b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(frames), "ns/frame")
	// CPU time (every thread: GC included) per frame holds steadier
	// than wall time on a shared machine.
	b.ReportMetric(float64(cpu)/float64(frames), "cpu-ns/frame")
	b.ReportMetric(float64(bytes)*float64(b.N)/float64(cpu)*1e3, "cpu-MB/s")
}

// replayOnce replays dir to a no-op subscriber.
func replayOnce(b *testing.B, dir string, opts ...Option) *Summary {
	r, err := New([]string{dir}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	r.Subscribe(Key{}, SubscriberFunc(func(*Event) error { return nil }))
	s, err := r.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// cpuNs is the process's user and system CPU time so far.
func cpuNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkReplaySamples replays the shipped samples (generated from real
// frames, with REST summaries, losses and every message type): the mix a
// user's first run sees. The Polymarket sample is hash-rich, so it runs in
// each hash mode: the default (sampled) against off is issue 17's ratio.
func BenchmarkReplaySamples(b *testing.B) {
	runs := []struct {
		name, dir string
		mode      HashMode
	}{
		{"polymarket/hash=sampled", "polymarket", HashSampled},
		{"polymarket/hash=all", "polymarket", HashAll},
		{"polymarket/hash=off", "polymarket", HashOff},
		{"hyperliquid", "hyperliquid", HashSampled},
	}
	for _, run := range runs {
		b.Run(run.name, func(b *testing.B) {
			dir := "../datasets/samples/" + run.dir
			if _, err := datasets.ReadManifest(dir); err != nil {
				b.Skip(err)
			}
			var frames, bytes uint64
			b.ReportAllocs()
			cpu0 := cpuNs()
			for range b.N {
				s := replayOnce(b, dir, WithHashMode(run.mode, DefaultHashEvery))
				frames += s.Frames
				bytes = s.Bytes
			}
			cpu := cpuNs() - cpu0
			b.SetBytes(int64(bytes))
			b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
			b.ReportMetric(float64(cpu)/float64(frames), "cpu-ns/frame")
		})
	}
}

// BenchmarkSampleDecode is the Polymarket decoder alone on the shipped
// sample's frames and REST bodies, read once into memory, in each hash mode:
// the difference between hash=sampled and hash=off is what sampled checks
// cost per record, without the reading, decompression and engine work that
// make BenchmarkReplaySamples noisy on a loaded host.
func BenchmarkSampleDecode(b *testing.B) {
	dir := "../datasets/samples/polymarket"
	r, err := datasets.Open(dir)
	if err != nil {
		b.Skip(err)
	}
	type rec struct {
		conn uint32
		ns   int64
		p    []byte
	}
	var recs []rec
	for r.Next() {
		if x := r.Record(); x.Kind == datasets.KindFrame || x.Kind == datasets.KindRESTResponse {
			recs = append(recs, rec{x.Conn, x.WallNs, append([]byte(nil), x.Payload...)})
		}
	}
	if err := errors.Join(r.Err(), r.Close()); err != nil {
		b.Fatal(err)
	}
	drv, err := venueDriver(venue.Polymarket)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name string
		o    venue.DecoderOptions
	}{
		{"hash=sampled", venue.DecoderOptions{HashCheck: true, HashEvery: DefaultHashEvery}},
		{"hash=off", venue.DecoderOptions{}},
	} {
		b.Run(m.name, func(b *testing.B) {
			var fr venue.Frame
			cpu0 := cpuNs()
			for range b.N {
				decs := map[uint32]venue.Decoder{}
				for _, x := range recs {
					d := decs[x.conn]
					if d == nil {
						d = drv.NewDecoder(m.o)
						decs[x.conn] = d
					}
					if err := d.Decode(x.p, x.ns, &fr); err != nil {
						b.Fatal(err)
					}
				}
			}
			n := float64(b.N) * float64(len(recs))
			b.ReportMetric(float64(cpuNs()-cpu0)/n, "cpu-ns/record")
		})
	}
}
