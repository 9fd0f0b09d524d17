package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.uber.org/goleak"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// importTestdata is the interchange test data, relative to this package.
const importTestdata = "../../datasets/interchange/testdata/"

// execImport runs the capture root with args; it returns the exit code,
// stdout and stderr.
func execImport(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	return cli.Main(root, args, &errb), out.String(), errb.String()
}

func TestImportFlags(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	in := importTestdata + "tardis_hyperliquid.txt"
	notDataset := filepath.Join(dir, "notds")
	os.MkdirAll(notDataset, 0o755)
	os.WriteFile(filepath.Join(notDataset, "keep.txt"), []byte("x"), 0o644)
	existing := filepath.Join(dir, "existing")
	w, err := datasets.Create(existing, datasets.Manifest{Venue: "hyperliquid"})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	cases := []struct {
		name string
		args []string
		want string // "" = accepted
	}{
		{"ok", []string{"--venue", "hyperliquid", "--format", "tardis", in, "--out", filepath.Join(dir, "new")}, ""},
		{"ndjson start", []string{"--venue", "polymarket", "--format", "ndjson", "--start", "2025-10-23T00:38:00Z", "--step", "5ms", in, "--out", filepath.Join(dir, "new")}, ""},
		{"force", []string{"--venue", "hyperliquid", "--format", "tardis", "--force", in, "--out", existing}, ""},
		{"merge", []string{"--venue", "hyperliquid", "--format", "tardis", "--merge", in, in, "--out", filepath.Join(dir, "new")}, ""},
		{"no venue", []string{"--format", "tardis", in, "--out", filepath.Join(dir, "x")}, "--venue"},
		{"bad venue", []string{"--venue", "no-such-venue", "--format", "tardis", in, "--out", filepath.Join(dir, "x")}, "--venue"},
		{"no format", []string{"--venue", "polymarket", in, "--out", filepath.Join(dir, "x")}, "--format"},
		{"bad format", []string{"--venue", "polymarket", "--format", "csv", in, "--out", filepath.Join(dir, "x")}, "--format"},
		{"no out", []string{"--venue", "polymarket", "--format", "tardis", in}, "--out"},
		{"no files", []string{"--venue", "polymarket", "--format", "tardis", "--out", filepath.Join(dir, "x")}, "FILE"},
		{"start with tardis", []string{"--venue", "polymarket", "--format", "tardis", "--start", "5", in, "--out", filepath.Join(dir, "x")}, "--start"},
		{"bad start", []string{"--venue", "polymarket", "--format", "ndjson", "--start", "yesterday", in, "--out", filepath.Join(dir, "x")}, "--start"},
		{"merge start", []string{"--venue", "polymarket", "--format", "ndjson", "--merge", "--start", "5", in, "--out", filepath.Join(dir, "x")}, "--merge"},
		{"zero step", []string{"--venue", "polymarket", "--format", "ndjson", "--step", "0s", in, "--out", filepath.Join(dir, "x")}, "--step"},
		{"stdin twice", []string{"--venue", "polymarket", "--format", "ndjson", "-", "-", "--out", filepath.Join(dir, "x")}, "more than once"},
		{"dir input", []string{"--venue", "polymarket", "--format", "ndjson", dir, "--out", filepath.Join(dir, "x")}, "directory"},
		{"exists", []string{"--venue", "hyperliquid", "--format", "tardis", in, "--out", existing}, "--force"},
		{"not a dataset", []string{"--venue", "hyperliquid", "--format", "tardis", "--force", in, "--out", notDataset}, "not a dataset"},
		{"input in out", []string{"--venue", "hyperliquid", "--format", "tardis", "--force", filepath.Join(existing, datasets.ManifestName), "--out", existing}, "inside --out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *importOptions
			cmd := newImportCmd(func(o *importOptions) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.FlagError{Err: err} })
			err := cmd.Execute()
			if tc.want == "" {
				if err != nil || got == nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var fe *cli.FlagError
			if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a flag error naming %q", err, tc.want)
			}
			if got != nil {
				t.Fatal("runF called despite the error")
			}
		})
	}
	if ents, _ := os.ReadDir(notDataset); len(ents) != 1 {
		t.Fatal("the refused --out directory was modified")
	}
}

// TestImportExamples runs every Example of the command, from the repository
// root, with --out redirected to a temporary directory.
func TestImportExamples(t *testing.T) {
	defer goleak.VerifyNone(t)
	ex := newImportCmd(nil).Example
	out := t.TempDir()
	t.Chdir("../..")
	n := 0
	for _, line := range strings.Split(ex, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "$ capture ") {
			continue
		}
		args := strings.Fields(strings.TrimPrefix(line, "$ capture "))
		for i := range args {
			if i > 0 && args[i-1] == "--out" {
				args[i] = filepath.Join(out, args[i])
			}
		}
		code, stdout, stderr := execImport(t, args...)
		if code != cli.ExitOK {
			t.Fatalf("%s\nexit %d: %s", line, code, stderr)
		}
		dir := args[len(args)-1]
		r, err := datasets.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		recs := 0
		for r.Next() {
			recs++
		}
		m := r.Manifest()
		r.Close()
		if recs == 0 || !strings.Contains(stdout, dir) || m.Venue == "" || m.Endpoint == "" || m.Source == "" {
			t.Errorf("%s: %d records, manifest %+v, output %q", line, recs, m, stdout)
		}
		if strings.Contains(line, "--start") && (!m.TimesAssigned || m.StartNs != 1761179880000000000) {
			t.Errorf("%s: manifest %+v: want assigned times from the --start", line, m)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d examples ran, want 3", n)
	}
}

func TestImportRunJSONAndErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	ds := filepath.Join(dir, "pm")
	code, stdout, stderr := execImport(t, "import", "--json", "--venue", "polymarket", "--format", "hftbacktest",
		importTestdata+"hftbacktest_polymarket.txt", importTestdata+"hftbacktest_polymarket.txt", "--out", ds)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var s importSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if s.Files != 2 || s.Frames != 12 || s.Backwards != 1 || s.TimesAssigned {
		t.Errorf("summary %+v: want 12 frames from 2 files, one step back in time", s)
	}
	code, stdout, stderr = execImport(t, "import", "--json", "--merge", "--venue", "polymarket", "--format", "hftbacktest",
		importTestdata+"hftbacktest_polymarket.txt", importTestdata+"hftbacktest_polymarket.txt", "--out", filepath.Join(dir, "merged"))
	if code != cli.ExitOK {
		t.Fatalf("--merge: exit %d: %s", code, stderr)
	}
	s = importSummary{}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || s.Frames != 12 || s.Backwards != 0 {
		t.Errorf("--merge summary %+v (%v): want 12 frames in time order", s, err)
	}
	// A malformed line: exit 1, the error names file and line.
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("1 {}\n2 {}\nnope {}\n"), 0o644)
	code, _, stderr = execImport(t, "import", "--venue", "polymarket", "--format", "hftbacktest", bad, "--out", filepath.Join(dir, "bad"))
	if code != cli.ExitError || !strings.Contains(stderr, bad+":3:") || !strings.Contains(stderr, "keeps the 2 records") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestImportVenueWarning(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	code, _, stderr := execImport(t, "import", "--venue", "polymarket", "--format", "tardis",
		importTestdata+"tardis_hyperliquid.txt", "--out", filepath.Join(dir, "wrong"))
	if code != cli.ExitOK || !strings.Contains(stderr, "look like hyperliquid") {
		t.Fatalf("exit %d, stderr %q: want a warning about the venue", code, stderr)
	}
	code, _, stderr = execImport(t, "import", "--venue", "hyperliquid", "--format", "tardis",
		importTestdata+"tardis_hyperliquid.txt", "--out", filepath.Join(dir, "right"))
	if code != cli.ExitOK || strings.Contains(stderr, "warning") {
		t.Fatalf("exit %d, stderr %q: want no warning", code, stderr)
	}
}

// TestImportOutOfOrderFile (issue 13 item 14): one file whose receive times
// go back is reported as such, without the --merge advice, which cannot
// sort a single file; two files in the wrong order still get the advice.
func TestImportOutOfOrderFile(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	lines, err := os.ReadFile(importTestdata + "hftbacktest_polymarket.txt")
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.SplitAfter(strings.TrimRight(string(lines), "\n")+"\n", "\n")
	ls = ls[:len(ls)-1]
	ls[1], ls[2] = ls[2], ls[1] // one record before its predecessor
	one := filepath.Join(dir, "swapped.txt")
	os.WriteFile(one, []byte(strings.Join(ls, "")), 0o644)
	code, stdout, stderr := execImport(t, "import", "--venue", "polymarket", "--format", "hftbacktest", one, "--out", filepath.Join(dir, "a"))
	if code != cli.ExitOK || !strings.Contains(stdout, "same file") || strings.Contains(stdout, "files out of order") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = execImport(t, "import", "--json", "--venue", "polymarket", "--format", "hftbacktest", one, "--out", filepath.Join(dir, "b"))
	var s importSummary
	if err := json.Unmarshal([]byte(stdout), &s); code != cli.ExitOK || err != nil || s.Backwards != 1 || s.InFile != 1 || s.Frames != int64(len(ls)) {
		t.Fatalf("exit %d %v: %+v %s", code, err, s, stderr)
	}
	in := importTestdata + "hftbacktest_polymarket.txt"
	code, stdout, _ = execImport(t, "import", "--venue", "polymarket", "--format", "hftbacktest", in, in, "--out", filepath.Join(dir, "c"))
	if code != cli.ExitOK || !strings.Contains(stdout, "files out of order") || strings.Contains(stdout, "same file") {
		t.Fatalf("two files: exit %d\n%s", code, stdout)
	}
}
