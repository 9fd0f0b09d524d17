package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/cli"
)

func TestPeersFlags(t *testing.T) {
	var got *peersOptions
	for _, tt := range []struct {
		args    []string
		code    int
		wantErr string
	}{
		{[]string{"--cache", "c", "--dataset", "d"}, 0, ""},
		{[]string{"--cache", "c"}, cli.ExitUsage, "--cache and --dataset are required"},
		{[]string{"--cache", "c", "--dataset", "d", "--rounds", "0"}, cli.ExitUsage, "--rounds 0"},
	} {
		code, out := execute(t, newPeersCmd(func(o *peersOptions) error { got = o; return nil }), tt.args...)
		if code != tt.code || !strings.Contains(out, tt.wantErr) {
			t.Fatalf("%q: exit %d, want %d; output %q, want %q", tt.args, code, tt.code, out, tt.wantErr)
		}
	}
	if got == nil || got.Rounds != 3 || !got.Books || got.Publish || got.JSON != "bench/out/peers/peers.json" {
		t.Fatalf("defaults %+v", got)
	}
}

// peers-results rewrites both blocks from the JSON, --check says when they
// are stale, and a malformed JSON is an error naming the file and the fault.
func TestPeersResults(t *testing.T) {
	dir := t.TempDir()
	results, readme := filepath.Join(dir, "RESULTS.md"), filepath.Join(dir, "README.md")
	doc := "# doc\n\n<!-- bench-peers:begin -->\nstale\n<!-- bench-peers:end -->\n\nrest\n"
	for _, p := range []string{results, readme} {
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	input, err := filepath.Abs("../../testdata/peers-results/small.json")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--input", input, "--results", results, "--readme", readme}
	code, out := execute(t, newPeersResultsCmd(nil), append(args, "--check")...)
	if code != cli.ExitProblem || !strings.Contains(out, "not what") {
		t.Fatalf("stale --check: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(results); string(b) != doc {
		t.Fatal("--check changed the file")
	}
	if code, out = execute(t, newPeersResultsCmd(nil), args...); code != cli.ExitOK {
		t.Fatalf("regenerate: exit %d\n%s", code, out)
	}
	r, _ := os.ReadFile(results)
	m, _ := os.ReadFile(readme)
	if !strings.Contains(string(r), "| tapedeck replay run | 2.00 M |") || !strings.HasSuffix(string(r), "<!-- bench-peers:end -->\n\nrest\n") {
		t.Fatalf("RESULTS.md:\n%s", r)
	}
	if !strings.Contains(string(m), "| 2.00 M frames/s | 500 k frames/s | 4.00× |") || strings.Contains(string(m), "stale") {
		t.Fatalf("README.md:\n%s", m)
	}
	if code, out = execute(t, newPeersResultsCmd(nil), append(args, "--check")...); code != cli.ExitOK || !strings.Contains(out, "up to date") {
		t.Fatalf("fresh --check: exit %d\n%s", code, out)
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"schema": "tapedeck-bench-peers/1", "rounds": 0}`), 0o644)
	code, out = execute(t, newPeersResultsCmd(nil), "--input", bad, "--results", results, "--readme", readme)
	if code != cli.ExitError || !strings.Contains(out, "bad.json") || !strings.Contains(out, "rounds 0: want at least 1") {
		t.Fatalf("malformed: exit %d\n%s", code, out)
	}
	os.WriteFile(readme, []byte("no markers\n"), 0o644)
	code, out = execute(t, newPeersResultsCmd(nil), args...)
	if code != cli.ExitError || !strings.Contains(out, "README.md: marker") {
		t.Fatalf("no markers: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(results); string(b) != string(r) {
		t.Fatal("RESULTS.md rewritten although README.md had no block")
	}
}
