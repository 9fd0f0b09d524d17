package s3store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/s3store"
	"github.com/tapedeck/tapedeck/internal/s3test"
)

// writeSegments records n records 10 ms apart into dir, a segment every
// 10 s of record time, with every finished segment handed to up.
func writeSegments(t *testing.T, dir string, n int, up *s3store.Uploader) {
	t.Helper()
	opts := []datasets.WriterOption{datasets.WithFlushInterval(0), datasets.WithBlockSize(8 << 10), datasets.WithSegmentDuration(10 * time.Second)}
	if up != nil {
		opts = append(opts, datasets.WithSegmentDone(up.SegmentDone))
	}
	w, err := datasets.Create(dir, datasets.Manifest{Venue: "polymarket", Endpoint: "wss://example.invalid/ws"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	base := int64(1_764_000_000_000_000_000)
	for i := 0; i < n; i++ {
		p := fmt.Appendf(nil, `{"event_type":"price_change","n":%d,"pad":"%0200d"}`, i, i)
		r := datasets.Record{Kind: datasets.KindFrame, WallNs: base + int64(i)*10_000_000, MonoNs: int64(i) * 10_000_000, Payload: p}
		if _, err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestUploaderDuringWrite(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	dir := filepath.Join(t.TempDir(), "ds")
	up, err := s3store.NewUploader(dir, "s3://tapes/live/ds", s3store.UploaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeSegments(t, dir, 4500, up) // 5 segments
	if err := up.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameRecords(t, readAll(t, "s3://tapes/live/ds"), readAll(t, dir))
	rep, err := datasets.Verify("s3://tapes/live/ds")
	if err != nil || !rep.OK() || len(rep.Warnings) > 0 || rep.Segments != 5 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	m, err := datasets.ReadManifest("s3://tapes/live/ds")
	if err != nil || !m.Clean {
		t.Fatalf("remote manifest: %+v %v", m, err)
	}
	if s := up.Stats(); s.Files < 11 || s.Failures != 0 || s.Pending != 0 {
		t.Errorf("stats %+v", s)
	}
	_ = srv
}

func TestUploaderRetriesWithoutBlocking(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	// Every PUT fails while the dataset is written: the writer is never
	// held up, everything waits locally, each attempt is reported.
	srv.SetFault("/tapes/", s3test.Fault{Method: "PUT", Status: 503})
	dir := filepath.Join(t.TempDir(), "ds")
	var mu sync.Mutex
	var failures []string
	recovered := 0
	up, err := s3store.NewUploader(dir, "s3://tapes/retry", s3store.UploaderOptions{
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		OnFailure: func(name string, attempt int, err error) {
			mu.Lock()
			failures = append(failures, fmt.Sprintf("%s#%d: %v", name, attempt, err))
			mu.Unlock()
		},
		OnRecovered: func(string, int) { mu.Lock(); recovered++; mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	writeSegments(t, dir, 3500, up) // 4 segments: Close returned with nothing uploaded
	if s := up.Stats(); s.Files != 0 {
		t.Fatalf("uploaded %d files through a failing store", s.Files)
	}
	waitUntil(t, "three reported failures", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(failures) >= 3
	})
	mu.Lock()
	if len(failures) < 3 || !strings.Contains(failures[0], "s3://tapes/retry/00000001.seg#1") || !strings.Contains(failures[0], "503") && !strings.Contains(failures[0], "SlowDown") {
		t.Fatalf("failures reported: %v", failures)
	}
	mu.Unlock()
	if _, err := datasets.Open("s3://tapes/retry"); err == nil {
		t.Fatal("a manifest reached the store before its segments")
	}
	srv.SetFault("/tapes/", s3test.Fault{})
	if err := up.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameRecords(t, readAll(t, "s3://tapes/retry"), readAll(t, dir))
	if recovered == 0 || up.Stats().Failures == 0 {
		t.Errorf("recovered %d, stats %+v", recovered, up.Stats())
	}
}

// TestUploadResumeAfterKill: an uploader that dies between a segment and
// the manifest (the process killed) loses nothing: a new one sends what is
// not verified there and the manifest last. --upload-delete removed only
// verified files.
func TestUploadResumeAfterKill(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	srv.SetFault("/00000003.seg", s3test.Fault{Method: "PUT", Status: 500})
	dir := filepath.Join(t.TempDir(), "ds")
	up, err := s3store.NewUploader(dir, "s3://tapes/k", s3store.UploaderOptions{Delete: true, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(t.TempDir(), "ref")
	writeSegments(t, ref, 4500, nil)
	writeSegments(t, dir, 4500, up)
	want := readAll(t, ref)
	// Wait for segments 1 and 2 to be verified (and deleted), then "die".
	waitUntil(t, "segments 1 and 2 verified and deleted", func() bool { return up.Stats().Deleted >= 4 })
	up.Abort()
	for _, n := range []string{"00000001.seg", "00000001.idx", "00000002.seg", "00000002.idx"} {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s: verified upload not deleted (%v)", n, err)
		}
	}
	for _, n := range []string{"00000003.seg", "00000004.seg", "00000005.seg", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s deleted before its upload was verified: %v", n, err)
		}
	}
	// The remote manifest, if any went up yet, is the writer's interim
	// one: the final one never goes before all the segments it closes.
	if m, err := datasets.ReadManifest("s3://tapes/k"); err == nil && m.Clean || err != nil && !errors.Is(err, datasets.ErrNotDataset) {
		t.Fatalf("interim remote manifest: %+v %v", m, err)
	}
	srv.SetFault("/00000003.seg", s3test.Fault{})
	puts := srv.Puts.Load()
	up2, err := s3store.NewUploader(dir, "s3://tapes/k", s3store.UploaderOptions{Delete: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := up2.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := srv.Puts.Load() - puts; n != 7 {
		t.Errorf("resume sent %d objects, want 7 (segments 3-5, their indexes, the manifest)", n)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("local dataset left after a verified upload with Delete: %v", err)
	}
	sameRecords(t, readAll(t, "s3://tapes/k"), want)
	if m, err := datasets.ReadManifest("s3://tapes/k"); err != nil || !m.Clean {
		t.Fatalf("final remote manifest: %+v %v", m, err)
	}
}

// waitUntil polls cond until it holds. Its deadline only guards against a
// hang: the tests wait for the event, however slow a loaded host makes it.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
