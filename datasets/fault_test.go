package datasets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

// copyDataset copies the files of dataset src into a new directory.
func copyDataset(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func markUnclean(t testing.TB, dir string) {
	t.Helper()
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Clean, m.EndNs = false, 0
	if err := writeManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// blocksOf lists every block of the dataset with its segment and the number
// of records before it.
type blockPos struct {
	seg    string
	e      indexEntry
	before int
}

func blocksOf(t *testing.T, dir string) []blockPos {
	t.Helper()
	var out []blockPos
	n := 0
	for _, p := range segmentPaths(t, dir) {
		res, err := scanSegment(p)
		if err != nil || res.damage != nil {
			t.Fatal(err, res.damage)
		}
		for _, e := range res.entries {
			out = append(out, blockPos{p, e, n})
			n += int(e.Count)
		}
	}
	return out
}

func faultDataset(t *testing.T) (string, []Record) {
	recs := genRecords(t, 1200, int64(time.Millisecond))
	dir := filepath.Join(t.TempDir(), "ds")
	writeRecords(t, dir, recs, WithBlockSize(32<<10), WithSegmentSize(64<<10))
	if n := len(segmentPaths(t, dir)); n < 2 {
		t.Fatalf("want several segments, got %d", n)
	}
	return dir, recs
}

func TestTruncatedTail(t *testing.T) {
	src, recs := faultDataset(t)
	blocks := blocksOf(t, src)
	last := blocks[len(blocks)-1]
	prev := blocks[len(blocks)-2]
	if prev.seg != last.seg {
		t.Fatal("last segment holds a single block; enlarge the dataset")
	}
	cases := []struct {
		name      string
		size      int64 // new size of the last segment
		survivors int   // records readable
		cutAt     int64 // where the torn tail starts; -1 = nothing torn
	}{
		{"mid segment header", 7, 0, 0},
		{"after segment header", segmentHeaderSize, blocks[indexOfSeg(blocks, last.seg)].before, segmentHeaderSize},
		{"mid dictionary", segmentHeaderSize + 100, blocks[indexOfSeg(blocks, last.seg)].before, segmentHeaderSize},
		{"at first block", blocks[indexOfSeg(blocks, last.seg)].e.Offset, blocks[indexOfSeg(blocks, last.seg)].before, -1},
		{"mid block header", last.e.Offset + 10, last.before, last.e.Offset},
		{"after block header", last.e.Offset + blockHeaderSize, last.before, last.e.Offset},
		{"mid content", last.e.Offset + blockHeaderSize + int64(last.e.CompLen)/2, last.before, last.e.Offset},
		{"one byte short", last.e.end() - 1, last.before, last.e.Offset},
		{"at block boundary", last.e.Offset, last.before, -1},
		{"mid previous block", prev.e.Offset + 100, prev.before, prev.e.Offset},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDataset(t, src)
			if err := os.Truncate(last.seg[:0]+filepath.Join(dir, filepath.Base(last.seg)), tc.size); err != nil {
				t.Fatal(err)
			}
			segPath := filepath.Join(dir, filepath.Base(last.seg))
			survivors := tc.survivors
			if tc.name == "mid segment header" {
				survivors = blocks[indexOfSeg(blocks, last.seg)].before
			}

			// Clean manifest: the damage is corruption.
			if tc.cutAt >= 0 || tc.name == "mid segment header" {
				got, err, _ := readAll(t, dir)
				checkPrefix(t, got, recs)
				var ce *CorruptionError
				if len(got) != survivors || !errors.As(err, &ce) || ce.File != segPath {
					t.Fatalf("clean: %d records (want %d), err %v", len(got), survivors, err)
				}
				if tc.cutAt >= 0 && ce.Offset != tc.cutAt {
					t.Fatalf("corruption at %d, want %d", ce.Offset, tc.cutAt)
				}
			}

			// After a crash (unclean manifest): a clean stop with a report.
			markUnclean(t, dir)
			got, err, tr := readAll(t, dir)
			checkPrefix(t, got, recs)
			if err != nil || len(got) != survivors {
				t.Fatalf("unclean: %d records (want %d), err %v", len(got), survivors, err)
			}
			if tc.cutAt < 0 {
				if tr != nil {
					t.Fatalf("unexpected truncation %v", tr)
				}
			} else if tr == nil || tr.File != segPath || tr.Offset != tc.cutAt || tr.Bytes != tc.size-tc.cutAt {
				t.Fatalf("truncation %v, want %s at %d, %d bytes", tr, segPath, tc.cutAt, tc.size-tc.cutAt)
			}
			if _, err, _ := readAll(t, dir, WithStrict()); tc.cutAt >= 0 && err == nil {
				t.Fatal("strict reader accepted a torn tail")
			}

			// Repair cuts the tail and reports it.
			rep, err := Repair(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.cutAt >= 0 || tc.name == "mid segment header" {
				if len(rep.Dropped) != 1 || !rep.Dropped[0].Tail || rep.DroppedBytes != tc.size-max(tc.cutAt, 0) {
					t.Fatalf("repair report %+v", rep)
				}
			}
			// Every loss is counted exactly (the segment's index still lists
			// the blocks it lost, even at a block boundary where no byte is
			// damaged) and a gap record stands for it.
			if len(rep.Dropped) != 1 || rep.DroppedRecords != uint64(len(recs)-survivors) || !rep.RecordsExact ||
				rep.Dropped[0].GapSeq != uint64(survivors+1) || !rep.Recovered {
				t.Fatalf("repair report %+v: want %d records dropped, exactly", rep, len(recs)-survivors)
			}
			got, err, tr = readAll(t, dir, WithStrict())
			if err != nil || tr != nil || len(got) != survivors+1 {
				t.Fatalf("after repair: %d records, %v %v", len(got), err, tr)
			}
			checkPrefix(t, got[:survivors], recs)
			if g := got[survivors]; g.Kind != KindGap || g.Conn != ConnAll {
				t.Fatalf("last record after repair %+v, want the gap", g)
			}
			vr, err := Verify(dir)
			if err != nil || !vr.OK() || len(vr.Warnings) != 0 {
				t.Fatalf("verify after repair: %+v %v", vr, err)
			}
			if again, err := Repair(dir); err != nil || again.Changed() {
				t.Fatalf("second repair changed things: %+v %v", again, err)
			}
		})
	}
}

func indexOfSeg(blocks []blockPos, seg string) int {
	for i, b := range blocks {
		if b.seg == seg {
			return i
		}
	}
	return -1
}

func TestFlippedByteInEveryBlock(t *testing.T) {
	src, recs := faultDataset(t)
	blocks := blocksOf(t, src)
	for k, b := range blocks {
		// -short (and -race) keep the first and last block and those opening a segment.
		if (testing.Short() || raceEnabled) && k != 0 && k != len(blocks)-1 && (k == 0 || blocks[k-1].seg == b.seg) {
			continue
		}
		for _, where := range flipSpots(b) {
			t.Run(fmt.Sprintf("block%02d/%s", k, where.name), func(t *testing.T) {
				dir := copyDataset(t, src)
				seg := filepath.Join(dir, filepath.Base(b.seg))
				flipByte(t, seg, where.off)

				got, err, _ := readAll(t, dir)
				checkPrefix(t, got, recs)
				var ce *CorruptionError
				if len(got) != b.before || !errors.As(err, &ce) || ce.File != seg || ce.Offset != b.e.Offset {
					t.Fatalf("read %d records (want %d), err %v", len(got), b.before, err)
				}

				vr, err := Verify(dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(vr.Problems) != 1 || vr.Problems[0].File != seg || vr.Problems[0].Offset != b.e.Offset ||
					vr.Records != uint64(len(recs))-uint64(b.e.Count) {
					t.Fatalf("verify: %+v", vr)
				}

				rep, err := Repair(dir)
				if err != nil {
					t.Fatal(err)
				}
				last := k == len(blocks)-1
				if len(rep.Dropped) != 1 {
					t.Fatalf("repair: %+v", rep)
				}
				d := rep.Dropped[0]
				// Even a last block whose header fails its checksum is
				// counted exactly: the index lists it.
				if rep.DroppedRecords != uint64(b.e.Count) || !rep.RecordsExact || d.FirstSeq != b.e.FirstSeq ||
					d.LastSeq != b.e.LastSeq || d.Offset != b.e.Offset {
					t.Fatalf("dropped %+v, block %+v", d, b.e)
				}
				if d.Tail != last || d.GapSeq != b.e.FirstSeq {
					t.Fatalf("dropped %+v (last block %v)", d, last)
				}

				// Everything but the damaged block survives; a gap record stands in for it.
				got, err, _ = readAll(t, dir, WithStrict())
				if err != nil {
					t.Fatal(err)
				}
				want := len(recs) - int(b.e.Count) + 1
				if len(got) != want {
					t.Fatalf("after repair %d records, want %d", len(got), want)
				}
				checkPrefix(t, got[:b.before], recs)
				{
					g := got[b.before]
					c, err := DecodeControl(g.Payload)
					if g.Kind != KindGap || g.Conn != ConnAll || g.Seq != b.e.FirstSeq || err != nil || c.Dropped != uint64(b.e.Count) {
						t.Fatalf("gap record %+v %+v %v", g, c, err)
					}
					for i, r := range got[b.before+1:] {
						j := b.before + int(b.e.Count) + i
						if r.Seq != uint64(j+1) || !sameRecord(&r, &recs[j]) {
							t.Fatalf("record after the gap %d: %+v", i, r)
						}
					}
				}
				if vr, err := Verify(dir); err != nil || !vr.OK() {
					t.Fatalf("verify after repair: %+v %v", vr, err)
				}
			})
		}
	}
}

type flipSpot struct {
	name string
	off  int64
}

// flipSpots are the offsets in block b where a flipped byte damages its
// header and its content.
func flipSpots(b blockPos) []flipSpot {
	return []flipSpot{
		{"header", b.e.Offset + 40},
		{"content", b.e.Offset + blockHeaderSize + int64(b.e.CompLen)/2},
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMissingIndex(t *testing.T) {
	src, recs := faultDataset(t)
	dir := copyDataset(t, src)
	idx, _ := filepath.Glob(filepath.Join(dir, "*"+indexExt))
	if len(idx) < 2 {
		t.Fatalf("indexes %v", idx)
	}
	os.Remove(idx[0])
	os.WriteFile(idx[1], []byte("TDIX garbage"), 0o644)

	got, err, _ := readAll(t, dir)
	if err != nil || len(got) != len(recs) {
		t.Fatal(len(got), err)
	}
	checkSeek(t, dir, recs)
	vr, err := Verify(dir)
	if err != nil || !vr.OK() || len(vr.Warnings) != 2 {
		t.Fatalf("verify: %+v %v", vr, err)
	}
	rep, err := Repair(dir)
	if err != nil || len(rep.IndexesWritten) != 2 || len(rep.Dropped) != 0 {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	for _, p := range idx {
		a, _ := os.ReadFile(p)
		b, _ := os.ReadFile(filepath.Join(src, filepath.Base(p)))
		if !bytes.Equal(a, b) {
			t.Errorf("rebuilt %s differs from the writer's", p)
		}
	}
	if vr, err := Verify(dir); err != nil || !vr.OK() || len(vr.Warnings) != 0 {
		t.Fatalf("verify after repair: %+v %v", vr, err)
	}
}

// faultyFile is a SegmentFile on a real file that fails every write once
// the dataset's bytes would pass limit (a full disk), until the limit is raised.
type faultyFile struct {
	*os.File
	d *faultyDisk
}

type faultyDisk struct {
	mu           sync.Mutex
	used, limit  int64
	failTruncate bool
}

func (d *faultyDisk) setLimit(n int64) { d.mu.Lock(); d.limit = n; d.mu.Unlock() }

func (f *faultyFile) Write(p []byte) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	room := f.d.limit - f.d.used
	if room >= int64(len(p)) {
		n, err := f.File.Write(p)
		f.d.used += int64(n)
		return n, err
	}
	if room < 0 {
		room = 0
	}
	n, _ := f.File.Write(p[:room])
	f.d.used += int64(n)
	return n, syscall.ENOSPC
}

func (f *faultyFile) Truncate(size int64) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if f.d.failTruncate {
		return syscall.EIO
	}
	st, err := f.File.Stat()
	if err != nil {
		return err
	}
	f.d.used -= st.Size() - size
	return f.File.Truncate(size)
}

func (d *faultyDisk) open(path string) (SegmentFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: f, d: d}, nil
}

func TestFullDisk(t *testing.T) {
	recs := genRecords(t, 3000, int64(time.Millisecond))
	for _, tc := range []struct {
		name         string
		limit        int64
		failTruncate bool
	}{
		{"mid first segment header", 5, false},
		{"mid block", 20 << 10, false},
		{"mid block, truncate fails too", 20 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := &faultyDisk{limit: tc.limit, failTruncate: tc.failTruncate}
			dir := filepath.Join(t.TempDir(), "ds")
			w, err := Create(dir, Manifest{Venue: "hyperliquid"}, WithFlushInterval(0), WithBlockSize(4<<10),
				WithSegmentSize(32<<10), WithSegmentFile(disk.open), WithMaxPending(1<<20))
			if err != nil {
				t.Fatal(err)
			}
			var accepted []Record
			failed := 0
			for i := range recs[:1500] {
				seq, err := w.Append(&recs[i])
				if seq == 0 {
					t.Fatalf("record %d refused: %v", i, err)
				}
				if err != nil {
					failed++
					if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EIO) {
						t.Fatalf("append error %v does not say why", err)
					}
				}
				accepted = append(accepted, recs[i])
			}
			if failed == 0 {
				t.Fatal("no write failed")
			}
			if err := w.Flush(); err == nil {
				t.Fatal("flush on a full disk succeeded")
			}
			if s := w.Stats(); s.Pending == 0 || s.Records+uint64(s.Pending) != 1500 {
				t.Fatalf("stats %+v", s)
			}
			// The disk frees up: everything pending goes out, in order.
			disk.setLimit(1 << 40)
			disk.mu.Lock()
			disk.failTruncate = false
			disk.mu.Unlock()
			if err := w.Flush(); err != nil {
				t.Fatalf("flush after space freed: %v", err)
			}
			wr := Record{Kind: KindWriteError, Payload: EncodeControl(Control{Err: "no space left on device"}), WallNs: recs[1500].WallNs, MonoNs: recs[1500].MonoNs}
			if _, err := w.Append(&wr); err != nil {
				t.Fatal(err)
			}
			accepted = append(accepted, wr)
			for i := range recs[1500:] {
				if _, err := w.Append(&recs[1500+i]); err != nil {
					t.Fatal(err)
				}
				accepted = append(accepted, recs[1500+i])
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, err, tr := readAll(t, dir, WithStrict())
			if err != nil || tr != nil || len(got) != len(accepted) {
				t.Fatalf("%d records of %d, %v %v", len(got), len(accepted), err, tr)
			}
			checkPrefix(t, got, accepted)
			if vr, err := Verify(dir); err != nil || !vr.OK() {
				t.Fatalf("verify %+v %v", vr, err)
			}
		})
	}
}

func TestFullDiskBacklogBound(t *testing.T) {
	disk := &faultyDisk{limit: 0}
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, Manifest{}, WithFlushInterval(0), WithBlockSize(1<<10), WithSegmentFile(disk.open), WithMaxPending(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	recs := genRecords(t, 2000, 1000)
	var accepted []Record
	refused := 0
	for i := range recs {
		seq, err := w.Append(&recs[i])
		if seq == 0 {
			if !errors.Is(err, ErrPendingFull) {
				t.Fatalf("refused with %v", err)
			}
			refused++
			continue
		}
		if seq != uint64(len(accepted)+1) {
			t.Fatalf("seq %d after %d accepted", seq, len(accepted))
		}
		accepted = append(accepted, recs[i])
	}
	if refused == 0 {
		t.Fatal("backlog never filled")
	}
	disk.setLimit(1 << 40)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err, _ := readAll(t, dir, WithStrict())
	if err != nil || len(got) != len(accepted) {
		t.Fatalf("%d of %d: %v", len(got), len(accepted), err)
	}
	checkPrefix(t, got, accepted)
}

func TestCloseReportsUnwritten(t *testing.T) {
	disk := &faultyDisk{limit: 0}
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, Manifest{}, WithFlushInterval(0), WithSegmentFile(disk.open))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range genRecords(t, 10, 1000) {
		w.Append(&r)
	}
	if err := w.Close(); err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("close: %v", err)
	}
	if m, err := ReadManifest(dir); err != nil || m.Clean {
		t.Fatalf("manifest after failed close: %+v %v", m, err)
	}
}

// The segment reader through testing/iotest readers: same records, or the
// reader's error surfaced (never a panic or a bogus record).
func TestSegmentReaderIOTest(t *testing.T) {
	src, _ := faultDataset(t)
	seg := segmentPaths(t, src)[0]
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	want, wantErr := readSegmentSized(bytes.NewReader(data), -1)
	if wantErr != nil || len(want) == 0 {
		t.Fatal(wantErr)
	}
	for _, tc := range []struct {
		name string
		r    func() io.Reader
		err  error
	}{
		{"one byte", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }, nil},
		{"half", func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }, nil},
		{"data+err", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }, nil},
		{"timeout", func() io.Reader { return iotest.TimeoutReader(bytes.NewReader(data)) }, iotest.ErrTimeout},
		{"error at 1000", func() io.Reader {
			return io.MultiReader(bytes.NewReader(data[:1000]), iotest.ErrReader(io.ErrClosedPipe))
		}, io.ErrClosedPipe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readSegmentSized(tc.r(), -1)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("err %v, %d records of %d", err, len(got), len(want))
			}
		})
	}
}

// --- kill -9 -------------------------------------------------------------

const childEnv = "TAPEDECK_DATASETS_TEST_CHILD"

// childWriter appends records forever to the dataset named by childEnv.
func childWriter() {
	frames, err := loadFrames()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w, err := Create(os.Getenv(childEnv), Manifest{Venue: "polymarket"},
		WithFlushInterval(2*time.Millisecond), WithBlockSize(16<<10), WithSegmentSize(256<<10),
		WithSegmentFile(func(path string) (SegmentFile, error) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			return &splitFile{f}, err
		}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	recs := makeRecords(frames, 1000, int64(time.Millisecond))
	for i := 0; ; i++ {
		r := recs[i%len(recs)]
		r.WallNs += int64(i/len(recs)) * int64(time.Second)
		r.MonoNs += int64(i/len(recs)) * int64(time.Second)
		if _, err := w.Append(&r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if i%64 == 0 {
			time.Sleep(200 * time.Microsecond)
		}
	}
}

// splitFile writes each buffer in two halves with a pause between, like a
// slow disk, so that the kill often lands in the middle of a block.
type splitFile struct{ *os.File }

func (f *splitFile) Write(p []byte) (int, error) {
	h := len(p) / 2
	n, err := f.File.Write(p[:h])
	if err != nil {
		return n, err
	}
	time.Sleep(300 * time.Microsecond)
	m, err := f.File.Write(p[h:])
	return n + m, err
}

func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until a good number of records is durable, then kill mid-write.
	seen := 0
	// A wall deadline only against a hung child: a busy host (the test
	// failed at 30 s under a load of ~22 on 2 cores) is slow, not wrong.
	deadline := time.Now().Add(3 * time.Minute)
	for seen < 20000 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child wrote only %d records: %s", seen, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
		if _, err := os.Stat(filepath.Join(dir, ManifestName)); err != nil {
			continue
		}
		got, err, _ := readAll(t, dir)
		if err != nil {
			t.Fatalf("reading a live dataset: %v", err)
		}
		seen = len(got)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("child exited cleanly; it should have been killed")
	}

	frames := realFrames(t)
	want := makeRecords(frames, 1000, int64(time.Millisecond))
	check := func(got []Record) {
		for i, r := range got {
			w := want[i%len(want)]
			w.WallNs += int64(i/len(want)) * int64(time.Second)
			w.MonoNs += int64(i/len(want)) * int64(time.Second)
			if r.Seq != uint64(i+1) || !sameRecord(&r, &w) {
				t.Fatalf("record %d after kill: %+v", i, r)
			}
		}
	}
	got, err, tr := readAll(t, dir)
	if err != nil {
		t.Fatalf("open after kill -9: %v", err)
	}
	if len(got) < seen {
		t.Fatalf("lost flushed records: %d readable, %d seen before the kill", len(got), seen)
	}
	check(got)
	rep, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kill -9 after %d records seen: %d readable, truncation %v, repair %+v", seen, len(got), tr, rep)
	if tr != nil && (len(rep.Dropped) != 1 || rep.DroppedBytes != tr.Bytes) {
		t.Fatalf("repair %+v does not match truncation %v", rep, tr)
	}
	after, err, tr2 := readAll(t, dir, WithStrict())
	wantN := len(got)
	if tr != nil {
		wantN++ // the gap record standing for the torn block
	}
	if err != nil || tr2 != nil || len(after) != wantN {
		t.Fatalf("after repair: %d records (before %d), %v %v", len(after), len(got), err, tr2)
	}
	if tr != nil && (after[len(after)-1].Kind != KindGap || !rep.Recovered) {
		t.Fatalf("after repair the last record is %v, recovered %v", after[len(after)-1].Kind, rep.Recovered)
	}
	if vr, err := Verify(dir); err != nil || !vr.OK() {
		t.Fatalf("verify after repair: %+v %v", vr, err)
	}
}

// One damaged dictionary copy costs nothing: readers use the other.
func TestDamagedDictionaryCopy(t *testing.T) {
	src, recs := faultDataset(t)
	seg := segmentPaths(t, src)[0]
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	var sh segmentHeader
	var h blockHeader
	if err := sh.unmarshal(b); err != nil || sh.DictCopies != 2 || h.unmarshal(b[segmentHeaderSize:]) != nil || h.Type != blockTypeDict {
		t.Fatalf("no dictionary: %+v %+v %v", sh, h, err)
	}
	copyLen := int64(blockHeaderSize + h.CompLen)
	for _, tc := range []struct {
		name string
		off  int64
	}{
		{"first copy header", segmentHeaderSize + 9},
		{"first copy content", segmentHeaderSize + blockHeaderSize + 5},
		{"second copy header", segmentHeaderSize + copyLen + 9},
		{"second copy content", segmentHeaderSize + copyLen + blockHeaderSize + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDataset(t, src)
			path := filepath.Join(dir, filepath.Base(seg))
			flipByte(t, path, tc.off)
			got, err, tr := readAll(t, dir, WithStrict())
			if err != nil || tr != nil || len(got) != len(recs) {
				t.Fatalf("%d records of %d: %v %v", len(got), len(recs), err, tr)
			}
			checkPrefix(t, got, recs)
			checkSeek(t, dir, recs)
			vr, err := Verify(dir)
			if err != nil || len(vr.Problems) != 1 || vr.Records != uint64(len(recs)) {
				t.Fatalf("verify: %+v %v", vr, err)
			}
			rep, err := Repair(dir)
			if err != nil || rep.DroppedRecords != 0 || len(rep.Dropped) != 1 || rep.Dropped[0].GapSeq != 0 {
				t.Fatalf("repair: %+v %v", rep, err)
			}
			if vr, err := Verify(dir); err != nil || !vr.OK() {
				t.Fatalf("verify after repair: %+v %v", vr, err)
			}
			if got, err, _ := readAll(t, dir, WithStrict()); err != nil || len(got) != len(recs) {
				t.Fatalf("after repair: %d records, %v", len(got), err)
			}
		})
	}
}

// A Writer holds the dataset's lock from Create to Close: Repair refuses to
// touch a dataset being written, and works again once the writer is done.
func TestRepairRefusesWhileWriting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, Manifest{Venue: "polymarket"}, WithFlushInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(&Record{Kind: KindFrame, WallNs: 1, MonoNs: 1, Payload: []byte("PONG")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("Repair during a write: %v, want ErrLocked", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, LockName)); !os.IsNotExist(err) {
		t.Fatalf("lock file after Close: %v", err)
	}
	if _, err := Repair(dir); err != nil {
		t.Fatalf("Repair after Close: %v", err)
	}
}
