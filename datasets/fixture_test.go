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
// panic, and reading the same bytes whole or in halves must agree. Its
// seeds are small segments (fuzzSegments) and its inputs are bounded, so
// that an input and the minimising of a new one are quick: seeded with the
// 17 KB fixture segments it ran 18 inputs in 20 s.
func FuzzReader(f *testing.F) {
	for _, b := range fuzzSegments(f) {
		f.Add(b)
		f.Add(b[:len(b)/2])
		flipped := bytes.Clone(b)
		flipped[len(flipped)*2/3] ^= 1
		f.Add(flipped)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzSegment {
			return // block sizes are bounded by the file
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

// maxFuzzSegment bounds the segments the fuzz targets read.
const maxFuzzSegment = 16 << 10

// fuzzSegments returns small segments for fuzz seeds: a few short records
// of each kind in two blocks, compressed and raw, and the header of a
// fixture segment with its first block's header.
func fuzzSegments(f *testing.F) [][]byte {
	recs := []Record{
		{Kind: KindConnect, Conn: 1, WallNs: baseWallNs, MonoNs: 1, Payload: EncodeControl(Control{URL: "wss://x/ws"})},
		{Kind: KindFrame, Conn: 1, WallNs: baseWallNs + 1, MonoNs: 2, Payload: []byte(`{"event_type":"book","asset_id":"1","bids":[],"asks":[]}`)},
		{Kind: KindFrame, Conn: 1, Flags: FlagBinary, WallNs: baseWallNs + 2, MonoNs: 3, Payload: []byte{0, 1, 2}},
		{Kind: KindGap, Conn: 1, WallNs: baseWallNs + 3, MonoNs: 4, Payload: EncodeControl(Control{FromNs: baseWallNs, ToNs: baseWallNs + 3})},
		{Kind: KindFrame, Conn: 2, WallNs: baseWallNs + 4, MonoNs: 5, Payload: bytes.Repeat([]byte("PONG"), 300)},
	}
	var out [][]byte
	for _, compact := range []bool{true, false} {
		dir := filepath.Join(f.TempDir(), "ds")
		writeRecords(f, dir, recs, WithBlockSize(1<<10), WithCompaction(compact))
		b, err := os.ReadFile(filepath.Join(dir, segmentName(1)))
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	segs, _ := filepath.Glob(filepath.Join(fixtureDir, "*"+segmentExt))
	if len(segs) == 0 {
		f.Fatal("no seed segments in " + fixtureDir)
	}
	b, err := os.ReadFile(segs[0])
	if err != nil {
		f.Fatal(err)
	}
	return append(out, b[:segmentHeaderSize+blockHeaderSize+3])
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
