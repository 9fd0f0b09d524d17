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
