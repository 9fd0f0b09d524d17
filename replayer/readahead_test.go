package replayer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
)

// rewriteSmallBlocks copies the dataset at src record for record into one
// with 16 KiB blocks (the shipped samples are a block or two), so that
// read-ahead has many blocks in flight; it returns the new path.
func rewriteSmallBlocks(t *testing.T, src string) string {
	t.Helper()
	r, err := datasets.Open(src, datasets.WithAllKinds())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := r.Manifest()
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	w, err := datasets.Create(dir, datasets.Manifest{Venue: m.Venue, Endpoint: m.Endpoint, StartNs: m.StartNs},
		datasets.WithBlockSize(16<<10), datasets.WithFlushInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		rec := *r.Record()
		rec.Seq = 0
		if _, err := w.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// damageBlocks flips a byte in the content of a few blocks of dir's only
// segment: the second, two adjacent ones in the middle and the last.
func damageBlocks(t *testing.T, dir string) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []float64{0.05, 0.5, 0.52, 0.995} {
		data[int(f*float64(len(data)))] ^= 0x55
	}
	if err := os.WriteFile(segs[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// replayTrace is what a replay produced: every delivered event, hashed in
// order with its routing, venue event, control, payload and the top of its
// book; the summary without its timings; and the books at the end.
type replayTrace struct {
	events  uint64
	hash    uint64
	summary string
	books   string
	err     string
}

func traceReplay(t *testing.T, paths []string, opts ...Option) replayTrace {
	t.Helper()
	r, err := New(paths, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var tr replayTrace
	h := xxhash.New()
	var top []book.Level
	var buf []byte
	num := func(v int64) { buf = strconv.AppendInt(buf, v, 10); buf = append(buf, ' ') }
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		tr.events++
		buf = buf[:0]
		num(int64(e.Dataset))
		num(int64(e.Conn))
		num(int64(e.Seq))
		num(e.RecvNs)
		num(int64(e.Kind))
		num(int64(e.Channel))
		buf = append(append(append(buf, e.Venue...), ' '), e.Instrument...)
		buf = append(append(buf, '|'), e.Payload...)
		if d := e.Decoded; d != nil {
			for _, v := range []int64{int64(d.Type), d.ExchangeNs, int64(d.Side), d.Price, d.Size, int64(d.Count),
				d.BidPrice, d.BidSize, d.AskPrice, d.AskSize} {
				num(v)
			}
			buf = fmt.Appendf(buf, "%s %s %v %v %q %v|", d.Instrument, d.Market, d.HasBid, d.HasAsk, d.ID, d.Backfill)
		}
		if c := e.Control; c != nil {
			buf = fmt.Appendf(buf, "%+v|", *c)
		}
		if e.Book != nil {
			top = e.Book.Top(book.Bid, top[:0], 3)
			top = e.Book.Top(book.Ask, top, 3)
			for _, l := range top {
				num(l.Price)
				num(l.Size)
			}
			buf = strconv.AppendBool(buf, e.Book.Valid())
		}
		buf = fmt.Appendf(buf, "%+v\n", e.Quality)
		h.Write(buf)
		return nil
	}))
	s, err := r.Run(context.Background())
	if err != nil {
		tr.err = err.Error()
	}
	tr.hash = h.Sum64()
	// Timings differ, and so may the bytes read: read-ahead reads up to its
	// depth past a window's end, and a damaged block twice.
	s.WallNs, s.FramesPerSec, s.MBPerSec, s.BytesFetched = 0, 0, 0, 0
	for i := range s.Datasets {
		s.Datasets[i].BytesFetched = 0
	}
	b, _ := json.Marshal(s)
	tr.summary = string(b)
	b, _ = json.Marshal(r.Books())
	tr.books = string(b)
	return tr
}

// TestReadAheadSameReplay: a replay reading ahead on a second goroutine
// delivers the very events of a sequential one, in the same order, with the
// same books, summary (losses and damage included) and digest: on the
// shipped samples, each alone and merged, as shipped and rewritten in small
// blocks, within a window, and on a damaged dataset.
func TestReadAheadSameReplay(t *testing.T) {
	pm, hl := "../datasets/samples/polymarket", "../datasets/samples/hyperliquid"
	pmSmall, hlSmall := rewriteSmallBlocks(t, pm), rewriteSmallBlocks(t, hl)
	damaged := rewriteSmallBlocks(t, pm)
	damageBlocks(t, damaged)
	start := traceReplay(t, []string{pm}).summary // for a window inside the recording
	var sum Summary
	if err := json.Unmarshal([]byte(start), &sum); err != nil {
		t.Fatal(err)
	}
	m, err := datasets.ReadManifest(pm)
	if err != nil {
		t.Fatal(err)
	}
	mid := m.StartNs + (m.EndNs-m.StartNs)/3
	cases := []struct {
		name  string
		paths []string
		opts  []Option
	}{
		{"polymarket", []string{pm}, nil},
		{"hyperliquid", []string{hl}, nil},
		{"merged", []string{pm, hl}, nil},
		{"polymarket-16k-blocks", []string{pmSmall}, nil},
		{"merged-16k-blocks", []string{pmSmall, hlSmall}, nil},
		{"hash-check-all", []string{pmSmall}, []Option{WithHashMode(HashAll, DefaultHashEvery)}},
		{"window", []string{pmSmall, hlSmall}, []Option{WithWindow(mid, mid+(m.EndNs-m.StartNs)/3)}},
		{"damaged", []string{damaged}, nil},
		{"damaged-skip", []string{damaged, hlSmall}, []Option{WithSkipDamaged(true)}},
	}
	depths := []int{1, 3}
	if raceEnabled || testing.Short() {
		depths = depths[1:]
	}
	for _, tc := range cases {
		if (raceEnabled || testing.Short()) && !strings.Contains(tc.name, "16k") && !strings.HasPrefix(tc.name, "damaged") {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			want := traceReplay(t, tc.paths, append([]Option{WithReadAhead(0)}, tc.opts...)...)
			if want.events == 0 {
				t.Fatal("nothing delivered")
			}
			if tc.name == "damaged-skip" {
				var s Summary
				if err := json.Unmarshal([]byte(want.summary), &s); err != nil || s.Damaged == nil || s.Damaged.Stretches < 3 {
					t.Fatalf("the damaged dataset reports %+v (%v): want 3 stretches or more", s.Damaged, err)
				}
			}
			for _, n := range depths {
				got := traceReplay(t, tc.paths, append([]Option{WithReadAhead(n)}, tc.opts...)...)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("read-ahead %d differs from sequential:\n got  %d events %x %s\n      %s\n want %d events %x %s\n      %s",
						n, got.events, got.hash, got.err, got.summary, want.events, want.hash, want.err, want.summary)
				}
			}
		})
	}
	// The default reads ahead.
	if d := defaults(); d.readAhead != datasets.DefaultReadAhead || d.readAhead == 0 {
		t.Fatalf("default read-ahead %d", d.readAhead)
	}
	if _, err := New([]string{pm}, WithReadAhead(-1)); err == nil {
		t.Fatal("WithReadAhead(-1) accepted")
	}
}
