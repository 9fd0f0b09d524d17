package export

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/replayer"
)

func coinNames(n int) []string {
	coins := make([]string, n)
	for i := range coins {
		coins[i] = fmt.Sprintf("C%05d", i)
	}
	return coins
}

// heldCheck is a subscriber after a Split that checks after every event
// that its sinks hold at most the budget and what one sink holds.
type heldCheck struct {
	t       *testing.T
	p       *Split
	max     int
	spilled bool
}

func (h *heldCheck) OnEvent(*replayer.Event) error {
	held, most := 0, 0
	for _, s := range h.p.sinks {
		held += s.heldBytes()
		most = max(most, s.heldBytes())
	}
	if held > h.p.held.budget+most {
		h.t.Fatalf("the sinks hold %d bytes, budget %d", held, h.p.held.budget)
	}
	h.max = max(h.max, held)
	return nil
}

// TestSplitMemoryBudget: past its budget a Split's sinks write what they
// hold and give the memory back; the files keep the same rows (CSV: the
// same bytes) as without the budget.
func TestSplitMemoryBudget(t *testing.T) {
	ds := hlBooks(t, coinNames(60), 40, 25)
	for _, f := range []Format{FormatCSV, FormatParquet} {
		export := func(budget int) (map[string]*bytes.Buffer, int) {
			bufs := map[string]*bytes.Buffer{}
			p, err := NewSplit(func(_, inst string) (io.Writer, error) {
				bufs[inst] = &bytes.Buffer{}
				return bufs[inst], nil
			}, TableDepth, f, WithEncoders(1))
			if err != nil {
				t.Fatal(err)
			}
			p.held.budget = budget
			h := &heldCheck{t: t, p: p}
			replay(t, []string{ds}, p, h)
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			return bufs, h.max
		}
		free, most := export(1 << 30)
		tight, held := export(most / 8)
		if len(free) != 60 || len(tight) != 60 || held > most/4 {
			t.Fatalf("%s: %d and %d files; held %d bytes under a budget of %d (%d without)", f, len(free), len(tight), held, most/8, most)
		}
		for inst, b := range free {
			if f == FormatCSV {
				if !bytes.Equal(b.Bytes(), tight[inst].Bytes()) {
					t.Fatalf("%s: %s differs under the budget", f, inst)
				}
				continue
			}
			a, c := readArrowTable(t, f, b.Bytes()), readArrowTable(t, f, tight[inst].Bytes())
			if len(a.rows) != 40 || !reflect.DeepEqual(a.rows, c.rows) || !reflect.DeepEqual(a.cols, c.cols) {
				t.Fatalf("%s: %s has other rows under the budget (%d, %d)", f, inst, len(a.rows), len(c.rows))
			}
		}
	}
}

// TestSplitOpenFiles: a split of more instruments than the process may
// open files writes them all (at most maxOpenFiles open at once).
func TestSplitOpenFiles(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	ds := hlBooks(t, coinNames(600), 2, 2)
	out := t.TempDir()
	low := lim
	low.Cur = maxOpenFiles + 100
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	pf, _ := ParsePartitionBy("instrument")
	for _, j := range []Job{
		{Datasets: []string{ds}, Table: "depth", Format: "parquet", SplitBy: "instrument", Out: filepath.Join(out, "d-{instrument}.parquet")},
		{Datasets: []string{ds}, Table: "book_changes", Format: "tardis", PartitionBy: pf, Out: filepath.Join(out, "tree")},
	} {
		if err := run(t, j); err != nil {
			t.Fatal(err)
		}
	}
	if got := files(t, out); len(got) != 1201 || !slices.Contains(got, "tree/_SUCCESS") {
		t.Fatalf("%d files", len(got))
	}
}

// peaks samples the heap in use and the open files of the process while
// f runs.
func peaks(f func()) (heap uint64, fds int) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		ents, _ := os.ReadDir("/proc/self/fd")
		mu.Lock()
		heap, fds = max(heap, ms.HeapInuse), max(fds, len(ents))
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			sample()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	f()
	stop.Store(true)
	wg.Wait()
	sample()
	return heap, fds
}

// BenchmarkPerInstrument exports the depth table (25 levels) of a
// Hyperliquid dataset of thousands of instruments, 10 book snapshots each,
// per instrument (split files, a Hive tree by instrument), and reports the
// peak heap in use and the most files open at once (sampled every 5 ms):
//
//	go test -run '^$' -bench PerInstrument -benchtime 1x ./replayer/export
func BenchmarkPerInstrument(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		ds := hlBooks(b, coinNames(n), 10, 25)
		for _, layout := range []string{"split", "partition"} {
			for _, format := range []string{"parquet", "csv"} {
				b.Run(fmt.Sprintf("instruments=%d/%s/%s", n, layout, format), func(b *testing.B) {
					var heap uint64
					var fds int
					for range b.N {
						out := b.TempDir()
						j := Job{Datasets: []string{ds}, Table: "depth", Format: format}
						if layout == "split" {
							j.SplitBy, j.Out = "instrument", filepath.Join(out, "d-{instrument}."+format)
						} else {
							j.PartitionBy, _ = ParsePartitionBy("venue,instrument")
							j.Out = filepath.Join(out, "tree")
						}
						runtime.GC()
						var err error
						h, f := peaks(func() { err = run(b, j) })
						if err != nil {
							b.Fatal(err)
						}
						heap, fds = max(heap, h), max(fds, f)
					}
					b.ReportMetric(float64(heap)/1e6, "peak-heap-MB")
					b.ReportMetric(float64(fds), "open-files")
				})
			}
		}
	}
}
