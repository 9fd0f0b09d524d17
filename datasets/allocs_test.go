package datasets

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// totalMallocs runs f n times and returns the heap allocations made in all,
// not per run: testing.AllocsPerRun rounds down, which would hide an
// allocation made once per block.
func totalMallocs(n int, f func()) uint64 {
	f() // as AllocsPerRun does: a warm-up run
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		f()
	}
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}

// Append is zero-allocation once the writer's buffers have grown, including
// the appends that seal and write a block.
func TestAppendAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	recs := genRecords(t, 4000, int64(time.Millisecond))
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, Manifest{}, WithFlushInterval(0), WithBlockSize(16<<10), WithFsync(FsyncNever))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range recs[:2000] { // warm up: buffers, encoder, first segment
		if _, err := w.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	i := 2000
	if a := testing.AllocsPerRun(100, func() {
		if _, err := w.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
		i++
	}); a != 0 {
		t.Fatalf("Append allocates %.2f times per record", a)
	}
	allocs := totalMallocs(1500, func() {
		if _, err := w.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if s := w.Stats(); s.Blocks < 20 {
		t.Fatalf("only %d blocks sealed: the measurement did not cover sealing", s.Blocks)
	}
	if allocs != 0 {
		t.Fatalf("1500 Appends allocated %d times", allocs)
	}
}

// Next is zero-allocation after the first block, across blocks.
func TestNextAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	for _, dict := range []int{0, DefaultDictSize} {
		recs := genRecords(t, 6000, int64(time.Millisecond))
		dir := filepath.Join(t.TempDir(), "ds")
		writeRecords(t, dir, recs, WithBlockSize(16<<10), WithDictSize(dict))
		r, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200; i++ {
			r.Next()
		}
		next := func() {
			if !r.Next() {
				t.Fatal("ran out of records", r.Err())
			}
		}
		a := testing.AllocsPerRun(100, next)
		allocs := totalMallocs(5000, next)
		r.Close()
		if a != 0 || allocs != 0 {
			t.Fatalf("dict %d: Next allocates: %.0f per record, %d over 5000 records", dict, a, allocs)
		}
	}
}
