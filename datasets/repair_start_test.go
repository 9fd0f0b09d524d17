package datasets

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRepairedCrashVerifies: a writer killed after its last flush leaves
// the manifest it wrote at creation, whose start is the writer's (a few ms
// before the first record) and which has no end. Repair closes it from the
// records, and the result verifies (issue 30, findings 2 and 9: every
// crash-recovered capture failed verify after repair).
func TestRepairedCrashVerifies(t *testing.T) {
	recs := genRecords(t, 3000, int64(time.Millisecond))
	for _, tc := range []struct {
		name string
		tear bool // the kill also tore the last block
	}{{"after a flush", false}, {"mid-block", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ds")
			writeRecords(t, dir, recs, WithBlockSize(16<<10))
			m, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			// What the writer had on disk before its Close: Create's
			// manifest, started 7 ms before the first record.
			m.Clean, m.EndNs, m.StartNs = false, 0, recs[0].WallNs-7_000_000
			if err := writeManifest(dir, m); err != nil {
				t.Fatal(err)
			}
			if tc.tear {
				tearTail(t, segmentPaths(t, dir)[0], 100)
			}
			rep, err := Repair(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Recovered || rep.StartNs != recs[0].WallNs {
				t.Errorf("repair: recovered %v, start %d, want the first record's %d", rep.Recovered, rep.StartNs, recs[0].WallNs)
			}
			vr, err := Verify(dir)
			if err != nil || !vr.OK() {
				t.Fatalf("verify after repair: %v %+v", err, vr.Problems)
			}
		})
	}
}

// tearTail cuts n bytes off the end of the file at p, as a kill in the
// middle of a block's write leaves it.
func tearTail(t *testing.T, p string, n int64) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, fi.Size()-n); err != nil {
		t.Fatal(err)
	}
}
