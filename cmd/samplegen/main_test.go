package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/samplegen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func execSamplegen(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	root := newRootCmd(nil)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	return cli.Main(root, args, &errb), out.String(), errb.String()
}

func countRecords(t *testing.T, dir string) int {
	t.Helper()
	r, err := datasets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for r.Next() {
		n++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestExamples runs every Example line with --out in a temporary directory
// (and a short session where the example asks for a big one).
func TestExamples(t *testing.T) {
	out := t.TempDir()
	n := 0
	for _, line := range strings.Split(newRootCmd(nil).Example, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "samplegen") {
			continue
		}
		args := strings.Fields(strings.TrimPrefix(line, "samplegen"))
		hasOut := false
		for i := range args {
			if i > 0 && args[i-1] == "--out" {
				args[i], hasOut = filepath.Join(out, "big"), true
			}
			if i > 0 && args[i-1] == "--frames" {
				args[i] = "5000"
			}
		}
		if !hasOut {
			args = append(args, "--out", filepath.Join(out, "samples"))
		}
		code, stdout, stderr := execSamplegen(t, args...)
		if code != cli.ExitOK {
			t.Fatalf("%s: exit %d: %s", line, code, stderr)
		}
		if !strings.Contains(stdout, "records") {
			t.Errorf("%s: output %q", line, stdout)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d examples, want 2", n)
	}
	for _, v := range []string{"polymarket", "hyperliquid"} {
		if countRecords(t, filepath.Join(out, "samples", v)) < 5000 {
			t.Errorf("%s: short sample", v)
		}
	}
	if c := countRecords(t, filepath.Join(out, "big", "hyperliquid")); c < 5000 || c > 5200 {
		t.Errorf("--frames 5000 gave %d records", c)
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--venue", "hyperliquid", "--duration", "5s", "--out", dir}
	if code, _, stderr := execSamplegen(t, args...); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if code, _, stderr := execSamplegen(t, args...); code != cli.ExitError || !strings.Contains(stderr, "--force") {
		t.Fatalf("second run without --force: exit %d: %s", code, stderr)
	}
	if code, _, stderr := execSamplegen(t, append(args, "--force")...); code != cli.ExitOK {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	other := filepath.Join(dir, "polymarket")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "mine.txt"), []byte("keep"), 0o644)
	code, _, stderr := execSamplegen(t, "--venue", "polymarket", "--force", "--out", dir)
	if code != cli.ExitError || !strings.Contains(stderr, "not a dataset") {
		t.Fatalf("non-dataset dir: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(other, "mine.txt")); err != nil {
		t.Fatal("--force deleted a directory that is not a dataset")
	}
	code, _, stderr = execSamplegen(t, "--venue", "no-such-venue")
	if choice := strings.Join(samplegen.Venues(), ", ") + " or all"; code != cli.ExitUsage || !strings.Contains(stderr, "--venue must be "+choice) {
		t.Fatalf("bad venue: exit %d: %s", code, stderr)
	}
	// The help lists the venues with a generator, from the registry.
	_, help, _ := execSamplegen(t, "--help")
	for _, v := range samplegen.Venues() {
		if !strings.Contains(help, v+",") && !strings.Contains(help, v+" or all") {
			t.Errorf("--help does not list %s:\n%s", v, help)
		}
	}
}
