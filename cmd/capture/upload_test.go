package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/s3store"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/s3test"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

func sameDatasets(t *testing.T, a, b string) int {
	t.Helper()
	ra, err := datasets.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := datasets.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	n := 0
	for ra.Next() {
		if !rb.Next() {
			t.Fatalf("%s ends at record %d, %s goes on", b, n, a)
		}
		x, y := ra.Record(), rb.Record()
		if x.Seq != y.Seq || x.Kind != y.Kind || x.WallNs != y.WallNs || string(x.Payload) != string(y.Payload) {
			t.Fatalf("record %d differs", n)
		}
		n++
	}
	if rb.Next() || ra.Err() != nil || rb.Err() != nil {
		t.Fatalf("after %d records: %v %v", n, ra.Err(), rb.Err())
	}
	return n
}

func TestRunUpload(t *testing.T) {
	s3 := s3test.Start(t, "tapes")
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	base := []string{"run", "--venue", "polymarket", "--instruments", fakeexchange.PolymarketStreamAsset,
		"--endpoint", s.WSURL(), "--clob-endpoint", s.CLOBURL(), "--flush-interval", "20ms"}

	t.Run("missing bucket", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "ds")
		code, _, errs := capExec(context.Background(), append(base, "--out", out, "--upload", "s3://nosuch/x")...)
		if code != cli.ExitError || !strings.Contains(errs, "nosuch") {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a dataset was created: %v", err)
		}
	})
	t.Run("flags", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "ds")
		if code, _, errs := capExec(context.Background(), append(base, "--out", out, "--upload-delete")...); code != cli.ExitUsage {
			t.Errorf("--upload-delete alone: exit %d %s", code, errs)
		}
		if code, _, errs := capExec(context.Background(), append(base, "--out", out, "--upload", "/tmp/x")...); code != cli.ExitUsage {
			t.Errorf("--upload /tmp/x: exit %d %s", code, errs)
		}
	})

	for _, del := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "ds")
		loc := "s3://tapes/capture/keep"
		args := append(base, "--out", out, "--upload", loc)
		if del {
			loc = "s3://tapes/capture/delete"
			args = append(base, "--out", out, "--upload", loc, "--upload-delete")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var code int
		var stdout, errs string
		go func() {
			code, stdout, errs = capExec(ctx, args...)
			close(done)
		}()
		capWait(t, "frames on disk", func() bool {
			st, err := recorder.ReadStatus(out)
			return err == nil && st.Frames > 200
		})
		cancel()
		<-done
		if code != cli.ExitOK || !strings.Contains(stdout, loc+"\t") {
			t.Fatalf("delete=%v: exit %d\n%s%s", del, code, stdout, errs)
		}
		m, err := datasets.ReadManifest(loc)
		if err != nil || !m.Clean {
			t.Fatalf("remote manifest %+v %v", m, err)
		}
		if rep, err := datasets.Verify(loc); err != nil || !rep.OK() {
			t.Fatalf("verify %s: %v %+v", loc, err, rep)
		}
		if del {
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("--upload-delete left %s: %v", out, err)
			}
			continue
		}
		if n := sameDatasets(t, out, loc); n < 200 {
			t.Errorf("%d records", n)
		}
		// Uploading it again sends nothing but the manifest.
		puts := s3.Puts.Load()
		if code, _, errs := capExec(context.Background(), "upload", out, loc); code != cli.ExitOK {
			t.Fatalf("capture upload: exit %d %s", code, errs)
		}
		if n := s3.Puts.Load() - puts; n != 1 {
			t.Errorf("capture upload of an uploaded dataset sent %d objects", n)
		}
	}
}

// TestKillNineDuringUpload SIGKILLs a real capture process that uploads as
// it records, with the store refusing one segment so an upload is pending
// at the kill: nothing is lost, and `capture upload` after `replay repair`
// sends exactly what was not verified, the manifest last.
func TestKillNineDuringUpload(t *testing.T) {
	bin := buildCapture(t)
	srv := s3test.Start(t, "tapes")
	srv.SetFault("/00000001.idx", s3test.Fault{Method: "PUT", Status: 500})
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	out := filepath.Join(t.TempDir(), "ds")
	loc := "s3://tapes/killed"
	cmd := exec.Command(bin, "run", "--venue", "polymarket", "--instruments", fakeexchange.PolymarketStreamAsset,
		"--endpoint", s.WSURL(), "--clob-endpoint", s.CLOBURL(), "--out", out, "--flush-interval", "20ms",
		"--rotate-size", "1048576", "--upload", loc, "--upload-delete")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	st, err := s3store.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			ents, _ := os.ReadDir(out)
			for _, e := range ents {
				fi, _ := e.Info()
				t.Logf("%s %d", e.Name(), fi.Size())
			}
			t.Logf("stderr: %.3000s", stderr.String())
		}
	}()
	// A 1 MiB segment of the test exchange's well-compressed frames takes
	// tens of seconds: a longer wait than capWait's.
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		_, err1 := os.Stat(filepath.Join(out, "00000002.seg"))
		if err1 == nil && strings.Contains(stderr.String(), "00000001.idx") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for segment 1 to finish and its index to be refused")
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	objs, err := st.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Key)
	}
	// Segment 1 is there, not its index, so no manifest yet; nothing of
	// the segment was deleted locally (its index is not verified).
	if strings.Join(names, " ") != "00000001.seg" {
		t.Fatalf("remote before the resume: %v", names)
	}
	for _, n := range []string{"00000001.seg", "00000001.idx", "00000002.seg"} {
		if _, err := os.Stat(filepath.Join(out, n)); err != nil {
			t.Fatalf("%s (not all verified) is gone: %v", n, err)
		}
	}
	if _, err := datasets.Repair(out); err != nil {
		t.Fatalf("repair: %v", err)
	}
	srv.SetFault("/00000001.idx", s3test.Fault{})
	puts := srv.Puts.Load()
	if code, o, errs := capExec(context.Background(), "upload", "--delete", out, loc); code != cli.ExitOK {
		t.Fatalf("capture upload: exit %d %s %s", code, o, errs)
	}
	if n := srv.Puts.Load() - puts; n != 4 {
		t.Errorf("resume sent %d objects, want 4 (index 1, segment and index 2, manifest)", n)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--delete left %s: %v", out, err)
	}
	// The README's recovery path ends in a dataset that verifies.
	if rep, err := datasets.Verify(loc); err != nil || !rep.OK() {
		t.Errorf("verify of the repaired upload: %v %+v", err, rep.Problems)
	}
	rd, err := datasets.Open(loc, datasets.WithSkipDamaged())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var frames [][]byte
	for rd.Next() {
		if r := rd.Record(); r.Kind == datasets.KindFrame {
			frames = append(frames, bytes.Clone(r.Payload))
		}
	}
	if rd.Err() != nil || len(rd.Damaged()) != 0 {
		t.Fatalf("remote after resume: %v %v", rd.Err(), rd.Damaged())
	}
	sent := s.Conns()[0].Sent()
	if len(frames) < 1000 || len(frames) > len(sent) {
		t.Fatalf("%d frames in the store, server sent %d", len(frames), len(sent))
	}
	for i := range frames {
		if !bytes.Equal(frames[i], sent[i]) {
			t.Fatalf("frame %d differs from what the server sent", i)
		}
	}
}

// TestImportToS3: capture import --out s3://… writes the dataset a local
// import writes (staged, uploaded verified, the manifest last) and refuses
// to replace one there without --force.
func TestImportToS3(t *testing.T) {
	s3test.Start(t, "tapes")
	in := importTestdata + "hftbacktest_polymarket.txt"
	local := filepath.Join(t.TempDir(), "pm")
	args := []string{"import", "--json", "--venue", "polymarket", "--format", "hftbacktest", in}
	if code, _, errs := execImport(t, append(args, "--out", local)...); code != cli.ExitOK {
		t.Fatalf("local: exit %d %s", code, errs)
	}
	code, stdout, errs := execImport(t, append(args, "--out", "s3://tapes/imported/pm")...)
	if code != cli.ExitOK || !strings.Contains(stdout, `"dataset": "s3://tapes/imported/pm"`) {
		t.Fatalf("s3: exit %d\n%s%s", code, stdout, errs)
	}
	if n := sameDatasets(t, local, "s3://tapes/imported/pm"); n < 6 {
		t.Errorf("%d records", n)
	}
	if code, _, errs := execImport(t, append(args, "--out", "s3://tapes/imported/pm")...); code != cli.ExitUsage || !strings.Contains(errs, "already holds a dataset") {
		t.Errorf("over a dataset: exit %d %s", code, errs)
	}
	if code, _, errs := execImport(t, append(args, "--out", "s3://tapes/imported/pm", "--force")...); code != cli.ExitOK {
		t.Errorf("--force: exit %d %s", code, errs)
	}
	// A missing bucket fails before anything is imported (no summary).
	if code, out, errs := execImport(t, append(args, "--out", "s3://nosuch/pm")...); code == cli.ExitOK || !strings.Contains(errs, `bucket "nosuch" does not exist`) || out != "" {
		t.Errorf("missing bucket: exit %d %s%s", code, out, errs)
	}
}

// lockedBuffer is a bytes.Buffer a child process writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestUploadSaysWhy: capture upload says each failed attempt and why as it
// happens, not only how many there were (issue 30, finding 5).
func TestUploadSaysWhy(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	srv.SetFault("why/00000001.seg", s3test.Fault{Method: "PUT", Status: 500, Times: 2})
	code, out, errs := capExec(context.Background(), "upload", filepath.Join("..", "..", "datasets", "samples", "polymarket"), "s3://tapes/why")
	if code != cli.ExitOK {
		t.Fatalf("exit %d %s %s", code, out, errs)
	}
	if !strings.Contains(errs, "attempt 1 of s3://tapes/why/00000001.seg failed") || !strings.Contains(errs, "InternalError") {
		t.Errorf("stderr does not say why the attempts failed:\n%s", errs)
	}
}
