package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// TestCLIErrors is the error table of the capture command: one line on
// stderr, never the usage text; usage errors exit 2 and point at --help.
func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := regexp.QuoteMeta
	tests := []struct {
		args []string
		code int
		line string
	}{
		{[]string{"record"}, cli.ExitUsage, q(`capture: unknown command "record" for "capture" (see 'capture --help')`)},
		{[]string{"run", "--venue", "polymarket", "--bogus"}, cli.ExitUsage, q(`capture: unknown flag: --bogus (see 'capture run --help')`)},
		{[]string{"run", "--venue", "no-such-venue", "--instruments", "X", "--out", filepath.Join(dir, "o")}, cli.ExitUsage,
			q(`capture: --venue must be ` + registry.Choice() + `, not "no-such-venue" (see 'capture run --help')`)},
		{[]string{"run", "extra", "--venue", "polymarket"}, cli.ExitUsage, `capture: unknown command "extra" for "capture run" \(see 'capture run --help'\)`},
		{[]string{"import", "--venue", "polymarket", "--format", "ndjson", "--start", "17611798830", in, "--out", filepath.Join(dir, "imp")}, cli.ExitUsage,
			`capture: --start: "17611798830": unix time must have 10 digits .* \(see 'capture import --help'\)`},
		{[]string{"import", "--venue", "polymarket", "--format", "ndjson", "--start", "+5s", in, "--out", filepath.Join(dir, "imp")}, cli.ExitUsage,
			`capture: --start: "\+5s": a \+DURATION needs a recording to start from; give an absolute time \(see 'capture import --help'\)`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := capExec(context.Background(), tc.args...)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code != tc.code || len(lines) != 1 || !regexp.MustCompile(`^`+tc.line+`$`).MatchString(lines[0]) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and the one line %s", code, stderr, tc.code, tc.line)
			}
		})
	}
	code, stdout, _ := capExec(context.Background(), "--version")
	if code != 0 || !strings.HasPrefix(stdout, "capture ") || !strings.Contains(stdout, "revision") {
		t.Errorf("--version: %d %q", code, stdout)
	}
	_, help, _ := capExec(context.Background(), "run", "--help")
	if strings.Contains(help, "-1ns") || !strings.Contains(help, "--instrument-stall-timeout") {
		t.Errorf("run --help shows a sentinel default:\n%s", help)
	}
	// The --venue help of the verbs that take one lists the registry's
	// venues, whatever they are.
	for _, verb := range []string{"run", "import"} {
		_, help, _ := capExec(context.Background(), verb, "--help")
		if !strings.Contains(help, registry.Choice()+" (required)") {
			t.Errorf("%s --help does not list the venues %s:\n%s", verb, registry.Choice(), help)
		}
	}
}

// TestImportStartMatchesReplay: capture import --start reads the same
// 13-digit number as replay --from does, milliseconds (it used to put the
// records in 1970 as nanoseconds).
func TestImportStartMatchesReplay(t *testing.T) {
	var got int64
	cmd := newImportCmd(func(o *importOptions) error { got = o.StartNs; return nil })
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	os.WriteFile(in, []byte("{}\n"), 0o644)
	cmd.SetArgs([]string{"--venue", "polymarket", "--format", "ndjson", "--start", "1761179883001", in, "--out", filepath.Join(dir, "o")})
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if want, _ := cli.ParseTime("2025-10-23T00:38:03.001Z", 0, false); got != want {
		t.Fatalf("--start 1761179883001 is %d ns, want %d (%s)", got, want, time.Unix(0, want).UTC())
	}
}

// TestConfigKeysAreTheFlags: every flag of capture run is a --config key
// (the queue, rotate_size, log_format, instrument_stall_timeout
// among them), and capture plan accepts run's config.
func TestConfigKeysAreTheFlags(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]any{}
	newRunCmd(nil).Flags().VisitAll(func(f *pflag.Flag) {
		k := cli.ConfigKey(f.Name)
		switch f.Name {
		case "config", "help":
			return
		case "venue":
			cfg[k] = "hyperliquid"
		case "instruments":
			cfg[k] = []string{"BTC"}
		case "out":
			cfg[k] = filepath.Join(dir, "out")
		case "instruments-file", "assets-per-conn", "endpoint", "rest-endpoint", "clob-endpoint", "metrics-addr", "all-markets", "channels":
			return // each conflicts with the others or needs a server; covered by TestRunFlags
		default:
			// The flag's own default, as text: what the command line takes.
			cfg[k] = f.Value.String()
		}
	})
	cfg["queue"] = 77
	cfg["rotate_size"] = 12345678
	cfg["log_format"] = "json"
	cfg["instrument_stall_timeout"] = "3s"
	b, _ := json.Marshal(cfg)
	p := filepath.Join(dir, "c.json")
	os.WriteFile(p, b, 0o644)
	var got *runOptions
	run := newRunCmd(func(o *runOptions) error { got = o; return nil })
	run.SetArgs([]string{"--config", p})
	run.SetOut(&strings.Builder{})
	run.SetErr(&strings.Builder{})
	if err := run.Execute(); err != nil {
		t.Fatalf("config %s: %v", b, err)
	}
	if d, ok := got.InstStall.Get(); got.Queue != 77 || got.RotateSize != 12345678 || got.LogFormat != "json" || !ok || d != 3*time.Second {
		t.Errorf("config not applied: %+v", got)
	}
	plan := newPlanCmd(func(*planOptions) error { return nil })
	plan.SetArgs([]string{"--config", p})
	plan.SetOut(&strings.Builder{})
	plan.SetErr(&strings.Builder{})
	if err := plan.Execute(); err != nil {
		t.Fatalf("plan with run's config: %v", err)
	}
}
