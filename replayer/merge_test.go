package replayer

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
)

// memSource is an in-memory record source.
type memSource struct {
	recs []datasets.Record
	i    int
	err  error // returned after the records
}

func (s *memSource) Next() bool {
	if s.i >= len(s.recs) {
		return false
	}
	s.i++
	return true
}
func (s *memSource) Record() *datasets.Record { return &s.recs[s.i-1] }
func (s *memSource) Err() error {
	if s.i >= len(s.recs) {
		return s.err
	}
	return nil
}

func mem(walls ...int64) *memSource {
	s := &memSource{}
	for i, w := range walls {
		s.recs = append(s.recs, datasets.Record{Kind: datasets.KindFrame, WallNs: w, Seq: uint64(i + 1)})
	}
	return s
}

type pos struct {
	ds   int
	seq  uint64
	wall int64
}

func drain(t *testing.T, m *Merger) []pos {
	t.Helper()
	var out []pos
	for m.Next() {
		ds, r := m.Record()
		out = append(out, pos{ds, r.Seq, r.WallNs})
	}
	return out
}

func TestMergerOrder(t *testing.T) {
	tests := []struct {
		name string
		srcs [][]int64
		want []pos
	}{
		{"one", [][]int64{{1, 2, 3}}, []pos{{0, 1, 1}, {0, 2, 2}, {0, 3, 3}}},
		{"empty inputs", [][]int64{{}, {5}, {}}, []pos{{1, 1, 5}}},
		{"interleave", [][]int64{{1, 4, 6}, {2, 3, 7}},
			[]pos{{0, 1, 1}, {1, 1, 2}, {1, 2, 3}, {0, 2, 4}, {0, 3, 6}, {1, 3, 7}}},
		{"ties go to the lower dataset", [][]int64{{5, 5}, {5}, {5}},
			[]pos{{0, 1, 5}, {0, 2, 5}, {1, 1, 5}, {2, 1, 5}}},
		{"a dataset keeps its seq order when its clock steps back", [][]int64{{10, 3, 11}, {5}},
			[]pos{{1, 1, 5}, {0, 1, 10}, {0, 2, 3}, {0, 3, 11}}},
		{"three way", [][]int64{{3, 6, 9}, {2, 5, 8}, {1, 4, 7}},
			[]pos{{2, 1, 1}, {1, 1, 2}, {0, 1, 3}, {2, 2, 4}, {1, 2, 5}, {0, 2, 6}, {2, 3, 7}, {1, 3, 8}, {0, 3, 9}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var srcs []recordSource
			for _, w := range tc.srcs {
				srcs = append(srcs, mem(w...))
			}
			m := newMerger(srcs)
			got := drain(t, m)
			if m.Err() != nil {
				t.Fatal(m.Err())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("record %d: got %v, want %v (all: %v)", i, got[i], tc.want[i], got)
				}
			}
			if ds, r := m.Record(); ds != -1 || r != nil {
				t.Fatalf("Record after the end = %d, %v", ds, r)
			}
		})
	}
}

func TestMergerErrorIsSticky(t *testing.T) {
	boom := errors.New("boom")
	bad := mem(2, 4)
	bad.err = boom
	m := newMerger([]recordSource{mem(1, 3, 5, 7), bad})
	got := drain(t, m)
	// 1, 2, 3, 4 come out; advancing past 4 hits the error.
	if len(got) != 4 {
		t.Fatalf("got %v before the error", got)
	}
	if !errors.Is(m.Err(), boom) {
		t.Fatalf("Err = %v, want boom", m.Err())
	}
	if m.Next() {
		t.Fatal("Next after an error returned true")
	}
}

// A merge of one reader takes its records without the heap: the same
// records, in the same order, and the same read error as the heap's merge.
func TestMergerOneReader(t *testing.T) {
	damaged, seg := damagedDataset(t)
	flipMiddleByte(t, seg)
	for _, tc := range []struct {
		name, dir string
		wantErr   bool
	}{
		{"sample", filepath.Join("..", "datasets", "samples", "polymarket"), false},
		{"damaged", damaged, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open := func() *datasets.Reader {
				rd, err := datasets.Open(tc.dir, datasets.WithReadAhead(2))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rd.Close() })
				return rd
			}
			fast := NewMerger([]*datasets.Reader{open()})
			if fast.one == nil {
				t.Fatal("a merge of one reader uses the heap")
			}
			heap := newMerger([]recordSource{open()})
			n := 0
			for {
				fn, hn := fast.Next(), heap.Next()
				if fn != hn {
					t.Fatalf("record %d: Next %v, heap merge %v", n, fn, hn)
				}
				fds, frec := fast.Record()
				hds, hrec := heap.Record()
				if !fn {
					if fds != -1 || frec != nil || hds != -1 || hrec != nil {
						t.Fatalf("Record after the end: %d %v, heap merge %d %v", fds, frec, hds, hrec)
					}
					break
				}
				if fds != hds || frec.Seq != hrec.Seq || frec.WallNs != hrec.WallNs || frec.Kind != hrec.Kind ||
					frec.Conn != hrec.Conn || string(frec.Payload) != string(hrec.Payload) {
					t.Fatalf("record %d: %d %+v, heap merge %d %+v", n, fds, frec, hds, hrec)
				}
				n++
			}
			fe, he := fmt.Sprint(fast.Err()), fmt.Sprint(heap.Err())
			if fe != he || (fast.Err() != nil) != tc.wantErr {
				t.Fatalf("after %d records: Err %s, heap merge %s (want an error: %v)", n, fe, he, tc.wantErr)
			}
			var ce *datasets.CorruptionError
			if tc.wantErr && !errors.As(fast.Err(), &ce) {
				t.Fatalf("Err %v is not a *datasets.CorruptionError", fast.Err())
			}
			if n == 0 || fast.Next() {
				t.Fatalf("%d records; Next after the end is true", n)
			}
		})
	}
}
