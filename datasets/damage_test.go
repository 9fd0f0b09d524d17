package datasets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// damageDataset writes real frames into several segments of several blocks.
func damageDataset(t *testing.T) (string, []Record) {
	t.Helper()
	recs := genRecords(t, 1500, int64(time.Millisecond))
	dir := filepath.Join(t.TempDir(), "ds")
	writeRecords(t, dir, recs, WithBlockSize(8<<10), WithSegmentSize(48<<10))
	if n := len(segmentPaths(t, dir)); n < 3 {
		t.Fatalf("want 3 or more segments, got %d", n)
	}
	return dir, recs
}

// middleBlockOfLast returns a block of the dataset's last segment with good
// blocks after it.
func middleBlockOfLast(t *testing.T, dir string) blockPos {
	t.Helper()
	blocks := blocksOf(t, dir)
	last := blocks[len(blocks)-1].seg
	var in []blockPos
	for _, b := range blocks {
		if b.seg == last {
			in = append(in, b)
		}
	}
	if len(in) < 3 {
		t.Fatalf("last segment has %d blocks, want 3 or more", len(in))
	}
	return in[len(in)/2]
}

// checkSkipped reads dir with WithSkipDamaged and checks that every record
// but those of the lost block comes back, with one gap record for the block.
func checkSkipped(t *testing.T, dir string, recs []Record, b blockPos) []Damage {
	t.Helper()
	r, err := Open(dir, WithSkipDamaged())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []Record
	for r.Next() {
		rec := *r.Record()
		rec.Payload = append([]byte(nil), rec.Payload...)
		got = append(got, rec)
	}
	if r.Err() != nil || r.Truncated() != nil {
		t.Fatalf("skip-damaged read: err %v, truncated %v", r.Err(), r.Truncated())
	}
	if want := len(recs) - int(b.e.Count) + 1; len(got) != want {
		t.Fatalf("read %d records, want %d (all but the %d of the damaged block, plus a gap)", len(got), want, b.e.Count)
	}
	checkPrefix(t, got[:b.before], recs)
	g := got[b.before]
	c, err := DecodeControl(g.Payload)
	if g.Kind != KindGap || g.Conn != ConnAll || g.Seq != b.e.FirstSeq || err != nil || c.Dropped != uint64(b.e.Count) ||
		c.FromNs != recs[b.before-1].WallNs || c.ToNs != recs[b.before+int(b.e.Count)].WallNs {
		t.Fatalf("gap record %+v %+v %v", g, c, err)
	}
	if g.WallNs != recs[b.before-1].WallNs || g.MonoNs != recs[b.before-1].MonoNs {
		t.Fatalf("gap record times %d/%d, want the last good record's", g.WallNs, g.MonoNs)
	}
	for i, rec := range got[b.before+1:] {
		j := b.before + int(b.e.Count) + i
		if rec.Seq != uint64(j+1) || !sameRecord(&rec, &recs[j]) {
			t.Fatalf("record %d after the damage: %+v", i, rec)
		}
	}
	ds := r.Damaged()
	if len(ds) != 1 {
		t.Fatalf("damage %+v", ds)
	}
	d := ds[0]
	if d.Records != uint64(b.e.Count) || !d.RecordsKnown || d.FirstSeq != b.e.FirstSeq || d.LastSeq != b.e.LastSeq ||
		d.Offset != b.e.Offset || d.Bytes != blockHeaderSize+int64(b.e.CompLen) || d.GapSeq != b.e.FirstSeq ||
		!strings.HasSuffix(d.File, filepath.Base(b.seg)) {
		t.Fatalf("damage %+v, block %+v", d, b.e)
	}
	return ds
}

// TestDamageBeforeTailIsNotATornTail flips one byte in a block of the last
// segment of a crashed (unclean) dataset with good blocks after it: that is
// corruption, not the torn tail of the crash. The default reader stops with
// an error naming the block; WithSkipDamaged steps over the one block,
// returns a gap record for it and every record after it.
func TestDamageBeforeTailIsNotATornTail(t *testing.T) {
	src, recs := damageDataset(t)
	for _, unclean := range []bool{true, false} {
		dir := copyDataset(t, src)
		if unclean {
			markUnclean(t, dir)
		}
		b := middleBlockOfLast(t, dir)
		seg := filepath.Join(dir, filepath.Base(b.seg))
		flipByte(t, seg, b.e.Offset+blockHeaderSize+int64(b.e.CompLen)/2)

		got, err, trunc := readAll(t, dir)
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.File != seg || ce.Offset != b.e.Offset || trunc != nil {
			t.Fatalf("unclean %v: err %v, truncated %v: want a corruption error at %s:%d", unclean, err, trunc, seg, b.e.Offset)
		}
		if len(got) != b.before {
			t.Fatalf("read %d records before the damage, want %d", len(got), b.before)
		}
		checkPrefix(t, got, recs)
		checkSkipped(t, dir, recs, b)
	}
}

// TestTornTailStaysATornTail: damage with nothing good after it in the last
// segment of an unclean dataset is the crash's torn tail, for either mode.
func TestTornTailStaysATornTail(t *testing.T) {
	src, recs := damageDataset(t)
	dir := copyDataset(t, src)
	markUnclean(t, dir)
	blocks := blocksOf(t, dir)
	b := blocks[len(blocks)-1]
	if err := os.Truncate(b.seg, b.e.Offset+blockHeaderSize+int64(b.e.CompLen)/2); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]ReaderOption{nil, {WithSkipDamaged()}} {
		got, err, trunc := readAll(t, dir, opts...)
		if err != nil || trunc == nil || trunc.Offset != b.e.Offset || len(got) != b.before {
			t.Fatalf("err %v, truncated %v, %d records: want a torn tail at %d after %d records", err, trunc, len(got), b.e.Offset, b.before)
		}
		checkPrefix(t, got, recs)
	}
	// The same cut in a clean dataset is damage: a loss, of unknown size.
	dir = copyDataset(t, src)
	blocks = blocksOf(t, dir)
	b = blocks[len(blocks)-1]
	if err := os.Truncate(b.seg, b.e.Offset+blockHeaderSize+int64(b.e.CompLen)/2); err != nil {
		t.Fatal(err)
	}
	if _, err, trunc := readAll(t, dir); err == nil || trunc != nil {
		t.Fatalf("clean dataset with a cut tail: err %v, truncated %v", err, trunc)
	}
	r, err := Open(dir, WithSkipDamaged())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	var last Record
	for r.Next() {
		n++
		last = *r.Record()
	}
	m, _ := ReadManifest(dir)
	if r.Err() != nil || n != b.before+1 || last.Kind != KindGap || len(r.Damaged()) != 1 {
		t.Fatalf("err %v, %d records (want %d + gap), last %v, damage %+v", r.Err(), n, b.before, last.Kind, r.Damaged())
	}
	if d := r.Damaged()[0]; d.RecordsKnown || d.Records != uint64(b.e.Count) || d.ToNs != m.EndNs || d.FromNs != recs[b.before-1].WallNs {
		t.Fatalf("damage %+v (block of %d, manifest end %d)", d, b.e.Count, m.EndNs)
	}
}

// TestMissingSegment removes a middle segment: a loss the reader reports
// (naming the missing file) and, skipping, stands in for with a gap record.
func TestMissingSegment(t *testing.T) {
	src, recs := damageDataset(t)
	dir := copyDataset(t, src)
	segs := segmentPaths(t, dir)
	if len(segs) < 3 {
		t.Fatalf("want 3 segments, have %d", len(segs))
	}
	blocks := blocksOf(t, dir)
	var lost []blockPos
	for _, b := range blocks {
		if b.seg == segs[1] {
			lost = append(lost, b)
		}
	}
	for _, p := range []string{segs[1], strings.TrimSuffix(segs[1], segmentExt) + indexExt} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	first, lastB := lost[0], lost[len(lost)-1]
	nLost := int(lastB.e.LastSeq - first.e.FirstSeq + 1)

	got, err, _ := readAll(t, dir)
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrMissingRecords) || ce.File != segs[2] ||
		!strings.Contains(err.Error(), filepath.Base(segs[1])) || len(got) != first.before {
		t.Fatalf("err %v after %d records: want ErrMissingRecords naming %s after %d", err, len(got), filepath.Base(segs[1]), first.before)
	}
	r, err := Open(dir, WithSkipDamaged())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got = nil
	for r.Next() {
		rec := *r.Record()
		got = append(got, rec)
	}
	if r.Err() != nil || len(got) != len(recs)-nLost+1 {
		t.Fatalf("err %v, %d records, want %d", r.Err(), len(got), len(recs)-nLost+1)
	}
	g := got[first.before]
	if g.Kind != KindGap || g.Seq != first.e.FirstSeq || g.Conn != ConnAll {
		t.Fatalf("gap %+v", g)
	}
	ds := r.Damaged()
	if len(ds) != 1 || ds[0].Records != uint64(nLost) || !ds[0].RecordsKnown || ds[0].FirstSeq != first.e.FirstSeq ||
		!strings.Contains(ds[0].Reason, filepath.Base(segs[1])) {
		t.Fatalf("damage %+v", ds)
	}
	if got[len(got)-1].Seq != uint64(len(recs)) {
		t.Fatalf("last record seq %d, want %d", got[len(got)-1].Seq, len(recs))
	}
}

// TestDuplicatedOrSwappedSegments: a segment copied over the next one, or
// two segments swapped, is an error naming the files, whatever the mode.
func TestDuplicatedOrSwappedSegments(t *testing.T) {
	src, _ := damageDataset(t)
	for _, tc := range []string{"copy", "swap", "copy-renumbered"} {
		t.Run(tc, func(t *testing.T) {
			dir := copyDataset(t, src)
			segs := segmentPaths(t, dir)
			a, b := segs[1], segs[2]
			ab, _ := os.ReadFile(a)
			bb, _ := os.ReadFile(b)
			switch tc {
			case "copy":
				bb = append([]byte(nil), ab...)
			case "swap":
				ab, bb = bb, ab
			case "copy-renumbered":
				// A copy whose header was made to match its new name.
				bb = append([]byte(nil), ab...)
				var sh segmentHeader
				if err := sh.unmarshal(bb); err != nil {
					t.Fatal(err)
				}
				sh.Number = 3
				sh.marshal((*[segmentHeaderSize]byte)(bb))
			}
			os.WriteFile(a, ab, 0o644)
			os.WriteFile(b, bb, 0o644)
			for _, opts := range [][]ReaderOption{nil, {WithSkipDamaged()}} {
				_, err, _ := readAll(t, dir, opts...)
				if !errors.Is(err, ErrSegmentOrder) {
					t.Fatalf("err %v, want ErrSegmentOrder", err)
				}
				name := filepath.Base(b)
				if tc == "swap" {
					name = filepath.Base(a)
				}
				if !strings.Contains(err.Error(), name) {
					t.Fatalf("error %q does not name %s", err, name)
				}
				if tc == "copy-renumbered" && !strings.Contains(err.Error(), filepath.Base(a)) {
					t.Fatalf("error %q does not name %s", err, filepath.Base(a))
				}
			}
		})
	}
}

// FuzzSkipDamaged feeds arbitrary bytes as a dataset's second segment to a
// reader that steps over damage: it must not panic or loop, must return
// records in strictly increasing seq order, and must stop only at the end
// or with a *CorruptionError. The dataset is copied once per fuzzing
// process; an input rewrites only the segment and the manifest (clean or
// not), without fsync, so an input costs its read, not a copy of the
// fixture and two fsyncs; seeds are small segments and inputs bounded (5
// inputs in 20 s on a loaded host before).
func FuzzSkipDamaged(f *testing.F) {
	for _, seed := range fuzzSegments(f) {
		f.Add(seed, false)
		flipped := append([]byte(nil), seed...)
		flipped[len(flipped)/2] ^= 1
		f.Add(flipped, true)
		f.Add(seed[:len(seed)*2/3], true)
	}
	dir := filepath.Join(f.TempDir(), "ds")
	if err := os.CopyFS(dir, os.DirFS(fixtureDir)); err != nil {
		f.Fatal(err)
	}
	manifest := filepath.Join(dir, ManifestName)
	clean, err := os.ReadFile(manifest)
	if err != nil {
		f.Fatal(err)
	}
	markUnclean(f, dir)
	unclean, err := os.ReadFile(manifest)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, isUnclean bool) {
		if len(data) > maxFuzzSegment {
			return // block sizes are bounded by the file
		}
		var sh segmentHeader
		if len(data) >= segmentHeaderSize && sh.unmarshal(data) == nil {
			sh.Number = 2 // so that the header names its file
			sh.marshal((*[segmentHeaderSize]byte)(data))
		}
		m := clean
		if isUnclean {
			m = unclean
		}
		if err := os.WriteFile(manifest, m, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, segmentName(2)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(dir, WithSkipDamaged())
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var last uint64
		for n := 0; r.Next(); n++ {
			if s := r.Record().Seq; s <= last {
				t.Fatalf("record %d: seq %d after %d", n, s, last)
			} else {
				last = s
			}
		}
		var ce *CorruptionError
		if err := r.Err(); err != nil && !errors.As(err, &ce) {
			t.Fatalf("stopped with %T %v", err, err)
		}
	})
}
