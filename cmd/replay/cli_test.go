package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/venue"
)

// TestCLIErrors is the error table of the replay command: every failure is
// one line on stderr naming what and where, never the usage text; usage
// errors (flags, arguments, combinations, an existing output) exit 2 and
// point at the verb's --help, runtime errors exit 1.
func TestCLIErrors(t *testing.T) {
	ds := expSample(t, venue.Polymarket)
	dir := t.TempDir()
	existing := filepath.Join(dir, "exists.parquet")
	if err := os.WriteFile(existing, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no", "such", "dir", "out.csv")
	q := regexp.QuoteMeta
	tests := []struct {
		args []string
		code int
		line string // regexp of the whole line
	}{
		{[]string{"frobnicate"}, cli.ExitUsage, q(`replay: unknown command "frobnicate" for "replay" (see 'replay --help')`)},
		{[]string{"export", "--tabel", "x", ds}, cli.ExitUsage, q(`replay: unknown flag: --tabel (see 'replay export --help')`)},
		{[]string{"export", ds, "--out", "x.parquet"}, cli.ExitUsage, q(`replay: export: --table is required (depth, book_changes, trades, quotes, events, instruments, raw), or --format hftbacktest or nautilus (see 'replay export --help')`)},
		{[]string{"export", ds, "--table", "bogus", "--out", "x.parquet"}, cli.ExitUsage,
			q(`replay: export: unknown --table "bogus" (want depth, book_changes, trades, quotes, events, instruments, raw) (see 'replay export --help')`)},
		{[]string{"export", ds, "--table", "trades", "--out", existing}, cli.ExitUsage,
			q(`replay: export: ` + existing + ` exists (use -f/--force to overwrite) (see 'replay export --help')`)},
		{[]string{"export", ds, "--table", "trades", "--out", missing}, cli.ExitError,
			q(`replay: export: create ` + missing + `: no such file or directory`)},
		{[]string{"export", "--table", "trades", "--out", "x.parquet"}, cli.ExitUsage, q(`replay: export: at least one DATASET is required (see 'replay export --help')`)},
		{[]string{"export", filepath.Join(dir, "nodata"), "--table", "trades", "--out", filepath.Join(dir, "o.csv")}, cli.ExitError, `replay: export: .*nodata.*`},
		{[]string{"run", "--from", "17611798830", ds}, cli.ExitUsage, `replay: --from: "17611798830": unix time must have 10 digits .* \(see 'replay run --help'\)`},
		{[]string{"books", "--at", "soon", ds}, cli.ExitUsage, `replay: --at: "soon": want RFC 3339.* \(see 'replay books --help'\)`},
		{[]string{"export", ds, "--table", "trades", "--instrument", "BTC", "--out", filepath.Join(dir, "none.csv")}, cli.ExitProblem,
			q(`replay: export: no instrument of the datasets matches --instrument BTC: nothing written`)},
		{[]string{"books", ds, "--instrument", "NOPE"}, cli.ExitProblem,
			q(`replay: books: no instrument of the datasets matches --instrument NOPE: nothing printed`)},
		{[]string{"backtest", ds, "--strategy", "noop", "--instrument", "NOPE", "--instrument", "BTC"}, cli.ExitProblem,
			q(`replay: backtest: no instrument of the datasets matches --instrument NOPE, BTC: nothing written`)},
		{[]string{"inspect"}, cli.ExitUsage, q(`replay: inspect: exactly one DATASET is required (see 'replay inspect --help')`)},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := execReplay(t, tc.args...)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code != tc.code || len(lines) != 1 || !regexp.MustCompile(`^`+tc.line+`$`).MatchString(lines[0]) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and the one line %s", code, stderr, tc.code, tc.line)
			}
			if strings.Contains(stderr, "Usage:") {
				t.Errorf("usage text printed")
			}
		})
	}
	// The filter that matched nothing left no file, temporary or not.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "exists.parquet" {
		t.Errorf("files left in %s: %v", dir, ents)
	}
	code, stdout, stderr := execReplay(t, "--version")
	if code != 0 || !regexp.MustCompile(`^replay \S+ \(revision \S+, .*go1\.[0-9]+.*\)\n$`).MatchString(stdout) || stderr != "" {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// -f is --force.
	if code, _, stderr := execReplay(t, "export", ds, "--table", "trades", "--format", "parquet", "-f", "--out", existing); code != 0 {
		t.Errorf("-f: exit %d: %s", code, stderr)
	}
}

// The test binary runs the real main when asked, so a test can watch the
// process end the way a user's shell sees it (signals, exit status).
func init() {
	if os.Getenv("TAPEDECK_REPLAY_MAIN") == "1" {
		main()
		os.Exit(0)
	}
}

// TestClosedStdoutPipe is `replay export … -o - | head -1`: the reader goes
// away after one line, and replay ends quietly with exit 0 instead of dying
// of SIGPIPE (141) or printing a write error.
func TestClosedStdoutPipe(t *testing.T) {
	ds := expSample(t, venue.Hyperliquid)
	cmd := exec.Command(os.Args[0], "export", ds, "--table", "depth", "--format", "csv", "-o", "-")
	cmd.Env = append(os.Environ(), "TAPEDECK_REPLAY_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "exchange_ts_ns,local_ts_ns,venue,instrument,") {
		t.Fatalf("first line %q, %v", line, err)
	}
	out.Close() // as head does after its line
	err = cmd.Wait()
	if err != nil || stderr.Len() != 0 {
		t.Fatalf("replay after the reader left: %v (state %v), stderr %q", err, cmd.ProcessState, stderr.String())
	}
}
