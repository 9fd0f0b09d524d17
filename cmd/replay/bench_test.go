package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/samplegen"
	"github.com/tapedeck/tapedeck/venue"
)

// benchDataset writes a small generated session (real ids and price grids).
func benchDataset(t *testing.T, v string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), v)
	opts := samplegen.Options{Seed: 1, Frames: 2000}
	m, err := samplegen.Manifest(v, opts)
	if err != nil {
		t.Fatal(err)
	}
	w, err := datasets.Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := samplegen.Generate(v, opts, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBenchFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		runs    int
	}{
		{"defaults", []string{"d"}, "", 3},
		{"runs", []string{"--runs", "7", "d"}, "", 7},
		{"no dataset", nil, "at least one DATASET", 0},
		{"zero runs", []string{"--runs", "0", "d"}, "--runs 0", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *benchOptions
			cmd := newBenchCmd(func(_ context.Context, o *benchOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Runs != tt.runs {
				t.Fatalf("Runs = %d, want %d", got.Runs, tt.runs)
			}
		})
	}
}

func TestBenchRun(t *testing.T) {
	pm, hl := benchDataset(t, venue.Polymarket), benchDataset(t, venue.Hyperliquid)
	code, out, errOut := execReplay(t, "bench", "--runs", "2", "--json", pm, hl)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Runs []struct {
			Frames uint64 `json:"frames"`
			Bytes  uint64 `json:"bytes"`
		} `json:"runs"`
		FramesPerSec float64 `json:"frames_per_sec"`
		NsPerFrame   float64 `json:"ns_per_frame"`
		Digest       string  `json:"digest"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Runs) != 2 || res.Runs[0].Frames != 4000 || res.Runs[0].Bytes == 0 ||
		res.FramesPerSec <= 0 || res.NsPerFrame <= 0 || res.Digest == "" {
		t.Fatalf("result = %+v", res)
	}
	// Piped: a TSV header and one row.
	code, out, errOut = execReplay(t, "bench", "--runs", "1", pm)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "frames\tbytes\truns\tframes_per_sec") ||
		!strings.HasPrefix(lines[1], "2000\t") {
		t.Fatalf("TSV output:\n%s", out)
	}
	// A missing dataset is an error naming it.
	code, _, errOut = execReplay(t, "bench", filepath.Join(t.TempDir(), "nope"))
	if code != 1 || !strings.Contains(errOut, "nope") {
		t.Fatalf("missing dataset: exit %d, %s", code, errOut)
	}
}

// TestBenchExamples runs the Example lines of replay bench on the shipped
// samples (or fixture datasets where the tree has none).
func TestBenchExamples(t *testing.T) { runExamples(t, newBenchCmd(nil).Example) }
