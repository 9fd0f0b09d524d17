package datasets

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeLive writes recs sealing a block every n records, as a low-rate
// capture's flush ticker would.
func writeLive(t *testing.T, dir string, recs []Record, n int, opts ...WriterOption) *Writer {
	t.Helper()
	w, err := Create(dir, Manifest{}, append([]WriterOption{WithFlushInterval(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if _, err := w.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
		if i%n == n-1 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}

func dirSize(t *testing.T, dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		fi, _ := e.Info()
		n += fi.Size()
	}
	return n
}

func TestCompaction(t *testing.T) {
	recs := genRecords(t, 3000, int64(time.Millisecond))
	plainDir := filepath.Join(t.TempDir(), "plain")
	w := writeLive(t, plainDir, recs, 5, WithSegmentDuration(time.Second), WithCompaction(false))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	w = writeLive(t, dir, recs, 5, WithSegmentDuration(time.Second))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segmentPaths(t, dir)
	if s := w.Stats(); len(segs) != 3 || s.Compacted != 3 || s.CompactFailures != 0 {
		t.Fatalf("%d segments, stats %+v", len(segs), s)
	}
	if len(blocksOf(t, dir)) >= len(blocksOf(t, plainDir))/10 {
		t.Fatalf("compaction left %d blocks of %d", len(blocksOf(t, dir)), len(blocksOf(t, plainDir)))
	}
	if a, b := dirSize(t, dir), dirSize(t, plainDir); a >= b*3/4 {
		t.Fatalf("compacted dataset %d B, uncompacted %d B", a, b)
	}
	got, err, tr := readAll(t, dir, WithStrict())
	if err != nil || tr != nil || len(got) != len(recs) {
		t.Fatalf("%d records: %v %v", len(got), err, tr)
	}
	checkPrefix(t, got, recs)
	if vr, err := Verify(dir); err != nil || !vr.OK() || len(vr.Warnings) != 0 {
		t.Fatalf("verify %+v %v", vr, err)
	}
	// Seeking uses the rewritten indexes.
	for i := range recs {
		recs[i].WallNs = baseWallNs + int64(i)*int64(time.Millisecond)
	}
	dir2 := filepath.Join(t.TempDir(), "seek")
	w = writeLive(t, dir2, recs, 5, WithSegmentDuration(time.Second))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkSeek(t, dir2, recs)
}

// A rewrite that cannot be written leaves the segment as it was.
func TestCompactionFailureKeepsSegment(t *testing.T) {
	recs := genRecords(t, 1000, int64(time.Millisecond))
	disk := &faultyDisk{limit: 1 << 40}
	dir := filepath.Join(t.TempDir(), "ds")
	w := writeLive(t, dir, recs, 5, WithSegmentFile(disk.open))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	disk.mu.Lock()
	disk.limit = disk.used + 100 // the rewrite runs out of space
	disk.mu.Unlock()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Compacted != 0 || s.CompactFailures != 1 {
		t.Fatalf("stats %+v", s)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+compactExt)); len(left) != 0 {
		t.Fatalf("leftover %v", left)
	}
	got, err, _ := readAll(t, dir, WithStrict())
	if err != nil || len(got) != len(recs) {
		t.Fatalf("%d records: %v", len(got), err)
	}
	checkPrefix(t, got, recs)
}

// A rewrite interrupted by a crash leaves a temp file readers ignore and
// Repair removes.
func TestCompactionLeftover(t *testing.T) {
	recs := genRecords(t, 200, int64(time.Millisecond))
	dir := filepath.Join(t.TempDir(), "ds")
	writeRecords(t, dir, recs)
	left := filepath.Join(dir, segmentName(1)+compactExt)
	if err := os.WriteFile(left, []byte("TDSG half a rewrite"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err, _ := readAll(t, dir, WithStrict())
	if err != nil || len(got) != len(recs) {
		t.Fatalf("%d records: %v", len(got), err)
	}
	rep, err := Repair(dir)
	if err != nil || len(rep.RemovedFiles) != 1 || rep.RemovedFiles[0] != left || len(rep.Dropped) != 0 {
		t.Fatalf("repair %+v %v", rep, err)
	}
}

// A reader whose indexes predate a segment's rewrite still seeks right.
func TestSeekAcrossCompaction(t *testing.T) {
	recs := genRecords(t, 2000, int64(time.Millisecond))
	for i := range recs {
		recs[i].WallNs = baseWallNs + int64(i)*int64(time.Millisecond)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	w := writeLive(t, dir, recs, 5, WithCompaction(false))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.SeekTime(recs[1500].WallNs); err != nil || !r.Next() || r.Record().Seq != 1501 {
		t.Fatalf("before: %+v %v", r.Record(), err)
	}
	dictCopies := func() byte {
		b, err := os.ReadFile(filepath.Join(dir, segmentName(1)))
		if err != nil || len(b) < segmentHeaderSize {
			t.Fatalf("segment: %d bytes, %v", len(b), err)
		}
		return b[12]
	}
	if n := dictCopies(); n == 0 {
		t.Fatal("the live segment holds no dictionary: the rewrite below proves nothing about dropping it")
	}
	if ok, err := compactSegment(dir, 1, DefaultBlockSize, defaultWriterOptions().openFile, false); !ok || err != nil {
		t.Fatalf("compact: %v %v", ok, err)
	}
	// Full-size blocks are written without the dictionary (zstd's assembly
	// decoder takes none).
	if n := dictCopies(); n != 0 {
		t.Fatalf("compacted segment keeps %d dictionary copies, want 0", n)
	}
	for _, i := range []int{1700, 3, 1999} {
		if err := r.SeekTime(recs[i].WallNs); err != nil || !r.Next() || r.Record().Seq != uint64(i+1) || !sameRecord(r.Record(), &recs[i]) {
			t.Fatalf("after compaction, seek to %d: %+v %v %v", i, r.Record(), err, r.Err())
		}
	}
}
