package datasets

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	recs := genRecords(t, 3000, int64(time.Millisecond))
	cases := []struct {
		name     string
		opts     []WriterOption
		minSegs  int
		minBlock int
	}{
		{"default", nil, 1, 1},
		{"raw", []WriterOption{WithLevel(0), WithBlockSize(8 << 10)}, 1, 10},
		{"fastest", []WriterOption{WithLevel(1), WithBlockSize(8 << 10)}, 1, 10},
		{"best", []WriterOption{WithLevel(4)}, 1, 1},
		{"rotate by size", []WriterOption{WithBlockSize(16 << 10), WithSegmentSize(96 << 10), WithFsync(FsyncNever)}, 3, 10},
		{"rotate, no dictionary", []WriterOption{WithBlockSize(4 << 10), WithSegmentSize(16 << 10), WithDictSize(0), WithFsync(FsyncNever)}, 3, 10},
		{"rotate by time", []WriterOption{WithSegmentDuration(500 * time.Millisecond)}, 6, 6},
		{"fsync every block", []WriterOption{WithFsync(FsyncBlock), WithBlockSize(64 << 10)}, 1, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ds")
			writeRecords(t, dir, recs, tc.opts...)
			got, err, tr := readAll(t, dir, WithStrict())
			if err != nil || tr != nil {
				t.Fatal(err, tr)
			}
			if len(got) != len(recs) {
				t.Fatalf("read %d records, wrote %d", len(got), len(recs))
			}
			checkPrefix(t, got, recs)
			segs := segmentPaths(t, dir)
			if len(segs) < tc.minSegs {
				t.Errorf("%d segments, want >= %d", len(segs), tc.minSegs)
			}
			rep, err := Verify(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || len(rep.Warnings) > 0 || rep.Records != uint64(len(recs)) || rep.Blocks < uint64(tc.minBlock) {
				t.Fatalf("verify: %+v", rep)
			}
			m, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !m.Clean || m.StartNs != recs[0].WallNs || m.EndNs != recs[len(recs)-1].WallNs || m.FormatVersion != FormatVersion {
				t.Fatalf("manifest %+v", m)
			}
		})
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeRecords(t, dir, genRecords(t, 3, 1))
	if _, err := Create(dir, Manifest{}); !errors.Is(err, ErrExists) {
		t.Fatalf("got %v, want ErrExists", err)
	}
	if _, err := Create(t.TempDir(), Manifest{FormatVersion: FormatVersion + 1}); !errors.Is(err, ErrVersion) {
		t.Fatalf("got %v, want ErrVersion", err)
	}
}

func TestWriterOptionsValidate(t *testing.T) {
	bad := map[string]WriterOption{
		"flush<0":      WithFlushInterval(-1),
		"segdur=0":     WithSegmentDuration(0),
		"segsize tiny": WithSegmentSize(10),
		"block tiny":   WithBlockSize(10),
		"block huge":   WithBlockSize(MaxBlockSize),
		"level 9":      WithLevel(9),
		"fsync 9":      WithFsync(9),
		"nil file":     WithSegmentFile(nil),
		"pending<0":    WithMaxPending(-1),
	}
	for name, o := range bad {
		if _, err := Create(filepath.Join(t.TempDir(), "x"), Manifest{}, o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAppendRejects(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, Manifest{}, WithFlushInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := w.Append(&Record{Kind: KindFrame, Payload: make([]byte, MaxPayloadSize+1)}); seq != 0 || !errors.Is(err, ErrPayloadSize) {
		t.Fatalf("oversized payload: seq %d, %v", seq, err)
	}
	if seq, err := w.Append(&Record{Kind: KindFrame, Payload: []byte("x")}); seq != 1 || err != nil {
		t.Fatalf("seq %d, %v", seq, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if seq, err := w.Append(&Record{Kind: KindFrame}); seq != 0 || !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: seq %d, %v", seq, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestAppendCopiesPayload(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, Manifest{}, WithFlushInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	p := []byte("original")
	if _, err := w.Append(&Record{Kind: KindFrame, Payload: p}); err != nil {
		t.Fatal(err)
	}
	copy(p, "CLOBBERD")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, _ := readAll(t, dir)
	if len(got) != 1 || string(got[0].Payload) != "original" {
		t.Fatalf("got %v", got)
	}
}

func TestAppendConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, Manifest{}, WithFlushInterval(time.Millisecond), WithBlockSize(4<<10))
	if err != nil {
		t.Fatal(err)
	}
	const workers, per = 4, 500
	var wg sync.WaitGroup
	seqs := make([][]uint64, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				seq, err := w.Append(&Record{Kind: KindFrame, Conn: uint32(g), Payload: []byte(fmt.Sprintf("g%d-%d", g, i))})
				if err != nil {
					t.Error(err)
					return
				}
				seqs[g] = append(seqs[g], seq)
			}
		}(g)
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err, _ := readAll(t, dir)
	if err != nil || len(got) != workers*per {
		t.Fatalf("%d records, %v", len(got), err)
	}
	next := make([]int, workers)
	for i, r := range got {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d", i, r.Seq)
		}
		g := int(r.Conn)
		if want := fmt.Sprintf("g%d-%d", g, next[g]); string(r.Payload) != want || seqs[g][next[g]] != r.Seq {
			t.Fatalf("record %d: %q seq %d, want %q seq %d", i, r.Payload, r.Seq, want, seqs[g][next[g]])
		}
		next[g]++
	}
}

// An idle writer still seals: the ticker, not the next Append, writes the block.
func TestFlushIntervalSealsIdleWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, Manifest{}, WithFlushInterval(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Append(&Record{Kind: KindFrame, Payload: []byte("lonely")}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); w.Stats().Records == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("block not sealed by the ticker")
		}
	}
	// A concurrent reader sees it while the writer is still open.
	got, err, tr := readAll(t, dir)
	if err != nil || tr != nil || len(got) != 1 || string(got[0].Payload) != "lonely" {
		t.Fatalf("%v %v %v", got, err, tr)
	}
}

func TestEmptyDataset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeRecords(t, dir, nil)
	got, err, tr := readAll(t, dir)
	if len(got) != 0 || err != nil || tr != nil {
		t.Fatal(got, err, tr)
	}
	if segs := segmentPaths(t, dir); len(segs) != 0 {
		t.Fatalf("segments %v", segs)
	}
	rep, err := Verify(dir)
	if err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
}

func TestOpenNotDataset(t *testing.T) {
	if _, err := Open(t.TempDir()); !errors.Is(err, ErrNotDataset) {
		t.Fatalf("got %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ManifestName), []byte("{not json"), 0o644)
	var ce *CorruptionError
	if _, err := Open(dir); !errors.As(err, &ce) || ce.File != filepath.Join(dir, ManifestName) {
		t.Fatalf("got %v", err)
	}
}

func TestUnknownKindsSkipped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	recs := []Record{
		{Kind: KindFrame, Payload: []byte("a")},
		{Kind: 200, Payload: []byte("from the future")},
		{Kind: KindFrame, Payload: []byte("b")},
	}
	writeRecords(t, dir, recs)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for r.Next() {
		got = append(got, string(r.Record().Payload))
	}
	if fmt.Sprint(got) != "[a b]" || r.SkippedUnknown() != 1 {
		t.Fatalf("got %v, skipped %d", got, r.SkippedUnknown())
	}
	all, _, _ := readAll(t, dir, WithAllKinds())
	if len(all) != 3 || all[1].Kind != 200 {
		t.Fatalf("WithAllKinds: %v", all)
	}
	rep, _ := Verify(dir)
	if !rep.OK() || len(rep.Warnings) != 1 {
		t.Fatalf("verify %+v", rep)
	}
}

// With the ticker off, the same records give byte-identical files (with the
// same zstd release): block boundaries depend only on the records.
func TestDeterministicFiles(t *testing.T) {
	recs := genRecords(t, 3000, int64(time.Millisecond))
	var dirs [2]string
	for i := range dirs {
		dirs[i] = filepath.Join(t.TempDir(), "ds")
		writeRecords(t, dirs[i], recs, WithBlockSize(64<<10), WithSegmentSize(256<<10))
	}
	ents, err := os.ReadDir(dirs[0])
	if err != nil || len(ents) < 3 {
		t.Fatal(ents, err)
	}
	for _, e := range ents {
		a, _ := os.ReadFile(filepath.Join(dirs[0], e.Name()))
		b, err := os.ReadFile(filepath.Join(dirs[1], e.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two writes of the same records", e.Name())
		}
	}
}
