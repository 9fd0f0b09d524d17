package main

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/venue"
)

// dirDigest hashes every file name and content of dir, recursively.
func dirDigest(t *testing.T, dir string) [32]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		h.Write([]byte(p))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

// An export never writes inside a dataset it reads, not even with --force:
// a segment, the dataset directory itself, a new file beside the segments, a
// path through a symbolic link and a hard link to a segment are all refused
// (usage error naming the dataset) and leave the dataset byte-identical; a
// sibling whose name merely starts like the dataset's is fine.
func TestExportRefusesOutputInsideInput(t *testing.T) {
	root := t.TempDir()
	ds := filepath.Join(root, "pm")
	if err := os.CopyFS(ds, os.DirFS(expSample(t, venue.Polymarket))); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(ds, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(root, "hard.ndjson")
	if err := os.Link(filepath.Join(ds, "00000001.seg"), hard); err != nil {
		t.Fatal(err)
	}
	before := dirDigest(t, ds)
	for _, tc := range []struct{ name, table, out string }{
		{"segment", "raw", filepath.Join(ds, "00000001.seg")},
		{"manifest", "raw", filepath.Join(ds, "manifest.json")},
		{"new file in the dataset", "trades", filepath.Join(ds, "trades.csv")},
		{"the dataset directory", "trades", ds},
		{"through a symlink", "raw", filepath.Join(link, "00000001.seg")},
		{"hard link to a segment", "raw", hard},
		{"relative", "raw", filepath.Join(ds, "..", "pm", "00000001.seg")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"export", ds, "--table", tc.table, "--out", tc.out, "--force"}
			if tc.table == "raw" {
				args = append(args, "--format", "ndjson")
			} else {
				args = append(args, "--format", "csv")
			}
			code, _, errs := execReplay(t, args...)
			if code != cli.ExitUsage || !strings.Contains(errs, "input dataset") {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if dirDigest(t, ds) != before {
				t.Fatal("the input dataset changed")
			}
		})
	}
	sibling := filepath.Join(root, "pm-trades.csv")
	expMust(t, "export", ds, "--table", "trades", "--out", sibling)
	if fi, err := os.Stat(sibling); err != nil || fi.Size() == 0 {
		t.Fatalf("sibling export: %v", err)
	}
}

// Every verb that writes a file refuses a path inside a dataset it reads, as
// export does (issue 30 item 7): report --out a segment used to replace it
// with HTML, run --cpuprofile a segment truncated it to 0 bytes. Each case
// exits with a usage error naming the flag and leaves the dataset
// byte-identical; the same flags with a path outside work.
func TestVerbsRefuseOutputInsideInput(t *testing.T) {
	root := t.TempDir()
	ds := filepath.Join(root, "pm")
	if err := os.CopyFS(ds, os.DirFS(expSample(t, venue.Polymarket))); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(ds, "00000001.seg")
	before := dirDigest(t, ds)
	for _, tc := range []struct {
		name, flag string
		args       []string
	}{
		{"report --out a segment", "--out", []string{"report", ds, "--out", seg}},
		{"report --out a new file in the dataset", "--out", []string{"report", ds, "--out", filepath.Join(ds, "r.html")}},
		{"run --cpuprofile a segment", "--cpuprofile", []string{"run", ds, "--cpuprofile", seg}},
		{"run --memprofile the manifest", "--memprofile", []string{"run", ds, "--memprofile", filepath.Join(ds, "manifest.json")}},
		{"books --cpuprofile a segment", "--cpuprofile", []string{"books", ds, "--cpuprofile", seg}},
		{"verify --cpuprofile a segment", "--cpuprofile", []string{"verify", ds, "--cpuprofile", seg}},
		{"backtest --out the dataset", "--out", []string{"backtest", ds, "--strategy", "noop", "--out", ds}},
		{"backtest --out a directory in the dataset", "--out", []string{"backtest", ds, "--strategy", "noop", "--out", filepath.Join(ds, "bt")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := execReplay(t, tc.args...)
			if code != cli.ExitUsage || !strings.Contains(errs, "input dataset") || !strings.Contains(errs, tc.flag) {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if dirDigest(t, ds) != before {
				t.Fatal("the input dataset changed")
			}
		})
	}
	out := t.TempDir()
	for _, args := range [][]string{
		{"report", ds, "--out", filepath.Join(out, "r.html")},
		{"run", ds, "--cpuprofile", filepath.Join(out, "cpu"), "--memprofile", filepath.Join(out, "mem")},
	} {
		if code, _, errs := execReplay(t, args...); code != cli.ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	for _, name := range []string{"r.html", "cpu", "mem"} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
