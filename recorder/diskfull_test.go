package recorder_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// budgetDisk is a filesystem of limited size for the dataset writer's files
// (segments, compaction rewrites and the reserve): a write past the limit
// writes what fits and fails with ENOSPC; truncation frees space.
type budgetDisk struct {
	mu          sync.Mutex
	used, limit int64
}

type budgetFile struct {
	*os.File
	d *budgetDisk
}

func (d *budgetDisk) open(path string) (datasets.SegmentFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return &budgetFile{f, d}, nil
}

// fill leaves no free byte; free gives room again.
func (d *budgetDisk) fill() { d.mu.Lock(); d.limit = d.used; d.mu.Unlock() }
func (d *budgetDisk) free() { d.mu.Lock(); d.limit = 1 << 40; d.mu.Unlock() }

func (f *budgetFile) Write(p []byte) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	room := max(f.d.limit-f.d.used, 0)
	if room >= int64(len(p)) {
		n, err := f.File.Write(p)
		f.d.used += int64(n)
		return n, err
	}
	n, _ := f.File.Write(p[:room])
	f.d.used += int64(n)
	return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

func (f *budgetFile) Truncate(size int64) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	st, err := f.File.Stat()
	if err != nil {
		return err
	}
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.d.used -= st.Size() - size
	return nil
}

// lockedBuf is a log sink the recorder's goroutines write to.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// fullDiskCapture records the Polymarket stream through a budgetDisk with a
// small backlog and queue, so that a full disk soon overflows both, once
// some data reached the disk.
func fullDiskCapture(t *testing.T, s *fakeexchange.Server, disk *budgetDisk, log *lockedBuf) *capture {
	t.Helper()
	r, err := recorder.New(pmSpec(s, fakeexchange.PolymarketStreamAsset), append(fastOpts(),
		recorder.WithQueue(64, 1<<20), recorder.WithLogger(slog.New(slog.NewTextHandler(log, nil))))...)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := datasets.Create(dir, r.Manifest(), datasets.WithFlushInterval(20*time.Millisecond),
		datasets.WithBlockSize(4<<10), datasets.WithMaxPending(64<<10), datasets.WithReserve(8<<10),
		datasets.WithSegmentFile(disk.open))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := launch(t, ctx, cancel, r, dir, w, w)
	waitFor(t, "data on disk", func() bool { return c.w.Stats().Records > 50 })
	return c
}

// accounted is every frame the dataset holds or reports missing: frames,
// plus what its overload and gap records say was dropped. It also checks
// that the recorded frames of each connection are the server's, in order
// (a subsequence: the rest is what the loss records count).
func accounted(t *testing.T, s *fakeexchange.Server, recs []rec) uint64 {
	t.Helper()
	var n uint64
	for _, r := range recs {
		switch r.Kind {
		case datasets.KindFrame:
			n++
		case datasets.KindOverload, datasets.KindGap:
			n += r.control(t).Dropped
		}
	}
	conns := s.Conns()
	for i, seg := range segments(recs) {
		if i >= len(conns) {
			t.Fatalf("%d connection segments, the server saw %d connections", len(segments(recs)), len(conns))
		}
		sent, j := conns[i].Sent(), 0
		for _, f := range seg {
			for j < len(sent) && !bytes.Equal(sent[j], f) {
				j++
			}
			if j == len(sent) {
				t.Fatalf("connection %d: a recorded frame is not among the server's, in order: %.120q", i, f)
			}
			j++
		}
	}
	return n
}

// The disk fills while recording and frees up again: the writer keeps what
// it accepted and writes it late, the queue overflow is counted, one
// write_error record spans the whole outage (no recovery is claimed before
// a write reached the disk), and every frame the server sent is recorded or
// counted.
func TestDiskFullThenFreed(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	disk := &budgetDisk{limit: 1 << 40}
	var log lockedBuf
	c := fullDiskCapture(t, s, disk, &log)
	fullAt := time.Now().UnixNano()
	disk.fill()
	waitFor(t, "write errors", func() bool { return c.rec.Stats().WriteErrors >= 10 })
	waitFor(t, "queue overflow", func() bool { return c.rec.Stats().Dropped > 200 })
	freeAt := time.Now().UnixNano()
	disk.free()
	n := sentTotal(s)
	waitFor(t, "frames after the outage", func() bool { return c.w.Stats().Records > 0 && sentTotal(s) > n+100 })
	before := sentTotal(s)
	recs := c.stop()
	checkOrder(t, recs)

	we := ofKind(recs, datasets.KindWriteError)
	if len(we) != 1 {
		t.Fatalf("%d write_error records, want 1 for the one outage:\n%s", len(we), describe(recs))
	}
	cc := we[0].control(t)
	if cc.FromNs < fullAt || cc.FromNs > freeAt || cc.ToNs < freeAt || !strings.Contains(cc.Err, "no space left") {
		t.Errorf("write_error %+v does not span the outage %d..%d", cc, fullAt, freeAt)
	}
	if k := log.count("dataset writes recovered"); k != 1 {
		t.Errorf("%d recovery log lines, want 1", k)
	}
	if len(ofKind(recs, datasets.KindOverload)) == 0 {
		t.Error("no overload record for the frames the full queue dropped")
	}
	got := accounted(t, s, recs)
	if got < uint64(before) || got > uint64(sentTotal(s)) {
		t.Errorf("%d frames recorded or reported dropped; the server sent %d before the stop (%d in all)", got, before, sentTotal(s))
	}
	if st, ws := c.rec.Stats(), c.w.Stats(); st.Lost != 0 || ws.Unwritten != 0 {
		t.Errorf("nothing should be given up: recorder %+v writer %+v", st, ws)
	}
}

// The disk is still full at shutdown: the recorder gives up after a bounded
// retry, Run and Close say how many records were not written, and the
// dataset ends (before the clean close) with gap records (written in the space the reserve frees)
// that, with the frames and overload records that did reach the disk,
// account for every frame the server sent.
func TestDiskFullAtShutdown(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	disk := &budgetDisk{limit: 1 << 40}
	var log lockedBuf
	c := fullDiskCapture(t, s, disk, &log)
	disk.fill()
	waitFor(t, "queue overflow", func() bool { return c.rec.Stats().Dropped > 200 })
	before := sentTotal(s)
	c.cancel()
	runErr := <-c.done
	c.done <- nil
	closeErr := c.w.Close()
	st, ws := c.rec.Stats(), c.w.Stats()
	if !errors.Is(closeErr, datasets.ErrUnwritten) || ws.Unwritten == 0 ||
		!strings.Contains(closeErr.Error(), "a gap record in the dataset covers them") {
		t.Fatalf("close: %v (writer %+v)", closeErr, ws)
	}
	if st.Lost > 0 && (runErr == nil || !strings.Contains(runErr.Error(), "given up at shutdown")) {
		t.Errorf("Run: %v with %d records given up", runErr, st.Lost)
	}
	if k := log.count("dataset writes recovered"); k != 0 {
		t.Errorf("%d recovery log lines while the disk never recovered", k)
	}
	recs := readAll(t, c.dir)
	checkOrder(t, recs)
	for _, r := range ofKind(recs, datasets.KindWriteError) {
		t.Errorf("a write_error record claims recovery: %s", r.Payload)
	}
	last := recs[len(recs)-2]
	if last.Kind != datasets.KindGap || last.Conn != datasets.ConnAll || !strings.Contains(string(last.Payload), "not written") ||
		recs[len(recs)-1].Kind != datasets.KindCleanClose {
		t.Fatalf("dataset ends %s %s, %s; want the gap of what was not written, then the clean close", last.Kind, last.Payload, recs[len(recs)-1].Kind)
	}
	got := accounted(t, s, recs)
	if got < uint64(before) || got > uint64(sentTotal(s)) {
		t.Errorf("%d frames recorded or reported missing; the server sent %d before the stop (%d in all)", got, before, sentTotal(s))
	}
	m, err := datasets.ReadManifest(c.dir)
	if err != nil || m.EndNs < last.WallNs {
		t.Errorf("manifest %+v %v: the range must cover the loss", m, err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, datasets.ReserveName)); err == nil {
		t.Error("reserve left behind")
	}
}
