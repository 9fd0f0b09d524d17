package datasets

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lastGap reads dir strictly and returns every record and the last one,
// which must be a gap record, with its Control.
func readWithGap(t *testing.T, dir string, at int) ([]Record, Control) {
	t.Helper()
	got, err, tr := readAll(t, dir, WithStrict())
	if err != nil || tr != nil || at >= len(got) {
		t.Fatalf("after repair: %d records, %v %v", len(got), err, tr)
	}
	g := got[at]
	c, err := DecodeControl(g.Payload)
	if g.Kind != KindGap || g.Conn != ConnAll || err != nil {
		t.Fatalf("record %d after repair: %+v %v, want a gap", at, g, err)
	}
	return got, c
}

// TestRepairTruncatedCleanDataset is issue 13 item 2: a clean dataset whose
// last segment lost its second half. Repair counts the loss from the index
// (exactly) or, without one, as a lower bound; writes a gap record from the
// last good record to the old end; keeps the recorded range; and inspect
// shows the loss afterwards.
func TestRepairTruncatedCleanDataset(t *testing.T) {
	src, recs := damageDataset(t)
	old, err := ReadManifest(src)
	if err != nil {
		t.Fatal(err)
	}
	segs := segmentPaths(t, src)
	lastSeg := filepath.Base(segs[len(segs)-1])
	blocks := blocksOf(t, src)
	var in []blockPos
	for _, b := range blocks {
		if filepath.Base(b.seg) == lastSeg {
			in = append(in, b)
		}
	}
	half := in[len(in)/2]
	for _, tc := range []struct {
		name     string
		size     int64 // the segment is cut to this size
		dropIdx  bool
		survive  int
		exact    bool
		atLeast  uint64
		tornByte bool
	}{
		{"mid block, with index", half.e.Offset + 100, false, half.before, true, 0, true},
		{"mid block, no index", half.e.Offset + 100, true, half.before, false, uint64(half.e.Count), true},
		{"block boundary, with index", half.e.Offset, false, half.before, true, 0, false},
		{"block boundary, no index", half.e.Offset, true, half.before, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDataset(t, src)
			seg := filepath.Join(dir, lastSeg)
			if err := os.Truncate(seg, tc.size); err != nil {
				t.Fatal(err)
			}
			if tc.dropIdx {
				os.Remove(strings.TrimSuffix(seg, segmentExt) + indexExt)
			}
			rep, err := Repair(dir)
			if err != nil {
				t.Fatal(err)
			}
			lost := uint64(len(recs) - tc.survive)
			if len(rep.Dropped) != 1 || rep.RecordsExact != tc.exact {
				t.Fatalf("report %+v", rep)
			}
			if tc.exact && rep.DroppedRecords != lost {
				t.Fatalf("dropped %d records, %d were lost", rep.DroppedRecords, lost)
			}
			if !tc.exact && (rep.DroppedRecords > lost || rep.DroppedRecords < tc.atLeast) {
				t.Fatalf("dropped at least %d records, %d were lost (%d known from headers)", rep.DroppedRecords, lost, tc.atLeast)
			}
			d := rep.Dropped[0]
			if d.FirstSeq != uint64(tc.survive+1) || d.GapSeq != d.FirstSeq || d.FromNs != recs[tc.survive-1].WallNs || d.ToNs != old.EndNs {
				t.Fatalf("dropped %+v: want seq %d from %d to %d", d, tc.survive+1, recs[tc.survive-1].WallNs, old.EndNs)
			}
			// The range never shrinks; the dataset says it was repaired.
			m, err := ReadManifest(dir)
			if err != nil || m.StartNs != old.StartNs || m.EndNs != old.EndNs || !m.Clean || !m.Repaired {
				t.Fatalf("manifest after repair %+v %v (before %d..%d)", m, err, old.StartNs, old.EndNs)
			}
			got, c := readWithGap(t, dir, tc.survive)
			if len(got) != tc.survive+1 {
				t.Fatalf("%d records after repair, want %d + the gap", len(got), tc.survive)
			}
			checkPrefix(t, got[:tc.survive], recs)
			if c.FromNs != d.FromNs || c.ToNs != old.EndNs || c.Dropped != rep.DroppedRecords {
				t.Fatalf("gap %+v, dropped %+v", c, d)
			}
			info, err := Inspect(dir)
			if err != nil || info.Err != "" || len(info.Losses) == 0 {
				t.Fatalf("inspect after repair: %+v %v", info, err)
			}
			if l := info.Losses[len(info.Losses)-1]; l.Kind != "gap" || l.Dropped != rep.DroppedRecords || l.ToNs != old.EndNs {
				t.Fatalf("inspect's last loss %+v", l)
			}
			if vr, err := Verify(dir); err != nil || !vr.OK() {
				t.Fatalf("verify after repair: %+v %v", vr, err)
			}
			if again, err := Repair(dir); err != nil || again.Changed() {
				t.Fatalf("second repair: %+v %v", again, err)
			}
		})
	}
}

// TestRepairMissingSegment is issue 13 item 3 for repair: a segment file
// gone is a gap record with the exact count, the range unchanged.
func TestRepairMissingSegment(t *testing.T) {
	src, recs := damageDataset(t)
	dir := copyDataset(t, src)
	old, _ := ReadManifest(dir)
	segs := segmentPaths(t, dir)
	blocks := blocksOf(t, dir)
	var first, last blockPos
	for _, b := range blocks {
		if filepath.Base(b.seg) == filepath.Base(segs[1]) {
			if first.seg == "" {
				first = b
			}
			last = b
		}
	}
	os.Remove(segs[1])
	os.Remove(strings.TrimSuffix(segs[1], segmentExt) + indexExt)
	rep, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	lost := last.e.LastSeq - first.e.FirstSeq + 1
	if len(rep.Dropped) != 1 || rep.DroppedRecords != lost || !rep.RecordsExact || !strings.Contains(rep.Dropped[0].Reason, filepath.Base(segs[1])) {
		t.Fatalf("report %+v, want %d records lost naming %s", rep, lost, filepath.Base(segs[1]))
	}
	got, c := readWithGap(t, dir, first.before)
	if len(got) != len(recs)-int(lost)+1 || c.Dropped != lost || got[first.before].Seq != first.e.FirstSeq {
		t.Fatalf("%d records, gap %+v", len(got), c)
	}
	checkPrefix(t, got[:first.before], recs)
	for i, r := range got[first.before+1:] {
		j := first.before + int(lost) + i
		if r.Seq != uint64(j+1) || !sameRecord(&r, &recs[j]) {
			t.Fatalf("record %d after the gap: %+v", i, r)
		}
	}
	if m, _ := ReadManifest(dir); m.StartNs != old.StartNs || m.EndNs != old.EndNs {
		t.Fatalf("range %d..%d, was %d..%d", m.StartNs, m.EndNs, old.StartNs, old.EndNs)
	}
	if vr, err := Verify(dir); err != nil || !vr.OK() {
		t.Fatalf("verify after repair: %+v %v", vr, err)
	}
}

// TestRepairDuplicateSegment: the last segment replaced by a copy of the one
// before it. Repair sets the copy aside (nothing deleted), counts what the
// real segment held from its index, puts a gap record in its place and
// keeps the range: it never shrinks to the duplicate's end. Swapped
// segments are refused and left as they were.
func TestRepairDuplicateSegment(t *testing.T) {
	src, recs := damageDataset(t)
	dir := copyDataset(t, src)
	old, _ := ReadManifest(dir)
	segs := segmentPaths(t, dir)
	n := len(segs)
	blocks := blocksOf(t, dir)
	survive := 0
	for _, b := range blocks {
		if b.seg != segs[n-1] {
			survive = b.before + int(b.e.Count)
		}
	}
	b, _ := os.ReadFile(segs[n-2])
	if err := os.WriteFile(segs[n-1], b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err, _ := readAll(t, dir); !errors.Is(err, ErrSegmentOrder) {
		t.Fatalf("read: %v, want ErrSegmentOrder", err)
	}
	rep, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	aside := segs[n-1] + ".duplicate"
	if len(rep.SetAside) != 1 || rep.SetAside[0] != aside {
		t.Fatalf("set aside %v", rep.SetAside)
	}
	if kept, err := os.ReadFile(aside); err != nil || !bytes.Equal(kept, b) {
		t.Fatalf("the duplicate was not kept: %v", err)
	}
	lost := uint64(len(recs) - survive)
	if rep.DroppedRecords != lost || !rep.RecordsExact || rep.EndNs != old.EndNs {
		t.Fatalf("report %+v: want %d records lost exactly, end %d", rep, lost, old.EndNs)
	}
	got, c := readWithGap(t, dir, survive)
	if len(got) != survive+1 || c.Dropped != lost || c.ToNs != old.EndNs {
		t.Fatalf("%d records, gap %+v", len(got), c)
	}
	checkPrefix(t, got[:survive], recs)
	if vr, err := Verify(dir); err != nil || !vr.OK() {
		t.Fatalf("verify after repair: %+v %v", vr, err)
	}

	// Swapped: refused, nothing changed.
	dir = copyDataset(t, src)
	segs = segmentPaths(t, dir)
	a, bb := segs[1], segs[2]
	ab, _ := os.ReadFile(a)
	bbb, _ := os.ReadFile(bb)
	os.WriteFile(a, bbb, 0o644)
	os.WriteFile(bb, ab, 0o644)
	if _, err := Repair(dir); !errors.Is(err, ErrUnrepairable) || !strings.Contains(err.Error(), filepath.Base(a)) {
		t.Fatalf("repair of swapped segments: %v", err)
	}
	if now, _ := os.ReadFile(a); !bytes.Equal(now, bbb) {
		t.Fatal("repair changed a swapped segment")
	}
}

// TestManifestChecksum is issue 13 item 12: the manifest carries a
// checksum; a damaged one is a corruption error, an old one without a
// checksum still reads, format_version 0 is an error, and repair rebuilds a
// corrupt or missing manifest from the segments, naming what it could not
// recover.
func TestManifestChecksum(t *testing.T) {
	src, recs := damageDataset(t)
	mp := filepath.Join(src, ManifestName)
	raw, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"checksum": "crc32c:`)) {
		t.Fatalf("manifest has no checksum:\n%s", raw)
	}
	good, err := ReadManifest(src)
	if err != nil {
		t.Fatal(err)
	}

	// An old manifest (no checksum member) reads as before.
	dir := copyDataset(t, src)
	noSum := bytes.Replace(raw, []byte(`,
  "checksum"`), []byte(`,
  "x-was-checksum"`), 1)
	os.WriteFile(filepath.Join(dir, ManifestName), noSum, 0o644)
	if m, err := ReadManifest(dir); err != nil || m.Venue != good.Venue {
		t.Fatalf("manifest without checksum: %v", err)
	}
	// but not silently (issue 30 item 18): Verify reports it, Repair
	// writes the checksum back.
	if rep, err := Verify(dir); err != nil || len(rep.Problems) != 0 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0].What, "no checksum") {
		t.Fatalf("verify of a manifest without checksum: %v %+v", err, rep)
	}
	if rep, err := Repair(dir); err != nil || !rep.ManifestFixed {
		t.Fatalf("repair of a manifest without checksum: %v %+v", err, rep)
	}
	if rep, err := Verify(dir); err != nil || len(rep.Problems) != 0 || len(rep.Warnings) != 0 {
		t.Fatalf("verify after repair: %v %+v", err, rep)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ManifestName)); !bytes.Contains(b, []byte(`"checksum": "crc32c:`)) {
		t.Fatalf("repair wrote no checksum:\n%s", b)
	}

	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
		want error
	}{
		{"value changed", func(b []byte) []byte { return bytes.Replace(b, []byte(`"clean": true`), []byte(`"clean": false`), 1) }, ErrChecksum},
		{"format_version 0", func(b []byte) []byte {
			var m Manifest
			m, _ = parseManifest("", b)
			m.FormatVersion = 0
			out, _ := encodeManifest(m)
			return out
		}, ErrVersion},
		{"not JSON", func(b []byte) []byte { return b[:len(b)/2] }, nil},
		{"missing", nil, ErrNotDataset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDataset(t, src)
			p := filepath.Join(dir, ManifestName)
			if tc.edit == nil {
				os.Remove(p)
			} else {
				os.WriteFile(p, tc.edit(raw), 0o644)
			}
			_, err := ReadManifest(dir)
			var ce *CorruptionError
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || (tc.want != ErrNotDataset && !errors.As(err, &ce)) {
				t.Fatalf("ReadManifest: %v, want %v", err, tc.want)
			}
			rep, err := Repair(dir, WithVenueSniffer(func(frames [][]byte) string {
				if len(frames) == 0 {
					return ""
				}
				return "sniffed"
			}))
			if err != nil {
				t.Fatal(err)
			}
			if !rep.ManifestRebuilt || rep.ManifestProblem == "" || !containsAll(rep.Unrecovered, "subscriptions", "instruments") {
				t.Fatalf("report %+v", rep)
			}
			m, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.FormatVersion != FormatVersion || m.StartNs != good.StartNs || m.EndNs != good.EndNs || m.Endpoint == "" ||
				m.MonoBaseWallNs != recs[0].WallNs-recs[0].MonoNs || m.Clean || !m.Recovered || m.Notes == "" {
				t.Fatalf("rebuilt manifest %+v (original %+v)", m, good)
			}
			if tc.name == "missing" || tc.name == "not JSON" {
				if m.Venue != "sniffed" {
					t.Fatalf("venue %q, want the sniffer's", m.Venue)
				}
			} else if m.Venue != good.Venue {
				t.Fatalf("venue %q, want %q kept from the damaged manifest", m.Venue, good.Venue)
			}
			got, err, _ := readAll(t, dir, WithStrict())
			if err != nil || len(got) != len(recs) {
				t.Fatalf("after rebuild: %d records, %v", len(got), err)
			}
			checkPrefix(t, got, recs)
			if vr, err := Verify(dir); err != nil || !vr.OK() {
				t.Fatalf("verify after rebuild: %+v %v", vr, err)
			}
		})
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// TestRepairRewritesDisagreeingIndex: an index whose checksum holds but
// whose entries disagree with the block headers fails verify; repair must
// rewrite it (it used to say "nothing to repair").
func TestRepairRewritesDisagreeingIndex(t *testing.T) {
	src, _ := damageDataset(t)
	dir := copyDataset(t, src)
	p := filepath.Join(dir, indexName(1))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[indexHeaderSize+40] ^= 1 // the first entry's last_wall_ns
	b[28], b[29], b[30], b[31] = 0, 0, 0, 0
	sum := crc32c(b)
	b[28], b[29], b[30], b[31] = byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24)
	os.WriteFile(p, b, 0o644)
	if vr, err := Verify(dir); err != nil || vr.OK() {
		t.Fatalf("verify of a disagreeing index: %+v %v", vr, err)
	}
	rep, err := Repair(dir)
	if err != nil || len(rep.IndexesWritten) != 1 || len(rep.Dropped) != 0 {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if vr, err := Verify(dir); err != nil || !vr.OK() {
		t.Fatalf("verify after repair: %+v %v", vr, err)
	}
}

// TestFirstSegmentMissing: without segment 1 the reader reports the loss
// naming it, verify fails, and repair puts a gap record in its place.
func TestFirstSegmentMissing(t *testing.T) {
	src, recs := damageDataset(t)
	dir := copyDataset(t, src)
	blocks := blocksOf(t, dir)
	first := 0
	for _, b := range blocks {
		if filepath.Base(b.seg) == segmentName(1) {
			first = b.before + int(b.e.Count)
		}
	}
	os.Remove(filepath.Join(dir, segmentName(1)))
	os.Remove(filepath.Join(dir, indexName(1)))
	if _, err, _ := readAll(t, dir); !errors.Is(err, ErrMissingRecords) || !strings.Contains(err.Error(), segmentName(1)) {
		t.Fatalf("read: %v", err)
	}
	if vr, err := Verify(dir); err != nil || vr.OK() {
		t.Fatalf("verify: %+v %v", vr, err)
	}
	rep, err := Repair(dir)
	if err != nil || rep.DroppedRecords != uint64(first) || !rep.RecordsExact || !strings.Contains(rep.Dropped[0].Reason, segmentName(1)) {
		t.Fatalf("repair %+v %v: want %d records lost", rep, err, first)
	}
	got, c := readWithGap(t, dir, 0)
	if len(got) != len(recs)-first+1 || c.Dropped != uint64(first) || got[0].Seq != 1 {
		t.Fatalf("%d records, gap %+v seq %d", len(got), c, got[0].Seq)
	}
	if vr, err := Verify(dir); err != nil || !vr.OK() {
		t.Fatalf("verify after repair: %+v %v", vr, err)
	}
}
