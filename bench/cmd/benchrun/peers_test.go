package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/bench"
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

// fakeNode is a node that answers bench/peers/bench_replay.cjs as tardis-dev
// would, from the environment, and logs the mode it ran.
const fakeNode = `#!/bin/sh
mode=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--mode" ]; then mode=$2; fi
  shift
done
echo "node $mode" >> "$FAKE_LOG"
sleep 0.05 # longer than the 0.04 s it says it took
if [ "$mode" = raw-skip ]; then
  echo "{\"mode\":\"raw-skip\",\"node\":\"v0.0.1\",\"tardis_dev\":\"13.35.3\",\"seconds\":0.04,\"cpu_user_s\":0.03,\"cpu_sys_s\":0.01,\"stub_requests\":${FAKE_STUB:-0},\"msgs\":${FAKE_MSGS:-$FAKE_FRAMES}}"
else
  echo "{\"mode\":\"normalized\",\"node\":\"v0.0.1\",\"tardis_dev\":\"13.35.3\",\"seconds\":0.04,\"cpu_user_s\":0.02,\"cpu_sys_s\":0.01,\"stub_requests\":0,\"book_changes\":1500,\"book_snapshots\":1400}"
fi
`

// TestPeersRun runs benchrun peers against a stand-in replay binary and a
// stand-in node (the tools' answers, not our code) to check what the runner
// itself does: the alternation, the checks on every pass, the result.
func TestPeersRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in node is a shell script")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "replay"), "./testdata/fakereplay")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in replay: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(bin, "node"), []byte(fakeNode), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	os.MkdirAll(cache, 0o755)
	summary := `{"args": {"minutes": 1, "seed": "s"}, "from": "2025-10-23T00:00:00.000Z", "to": "2025-10-23T00:01:00.000Z",
	  "frames": 1000, "text_bytes": 700000, "gz_bytes": 140000, "text_sha256_all_minutes_concatenated": "abcd",
	  "markets": 2, "tokens": 4, "counts": {"book": 10, "price_change": 990, "price_change_entries": 1400}}`
	if err := os.WriteFile(filepath.Join(cache, "SUMMARY.json"), []byte(summary), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_LOG", log)
	t.Setenv("FAKE_FRAMES", "1000")
	t.Setenv("FAKE_DIGEST", "xxh64:00ff")
	t.Setenv("FAKE_ROWS", "1234")
	out := filepath.Join(dir, "peers.json")
	args := []string{"--rounds", "2", "--cache", cache, "--dataset", filepath.Join(dir, "dataset"), "--replay", filepath.Join(bin, "replay"),
		"--tardis-dir", dir, "--json", out, "--command", "test", "--note", "a test"}

	code, stderr := execute(t, newPeersCmd(nil), args...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	p, err := bench.ReadPeersResult(out)
	if err != nil {
		t.Fatal(err)
	}
	logged, _ := os.ReadFile(log)
	wantLog := "node raw-skip\nreplay run\nnode normalized\nreplay export\n" + // round 1
		"replay export\nnode normalized\nreplay run\nnode raw-skip\n" + // round 2, reversed
		"replay export\n" // the untimed row count
	if string(logged) != wantLog {
		t.Errorf("passes ran in the order\n%s\nwant\n%s", logged, wantLog)
	}
	if p.Rounds != 2 || len(p.Runs) != 8 || p.Recording.Frames != 1000 || p.Recording.TapedeckDigest != "xxh64:00ff" ||
		p.Versions.Node != "v0.0.1" || p.Versions.TardisDev != "13.35.3" || p.Versions.Go != runtime.Version() || p.Machine.Note != "a test" {
		t.Errorf("result %+v", p)
	}
	for _, w := range p.Workloads {
		if want := map[string]int64{bench.PeerTardisBooks: 1400, bench.PeerTapedeckDepth: 1234}[w.ID]; w.Rows != want {
			t.Errorf("%s: rows %d, want %d", w.ID, w.Rows, want)
		}
	}
	for _, r := range p.Runs {
		switch r.Workload {
		case bench.PeerTardisRaw: // the harness's own timer and CPU
			if r.Timer != "tool" || r.WallS != 0.04 || r.CPUS != 0.04 || r.FramesPerS != 25000 || r.ProcessWallS < r.WallS {
				t.Errorf("tardis-raw run %+v", r)
			}
		case bench.PeerTapedeckRun: // replay run's wall_ns
			if r.Timer != "tool" || r.WallS != 0.001 || r.FramesPerS != 1e6 || r.Digest != "xxh64:00ff" {
				t.Errorf("tapedeck-run run %+v", r)
			}
		case bench.PeerTapedeckDepth: // the process
			if r.Timer != "process" || r.WallS != r.ProcessWallS || r.WallS <= 0 {
				t.Errorf("tapedeck-depth run %+v", r)
			}
		}
	}
	if r := p.Ratio("tapedeck run / tardis-dev raw"); r == nil || r.Median != 40 || len(r.PerRound) != 2 || r.PerRound[0] != 40 {
		t.Errorf("ratio %+v", r)
	}

	// Each pass is checked.
	for _, tt := range []struct{ env, val, want string }{
		{"FAKE_STUB", "1", "tardis-dev asked its API"},
		{"FAKE_MSGS", "999", "tardis-raw: read 999 frames, but the recording has 1000"},
		{"FAKE_FRAMES", "1001", "tapedeck-run: read 1001 frames, but the recording has 1000"},
	} {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(tt.env, tt.val)
			if tt.env == "FAKE_FRAMES" {
				t.Setenv("FAKE_MSGS", "1000")
			}
			code, stderr := execute(t, newPeersCmd(nil), append(args, "--books=false", "--rounds", "1")...)
			if code != cli.ExitError || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, want %d with %q\n%s", code, cli.ExitError, tt.want, stderr)
			}
		})
	}
}

// benchrun results (make bench-results) rebuilds RESULTS.md from a suite
// report and refills its tardis-dev block from the committed result.
func TestResultsKeepsPeersBlock(t *testing.T) {
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	code, stderr := execute(t, newResultsCmd(nil), "--report", "../../testdata/reports/aa-current.json", "--no-js", "--output", out)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bench.PeersBlock(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := bench.PeersPlaceholder
	if p, err := bench.ReadPeersResult("../../RESULTS-peers.json"); err == nil {
		want = bench.PeersResultsSection(p, bench.PeersFile)
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("tardis-dev block\n%s\nwant\n%s", got, want)
	}
}
