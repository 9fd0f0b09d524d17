package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/samplegen"
	"github.com/tapedeck/tapedeck/internal/testdisk"
	"github.com/tapedeck/tapedeck/replayer/export"
	"github.com/tapedeck/tapedeck/venue"
)

// An export onto a disk that is full stops at the first failed write — not
// at the end of the replay — with the sink's *export.WriteError (ENOSPC)
// reachable through the error, exits non-zero, and leaves neither --out nor
// its temporary file behind.
func TestExportDiskFullStopsAtOnce(t *testing.T) {
	// 40 minutes of generated Hyperliquid books: ~43 k depth rows, written
	// in batches of a few thousand at 100 levels a side.
	ds := filepath.Join(t.TempDir(), "hl")
	opts0 := samplegen.Options{Seed: 1, Duration: 40 * time.Minute}
	man, err := samplegen.Manifest(venue.Hyperliquid, opts0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := datasets.Create(ds, man)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := samplegen.Generate(venue.Hyperliquid, opts0, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	disk := testdisk.Small(t, "2m")
	testdisk.Fill(t, disk)
	out := filepath.Join(disk, "depth.csv")
	args := []string{"export", ds, "--table", "depth", "--levels", "100", "--format", "csv", "--out", out}

	var opts *exportOptions
	cmd := newExportCmd(func(o *exportOptions) error { opts = o; return nil })
	cmd.SetArgs(args[1:])
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	err = runExport(context.Background(), opts)
	var we *export.WriteError
	if !errors.As(err, &we) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("export: %v, want an *export.WriteError wrapping ENOSPC", err)
	}
	// It stopped where the first batch failed to write, well before the
	// last record.
	m := regexp.MustCompile(`stopped at dataset 0 seq (\d+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error does not say where it stopped: %v", err)
	}
	seq, _ := strconv.ParseUint(m[1], 10, 64)
	rd, err2 := datasets.Open(ds)
	if err2 != nil {
		t.Fatal(err2)
	}
	var last uint64
	for rd.Next() {
		last = rd.Record().Seq
	}
	rd.Close()
	if seq == 0 || seq >= last/2 {
		t.Errorf("stopped at seq %d of %d: not at once", seq, last)
	}
	assertOnlyFiller(t, disk)

	// The same through the CLI: a non-zero exit naming the failure.
	code, _, stderr := execReplay(t, args...)
	if code == cli.ExitOK || !regexp.MustCompile(`no space left on device`).MatchString(stderr) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	assertOnlyFiller(t, disk)
}

func assertOnlyFiller(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "filler" {
			t.Errorf("%s left behind on the full disk", e.Name())
		}
	}
}
