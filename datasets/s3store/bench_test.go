package s3store_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/s3test"
)

// BenchmarkReadStore reads every record of one dataset (~20 MB of
// segment) from the local disk and from an S3 server on 127.0.0.1 (in this
// process, sharing its cores): the storage layer's cost beside the disk's.
// Compare with -count 6 and benchstat; MB/s is of segment bytes.
func BenchmarkReadStore(b *testing.B) {
	s3test.Start(b, "tapes")
	dir := bigDataset(b, 50000)
	upload(b, dir, "s3://tapes/bench")
	seg, err := os.Stat(filepath.Join(dir, "00000001.seg"))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, loc string }{{"local", dir}, {"s3", "s3://tapes/bench"}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(seg.Size())
			for i := 0; i < b.N; i++ {
				r, err := datasets.Open(c.loc)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for r.Next() {
					n++
				}
				if r.Err() != nil || n != 50000 {
					b.Fatalf("%d records, %v", n, r.Err())
				}
				r.Close()
			}
		})
	}
}
