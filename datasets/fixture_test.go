package datasets

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

var regen = flag.Bool("regen", false, "rewrite testdata/v1 with this build's writer")

// fixtureRecords is what testdata/v1 holds.
func fixtureRecords(t testing.TB) []Record { return genRecords(t, 300, int64(time.Millisecond)) }

const fixtureDir = "testdata/v1"

// TestRegenerateFixture rewrites the version-1 fixture when run with -regen;
// otherwise it does nothing. The fixture pins that version-1 files written
// by this build stay readable by every later build.
func TestRegenerateFixture(t *testing.T) {
	if !*regen {
		t.Skip("run with -regen to rewrite " + fixtureDir)
	}
	if err := os.RemoveAll(fixtureDir); err != nil {
		t.Fatal(err)
	}
	w, err := Create(fixtureDir, Manifest{Venue: "polymarket", Endpoint: "wss://ws-subscriptions-clob.polymarket.com/ws/market",
		ToolVersion: "fixture", Notes: "frames from testdata/real, times generated; see testdata/PROVENANCE.md"},
		WithFlushInterval(0), WithBlockSize(8<<10), WithSegmentSize(16<<10), WithDictSize(8<<10))
	if err != nil {
		t.Fatal(err)
	}
	recs := fixtureRecords(t)
	for i := range recs {
		if _, err := w.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFixtureV1(t *testing.T) {
	recs := fixtureRecords(t)
	got, err, tr := readAll(t, fixtureDir, WithStrict())
	if err != nil || tr != nil || len(got) != len(recs) {
		t.Fatalf("%d records of %d: %v %v", len(got), len(recs), err, tr)
	}
	checkPrefix(t, got, recs)
	if n := len(segmentPaths(t, fixtureDir)); n < 2 {
		t.Fatalf("fixture has %d segments; want several", n)
	}
	vr, err := Verify(fixtureDir)
	// The fixture predates the manifest checksum: that is its one warning.
	if err != nil || !vr.OK() || len(vr.Warnings) != 1 || !strings.Contains(vr.Warnings[0].What, "no checksum member") {
		t.Fatalf("verify: %+v %v", vr, err)
	}
	m, err := ReadManifest(fixtureDir)
	if err != nil || m.FormatVersion != 1 || !m.Clean {
		t.Fatalf("manifest %+v %v", m, err)
	}
}

// FuzzReader feeds arbitrary bytes to the segment reader. It must never
// panic, and reading the same bytes whole or in halves must agree.
func FuzzReader(f *testing.F) {
	segs, _ := filepath.Glob(filepath.Join(fixtureDir, "*"+segmentExt))
	if len(segs) == 0 {
		f.Fatal("no seed segments in " + fixtureDir)
	}
	for _, p := range segs {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(b[:segmentHeaderSize+blockHeaderSize+3])
		flipped := bytes.Clone(b)
		flipped[len(flipped)*2/3] ^= 1
		f.Add(flipped)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<20 {
			return // the harness bounds memory; block sizes are bounded by the file
		}
		a, errA := readSegmentSized(bytes.NewReader(data), int64(len(data)))
		b, errB := readSegmentSized(iotest.HalfReader(bytes.NewReader(data)), -1)
		if fmt.Sprint(a) != fmt.Sprint(b) || (errA == nil) != (errB == nil) {
			t.Fatalf("whole: %d records, %v; halves: %d records, %v", len(a), errA, len(b), errB)
		}
		if errA != nil {
			if _, ok := errA.(*CorruptionError); !ok {
				t.Fatalf("damage reported as %T %v, not *CorruptionError", errA, errA)
			}
		}
	})
}

// readSegmentSized decodes a whole segment stream with the segment reader;
// size is the stream's length, or -1 when unknown.
func readSegmentSized(r io.Reader, size int64) ([]string, error) {
	var sr segmentReader
	defer sr.release()
	sr.reset(r, "seg", 0, size)
	if _, err := sr.readSegmentHeader(); err != nil {
		return nil, err
	}
	var out []string
	var rec Record
	for {
		err := sr.nextBlock()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		for sr.nextRecord(&rec) {
			out = append(out, fmt.Sprintf("%d/%d/%d/%d/%d/%d/%x", rec.Seq, rec.Kind, rec.Flags, rec.Conn, rec.WallNs, rec.MonoNs, rec.Payload))
		}
	}
}

// TestReaderMutations is FuzzReader's property over a fixed set of random
// mutations of the fixture segments (byte overwrites and cuts), so the
// property is exercised on every plain `go test`, not only under -fuzz.
func TestReaderMutations(t *testing.T) {
	segs, _ := filepath.Glob(filepath.Join(fixtureDir, "*"+segmentExt))
	n := 1500
	if testing.Short() || raceEnabled {
		n = 200
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < n; i++ {
		b, err := os.ReadFile(segs[i%len(segs)])
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 1+rng.Intn(4); k++ {
			b[rng.Intn(len(b))] = byte(rng.Intn(256))
		}
		if rng.Intn(3) == 0 {
			b = b[:rng.Intn(len(b))]
		}
		a, errA := readSegmentSized(bytes.NewReader(b), int64(len(b)))
		h, errH := readSegmentSized(iotest.HalfReader(bytes.NewReader(b)), -1)
		if fmt.Sprint(a) != fmt.Sprint(h) || (errA == nil) != (errH == nil) {
			t.Fatalf("mutation %d: whole %d records, %v; halves %d records, %v", i, len(a), errA, len(h), errH)
		}
		if _, ok := errA.(*CorruptionError); errA != nil && !ok {
			t.Fatalf("mutation %d: damage reported as %T %v", i, errA, errA)
		}
	}
}
