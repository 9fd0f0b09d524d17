package s3store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/s3store"
	"github.com/tapedeck/tapedeck/internal/s3test"
)

// within runs fn and fails the test if it has not returned after d: the
// faults below used to hang a reader forever.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %v", what, d)
	}
}

// shortTimeout points the client at srv with a 1 s no-progress timeout.
func shortTimeout(srv *s3test.Server) {
	s3store.Configure(s3store.Config{Endpoint: srv.URL, Timeout: time.Second})
}

func readErr(loc string) (int, error) {
	r, err := datasets.Open(loc)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n := 0
	for r.Next() {
		n++
	}
	return n, r.Err()
}

// TestStalledBody: a server (or proxy, NAT) that stops sending a ranged
// GET's body after its headers costs one timeout and a retry, and an error
// naming the object when it keeps stalling; before, the replay waited
// forever (issue 30, finding 1).
func TestStalledBody(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	upload(t, sample, "s3://tapes/pm")
	want := readAll(t, sample)
	shortTimeout(srv)

	t.Run("once", func(t *testing.T) {
		srv.SetFault("pm/00000001.seg", s3test.Fault{Method: "GET", Stall: true, StallAt: 1000, Times: 1})
		within(t, time.Minute, "a stalled body", func() { sameRecords(t, readAll(t, "s3://tapes/pm"), want) })
	})
	t.Run("always", func(t *testing.T) {
		srv.SetFault("pm/00000001.seg", s3test.Fault{Method: "GET", Stall: true, StallAt: 1000})
		defer srv.SetFault("pm/00000001.seg", s3test.Fault{})
		var err error
		within(t, time.Minute, "a body that always stalls", func() { _, err = readErr("s3://tapes/pm") })
		var te *s3store.TimeoutError
		var ce *datasets.CorruptionError
		if err == nil || !strings.Contains(err.Error(), "s3://tapes/pm/00000001.seg") || !errors.As(err, &te) || errors.As(err, &ce) {
			t.Fatalf("stalled body: %v", err)
		}
		t.Logf("always stalled: %v", err)
		if !strings.Contains(err.Error(), "stalled reading the body after 1000 bytes") || !strings.Contains(err.Error(), "tried 2 times") {
			t.Errorf("the error does not say what happened: %v", err)
		}
	})
	t.Run("manifest", func(t *testing.T) {
		srv.SetFault("pm/manifest.json", s3test.Fault{Method: "GET", Stall: true, StallAt: 10, Times: 1})
		within(t, time.Minute, "a stalled manifest", func() {
			if _, err := datasets.ReadManifest("s3://tapes/pm"); err != nil {
				t.Errorf("one stall of the manifest is retried: %v", err)
			}
		})
	})
}

// TestServerNeverAnswers: a server that takes requests and never answers
// costs about Attempts×Timeout per command, and the error names the object
// (before: 60 s per command, issue 30 finding 5).
func TestServerNeverAnswers(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	upload(t, sample, "s3://tapes/pm")
	shortTimeout(srv)
	srv.SetFault("/tapes/", s3test.Fault{Hang: true})
	start := time.Now()
	var err error
	within(t, time.Minute, "a silent server", func() { _, err = datasets.Open("s3://tapes/pm") })
	t.Logf("silent server: %v after %v", err, time.Since(start))
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("a silent server cost %v with a 1 s timeout", took)
	}
	if err == nil || !strings.Contains(err.Error(), "s3://tapes/pm/manifest.json") || !strings.Contains(err.Error(), "no answer in 1s") {
		t.Fatalf("silent server: %v", err)
	}
}

// TestCutBodyRetried: a body cut short once is fetched again; every time,
// an error naming the object, not damage of the dataset.
func TestCutBodyRetried(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	upload(t, sample, "s3://tapes/pm")
	srv.SetFault("pm/00000001.seg", s3test.Fault{Method: "GET", CutAt: 5000, Times: 1})
	sameRecords(t, readAll(t, "s3://tapes/pm"), readAll(t, sample))
	srv.SetFault("pm/00000001.idx", s3test.Fault{Method: "GET", CutAt: 100, Times: 1})
	if _, err := datasets.Catalog("s3://tapes/pm"); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedUpload: a PUT whose body is changed in flight is refused by
// the store; that is said as what it is and retried, never reported as a
// credentials problem (issue 30, finding 3).
func TestDamagedUpload(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	body := bytes.Repeat([]byte("tapedeck "), 10000)
	st, err := s3store.Open("s3://tapes/d")
	if err != nil {
		t.Fatal(err)
	}
	srv.SetFault("d/once", s3test.Fault{Method: "PUT", Flip: true, FlipAt: 500, Times: 1})
	if err := st.PutBytes(context.Background(), "once", body); err != nil {
		t.Fatalf("one damaged body is retried: %v", err)
	}
	if got, err := st.ReadFile("once"); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("stored %d bytes, %v", len(got), err)
	}
	srv.SetFault("d/always", s3test.Fault{Method: "PUT", Flip: true, FlipAt: 500})
	err = st.PutBytes(context.Background(), "always", body)
	t.Logf("damaged on every try: %v", err)
	var de *s3store.DamagedError
	if !errors.As(err, &de) || strings.Contains(err.Error(), "access refused") || !strings.Contains(err.Error(), "s3://tapes/d/always") {
		t.Fatalf("a body damaged on every try: %v", err)
	}
	if _, _, err := st.Stat("always"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a damaged body was stored: %v", err)
	}
	// Wrong credentials are still said to be.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	st2, _ := s3store.Open("s3://tapes/d")
	err = st2.PutBytes(context.Background(), "creds", body)
	if err == nil || errors.As(err, &de) || !strings.Contains(err.Error(), "access refused (SignatureDoesNotMatch") {
		t.Fatalf("wrong secret key: %v", err)
	}
}

// TestStalledUploadCounted: a store that takes a PUT and never answers
// fails the attempt after the timeout: counted, reported with why, retried,
// while the capture goes on; before, nothing said so until shutdown (issue
// 30, finding 16).
func TestStalledUploadCounted(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	shortTimeout(srv)
	srv.SetFault("stall/00000001.seg", s3test.Fault{Method: "PUT", Hang: true, Times: 2})
	dir := filepath.Join(t.TempDir(), "ds")
	failed := make(chan string, 16)
	up, err := s3store.NewUploader(dir, "s3://tapes/stall", s3store.UploaderOptions{
		MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
		OnFailure: func(name string, attempt int, err error) {
			failed <- fmt.Sprintf("%s#%d: %v", name, attempt, err)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	writeSegments(t, dir, 2500, up) // 3 segments
	select {
	case f := <-failed:
		if !strings.Contains(f, "s3://tapes/stall/00000001.seg#1") || !strings.Contains(f, "no answer in 1s") {
			t.Errorf("first failure: %s", f)
		}
	case <-time.After(time.Minute):
		t.Fatal("a PUT that is never answered was never counted")
	}
	if s := up.Stats(); s.Failures == 0 || !strings.Contains(s.LastError, "no answer") {
		t.Errorf("stats after a stalled PUT: %+v", s)
	}
	if err := up.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameRecords(t, readAll(t, "s3://tapes/stall"), readAll(t, dir))
}

// TestRegionAndSignatures: the client is not told the region (the server
// runs in its own): it looks it up; every request is signed and checked.
func TestRegionAndSignatures(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	upload(t, sample, "s3://tapes/pm")
	if srv.Regions.Load() == 0 {
		t.Error("no region lookup: the client was told the region")
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	_, err := datasets.Open("s3://tapes/pm")
	if err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") || !strings.Contains(err.Error(), "check the credentials") {
		t.Errorf("wrong secret: %v", err)
	}
}

// TestReplacedWhileRead: an object replaced between two ranged GETs is an
// error (If-Match on the ETag first seen), not a mix of two versions.
func TestReplacedWhileRead(t *testing.T) {
	s3test.Start(t, "tapes")
	dir := bigDataset(t, 20000)
	upload(t, dir, "s3://tapes/big")
	s3store.Configure(s3store.Config{Endpoint: os.Getenv("AWS_ENDPOINT_URL"), ReadAhead: 64 << 10, ChunkSize: 64 << 10})
	r, err := datasets.Open("s3://tapes/big")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < 10 && r.Next(); i++ {
	}
	st, _ := s3store.Open("s3://tapes/big")
	seg, _ := os.ReadFile(filepath.Join(dir, "00000001.seg"))
	seg[len(seg)-1] ^= 1
	if err := st.PutBytes(context.Background(), "00000001.seg", seg); err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("object replaced mid-read: %v", err)
	}
}

// TestListingPast1000: listings page at 1,000 keys; every object is seen.
func TestListingPast1000(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	cl, err := minio.New(strings.TrimPrefix(srv.Direct, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(s3test.AccessKey, s3test.SecretKey, ""), Region: s3test.Region})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1234
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := cl.PutObject(context.Background(), "tapes", fmt.Sprintf("many/%05d.seg", i), bytes.NewReader([]byte{byte(i)}), 1, minio.PutObjectOptions{})
			if err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st, _ := s3store.Open("s3://tapes/many")
	lists := srv.Lists.Load()
	objs, err := st.Objects()
	if err != nil || len(objs) != n {
		t.Fatalf("%d objects listed, want %d: %v", len(objs), n, err)
	}
	t.Logf("%d objects in %d listing requests", len(objs), srv.Lists.Load()-lists)
	if srv.Lists.Load()-lists < 2 {
		t.Errorf("%d listing requests for %d keys", srv.Lists.Load()-lists, n)
	}
	files, err := st.List()
	if err != nil || len(files) != n || files[n-1].Name != fmt.Sprintf("%05d.seg", n-1) {
		t.Fatalf("List: %d files, %v", len(files), err)
	}
}

// TestMissingBucket: a URL naming a bucket that does not exist says so,
// not that the prefix holds no dataset (issue 30, finding 5).
func TestMissingBucket(t *testing.T) {
	s3test.Start(t, "tapes")
	_, err := datasets.Open("s3://missing-bucket/x")
	if err == nil || !strings.Contains(err.Error(), `bucket "missing-bucket" does not exist`) || errors.Is(err, datasets.ErrNotDataset) {
		t.Errorf("open: %v", err)
	}
	st, _ := s3store.Open("s3://missing-bucket/x")
	var nb *s3store.NoBucketError
	if err := st.Check(context.Background()); !errors.As(err, &nb) || nb.Bucket != "missing-bucket" {
		t.Errorf("check: %v", err)
	}
}

// TestMultipartETag: an object another tool uploaded in parts (ETag
// "MD5-N") with the same content is recognised and not sent again.
func TestMultipartETag(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	dir := filepath.Join(t.TempDir(), "ds")
	if err := os.CopyFS(dir, os.DirFS(sample)); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 12<<20+12345)
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(dir, "00000009.seg"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	cl, err := minio.New(strings.TrimPrefix(srv.Direct, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(s3test.AccessKey, s3test.SecretKey, ""), Region: s3test.Region})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cl.PutObject(context.Background(), "tapes", "mp/00000009.seg", bytes.NewReader(big), int64(len(big)),
		minio.PutObjectOptions{PartSize: 5 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(strings.Trim(info.ETag, `"`), "-3") {
		t.Fatalf("not a multipart ETag: %s", info.ETag)
	}
	res, err := s3store.UploadDataset(context.Background(), dir, "s3://tapes/mp")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Skipped, "00000009.seg") || slices.Contains(res.Uploaded, "00000009.seg") {
		t.Errorf("uploaded %v, skipped %v: the multipart object was sent again", res.Uploaded, res.Skipped)
	}
	// Different content of the same size is sent.
	big[7<<20] ^= 1
	os.WriteFile(filepath.Join(dir, "00000009.seg"), big, 0o644)
	res, err = s3store.UploadDataset(context.Background(), dir, "s3://tapes/mp")
	if err != nil || !slices.Contains(res.Uploaded, "00000009.seg") {
		t.Errorf("changed content: uploaded %v, %v", res.Uploaded, err)
	}
}

// crashed records n records 10 ms apart (a segment every 10 s), starting
// 7 ms after the writer, and returns a copy of the directory as it was
// after the last flush with the writer still open: what kill -9 leaves.
func crashed(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "live")
	base := int64(1_764_000_000_000_000_000)
	w, err := datasets.Create(dir, datasets.Manifest{Venue: "polymarket", Endpoint: "wss://example.invalid/ws", StartNs: base - 7_000_000},
		datasets.WithFlushInterval(0), datasets.WithBlockSize(8<<10), datasets.WithSegmentDuration(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 0; i < n; i++ {
		p := fmt.Appendf(nil, `{"event_type":"price_change","n":%d,"pad":"%0200d"}`, i, i)
		r := datasets.Record{Kind: datasets.KindFrame, WallNs: base + int64(i)*10_000_000, MonoNs: int64(i) * 10_000_000, Payload: p}
		if _, err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(t.TempDir(), "crashed")
	if err := os.CopyFS(snap, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestRepairedCrashUploadVerifies: after kill -9 of a capture, repair, then
// capture upload (which finishes the copy), and both copies verify (issue
// 30, finding 2); capture upload --delete of a killed dataset removes all
// of it, the writer's reserve file too (finding 5).
func TestRepairedCrashUploadVerifies(t *testing.T) {
	s3test.Start(t, "tapes")
	dir := crashed(t, 2500)
	if _, err := os.Stat(filepath.Join(dir, datasets.ReserveName)); err != nil {
		t.Fatalf("no reserve file in the crashed dataset: %v", err)
	}
	unrepaired := filepath.Join(t.TempDir(), "unrepaired")
	if err := os.CopyFS(unrepaired, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	upload(t, dir, "s3://tapes/crash") // what capture run --upload had sent
	if _, err := datasets.Repair(dir); err != nil {
		t.Fatal(err)
	}
	if rep, err := datasets.Verify(dir); err != nil || !rep.OK() {
		t.Fatalf("local verify after repair: %v %+v", err, rep.Problems)
	}
	upload(t, dir, "s3://tapes/crash")
	if rep, err := datasets.Verify("s3://tapes/crash"); err != nil || !rep.OK() {
		t.Fatalf("remote verify after repair and upload: %v %+v", err, rep.Problems)
	}

	up, err := s3store.NewUploader(unrepaired, "s3://tapes/unrepaired", s3store.UploaderOptions{Delete: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(unrepaired); !errors.Is(err, fs.ErrNotExist) {
		var left []string
		for _, e := range ents {
			left = append(left, e.Name())
		}
		t.Errorf("upload --delete left %v (%v)", left, err)
	}
}

// TestFlippedDownload: a byte flipped in flight in a segment's body fails
// its block's checksum; the block is fetched again and the replay is
// exact, not a loss (before: damage, exit 3, on a dataset that is intact).
// A block damaged where it is stored is still damage.
func TestFlippedDownload(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	upload(t, sample, "s3://tapes/pm")
	want := readAll(t, sample)
	ents := readIdx(t, filepath.Join(sample, "00000001.idx"))
	at := ents[len(ents)/2].off + 100 // in a block of records
	for _, cache := range []string{"", t.TempDir()} {
		s3store.Configure(s3store.Config{Endpoint: srv.URL, CacheDir: cache})
		gets := srv.Gets.Load()
		srv.SetFault("pm/00000001.seg", s3test.Fault{Method: "GET", Flip: true, FlipAt: at, Times: 1})
		sameRecords(t, readAll(t, "s3://tapes/pm"), want)
		if srv.Gets.Load()-gets < 2 {
			t.Errorf("cache %q: the damaged block was not fetched again", cache)
		}
	}
	s3store.Configure(s3store.Config{Endpoint: srv.URL})
	seg, _ := os.ReadFile(filepath.Join(sample, "00000001.seg"))
	seg[at] ^= 0xff
	st, _ := s3store.Open("s3://tapes/pm")
	if err := st.PutBytes(context.Background(), "00000001.seg", seg); err != nil {
		t.Fatal(err)
	}
	r, err := datasets.Open("s3://tapes/pm")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
	}
	var ce *datasets.CorruptionError
	if !errors.As(r.Err(), &ce) && len(r.Damaged()) != 1 {
		t.Errorf("a block damaged in the store: %v, damaged %v", r.Err(), r.Damaged())
	}
}
