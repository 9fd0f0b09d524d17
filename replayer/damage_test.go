package replayer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
)

// damagedDataset writes 2,000 fake frames in small blocks and returns the
// directory and its only segment file.
func damagedDataset(t *testing.T) (dir, seg string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "ds")
	w, err := datasets.Create(dir, datasets.Manifest{Venue: "fakevenue", Endpoint: "test"},
		datasets.WithBlockSize(4096), datasets.WithFlushInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		p := fmt.Sprintf("snap a %d 1 %d 1", 100+i%50, 200+i%50)
		if _, err := w.Append(&datasets.Record{Kind: datasets.KindFrame, WallNs: int64(i + 1), MonoNs: int64(i + 1), Payload: []byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	return dir, segs[0]
}

// TestRunStopsAtCorruption flips a byte in the middle of a segment: the
// replay delivers what precedes the damage, then stops with an error that
// names the file and offset, and with the summary so far.
func TestRunStopsAtCorruption(t *testing.T) {
	dir, seg := damagedDataset(t)
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := newFakeReplayer(t, []string{dir})
	var delivered uint64
	r.Subscribe(Key{}, SubscriberFunc(func(*Event) error { delivered++; return nil }))
	s, err := r.Run(context.Background())
	var ce *datasets.CorruptionError
	if !errors.As(err, &ce) || ce.File != seg {
		t.Fatalf("Run error %v, want a *datasets.CorruptionError in %s", err, seg)
	}
	if s == nil || s.Frames == 0 || s.Frames >= 2000 || delivered != s.Frames {
		t.Fatalf("frames %d, delivered %d: want the records before the damage", s.Frames, delivered)
	}
}

// TestRunReportsTornTail cuts the end off the segment of a dataset whose
// writer did not close cleanly: the replay ends at the last whole block and
// the summary says what was cut.
func TestRunReportsTornTail(t *testing.T) {
	dir, seg := damagedDataset(t)
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, fi.Size()-100); err != nil {
		t.Fatal(err)
	}
	// Mark the dataset as not cleanly closed, as after a crash.
	mpath := filepath.Join(dir, datasets.ManifestName)
	raw, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "clean")
	delete(m, "end_ns")
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(mpath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	r := newFakeReplayer(t, []string{dir})
	s, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Frames == 0 || s.Frames >= 2000 || s.Datasets[0].Truncated == "" {
		t.Fatalf("frames %d, truncated %q", s.Frames, s.Datasets[0].Truncated)
	}
}
