package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// numpyPython returns a Python 3 with NumPy (Debian's python3-numpy, which
// make test-deps installs), or skips.
func numpyPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import numpy").Run() == nil {
			return p
		}
	}
	t.Skip("no python3 with numpy: run `make test-deps` (Debian python3-numpy)")
	return ""
}

// hbtFile is one written .npz and what it is of.
type hbtFile struct {
	venue, instrument, date string
	path                    string
}

// hbtExport runs datasets through the real replayer into an HftBacktest
// writing files under a temporary directory, and records the books beside it.
func hbtExport(t *testing.T, paths []string, opts ...Option) (map[string]hbtFile, *truth, *HftBacktest) {
	t.Helper()
	return hbtExportWith(t, paths, nil, opts...)
}

// hbtExportWith is hbtExport with options for the replayer (a window).
func hbtExportWith(t *testing.T, paths []string, ropts []replayer.Option, opts ...Option) (map[string]hbtFile, *truth, *HftBacktest) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]hbtFile{}
	var open []*os.File
	h, err := NewHftBacktest(func(v, inst, date string) (io.Writer, error) {
		name := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
				return r
			}
			return '_'
		}, inst) + "_" + date + ".npz"
		p := filepath.Join(dir, name)
		if _, dup := files[p]; dup {
			return nil, fmt.Errorf("file %s opened twice", p)
		}
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		open = append(open, f)
		files[p] = hbtFile{v, inst, date, p}
		return f, nil
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTruth(-1)
	replayWith(t, paths, ropts, tr, h)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range open {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return files, tr, h
}

type hbtChecked struct {
	Rows      int             `json:"rows"`
	FirstKind int             `json:"first_kind"`
	Compared  int             `json:"compared"`
	Mismatch  json.RawMessage `json:"mismatch"`
}

// hbtCheck has testdata/hbt_check.py read the files with NumPy as
// hftbacktest does (layout, dtype, flags, event order) and rebuild each
// file's books from the file alone, comparing them with every valid book the
// replay had in the file's instrument and day, as of the same receive time.
// It returns what the script found per file and the books compared.
func hbtCheck(t *testing.T, files map[string]hbtFile, tr *truth) (map[string]hbtChecked, int) {
	t.Helper()
	py := numpyPython(t)
	byKey := map[[2]string]string{}
	expect := map[string][]any{}
	for p, f := range files {
		byKey[[2]string{f.instrument, f.date}] = p
		expect[p] = []any{}
	}
	want := 0
	for _, st := range tr.last(true) {
		p, ok := byKey[[2]string{st.instrument, dayDate(st.recvNs)}]
		if !ok && !st.valid {
			continue // an invalid book before the instrument's file: nothing to rebuild
		}
		if !ok {
			t.Fatalf("%s at %d: no file for %s", st.instrument, st.recvNs, dayDate(st.recvNs))
		}
		if !st.valid {
			// After a loss, until the next snapshot: the empty book the
			// clear left, not a partial one.
			expect[p] = append(expect[p], []any{st.recvNs, [][2]float64{}, [][2]float64{}})
			want++
			continue
		}
		expect[p] = append(expect[p], []any{st.recvNs, floatLevels(st.bids), floatLevels(st.asks)})
		want++
	}
	ef := filepath.Join(t.TempDir(), "expect.json")
	b, err := json.Marshal(expect)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ef, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join("testdata", "hbt_check.py"), ef)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hbt_check.py: %v: %s", err, stderr.String())
	}
	got := map[string]hbtChecked{}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	compared := 0
	for p, c := range got {
		if string(c.Mismatch) != "null" {
			t.Errorf("%s: the book rebuilt from the file differs: %s", p, c.Mismatch)
		}
		compared += c.Compared
	}
	if compared != want {
		t.Errorf("%d books compared, want %d", compared, want)
	}
	return got, compared
}

func floatLevels(lv [][3]string) [][2]float64 {
	out := make([][2]float64, 0, len(lv))
	for _, l := range lv {
		px, _ := strconv.ParseFloat(l[0], 64)
		sz, _ := strconv.ParseFloat(l[1], 64)
		out = append(out, [2]float64{px, sz})
	}
	return out
}

func dayDate(ns int64) string {
	d := floorDiv(ns, nsPerDay) * nsPerDay
	return time.Unix(0, d).UTC().Format("20060102")
}

// The shipped samples of both venues: every book the replay has is the book
// hftbacktest's local processor rebuilds from the file.
func TestHftBacktestSamples(t *testing.T) {
	for _, v := range []string{venue.Polymarket, venue.Hyperliquid} {
		t.Run(v, func(t *testing.T) {
			files, tr, h := hbtExport(t, []string{filepath.Join("..", "..", "datasets", "samples", v)})
			if len(files) == 0 || h.Rows() == 0 {
				t.Fatalf("%d files, %d rows", len(files), h.Rows())
			}
			_, n := hbtCheck(t, files, tr)
			if n < 100 {
				t.Fatalf("only %d books compared", n)
			}
			t.Logf("%d files, %d rows, %d books compared", len(files), h.Rows(), n)
		})
	}
}

// A window in the middle of each sample, replayed as `replay export --from
// --to` does (the books built silently before the window): each instrument's
// file opens with its book as it stood, so every book of the window is
// rebuilt, not only those after the instrument's next venue snapshot.
func TestHftBacktestWindow(t *testing.T) {
	for _, v := range []string{venue.Polymarket, venue.Hyperliquid} {
		t.Run(v, func(t *testing.T) {
			path, from, to := sampleMiddle(t, v)
			files, tr, h := hbtExportWith(t, []string{path}, []replayer.Option{replayer.WithWindow(from, to)})
			if len(files) == 0 || h.Rows() == 0 {
				t.Fatalf("%d files, %d rows", len(files), h.Rows())
			}
			for _, st := range tr.states {
				if st.recvNs < from || st.recvNs >= to {
					t.Fatalf("%s: a book at %d, outside the window [%d, %d)", st.instrument, st.recvNs, from, to)
				}
			}
			checked, n := hbtCheck(t, files, tr)
			if n < 50 {
				t.Fatalf("only %d books compared", n)
			}
			for p, c := range checked {
				if c.FirstKind != HbtDepthClear {
					t.Errorf("%s opens with kind %d, want a clear and the book at the window start", p, c.FirstKind)
				}
			}
			t.Logf("%d files, %d rows, %d books compared", len(files), h.Rows(), n)
		})
	}
}

// A session that crosses midnight UTC, with losses: each day's file, read
// alone, rebuilds the books of its day, the second day's opening with the
// book as it was at midnight.
func TestHftBacktestDays(t *testing.T) {
	midnight := (floorDiv(baseNs, nsPerDay) + 1) * nsPerDay
	for _, tc := range []struct {
		venue string
		recs  []rec
		split int64 // the first record after midnight: books are valid then
	}{
		{venue.Polymarket, pmRecords(t), 10},
		{venue.Hyperliquid, hlRecords(t), 9},
	} {
		t.Run(tc.venue, func(t *testing.T) {
			ds := writeDataset(t, tc.venue, midnight-baseNs-tc.split*stepNs, tc.recs)
			files, tr, _ := hbtExport(t, []string{ds})
			checked, n := hbtCheck(t, files, tr)
			// Instruments with a valid book of some levels at midnight.
			atMidnight := map[string]bool{}
			for _, st := range tr.states {
				if st.recvNs < midnight {
					atMidnight[st.instrument] = st.valid && len(st.bids)+len(st.asks) > 0
				}
			}
			days := map[string]int{}
			opened := 0
			for p, f := range files {
				days[f.date]++
				if f.date != dayDate(midnight) || !atMidnight[f.instrument] {
					continue
				}
				opened++
				if checked[p].FirstKind != HbtDepthClear {
					t.Errorf("%s opens with kind %d, want a clear and the book at midnight", p, checked[p].FirstKind)
				}
			}
			if len(days) != 2 || opened == 0 {
				t.Fatalf("files of days %v, %d opening with a book, want two days and some", days, opened)
			}
			if n == 0 {
				t.Fatal("no book compared")
			}
		})
	}
}

// The event order hftbacktest's backtester needs: exchange-flagged rows in
// exch_ts order, local-flagged ones in local_ts order, each row once per
// processor, and a row in order for both written once.
func TestHbtOrder(t *testing.T) {
	rows := []hbtEvent{
		{ev: 1, exchNs: 10, localNs: 20},
		{ev: 1, exchNs: 30, localNs: 21}, // the venue's clock ran ahead
		{ev: 1, exchNs: 15, localNs: 22}, // out of exchange order
		{ev: 2, exchNs: 40, localNs: 45},
	}
	out := hbtOrder(rows)
	var exch, local []int64
	seen := map[[2]int64]int{}
	for _, r := range out {
		if r.ev&HbtExchEvent != 0 {
			exch = append(exch, r.exchNs)
			seen[[2]int64{r.exchNs, 0}]++
		}
		if r.ev&HbtLocalEvent != 0 {
			local = append(local, r.localNs)
			seen[[2]int64{r.localNs, 1}]++
		}
	}
	if !sort.SliceIsSorted(exch, func(i, j int) bool { return exch[i] < exch[j] }) || len(exch) != 4 {
		t.Errorf("exchange times %v", exch)
	}
	if !sort.SliceIsSorted(local, func(i, j int) bool { return local[i] < local[j] }) || len(local) != 4 {
		t.Errorf("local times %v", local)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%v seen %d times", k, n)
		}
	}
	if len(out) != 5 || out[0].ev != 1|HbtExchEvent|HbtLocalEvent || out[len(out)-1].ev != 2|HbtExchEvent|HbtLocalEvent {
		t.Errorf("rows %+v", out)
	}
}
