package datasets

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		childWriter() // the kill -9 test's writer process; never returns
	}
	code := m.Run()
	removeBenchData()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// realFrames returns the frames of testdata/real, in file then line order.
func realFrames(tb testing.TB) [][]byte {
	tb.Helper()
	out, err := loadFrames()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func loadFrames() ([][]byte, error) {
	files, err := filepath.Glob("testdata/real/*.ndjson")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no fixture frames: %v", err)
	}
	sort.Strings(files)
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if len(sc.Bytes()) > 0 {
				out = append(out, append([]byte(nil), sc.Bytes()...))
			}
		}
	}
	return out, nil
}

const baseWallNs = int64(1_764_000_000_000_000_000) // 2025-11-24, a plausible recording time

// genRecords makes n records cycling the real frames, with a connect record
// first and a control record every 500th, receive times stepping stepNs.
func genRecords(tb testing.TB, n int, stepNs int64) []Record {
	return makeRecords(realFrames(tb), n, stepNs)
}

func makeRecords(frames [][]byte, n int, stepNs int64) []Record {
	recs := make([]Record, n)
	rng := uint64(0x2545F4914F6CDD1D)
	for i := range recs {
		r := Record{Kind: KindFrame, Conn: uint32(i % 3), WallNs: baseWallNs + int64(i)*stepNs + int64(i%7), MonoNs: int64(i)*stepNs + 5}
		switch {
		case i == 0:
			r.Kind, r.Payload = KindConnect, EncodeControl(Control{URL: "wss://ws-subscriptions-clob.polymarket.com/ws/market"})
		case i%500 == 499:
			r.Kind, r.Payload = KindDisconnect, EncodeControl(Control{Code: 1006, Reason: "abnormal closure", FromNs: r.WallNs})
		default:
			r.Payload = perturb(frames[i%len(frames)], r.WallNs/1e6, &rng)
			if i%11 == 0 {
				r.Flags = FlagBinary
			}
		}
		recs[i] = r
	}
	return recs
}

// writeRecords creates a dataset in dir holding recs and closes it.
func writeRecords(tb testing.TB, dir string, recs []Record, opts ...WriterOption) {
	tb.Helper()
	w, err := Create(dir, Manifest{Venue: "polymarket", Endpoint: "wss://ws-subscriptions-clob.polymarket.com/ws/market"},
		append([]WriterOption{WithFlushInterval(0)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range recs {
		seq, err := w.Append(&recs[i])
		if err != nil || seq != uint64(i+1) {
			tb.Fatalf("append %d: seq %d, %v", i, seq, err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// readAll reads every record of the dataset in dir (copies), with the
// reader's final error and truncation.
func readAll(tb testing.TB, dir string, opts ...ReaderOption) ([]Record, error, *Truncation) {
	tb.Helper()
	r, err := Open(dir, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	var out []Record
	for r.Next() {
		rec := *r.Record()
		rec.Payload = append([]byte(nil), rec.Payload...)
		out = append(out, rec)
	}
	return out, r.Err(), r.Truncated()
}

// sameRecord compares everything but Seq, which the writer assigns.
func sameRecord(a, b *Record) bool {
	return a.Kind == b.Kind && a.Flags == b.Flags && a.Conn == b.Conn && a.WallNs == b.WallNs &&
		a.MonoNs == b.MonoNs && bytes.Equal(a.Payload, b.Payload)
}

func checkPrefix(tb testing.TB, got, want []Record) {
	tb.Helper()
	if len(got) > len(want) {
		tb.Fatalf("read %d records, wrote %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Seq != uint64(i+1) || !sameRecord(&got[i], &want[i]) {
			tb.Fatalf("record %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func segmentPaths(tb testing.TB, dir string) []string {
	tb.Helper()
	p, err := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(p)
	return p
}
