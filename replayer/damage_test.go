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

// flipMiddleByte damages the block in the middle of a segment file.
func flipMiddleByte(t *testing.T, seg string) {
	t.Helper()
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunStepsOverCorruption flips a byte in the middle of a segment: the
// replay steps over the damaged block, delivers a gap record in its place
// (a loss for every connection) and every record after it, lists what was
// skipped, and returns ErrDamaged unless WithSkipDamaged(true).
func TestRunStepsOverCorruption(t *testing.T) {
	dir, seg := damagedDataset(t)
	flipMiddleByte(t, seg)
	for _, skip := range []bool{false, true} {
		r := newFakeReplayer(t, []string{dir}, WithSkipDamaged(skip))
		var frames, gaps uint64
		r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
			switch e.Kind {
			case datasets.KindFrame:
				frames++
			case datasets.KindGap:
				gaps++
			}
			return nil
		}))
		s, err := r.Run(context.Background())
		if skip != (err == nil) || (!skip && !errors.Is(err, ErrDamaged)) {
			t.Fatalf("skip %v: Run error %v", skip, err)
		}
		d := s.Damaged
		if d == nil || d.Stretches != 1 || !d.RecordsExact || d.Records == 0 || d.Bytes == 0 || d.FromNs == 0 || d.ToNs <= d.FromNs {
			t.Fatalf("damaged %+v", d)
		}
		if len(s.Datasets[0].Damage) != 1 || s.Datasets[0].Damage[0].File != seg {
			t.Fatalf("dataset damage %+v", s.Datasets[0].Damage)
		}
		// Nothing good is dropped: every frame but the lost ones is replayed.
		if s.Frames != 2000-d.Records || frames == 0 || gaps == 0 || s.Losses["gap"] != 1 {
			t.Fatalf("frames %d (delivered %d), lost %d, gap events %d, losses %v", s.Frames, frames, d.Records, gaps, s.Losses)
		}
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
	delete(m, "checksum") // edited by hand: no longer the writer's
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
