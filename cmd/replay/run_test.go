package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
	"go.uber.org/goleak"
)

// fixtureBaseNs is the receive time of the first fixture frame in a test
// dataset; frames follow 1 ms apart.
const fixtureBaseNs = int64(1_761_179_883_000_000_000)

// fixtureDataset writes the lines of replayer/testdata files as frames.
func fixtureDataset(t *testing.T, venueName string, files ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), venueName)
	w, err := datasets.Create(dir, datasets.Manifest{Venue: venueName, Endpoint: "test", StartNs: fixtureBaseNs})
	if err != nil {
		t.Fatal(err)
	}
	i := int64(0)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("..", "..", "replayer", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			wall := fixtureBaseNs + i*int64(time.Millisecond)
			if _, err := w.Append(&datasets.Record{Kind: datasets.KindFrame, WallNs: wall, MonoNs: wall, Payload: sc.Bytes()}); err != nil {
				t.Fatal(err)
			}
			i++
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// executeQuiet runs a verb command on args with its output discarded and
// cobra's own printing off, returning what Execute returns.
func executeQuiet(cmd *cobra.Command, args []string) error {
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.Execute()
}

// execReplay runs the replay command with args and returns the exit code,
// stdout and stderr.
func execReplay(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	code := cli.Main(root, args, &errb)
	return code, out.String(), errb.String()
}

func TestRunFlags(t *testing.T) {
	dir := fixtureDataset(t, venue.Polymarket, "polypy_hash_vector_ws_2025-10.ndjson")
	tests := []struct {
		name     string
		args     []string
		wantErr  string // "" = parses
		usage    bool   // a flag error
		from, to int64
		speed    replayer.Speed
	}{
		{name: "defaults", args: []string{dir}, speed: replayer.SpeedMax},
		{name: "relative", args: []string{"--from", "+1ms", "--to", "+2s", "--speed", "10x", dir},
			from: fixtureBaseNs + int64(time.Millisecond), to: fixtureBaseNs + 2*int64(time.Second), speed: 10},
		{name: "unix ms and ns", args: []string{"--from", "1761179883001", "--to", "1761179883002000000", dir},
			from: fixtureBaseNs + int64(time.Millisecond), to: fixtureBaseNs + 2*int64(time.Millisecond)},
		{name: "rfc3339", args: []string{"--from", "2025-10-23T00:38:03.5Z", dir}, from: time.Date(2025, 10, 23, 0, 38, 3, 5e8, time.UTC).UnixNano()},
		{name: "no dataset", args: nil, wantErr: "at least one DATASET", usage: true},
		{name: "bad speed", args: []string{"--speed", "fast", dir}, wantErr: "--speed", usage: true},
		{name: "11 digit time", args: []string{"--from", "17611798830", dir}, wantErr: "10 digits (s), 13 (ms), 16 (µs) or 19 (ns)", usage: true},
		{name: "to before from", args: []string{"--from", "+2s", "--to", "+1s", dir}, wantErr: "is not after --from", usage: true},
		{name: "bad duration", args: []string{"--to", "+soon", dir}, wantErr: "--to", usage: true},
		{name: "not a dataset", args: []string{"--from", "+1s", t.TempDir()}, wantErr: "read "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *runOptions
			cmd := newRunCmd(func(_ context.Context, o *runOptions) error { got = o; return nil })
			err := executeQuiet(cmd, tc.args)
			if tc.wantErr != "" {
				var fe *cli.FlagError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &fe) != tc.usage {
					t.Fatalf("error %v, want %q (flag error %v)", err, tc.wantErr, tc.usage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.FromNs != tc.from || got.ToNs != tc.to || got.Speed != tc.speed {
				t.Fatalf("from %d to %d speed %v; want %d %d %v", got.FromNs, got.ToNs, got.Speed, tc.from, tc.to, tc.speed)
			}
		})
	}
}

func TestRunJSONIsDeterministic(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := fixtureDataset(t, venue.Polymarket, "polypy_semisynthetic_stream_single_asset.ndjson")
	var digests []string
	for range 2 {
		code, out, errs := execReplay(t, "run", "--json", dir)
		if code != cli.ExitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var s replayer.Summary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		if s.Frames != 10 || s.DecodeErrors != 0 || s.Events["trade"] != 1 {
			t.Fatalf("summary %s", out)
		}
		digests = append(digests, s.Digest)
	}
	if digests[0] != digests[1] || digests[0] == "" {
		t.Fatalf("digests %q", digests)
	}
	code, out, _ := execReplay(t, "run", dir)
	if code != cli.ExitOK || !strings.Contains(out, "digest") || !strings.Contains(out, digests[0]) ||
		!strings.Contains(out, "trade 1") {
		t.Fatalf("human summary (exit %d):\n%s", code, out)
	}
}

func TestRunMissingDataset(t *testing.T) {
	code, _, errs := execReplay(t, "run", filepath.Join(t.TempDir(), "nope"))
	if code != cli.ExitError || !strings.Contains(errs, "nope") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// exampleDatasets maps the sample paths the examples name to datasets: the
// shipped samples when present, otherwise datasets built from the fixtures.
func exampleDatasets(t *testing.T) map[string]string {
	m := map[string]string{}
	for v, files := range map[string][]string{
		venue.Polymarket:  {"polypy_semisynthetic_stream_single_asset.ndjson"},
		venue.Hyperliquid: {"order_book_server_ack_l2book_trades_2025-07.ndjson"},
	} {
		name := "datasets/samples/" + v
		shipped := filepath.Join("..", "..", name)
		if _, err := datasets.ReadManifest(shipped); err == nil {
			m[name] = shipped
		} else {
			m[name] = fixtureDataset(t, v, files...)
		}
	}
	return m
}

// runExamples runs every "$ replay …" line of a command's Example text.
func runExamples(t *testing.T, example string) {
	t.Helper()
	paths := exampleDatasets(t)
	n := 0
	for _, line := range strings.Split(example, "\n") {
		line = strings.TrimSpace(line)
		cmdline, ok := strings.CutPrefix(line, "$ replay ")
		if !ok {
			continue
		}
		args := strings.Fields(cmdline) // the examples quote nothing
		for i, a := range args {
			if p, ok := paths[a]; ok {
				args[i] = p
			}
		}
		code, out, errs := execReplay(t, args...)
		if code != cli.ExitOK || out == "" {
			t.Errorf("example %q: exit %d, stdout %q, stderr %q", line, code, out, errs)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no examples found")
	}
}

func TestRunExamples(t *testing.T) { runExamples(t, newRunCmd(nil).Example) }

// Rejected frames and REST bodies are printed in the text summary and make
// `replay run` exit 3 unless --allow-rejects.
func TestRunReportsRejects(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "replayer", "testdata", "polypy_hash_vector_ws_2025-10.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	good := bytes.SplitN(data, []byte("\n"), 2)[0]
	dir := filepath.Join(t.TempDir(), "pm")
	w, err := datasets.Create(dir, datasets.Manifest{Venue: venue.Polymarket, Endpoint: "test", StartNs: fixtureBaseNs})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []datasets.Record{
		{Kind: datasets.KindFrame, Payload: good},
		{Kind: datasets.KindFrame, Payload: bytes.Replace(good, []byte(`"bids":[`), []byte(`"bids":[{"price":"7","size":"1"},`), 1)},
		{Kind: datasets.KindRESTResponse, Payload: []byte(`[{"asset_id":"55","market":"0x1","bids":[{"price":"0.5","size":"buy"}],"asks":[]}]`)},
	} {
		r.WallNs = fixtureBaseNs + int64(i)*int64(time.Millisecond)
		r.MonoNs = r.WallNs
		if _, err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := execReplay(t, "run", dir)
	if code != cli.ExitProblem {
		t.Fatalf("exit %d, want %d; stderr %s", code, cli.ExitProblem, stderr)
	}
	for _, want := range []string{"bids[0].price", "not in (0, 1]", "REST bodies rejected", "asset 55", "2 messages; 1 book invalidations"} {
		if !strings.Contains(out, want) {
			t.Fatalf("summary lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "--allow-rejects") {
		t.Fatalf("stderr %q", stderr)
	}
	if code, _, stderr := execReplay(t, "run", "--allow-rejects", dir); code != cli.ExitOK {
		t.Fatalf("--allow-rejects: exit %d %s", code, stderr)
	}
}

// `replay inspect` counts the REST bodies the decoder rejects.
func TestInspectCountsRejectedREST(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pm")
	w, err := datasets.Create(dir, datasets.Manifest{Venue: venue.Polymarket, Endpoint: "test", StartNs: fixtureBaseNs})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := os.ReadFile(filepath.Join("..", "..", "replayer", "testdata", "nautilus_rest_book_empty_ltp_2026-08.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range [][]byte{bytes.TrimSpace(empty), []byte(`[{"asset_id":"55","bids":[{"price":"0.5","size":"1"}],"asks":[{"price":"0.5","size":"1"},{"price":"0.5","size":"2"}]}]`)} {
		r := datasets.Record{Kind: datasets.KindRESTResponse, WallNs: fixtureBaseNs + int64(i), MonoNs: int64(i), Payload: body}
		if _, err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := execReplay(t, "inspect", "--json", dir)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		Records uint64 `json:"records"`
		REST    struct {
			Bodies, Rejected uint64
			FirstErrors      []struct{ Error string } `json:"first_errors"`
		} `json:"rest"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Records != 2 || got.REST.Bodies != 2 || got.REST.Rejected != 1 || len(got.REST.FirstErrors) != 1 ||
		!strings.Contains(got.REST.FirstErrors[0].Error, "asset 55") {
		t.Fatalf("inspect: %s", out)
	}
	code, out, _ = execReplay(t, "inspect", "--format", "table", dir)
	if code != cli.ExitOK || !strings.Contains(out, "2, 1 rejected by the decoder") {
		t.Fatalf("table: %s", out)
	}
}
