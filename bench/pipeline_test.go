package bench

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/export"
)

// replayOnce replays dir with sub subscribed to every event.
func replayOnce(b testing.TB, dir string, sub replayer.Subscriber, opts ...replayer.Option) *replayer.Summary {
	r, err := replayer.New([]string{dir}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	r.Subscribe(replayer.Key{}, sub)
	sum, err := r.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if sum.DecodeErrors != 0 || len(sum.SubscriberFailures) != 0 {
		b.Fatalf("replay of %s: %d decode errors, %v", dir, sum.DecodeErrors, sum.SubscriberFailures)
	}
	return sum
}

var noop = replayer.SubscriberFunc(func(*replayer.Event) error { return nil })

// BenchmarkReplay is the end-to-end replay of a generated dataset on disk:
// zstd blocks read, frames decoded into the books, every event routed to a
// no-op subscriber. One op is one whole replay; the per-unit figures are per
// frame and per frame byte.
func BenchmarkReplay(b *testing.B) {
	for _, v := range venues {
		b.Run("venue="+v, func(b *testing.B) {
			dir := datasetDir(b, v, sessionFrames(b))
			benchReplay(b, dir, func() (replayer.Subscriber, func() uint64) { return noop, nil })
		})
	}
	// Polymarket books carry SHA-1 hashes that the replayer verifies by
	// default wherever a REST summary supplied the missing fields; this is the
	// same replay without that verification, the work Tardis-style replays do.
	b.Run("venue=polymarket/hash=off", func(b *testing.B) {
		dir := datasetDir(b, "polymarket", sessionFrames(b))
		benchReplay(b, dir, func() (replayer.Subscriber, func() uint64) { return noop, nil }, replayer.WithHashCheck(false))
	})
	// The shipped samples as they are on disk, when this tree has them.
	for _, v := range venues {
		dir := filepath.Join("..", "datasets", "samples", v)
		if _, err := os.Stat(filepath.Join(dir, datasets.ManifestName)); err != nil {
			continue
		}
		b.Run("sample="+v, func(b *testing.B) {
			benchReplay(b, dir, func() (replayer.Subscriber, func() uint64) { return noop, nil })
		})
	}
}

// BenchmarkExport replays a generated dataset into a Parquet table written
// to io.Discard: the cost of turning a recording into a notebook table. It
// uses the smaller session of the decode scenarios (streamFrames) to keep
// make bench short.
func BenchmarkExport(b *testing.B) {
	tables := []struct {
		name string
		t    export.Table
	}{{"depth", export.TableDepth}, {"book_changes", export.TableBookChanges}, {"trades", export.TableTrades}}
	for _, v := range venues {
		for _, tb := range tables {
			b.Run("venue="+v+"/table="+tb.name+"/format=parquet", func(b *testing.B) {
				dir := datasetDir(b, v, streamFrames(b))
				benchReplay(b, dir, func() (replayer.Subscriber, func() uint64) {
					s, err := export.New(io.Discard, tb.t, export.FormatParquet)
					if err != nil {
						b.Fatal(err)
					}
					return s, func() uint64 {
						if err := s.Close(); err != nil {
							b.Fatal(err)
						}
						return s.Rows()
					}
				})
			})
		}
	}
}

// benchReplay runs one replay per op with a fresh subscriber from mk; done,
// when not nil, finishes the subscriber (inside the timing) and returns the
// rows it wrote.
func benchReplay(b *testing.B, dir string, mk func() (replayer.Subscriber, func() uint64), opts ...replayer.Option) {
	var frames, bytes, rows uint64
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sub, done := mk()
		sum := replayOnce(b, dir, sub, opts...)
		if done != nil {
			rows += done()
		}
		frames += sum.Frames
		bytes += sum.Bytes
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	reportPerUnit(b, int(frames), "frame")
	reportMBs(b, int64(bytes))
	b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(frames), "allocs/frame")
	if rows > 0 {
		reportPerUnit(b, int(rows), "row")
	}
}

// BenchmarkDatasetWrite appends a generated session's frames to a new
// dataset and closes it (zstd blocks, checksums, index, manifest): one op
// is the whole session, the per-unit figures per record.
func BenchmarkDatasetWrite(b *testing.B) {
	for _, v := range venues {
		b.Run("venue="+v, func(b *testing.B) {
			s := loadSession(b, v, sessionFrames(b))
			m := datasets.Manifest{Venue: v, Endpoint: "bench"}
			root := b.TempDir()
			var rec datasets.Record
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dir, err := os.MkdirTemp(root, "w")
				if err != nil {
					b.Fatal(err)
				}
				os.Remove(dir) // Create makes it
				w, err := datasets.Create(dir, m)
				if err != nil {
					b.Fatal(err)
				}
				for k, f := range s.frames {
					rec = datasets.Record{Kind: datasets.KindFrame, WallNs: s.recvNs[k], MonoNs: s.recvNs[k] - s.startNs, Payload: f}
					if _, err := w.Append(&rec); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(dir)
				b.StartTimer()
			}
			b.StopTimer()
			reportPerUnit(b, b.N*len(s.frames), "record")
			reportMBs(b, int64(b.N)*s.bytes)
		})
	}
}

// BenchmarkDatasetRead reads every record of a generated dataset on disk
// (zstd blocks decompressed and checked): one op is the whole dataset.
func BenchmarkDatasetRead(b *testing.B) {
	for _, v := range venues {
		b.Run("venue="+v, func(b *testing.B) {
			dir := datasetDir(b, v, sessionFrames(b))
			var records, bytes int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := datasets.Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
					records++
					bytes += int64(len(r.Record().Payload))
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
			b.StopTimer()
			reportPerUnit(b, int(records), "record")
			reportMBs(b, bytes)
		})
	}
}
