package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/testdisk"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// A real capture process on a real filesystem that fills up and stays full
// until it is stopped: exit status 1, a summary and an error that say how
// many records were not written, and a dataset that says it too (it ends
// with the gap of what was not written, in the space of the reserve, and
// the clean close)
// and keeps every frame that reached the disk, byte-identical.
func TestRunDiskFullAtShutdown(t *testing.T) {
	defer goleak.VerifyNone(t)
	bin := buildCapture(t)
	disk := testdisk.Small(t, "8m")
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	out := filepath.Join(disk, "ds")
	cmd := exec.Command(bin, "run", "--venue", "polymarket", "--instruments", fakeexchange.PolymarketStreamAsset,
		"--endpoint", s.WSURL(), "--clob-endpoint", s.CLOBURL(), "--out", out, "--flush-interval", "20ms", "--queue", "64")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	capWait(t, "frames on disk", func() bool {
		st, err := recorder.ReadStatus(out)
		return err == nil && st.Frames > 50
	})
	testdisk.Fill(t, disk)
	n := capSent(s)
	capWait(t, "frames while the disk is full", func() bool { return capSent(s) > n+2000 })
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`\t(\d+) not written\t`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("summary %q", stdout.String())
	}
	if k, _ := strconv.Atoi(m[1]); k == 0 || !strings.Contains(stderr.String(), m[1]+" records not written") {
		t.Fatalf("summary %q, stderr:\n%s", stdout.String(), stderr.String())
	}
	t.Logf("summary: %s", stdout.String())
	rd, err := datasets.Open(out, datasets.WithStrict())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var frames [][]byte
	var tail [2]datasets.Record
	for rd.Next() {
		r := rd.Record()
		if r.Kind == datasets.KindFrame {
			frames = append(frames, bytes.Clone(r.Payload))
		}
		tail[0], tail[1] = tail[1], *r
		tail[1].Payload = bytes.Clone(r.Payload)
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if gap := tail[0]; gap.Kind != datasets.KindGap || !strings.Contains(string(gap.Payload), "not written") || tail[1].Kind != datasets.KindCleanClose {
		t.Fatalf("dataset ends %s %s, %s; want the gap of what was not written, then the clean close", gap.Kind, gap.Payload, tail[1].Kind)
	}
	sent, j := s.Conns()[0].Sent(), 0
	for _, f := range frames {
		for j < len(sent) && !bytes.Equal(sent[j], f) {
			j++
		}
		if j == len(sent) {
			t.Fatal("a recorded frame is not among the server's, in order")
		}
		j++
	}
}

// A capture that fails before recording anything (here: the metrics port is
// taken) leaves no --out behind, so the same command can be retried.
func TestRunFailureLeavesNoDataset(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	out := filepath.Join(t.TempDir(), "ds")
	busy := s.WSURL()[len("ws://"):]
	busy = busy[:strings.IndexByte(busy, '/')]
	args := []string{"run", "--venue", "polymarket", "--instruments", fakeexchange.PolymarketStreamAsset,
		"--endpoint", s.WSURL(), "--clob-endpoint", s.CLOBURL(), "--out", out, "--metrics-addr", busy}
	code, _, errs := capExec(context.Background(), args...)
	if code != 1 || !strings.Contains(errs, "metrics") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed run left %s: %v", out, err)
	}
	// The retry gets past the existence check (and fails on the port again).
	if code, _, errs := capExec(context.Background(), args...); code != 1 || strings.Contains(errs, "already exists") {
		t.Fatalf("retry: exit %d: %s", code, errs)
	}
}
