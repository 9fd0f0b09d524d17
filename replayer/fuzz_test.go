package replayer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// memRig is a Replayer driven through process() without datasets on disk.
func memRig(venueName string) *Replayer {
	d, err := venueDriver(venueName)
	if err != nil {
		panic(err)
	}
	r := &Replayer{paths: []string{"mem"}, manifests: []datasets.Manifest{{Venue: venueName}}, drivers: []venue.Driver{d}, opts: defaults()}
	r.clock = newClock(SpeedMax, nil, true)
	r.run.eng = r.newEngine()
	r.started.Store(true)
	return r
}

// FuzzDispatch feeds arbitrary frames (one per line) and loss records through
// the real venue decoders and the engine. Nothing may panic, and two paths
// must agree: a replay with a subscriber and one without give one digest,
// and the subscriber sees exactly the events the summary counts.
func FuzzDispatch(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.ndjson")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		v := byte(0)
		if bytes.Contains(data, []byte(`"channel"`)) {
			v = 1
		}
		// Seeds of consecutive frames under 2 KiB, at most 4 KiB each: an
		// input and the minimising of a new one stay quick.
		var seed []byte
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			if len(line) > 2<<10 {
				continue
			}
			if len(seed)+len(line) > 4<<10 {
				f.Add(v, seed)
				seed = nil
			}
			seed = append(seed, line...)
		}
		f.Add(v, seed)
	}
	f.Fuzz(func(t *testing.T, v byte, data []byte) {
		if len(data) > 16<<10 {
			return
		}
		venueName := venue.Polymarket
		if v&1 == 1 {
			venueName = venue.Hyperliquid
		}
		var digests [2]string
		for pass := range 2 {
			r := memRig(venueName)
			var seen uint64
			if pass == 0 {
				r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
					if e.Kind == datasets.KindFrame {
						seen++
					}
					return nil
				}))
			}
			for i, line := range bytes.Split(data, []byte("\n")) {
				rec := datasets.Record{Kind: datasets.KindFrame, Conn: uint32(v >> 1 & 1), Seq: uint64(i + 1), WallNs: int64(i), Payload: line}
				if len(line) == 1 { // a one-byte line stands for a gap
					rec.Kind, rec.Payload = datasets.KindGap, nil
				}
				if err := r.run.eng.Process(0, &rec, true); err != nil {
					t.Fatal(err)
				}
			}
			r.run.eng.FlushAll()
			var total uint64
			for _, n := range r.run.eng.Counts.Events {
				total += n
			}
			if pass == 0 && seen != total {
				t.Fatalf("subscriber saw %d frame events, summary counts %d", seen, total)
			}
			digests[pass] = r.run.eng.Digest()
		}
		if digests[0] != digests[1] {
			t.Fatalf("digest with a subscriber %s, without %s", digests[0], digests[1])
		}
	})
}
