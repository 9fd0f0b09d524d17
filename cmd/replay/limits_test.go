package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// TestCraftedDatasetHitsTheBound is issue 13 item 9 through the verbs: a
// small crafted dataset spreading one real book frame over more connection
// slots than replayer.DefaultMaxConns (one decoder each, so memory grew with
// the slots) makes run, books and export stop with an error naming the
// dataset and the bound (exit 1), and export writes no file. The first
// DefaultMaxConns slots of the same dataset replay whole.
func TestCraftedDatasetHitsTheBound(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "replayer", "testdata", "polypy_hash_vector_ws_2025-10.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	frame := bytes.SplitN(data, []byte("\n"), 2)[0]
	write := func(slots int) string {
		dir := filepath.Join(t.TempDir(), "pm")
		w, err := datasets.Create(dir, datasets.Manifest{Venue: venue.Polymarket, Endpoint: "test", StartNs: fixtureBaseNs})
		if err != nil {
			t.Fatal(err)
		}
		for i := range slots {
			wall := fixtureBaseNs + int64(i)*int64(time.Microsecond)
			r := datasets.Record{Kind: datasets.KindFrame, Conn: uint32(i * 7), WallNs: wall, MonoNs: wall, Payload: frame}
			if _, err := w.Append(&r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	over := write(replayer.DefaultMaxConns + 1)
	out := filepath.Join(t.TempDir(), "trades.csv")
	for _, args := range [][]string{
		{"run", over},
		{"books", "--at", "end", over},
		{"export", over, "--table", "trades", "--out", out},
	} {
		code, _, errs := execReplay(t, args...)
		if code != cli.ExitError || !strings.Contains(errs, over) ||
			!strings.Contains(errs, fmt.Sprintf("more than %d connection slots", replayer.DefaultMaxConns)) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d naming the dataset and the bound", args[0], code, errs, cli.ExitError)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("export past the bound left %s (%v)", out, err)
	}
	within := write(replayer.DefaultMaxConns)
	if code, _, errs := execReplay(t, "run", within); code != cli.ExitOK {
		t.Errorf("run within the bound: exit %d, %s", code, errs)
	}
}

// TestReportAndInspectConnBound is issue 30 item 12: report and inspect
// enforced no bound on connection slots, and report drew every loss of no
// one slot on every slot's row (a 2.6 MB dataset: 6.8 GB of HTML, 817 MB from
// inspect). Past datasets.MaxConns slots both stop summarising and say so
// (exit 3, the bound named), and what they write stays proportional to the
// input: here about 4,200 records.
func TestReportAndInspectConnBound(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "replayer", "testdata", "polypy_hash_vector_ws_2025-10.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	frame := bytes.SplitN(data, []byte("\n"), 2)[0]
	dir := filepath.Join(t.TempDir(), "pm")
	w, err := datasets.Create(dir, datasets.Manifest{Venue: venue.Polymarket, Endpoint: "test", StartNs: fixtureBaseNs})
	if err != nil {
		t.Fatal(err)
	}
	wall := fixtureBaseNs
	add := func(r datasets.Record) {
		wall += int64(time.Microsecond)
		r.WallNs, r.MonoNs = wall, wall
		if _, err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	const losses = 400
	for i := range losses { // losses of no one slot, before the slots
		add(datasets.Record{Kind: datasets.KindGap, Conn: datasets.ConnAll,
			Payload: datasets.EncodeControl(datasets.Control{Reason: fmt.Sprint("crafted ", i)})})
	}
	for i := range datasets.MaxConns + 100 {
		add(datasets.Record{Kind: datasets.KindFrame, Conn: uint32(i), Payload: frame})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	bound := fmt.Sprintf("more than %d connection slots", datasets.MaxConns)
	code, out, errs := execReplay(t, "inspect", "--format", "json", dir)
	if code != cli.ExitProblem || !strings.Contains(out+errs, bound) {
		t.Errorf("inspect: exit %d, %s", code, errs)
	}
	if len(out) > 2<<20 {
		t.Errorf("inspect wrote %d bytes", len(out))
	}
	html := filepath.Join(t.TempDir(), "r.html")
	code, _, errs = execReplay(t, "report", dir, "--out", html)
	if code != cli.ExitProblem || !strings.Contains(errs, "connection slots") {
		t.Errorf("report: exit %d, %s", code, errs)
	}
	// One row per slot (bounded) with the session's losses marked once per
	// time bucket, not once per loss: 400 losses on 4,096 rows were 1.6 M
	// marks.
	if fi, err := os.Stat(html); err != nil || fi.Size() > 16<<20 {
		t.Errorf("report: %v, %d bytes", err, fi.Size())
	}
}
