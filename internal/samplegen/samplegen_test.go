package samplegen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// memAppender keeps copies of appended records.
type memAppender struct{ recs []datasets.Record }

func (m *memAppender) Append(r *datasets.Record) (uint64, error) {
	c := *r
	c.Payload = append([]byte(nil), r.Payload...)
	c.Seq = uint64(len(m.recs) + 1)
	m.recs = append(m.recs, c)
	return c.Seq, nil
}

// orderChecker keeps nothing but checks receive order and counts
// disconnects, for sessions too long to hold.
type orderChecker struct {
	n           int64
	disconnects int
	lastNs      int64
	err         error
}

func (d *orderChecker) Append(r *datasets.Record) (uint64, error) {
	if r.WallNs < d.lastNs && d.err == nil {
		d.err = fmt.Errorf("record %d: wall time %d before %d", d.n, r.WallNs, d.lastNs)
	}
	d.lastNs = r.WallNs
	if r.Kind == datasets.KindDisconnect {
		d.disconnects++
	}
	d.n++
	return uint64(d.n), nil
}

// venues are those with a generator: every shipped one.
var venues = Venues()

var shippedCache sync.Map // venue → []datasets.Record

// shipped returns the session of the shipped samples, generated once per
// test binary (read-only for callers).
func shipped(t testing.TB, venue string) []datasets.Record {
	if recs, ok := shippedCache.Load(venue); ok {
		return recs.([]datasets.Record)
	}
	recs := generate(t, venue, Options{Seed: ShippedSeed})
	shippedCache.Store(venue, recs)
	return recs
}

func generate(t testing.TB, venue string, opts Options) []datasets.Record {
	t.Helper()
	var m memAppender
	sum, err := Generate(venue, opts, &m)
	if err != nil {
		t.Fatalf("Generate(%s): %v", venue, err)
	}
	if sum.Records != int64(len(m.recs)) {
		t.Fatalf("Summary.Records = %d, appended %d", sum.Records, len(m.recs))
	}
	return m.recs
}

func TestDeterministic(t *testing.T) {
	for _, v := range venues {
		t.Run(v, func(t *testing.T) {
			opts := Options{Seed: 7, Duration: 90 * time.Second}
			a := generate(t, v, opts)
			b := generate(t, v, opts)
			if len(a) != len(b) {
				t.Fatalf("record counts differ: %d vs %d", len(a), len(b))
			}
			for i := range a {
				if a[i].Kind != b[i].Kind || a[i].WallNs != b[i].WallNs || a[i].MonoNs != b[i].MonoNs ||
					!bytes.Equal(a[i].Payload, b[i].Payload) {
					t.Fatalf("record %d differs between two runs", i)
				}
			}
			c := generate(t, v, Options{Seed: 8, Duration: 90 * time.Second})
			same := len(a) == len(c)
			for i := 0; same && i < len(a); i++ {
				same = bytes.Equal(a[i].Payload, c[i].Payload) && a[i].WallNs == c[i].WallNs
			}
			if same {
				t.Fatal("seeds 7 and 8 gave the same session")
			}
		})
	}
}

// TestSessionShape checks what every consumer relies on: receive order, the
// monotonic base, the record kinds of a session, JSON frames.
func TestSessionShape(t *testing.T) {
	for _, v := range venues {
		t.Run(v, func(t *testing.T) {
			recs := shipped(t, v)
			start := Options{}.WallStart()
			kinds := map[datasets.Kind]int{}
			var last int64
			for i, r := range recs {
				kinds[r.Kind]++
				if r.WallNs < last {
					t.Fatalf("record %d: wall time goes back %d → %d", i, last, r.WallNs)
				}
				last = r.WallNs
				if r.MonoNs != r.WallNs-start {
					t.Fatalf("record %d: mono %d, want wall-start %d", i, r.MonoNs, r.WallNs-start)
				}
				if r.Kind == datasets.KindFrame && !json.Valid(r.Payload) && string(r.Payload) != "PONG" {
					t.Fatalf("record %d: frame is not JSON: %.200s", i, r.Payload)
				}
				if r.Kind != datasets.KindFrame && r.Kind != datasets.KindSent {
					if _, err := datasets.DecodeControl(r.Payload); err != nil {
						t.Fatalf("record %d (%s): %v", i, r.Kind, err)
					}
				}
			}
			if end := recs[len(recs)-1].WallNs; end != start+int64(DefaultDuration) {
				t.Errorf("session ends at +%v, want +%v", time.Duration(end-start), DefaultDuration)
			}
			for _, k := range []datasets.Kind{datasets.KindConnect, datasets.KindSent, datasets.KindSubscribed,
				datasets.KindFrame, datasets.KindDisconnect, datasets.KindReconnect, datasets.KindCleanClose} {
				if kinds[k] == 0 {
					t.Errorf("no %s record", k)
				}
			}
			if kinds[datasets.KindDisconnect] != 1 || kinds[datasets.KindReconnect] != 1 {
				t.Errorf("disconnects %d, reconnects %d; want one of each in ten minutes",
					kinds[datasets.KindDisconnect], kinds[datasets.KindReconnect])
			}
			if kinds[datasets.KindFrame] < 5000 {
				t.Errorf("only %d frames in ten minutes", kinds[datasets.KindFrame])
			}
		})
	}
}

func TestFramesBudget(t *testing.T) {
	for _, v := range venues {
		t.Run(v, func(t *testing.T) {
			// Every size is a valid dataset: receive times never go
			// backwards, the closing records included (replay verify).
			for _, frames := range []int64{2500, 2501, 2502, 7919} {
				recs := generate(t, v, Options{Seed: 3, Frames: frames})
				n := int64(0)
				for i, r := range recs {
					if r.Kind == datasets.KindFrame {
						n++
					}
					if i > 0 && (r.WallNs < recs[i-1].WallNs || r.MonoNs < recs[i-1].MonoNs) {
						t.Fatalf("--frames %d: record %d (%s) at %d after %d", frames, i, r.Kind, r.WallNs, recs[i-1].WallNs)
					}
				}
				if n != frames {
					t.Fatalf("%d frames, want %d", n, frames)
				}
				if recs[len(recs)-1].Kind != datasets.KindCleanClose {
					t.Fatalf("last record is %s, want clean_close", recs[len(recs)-1].Kind)
				}
			}
		})
	}
}

// TestLongSessionStreams runs a session twice the default through a sink
// that keeps nothing: it must stay in receive order past its second
// disconnect.
func TestLongSessionStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("long session")
	}
	var d orderChecker
	sum, err := Generate("hyperliquid", Options{Seed: 2, Duration: 20 * time.Minute, FastHashes: true}, &d)
	if err != nil {
		t.Fatal(err)
	}
	if d.err != nil {
		t.Fatal(d.err)
	}
	if sum.Frames < 20000 || d.disconnects != 2 {
		t.Fatalf("%d frames and %d disconnects in 20 minutes", sum.Frames, d.disconnects)
	}
}

func TestInstruments(t *testing.T) {
	recs := generate(t, "hyperliquid", Options{Seed: 1, Duration: 20 * time.Second, Instruments: []string{"HYPE"}})
	for _, r := range recs {
		if r.Kind == datasets.KindFrame && (bytes.Contains(r.Payload, []byte(`"coin":"BTC"`)) ||
			bytes.Contains(r.Payload, []byte(`"coin":"DYDX"`))) {
			t.Fatalf("frame of an unselected coin: %.120s", r.Payload)
		}
	}
	pm := Instruments("polymarket")
	recs = generate(t, "polymarket", Options{Seed: 1, Duration: 20 * time.Second, Instruments: []string{pm[4]}})
	for _, r := range recs {
		if r.Kind == datasets.KindFrame && bytes.Contains(r.Payload, []byte(pm[0])) {
			t.Fatalf("frame of an unselected market: %.120s", r.Payload)
		}
	}
	for _, v := range venues {
		if _, err := Generate(v, Options{Instruments: []string{"NOPE"}}, &memAppender{}); !errors.Is(err, ErrInstrument) {
			t.Errorf("%s: unknown instrument: err = %v, want ErrInstrument", v, err)
		}
	}
	if _, err := Generate("no-such-venue", Options{}, &memAppender{}); !errors.Is(err, ErrVenue) {
		t.Errorf("unknown venue: err = %v, want ErrVenue", err)
	}
	if _, err := Manifest("no-such-venue", Options{}); !errors.Is(err, ErrVenue) {
		t.Errorf("Manifest of unknown venue: err = %v, want ErrVenue", err)
	}
}

func TestManifest(t *testing.T) {
	for _, v := range venues {
		m, err := Manifest(v, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		// The generator lives beside the driver and cannot import it: the
		// endpoint it records is the driver's.
		if drv, _ := registry.Lookup(v); m.Endpoint != drv.Endpoints().WebSocket {
			t.Errorf("%s: the generator records endpoint %s, the driver's is %s", v, m.Endpoint, drv.Endpoints().WebSocket)
		}
		if m.Venue != v || m.Endpoint == "" || len(m.Instruments) == 0 || m.Notes == "" ||
			m.MonoBaseWallNs != m.StartNs || m.StartNs == 0 {
			t.Errorf("%s: incomplete manifest %+v", v, m)
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, v := range venues {
		for _, fast := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/fastHashes=%v", v, fast), func(b *testing.B) {
				var bytes int64
				for i := 0; i < b.N; i++ {
					var d nullAppender
					sum, err := Generate(v, Options{Seed: uint64(i), Frames: 20000, FastHashes: fast}, &d)
					if err != nil {
						b.Fatal(err)
					}
					bytes += sum.Bytes
				}
				b.SetBytes(bytes / int64(b.N))
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(20000*b.N), "ns/frame")
			})
		}
	}
}

type nullAppender struct{}

func (nullAppender) Append(*datasets.Record) (uint64, error) { return 1, nil }

// TestShippedSamples checks the samples in datasets/samples against a fresh
// generation and recording, comparing decoded records (never compressed
// bytes: zstd output may change between releases) and manifests. On
// failure, regenerate them with `make samples` and review the diff.
//
// The shipped samples are the seed-1 session recorded by the real recorder
// (Record): the venue's frames and their receive times are a fresh
// generation's, byte for byte; every record, the recorder's own included,
// is a fresh recording's (not with -short); and they hold what a capture
// with one disconnect writes.
func TestShippedSamples(t *testing.T) {
	for _, v := range venues {
		t.Run(v, func(t *testing.T) {
			dir := filepath.Join("..", "..", "datasets", "samples", v)
			r, err := datasets.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			opts := Options{Seed: ShippedSeed}
			_, isPong := beats(t, v)
			var want []datasets.Record
			for _, w := range shipped(t, v) {
				if w.Kind == datasets.KindFrame && !isPong(w.Payload) {
					want = append(want, w)
				}
			}
			i := 0
			kinds := map[datasets.Kind]int{}
			for r.Next() {
				got := r.Record()
				kinds[got.Kind]++
				if got.Kind != datasets.KindFrame || isPong(got.Payload) {
					continue // the pongs answer the recorder's pings (TestRecordIsARealCapture)
				}
				if i >= len(want) {
					t.Fatalf("the shipped sample has more than the %d generated frames", len(want))
				}
				w := want[i]
				if got.Flags != w.Flags || got.Conn != 1 || got.WallNs != w.WallNs || got.MonoNs != w.MonoNs || !bytes.Equal(got.Payload, w.Payload) {
					t.Fatalf("frame %d differs from a fresh generation", i)
				}
				i++
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if i != len(want) {
				t.Fatalf("the shipped sample has %d frames, generation %d", i, len(want))
			}
			if kinds[datasets.KindConnect] != 2 || kinds[datasets.KindDisconnect] != 1 || kinds[datasets.KindReconnect] != 1 ||
				kinds[datasets.KindCleanClose] != 2 || kinds[datasets.KindSent] == 0 || kinds[datasets.KindSubscribed] == 0 ||
				kinds[datasets.KindRESTResponse] != kinds[datasets.KindNote] { // a note names each REST request (a venue may make none)
				t.Errorf("records by kind %v: not what a capture with one disconnect writes", kinds)
			}
			for k := range kinds {
				switch k {
				case datasets.KindFrame, datasets.KindSent, datasets.KindSubscribed, datasets.KindConnect, datasets.KindDisconnect,
					datasets.KindReconnect, datasets.KindCleanClose, datasets.KindRESTResponse, datasets.KindNote:
				default:
					t.Errorf("%d %s records: a loss or a live finding the session does not have", kinds[k], k)
				}
			}
			m, _ := Manifest(v, opts)
			got := r.Manifest()
			if got.Venue != m.Venue || got.Endpoint != m.Endpoint || got.Notes != m.Notes+RecordedNote || got.Source != m.Source ||
				got.MonoBaseWallNs != m.MonoBaseWallNs || !got.Clean || fmt.Sprint(got.Instruments) != fmt.Sprint(slices.Sorted(slices.Values(m.Instruments))) ||
				!strings.HasPrefix(got.ToolVersion, "tapedeck capture") {
				t.Errorf("manifest %+v\nwant     %+v", got, m)
			}
			if !testing.Short() {
				fresh := filepath.Join(t.TempDir(), v)
				if _, err := Record(context.Background(), v, opts, fresh); err != nil {
					t.Fatal(err)
				}
				rec, ship := readRecords(t, fresh), readRecords(t, dir)
				for i := range min(len(rec), len(ship)) {
					if a, b := rec[i], ship[i]; a.Kind != b.Kind || a.Flags != b.Flags || a.Conn != b.Conn || a.Seq != b.Seq ||
						a.WallNs != b.WallNs || a.MonoNs != b.MonoNs || !bytes.Equal(a.Payload, b.Payload) {
						t.Fatalf("record %d differs from a fresh recording:\n%s %d %.120s\nfresh %s %d %.120s", i,
							b.Kind, b.WallNs, b.Payload, a.Kind, a.WallNs, a.Payload)
					}
				}
				if len(rec) != len(ship) {
					t.Fatalf("the shipped sample has %d records, a fresh recording %d", len(ship), len(rec))
				}
				fm, err := datasets.ReadManifest(fresh)
				if err != nil {
					t.Fatal(err)
				}
				if sm := r.Manifest(); !reflect.DeepEqual(fm, sm) {
					t.Errorf("manifest %+v\nfresh    %+v", sm, fm)
				}
			}
			rep, err := datasets.Verify(dir)
			if err != nil || !rep.OK() || len(rep.Warnings) != 0 {
				t.Errorf("verify: %v, problems %v, warnings %v", err, rep.Problems, rep.Warnings)
			}
			var size int64
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				fi, _ := e.Info()
				size += fi.Size()
			}
			if size >= 1e6 {
				t.Errorf("the sample takes %d bytes on disk; keep it under 1 MB", size)
			}
		})
	}
}
