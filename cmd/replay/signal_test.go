//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/venue"
)

// Ctrl-C or SIGTERM in the middle of an export: the process stops with one
// line on stderr, 130 or 143, and leaves nothing in the output directory, not
// even the temporary file it was writing. The process is stopped (SIGSTOP)
// once its temporary file exists, signalled, and continued, so the signal
// always lands mid-export; a run that had already finished is run again.
func TestExportInterrupted(t *testing.T) {
	ds := expSample(t, venue.Polymarket)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		line string
	}{
		{syscall.SIGINT, 130, "replay: interrupted by SIGINT"},
		{syscall.SIGTERM, 143, "replay: interrupted by SIGTERM"},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			for attempt := 0; ; attempt++ {
				if attempt == 5 {
					t.Fatal("every export finished before the signal")
				}
				dir := t.TempDir()
				cmd := exec.Command(os.Args[0], "export", ds, "--table", "depth", "--levels", "1000", "--encoders", "1",
					"--out", filepath.Join(dir, "depth.parquet"))
				cmd.Env = append(os.Environ(), "TAPEDECK_REPLAY_MAIN=1")
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				if !waitTemp(dir, exited) {
					continue // finished (or failed) before a temporary file was seen
				}
				_ = cmd.Process.Signal(syscall.SIGSTOP)
				if !hasTemp(dir) {
					_ = cmd.Process.Signal(syscall.SIGCONT)
					<-exited
					continue
				}
				_ = cmd.Process.Signal(tc.sig)
				_ = cmd.Process.Signal(syscall.SIGCONT)
				err := <-exited
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					if err == nil {
						continue // committed in the instant before the signal
					}
					t.Fatal(err)
				}
				if ee.ExitCode() != tc.code || stderr.String() != tc.line+"\n" {
					t.Fatalf("exit %d, stderr %q; want %d and %q", ee.ExitCode(), stderr.String(), tc.code, tc.line)
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Fatalf("left behind: %v", ents)
				}
				return
			}
		})
	}
}

func hasTemp(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".depth.parquet.tmp") {
			return true
		}
	}
	return false
}

// waitTemp waits for the export's temporary file to appear in dir, or for
// the process to end (false).
func waitTemp(dir string, exited chan error) bool {
	for !hasTemp(dir) {
		select {
		case err := <-exited:
			exited <- err
			return false
		case <-time.After(time.Millisecond): // poll the directory
		}
	}
	return true
}
