package datasets

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A disk that stays full until Close: the records that could not be written
// are replaced by one gap record (written in the space the reserve file
// frees), every record that did reach the disk is kept byte-identical, the
// range covers the loss and Close says exactly how many records are gone.
func TestDiskFullAtClose(t *testing.T) {
	recs := genRecords(t, 3000, int64(time.Millisecond))
	const reserve = 64 << 10
	for _, tc := range []struct {
		name    string
		reserve int64
		limit   int64 // bytes the disk takes besides the reserve
	}{
		{"mid stream", reserve, 40 << 10},
		{"before the first segment header", reserve, 0},
		{"no reserve", 0, 40 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := &faultyDisk{limit: tc.reserve + tc.limit}
			dir := filepath.Join(t.TempDir(), "ds")
			w, err := Create(dir, Manifest{Venue: "hyperliquid"}, WithFlushInterval(0), WithBlockSize(4<<10),
				WithSegmentFile(disk.open), WithReserve(tc.reserve), WithMaxPending(8<<20))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, ReserveName)); (err == nil) != (tc.reserve > 0) {
				t.Fatalf("reserve file: %v", err)
			}
			var accepted []Record
			for i := range recs[:2000] {
				if seq, _ := w.Append(&recs[i]); seq == 0 {
					t.Fatalf("record %d refused", i)
				}
				accepted = append(accepted, recs[i])
			}
			// An overload record among the unwritten ones: its frames count too.
			over := Record{Kind: KindOverload, Conn: 1, WallNs: recs[2000].WallNs, MonoNs: recs[2000].MonoNs,
				Payload: EncodeControl(Control{Dropped: 17, FromNs: 1, ToNs: 2})}
			if seq, _ := w.Append(&over); seq == 0 {
				t.Fatal("overload record refused")
			}
			accepted = append(accepted, over)
			cc := Record{Kind: KindCleanClose, WallNs: over.WallNs, MonoNs: over.MonoNs, Payload: EncodeControl(Control{Text: "stopped"})}
			if seq, _ := w.Append(&cc); seq == 0 {
				t.Fatal("clean close refused")
			}
			accepted = append(accepted, cc)
			written := w.Stats().Records
			disk.mu.Lock()
			disk.limit = disk.used + tc.reserve // not a byte more than the reserve frees
			if tc.reserve == 0 {
				disk.limit = 0 // not even what undoing a partial write frees
			}
			disk.mu.Unlock()
			err = w.Close()
			if !errors.Is(err, ErrUnwritten) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("close: %v, want ErrUnwritten and ENOSPC", err)
			}
			st := w.Stats()
			if tc.reserve > 0 {
				st.Records -= 2 // the gap record and the clean close after it
			}
			lost := uint64(len(accepted)) - st.Records
			if st.Unwritten != lost || lost == 0 || st.Records < written {
				t.Fatalf("stats %+v: %d accepted, %d written before close", st, len(accepted), written)
			}
			if _, err := os.Stat(filepath.Join(dir, ReserveName)); err == nil {
				t.Error("reserve file left after Close")
			}
			got, rerr, tr := readAll(t, dir)
			m, merr := ReadManifest(dir)
			if merr != nil {
				t.Fatal(merr)
			}
			if tc.reserve == 0 {
				// Nowhere to put the gap: Close says so, the manifest stays unclean.
				if !strings.Contains(err.Error(), "could not be written either") || m.Clean {
					t.Fatalf("close: %v; manifest clean %v", err, m.Clean)
				}
				checkPrefix(t, got, accepted[:st.Records])
				return
			}
			if !strings.Contains(err.Error(), "a gap record in the dataset covers them") {
				t.Fatalf("close: %v", err)
			}
			if rerr != nil || tr != nil || uint64(len(got)) != st.Records+2 {
				t.Fatalf("%d records read (%d written), %v %v", len(got), st.Records, rerr, tr)
			}
			checkPrefix(t, got[:st.Records], accepted[:st.Records])
			gap, end := got[len(got)-2], got[len(got)-1]
			if end.Kind != KindCleanClose || !bytes.Equal(end.Payload, cc.Payload) || end.Seq != gap.Seq+1 {
				t.Fatalf("the dataset ends %v %q seq %d after the gap's %d, want the clean close", end.Kind, end.Payload, end.Seq, gap.Seq)
			}
			c, err := DecodeControl(gap.Payload)
			if err != nil || gap.Kind != KindGap || gap.Conn != ConnAll || gap.Seq != uint64(len(accepted))+1 {
				t.Fatalf("last record %v conn %d seq %d: %+v %v", gap.Kind, gap.Conn, gap.Seq, c, err)
			}
			var frames uint64
			for _, r := range accepted[st.Records:] {
				if r.Kind == KindFrame {
					frames++
				}
			}
			if c.Dropped != frames+17 || c.FromNs != accepted[st.Records].WallNs || c.ToNs != over.WallNs ||
				!strings.Contains(c.Err, "no space left") || !strings.Contains(c.Text, "17 more frames dropped") {
				t.Fatalf("gap %+v: want %d+17 dropped from %d to %d", c, frames, accepted[st.Records].WallNs, over.WallNs)
			}
			if !m.Clean || m.EndNs < over.WallNs {
				t.Fatalf("manifest clean %v end %d, want clean and the range to cover the loss (%d)", m.Clean, m.EndNs, over.WallNs)
			}
			if vr, err := Verify(dir); err != nil || !vr.OK() {
				t.Fatalf("verify: %+v %v", vr, err)
			}
		})
	}
}

// Past the backlog bound frames are refused, but records that report a
// loss still get in, so that the loss stays visible.
func TestBacklogTakesLossRecords(t *testing.T) {
	disk := &faultyDisk{limit: 0}
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, Manifest{}, WithFlushInterval(0), WithBlockSize(1<<10), WithSegmentFile(disk.open),
		WithMaxPending(16<<10), WithReserve(0))
	if err != nil {
		t.Fatal(err)
	}
	recs := genRecords(t, 2000, 1000)
	refused := 0
	for i := range recs {
		if seq, err := w.Append(&recs[i]); seq == 0 {
			if !errors.Is(err, ErrPendingFull) {
				t.Fatal(err)
			}
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("backlog never filled")
	}
	for _, k := range []Kind{KindOverload, KindWriteError, KindGap, KindCleanClose} {
		r := Record{Kind: k, WallNs: recs[1999].WallNs, MonoNs: recs[1999].MonoNs, Payload: EncodeControl(Control{Dropped: uint64(refused)})}
		if seq, err := w.Append(&r); seq == 0 {
			t.Errorf("%v record refused past the bound: %v", k, err)
		}
	}
	f := recs[5]
	f.WallNs, f.MonoNs = recs[1999].WallNs, recs[1999].MonoNs
	if seq, _ := w.Append(&f); seq != 0 {
		t.Error("frame accepted past the bound")
	}
	disk.setLimit(1 << 40)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err, _ := readAll(t, dir, WithStrict())
	if err != nil || got[len(got)-1].Kind != KindCleanClose {
		t.Fatalf("%d records, %v", len(got), err)
	}
}

// A killed writer leaves its reserve file; repair removes it and says so.
func TestRepairRemovesReserve(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, Manifest{Venue: "hyperliquid"}, WithFlushInterval(0), WithReserve(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range genRecords(t, 100, 1000) {
		w.Append(&r)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	unlockDir(w.lock) // as the kill would
	reserve := filepath.Join(dir, ReserveName)
	if _, err := os.Stat(reserve); err != nil {
		t.Fatal(err)
	}
	rep, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(reserve); !errors.Is(err, os.ErrNotExist) || !slices.Contains(rep.RemovedFiles, reserve) {
		t.Fatalf("reserve after repair: %v; removed %v", err, rep.RemovedFiles)
	}
}
