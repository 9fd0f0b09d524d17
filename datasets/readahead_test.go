package datasets

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// readResult is everything a reader reports: records (copies), the final
// error, the torn tail, the damage stepped over and the unknown kinds.
type readResult struct {
	recs    []Record
	err     string
	trunc   string
	damage  []Damage
	skipped uint64
}

func readEverything(t *testing.T, dir string, opts ...ReaderOption) readResult {
	t.Helper()
	r, err := Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var res readResult
	for r.Next() {
		rec := *r.Record()
		rec.Payload = append([]byte(nil), rec.Payload...)
		res.recs = append(res.recs, rec)
	}
	if r.Err() != nil {
		res.err = r.Err().Error()
	}
	if tr := r.Truncated(); tr != nil {
		res.trunc = tr.String()
	}
	res.damage, res.skipped = r.Damaged(), r.SkippedUnknown()
	r.Close()
	if r.raOn {
		t.Fatal("read-ahead still running after Close")
	}
	return res
}

// sameAsSequential reads dir with and without read-ahead (several depths)
// in each mode and fails unless every result is identical.
func sameAsSequential(t *testing.T, dir string) {
	t.Helper()
	modes := []struct {
		name string
		opts []ReaderOption
	}{
		{"default", nil},
		{"skip-damaged", []ReaderOption{WithSkipDamaged()}},
		{"strict", []ReaderOption{WithStrict()}},
		{"all-kinds", []ReaderOption{WithAllKinds(), WithSkipDamaged()}},
	}
	for _, m := range modes {
		want := readEverything(t, dir, m.opts...)
		for _, n := range []int{1, 2, -1} {
			got := readEverything(t, dir, append([]ReaderOption{WithReadAhead(n)}, m.opts...)...)
			if len(got.recs) != len(want.recs) {
				t.Fatalf("%s, read-ahead %d: %d records, sequential %d (err %q / %q)", m.name, n, len(got.recs), len(want.recs), got.err, want.err)
			}
			for i := range want.recs {
				if got.recs[i].Seq != want.recs[i].Seq || !sameRecord(&got.recs[i], &want.recs[i]) {
					t.Fatalf("%s, read-ahead %d: record %d is %+v, sequential %+v", m.name, n, i, got.recs[i], want.recs[i])
				}
			}
			g, w := got, want
			g.recs, w.recs = nil, nil
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("%s, read-ahead %d:\n got  %+v\n want %+v", m.name, n, g, w)
			}
		}
	}
}

func TestReadAheadSamples(t *testing.T) {
	for _, v := range []string{"polymarket", "hyperliquid"} {
		t.Run(v, func(t *testing.T) {
			sameAsSequential(t, filepath.Join("samples", v))
		})
	}
}

func TestReadAheadClean(t *testing.T) {
	dir, recs := damageDataset(t)
	got := readEverything(t, dir, WithReadAhead(2))
	if got.err != "" || len(got.recs) != len(recs) {
		t.Fatalf("%d records, err %q", len(got.recs), got.err)
	}
	checkPrefix(t, got.recs, recs)
	sameAsSequential(t, dir)
}

// Damage of every kind: read-ahead hands the damaged block back to the
// reader, which reports it exactly as without read-ahead (the same records
// before and after it, the same Damage, gap records, errors, torn tails).
func TestReadAheadDamaged(t *testing.T) {
	src, _ := faultDataset(t)
	blocks := blocksOf(t, src)
	for k, b := range blocks {
		if (testing.Short() || raceEnabled) && k%3 != 0 && k != len(blocks)-1 {
			continue
		}
		for _, where := range flipSpots(b) {
			t.Run(fmt.Sprintf("block%02d/%s", k, where.name), func(t *testing.T) {
				dir := copyDataset(t, src)
				flipByte(t, filepath.Join(dir, filepath.Base(b.seg)), where.off)
				sameAsSequential(t, dir)
				markUnclean(t, dir)
				sameAsSequential(t, dir)
			})
		}
	}
	last := blocks[len(blocks)-1]
	for _, cut := range []int64{last.e.Offset + 10, last.e.Offset + blockHeaderSize + int64(last.e.CompLen)/2, last.e.Offset} {
		t.Run(fmt.Sprintf("torn-at-%d", cut), func(t *testing.T) {
			dir := copyDataset(t, src)
			if err := os.Truncate(filepath.Join(dir, filepath.Base(last.seg)), cut); err != nil {
				t.Fatal(err)
			}
			sameAsSequential(t, dir)
			markUnclean(t, dir)
			sameAsSequential(t, dir)
		})
	}
	t.Run("missing-segment", func(t *testing.T) {
		dir, _ := damageDataset(t)
		segs := segmentPaths(t, dir)
		for _, p := range []string{segs[1], strings.TrimSuffix(segs[1], segmentExt) + indexExt} {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		sameAsSequential(t, dir)
	})
	t.Run("two-damaged-blocks", func(t *testing.T) {
		dir := copyDataset(t, src)
		for _, b := range []blockPos{blocks[1], blocks[2], blocks[len(blocks)-2]} {
			flipByte(t, filepath.Join(dir, filepath.Base(b.seg)), b.e.Offset+blockHeaderSize+int64(b.e.CompLen)/2)
		}
		res := readEverything(t, dir, WithSkipDamaged(), WithReadAhead(2))
		if len(res.damage) != 2 {
			t.Fatalf("damage %+v: want 2 stretches (blocks 1-2 and one more)", res.damage)
		}
		sameAsSequential(t, dir)
	})
}

// SeekTime stops read-ahead; reading on from the new position is the same
// as without it.
func TestReadAheadSeek(t *testing.T) {
	dir, recs := damageDataset(t)
	for _, at := range []int{0, 1, len(recs) / 3, len(recs) - 1} {
		seq, ahead := readFrom(t, dir, recs[at].WallNs, nil), readFrom(t, dir, recs[at].WallNs, []ReaderOption{WithReadAhead(2)})
		if len(seq) == 0 || len(seq) != len(ahead) {
			t.Fatalf("seek to record %d: %d records, with read-ahead %d", at, len(seq), len(ahead))
		}
		for i := range seq {
			if seq[i].Seq != ahead[i].Seq || !sameRecord(&seq[i], &ahead[i]) {
				t.Fatalf("seek to record %d: record %d differs", at, i)
			}
		}
	}
}

// readFrom reads half the dataset, seeks to wallNs and reads on to the end.
func readFrom(t *testing.T, dir string, wallNs int64, opts []ReaderOption) []Record {
	t.Helper()
	r, err := Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < 700 && r.Next(); i++ {
	}
	if err := r.SeekTime(wallNs); err != nil {
		t.Fatal(err)
	}
	if r.raOn {
		t.Fatal("read-ahead running after SeekTime")
	}
	var out []Record
	for r.Next() {
		rec := *r.Record()
		rec.Payload = append([]byte(nil), rec.Payload...)
		out = append(out, rec)
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return out
}

// Read-ahead allocates nothing per block once its slots have grown.
func TestReadAheadAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	recs := genRecords(t, 20000, int64(time.Millisecond))
	dir := filepath.Join(t.TempDir(), "ds")
	writeRecords(t, dir, recs, WithBlockSize(16<<10))
	if n := len(segmentPaths(t, dir)); n != 1 {
		t.Fatalf("%d segments, want one", n)
	}
	r, err := Open(dir, WithReadAhead(2))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < 1500; i++ { // warm up: slots, decoder
		if !r.Next() {
			t.Fatal(r.Err())
		}
	}
	if !r.raOn {
		t.Fatal("read-ahead is not running")
	}
	next := func() {
		if !r.Next() {
			t.Fatal(r.Err())
		}
	}
	// totalMallocs switches GOMAXPROCS, and the runtime refills the caches
	// of the new Ps (channel waiters, sync.Pool rings) once the two
	// goroutines meet on them: a couple of allocations whatever the length.
	// Per block there must be none: 16 times the blocks, no more.
	short := totalMallocs(1000, next)
	long := totalMallocs(16000, next)
	if short > 4 || long > short+1 {
		t.Fatalf("%d allocations over 1000 records, %d over 16000 (%d blocks in all): read-ahead allocates per block",
			short, long, len(blocksOf(t, dir)))
	}
}

// A reader closed in the middle of a segment stops its goroutine.
func TestReadAheadCloseMidway(t *testing.T) {
	dir, _ := damageDataset(t)
	r, err := Open(dir, WithReadAhead(-1))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && r.Next(); i++ {
	}
	if !r.raOn {
		t.Fatal("read-ahead is not running")
	}
	done := r.ra.done
	r.Close()
	select {
	case <-done:
	default:
		t.Fatal("the read-ahead goroutine outlived Close")
	}
	if r.Next() {
		t.Fatal("Next after Close")
	}
}

// With WithReadUntil, read-ahead reads no block past the one reaching the
// time (a remote store would fetch them for nothing): a reader stopping
// there has read the same bytes as without read-ahead. Reading on past it
// still works, on demand.
func TestReadAheadStopsAtReadUntil(t *testing.T) {
	recs := genRecords(t, 6000, int64(time.Millisecond))
	dir := filepath.Join(t.TempDir(), "ds")
	writeRecords(t, dir, recs, WithBlockSize(16<<10))
	until := recs[len(recs)/3].WallNs
	read := func(opts ...ReaderOption) (fetched int64, all []Record) {
		r, err := Open(dir, append(opts, WithReadUntil(until))...)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for r.Next() && r.Record().WallNs < until {
		}
		fetched = r.Fetched()
		all = append(all, *r.Record())
		for r.Next() {
			all = append(all, *r.Record())
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		return fetched, all
	}
	seqBytes, seqRecs := read()
	aheadBytes, aheadRecs := read(WithReadAhead(3))
	if seqBytes == 0 || aheadBytes != seqBytes {
		t.Fatalf("read %d bytes up to the time with read-ahead, %d without", aheadBytes, seqBytes)
	}
	if len(aheadRecs) != len(seqRecs) || len(seqRecs) != len(recs)-len(recs)/3 {
		t.Fatalf("%d records on from the time with read-ahead, %d without, want %d", len(aheadRecs), len(seqRecs), len(recs)-len(recs)/3)
	}
}

// reframeBlock rewrites block b of its segment with intact checksums around
// content whose columns mutate has damaged: damage only the framing check
// (parseColumns) finds. The block is stored raw; what follows it moves.
func reframeBlock(t *testing.T, b blockPos, mutate func(raw []byte, count int)) {
	t.Helper()
	file, err := os.ReadFile(b.seg)
	if err != nil {
		t.Fatal(err)
	}
	at := b.e.Offset
	var h blockHeader
	if err := h.unmarshal(file[at : at+blockHeaderSize]); err != nil {
		t.Fatal(err)
	}
	// The segment's own reader decodes it (with the dictionary if any).
	f, err := os.Open(b.seg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sr segmentReader
	defer sr.release()
	sr.reset(f, b.seg, 0, int64(len(file)))
	if _, err := sr.readSegmentHeader(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(at, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	sr.reset(f, b.seg, at, int64(len(file)))
	if err := sr.readBlockContent(); err != nil {
		t.Fatal(err)
	}
	if err := sr.decodeContent(h.Flags&blockFlagDict != 0); err != nil {
		t.Fatal(err)
	}
	raw := append([]byte(nil), sr.raw...)
	mutate(raw, int(h.Count))
	h.Codec, h.Flags = codecRaw, 0
	h.CompLen, h.RawLen = uint32(len(raw)), uint32(len(raw))
	h.CompCRC, h.RawCRC = crc32c(raw), crc32c(raw)
	var hb [blockHeaderSize]byte
	h.marshal(&hb)
	out := append(append(append(append([]byte(nil), file[:at]...), hb[:]...), raw...), file[at+blockHeaderSize+int64(b.e.CompLen):]...)
	if err := os.WriteFile(b.seg, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A block whose checksums hold but whose columns do not add up (the check
// read-ahead makes on its own goroutine): reported as the sequential reader
// reports it, and the reader goes on after it the same way.
func TestReadAheadFramingDamage(t *testing.T) {
	src, _ := faultDataset(t)
	blocks := blocksOf(t, src)
	damages := []struct {
		name   string
		mutate func(raw []byte, count int)
	}{
		// The second record's seq delta 0: sequence numbers stop increasing.
		{"seq", func(raw []byte, count int) { clear(raw[8 : 8+8]) }},
		// One record a byte longer: the lengths overrun the payload section.
		{"lengths", func(raw []byte, count int) { raw[24*count]++ }},
	}
	for _, k := range []int{1, len(blocks) / 2, len(blocks) - 1} {
		for _, d := range damages {
			t.Run(fmt.Sprintf("block%02d/%s", k, d.name), func(t *testing.T) {
				dir := copyDataset(t, src)
				b := blocks[k]
				b.seg = filepath.Join(dir, filepath.Base(b.seg))
				reframeBlock(t, b, d.mutate)
				strict := readEverything(t, dir, WithReadAhead(2))
				if !strings.Contains(strict.err, ErrFraming.Error()) || len(strict.recs) != b.before {
					t.Fatalf("read-ahead: %d records, err %q; want the %d before the block and a framing error", len(strict.recs), strict.err, b.before)
				}
				skip := readEverything(t, dir, WithReadAhead(2), WithSkipDamaged())
				if len(skip.damage) != 1 || skip.err != "" {
					t.Fatalf("skip-damaged: damage %+v, err %q; want the block reported", skip.damage, skip.err)
				}
				sameAsSequential(t, dir)
			})
		}
	}
}
