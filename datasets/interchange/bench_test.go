package interchange

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
)

// benchRecords returns the frames of the shipped Hyperliquid sample (real
// shapes, generated values).
func benchRecords(b *testing.B) []datasets.Record {
	b.Helper()
	_, recs := readDataset(b, "../samples/hyperliquid")
	var frames []datasets.Record
	for _, r := range recs {
		if r.Kind == datasets.KindFrame {
			frames = append(frames, r)
		}
	}
	return frames
}

func frameBytes(recs []datasets.Record) int64 {
	var n int64
	for _, r := range recs {
		n += int64(len(r.Payload))
	}
	return n
}

// BenchmarkImport: MB/s of frame bytes imported into a sink that discards,
// per format and compression.
func BenchmarkImport(b *testing.B) {
	recs := benchRecords(b)
	for _, f := range []Format{NDJSON, Tardis, HFTBacktest} {
		for _, c := range []Compression{None, Gzip, Zstd} {
			var buf bytes.Buffer
			if _, err := ExportRaw(&buf, &sliceSource{recs: recs}, f, WithCompression(c), WithTimeDigits(9)); err != nil {
				b.Fatal(err)
			}
			data := buf.Bytes()
			b.Run(fmt.Sprintf("%s/%s", f, c), func(b *testing.B) {
				im, _ := NewImporter(f, &nullSink{})
				defer im.Close()
				r := bytes.NewReader(data)
				b.SetBytes(frameBytes(recs))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					r.Reset(data)
					if err := im.Import("bench", r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkExport: MB/s of frame bytes exported, per format and compression.
func BenchmarkExport(b *testing.B) {
	recs := benchRecords(b)
	for _, f := range []Format{NDJSON, Tardis, HFTBacktest} {
		for _, c := range []Compression{None, Gzip, Zstd} {
			b.Run(fmt.Sprintf("%s/%s", f, c), func(b *testing.B) {
				src := &sliceSource{recs: recs}
				b.SetBytes(frameBytes(recs))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					src.i = 0
					if _, err := ExportRaw(io.Discard, src, f, WithCompression(c)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
