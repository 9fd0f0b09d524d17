//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/cli"
)

// TestSpecialFilesRefused is issue 30 item 15: a FIFO in place of a segment,
// an index or the manifest hung every verb (a FIFO's open waits for a
// writer), and a manifest pointing at /dev/zero took verify to 11.4 GB.
// Every verb now refuses what is not a regular file, and a manifest larger
// than the format allows, with an error naming it, at once.
func TestSpecialFilesRefused(t *testing.T) {
	verbs := func(dir string) [][]string {
		out := t.TempDir()
		return [][]string{
			{"run", dir},
			{"books", "--format", "json", dir},
			{"inspect", "--format", "json", dir},
			{"ls", "--format", "json", filepath.Dir(dir)},
			{"verify", dir},
			{"export", dir, "--table", "trades", "--format", "csv", "--out", filepath.Join(out, "t.csv")},
			{"report", dir, "--out", filepath.Join(out, "r.html")},
			{"bench", dir},
			{"backtest", dir, "--strategy", "noop"},
			{"repair", dir},
		}
	}
	fifo := func(t *testing.T, p string) {
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		// Whatever happens, nothing stays blocked on it after the test: a
		// reader opened by mistake is released by this writer.
		t.Cleanup(func() {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		})
	}
	for _, tc := range []struct {
		name, file string
		make       func(t *testing.T, p string)
		want       string
	}{
		{"FIFO segment", "00000001.seg", fifo, "not a regular file"},
		{"FIFO index", "00000001.idx", fifo, ""},
		{"FIFO manifest", "manifest.json", fifo, "not a regular file"},
		{"manifest to /dev/zero", "manifest.json", func(t *testing.T, p string) {
			os.Remove(p)
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"manifest of 1 GiB", "manifest.json", func(t *testing.T, p string) {
			if err := os.Truncate(p, 1<<30); err != nil { // sparse: no disk used
				t.Fatal(err)
			}
		}, "larger than its format allows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sampleCopy(t, "polymarket")
			tc.make(t, filepath.Join(dir, tc.file))
			for _, args := range verbs(dir) {
				done := make(chan struct{})
				var code int
				var out, errs string
				go func() {
					defer close(done)
					code, out, errs = execReplay(t, args...)
				}()
				select {
				case <-done:
				case <-time.After(time.Minute):
					t.Fatalf("%v: still running after a minute (blocked on the %s)", args, tc.file)
				}
				if tc.want == "" {
					// An index is optional: a FIFO in its place is set
					// aside like a stale one and the verb does its work.
					continue
				}
				if code == cli.ExitOK || !strings.Contains(out+errs, tc.want) {
					t.Errorf("%v: exit %d: %s%s", args, code, out, errs)
				}
			}
		})
	}
}
