package datasets

import (
	"path/filepath"
	"testing"
	"time"
)

// checkSeek seeks to times around several records and checks Next lands on
// the first record at or after each.
func checkSeek(t *testing.T, dir string, recs []Record) {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, i := range []int{0, 1, 499, 500, 777, 1100, len(recs) / 2, len(recs) - 2, len(recs) - 1} {
		for _, delta := range []int64{-1, 0, 1} {
			target := recs[i].WallNs + delta
			want := -1
			for j := range recs {
				if recs[j].WallNs >= target {
					want = j
					break
				}
			}
			if err := r.SeekTime(target); err != nil {
				t.Fatal(err)
			}
			if want < 0 {
				if r.Next() {
					t.Fatalf("seek %d past the end returned %+v", target, r.Record())
				}
				continue
			}
			if !r.Next() {
				t.Fatalf("seek to record %d%+d: no record, %v", i, delta, r.Err())
			}
			if got := r.Record(); got.Seq != uint64(want+1) || !sameRecord(got, &recs[want]) {
				t.Fatalf("seek to record %d%+d: got seq %d, want %d", i, delta, got.Seq, want+1)
			}
			// And the stream continues from there.
			if want+1 < len(recs) && (!r.Next() || r.Record().Seq != uint64(want+2)) {
				t.Fatalf("after seek: next is %+v, %v", r.Record(), r.Err())
			}
		}
	}
	if err := r.SeekTime(recs[0].WallNs - int64(time.Hour)); err != nil || !r.Next() || r.Record().Seq != 1 {
		t.Fatalf("seek before start: %+v %v", r.Record(), err)
	}
	if err := r.SeekTime(recs[len(recs)-1].WallNs + 1); err != nil || r.Next() || r.Err() != nil {
		t.Fatalf("seek past end: %v %v", err, r.Err())
	}
}

func TestSeek(t *testing.T) {
	recs := genRecords(t, 2000, int64(time.Millisecond))
	// Non-decreasing wall times: genRecords adds a 0..6 ns wobble; make it monotonic.
	for i := range recs {
		recs[i].WallNs = baseWallNs + int64(i)*int64(time.Millisecond)
	}
	for name, opts := range map[string][]WriterOption{
		"one block":      nil,
		"many segments":  {WithBlockSize(4 << 10), WithSegmentSize(32 << 10)},
		"by time":        {WithBlockSize(4 << 10), WithSegmentDuration(300 * time.Millisecond)},
		"raw small blks": {WithLevel(0), WithBlockSize(1 << 10)},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ds")
			writeRecords(t, dir, recs, opts...)
			checkSeek(t, dir, recs)
		})
	}
}

// Seek decompresses only the block it lands in.
func TestSeekSkipsBlocks(t *testing.T) {
	recs := genRecords(t, 2000, int64(time.Millisecond))
	for i := range recs {
		recs[i].WallNs = baseWallNs + int64(i)*int64(time.Millisecond)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	writeRecords(t, dir, recs, WithBlockSize(2<<10))
	blocks := blocksOf(t, dir)
	if len(blocks) < 20 {
		t.Fatalf("only %d blocks", len(blocks))
	}
	// Damage every block but the target: a seek that touched one would fail.
	target := blocks[len(blocks)/2]
	for _, b := range blocks {
		if b.e != target.e {
			flipByte(t, b.seg, b.e.Offset+blockHeaderSize+1)
		}
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.SeekTime(target.e.FirstWall + 1); err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; n < int(target.e.Count)-1 && r.Next(); n++ {
	}
	if n != int(target.e.Count)-1 || r.Err() != nil {
		t.Fatalf("read %d records of the target block: %v", n, r.Err())
	}
}
