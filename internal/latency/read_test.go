package latency

import (
	"slices"
	"testing"
)

// SeqRead retries until there is state and reports a change of sequence
// number; PinnedRead copies the pinned view's levels and releases every
// view it acquired.
func TestReads(t *testing.T) {
	seqs := []uint64{0, 0, 1, 1, 2, 7, 7} // 0: no state yet
	k := 0
	read := SeqRead(func() (uint64, bool) {
		s := seqs[k]
		k++
		return s, s != 0
	})
	var got []bool
	for k < len(seqs) {
		got = append(got, read())
	}
	if want := []bool{true, false, true, true, false}; !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}

	type view struct {
		bids, asks []int
		seq        uint64
		pinned     bool
	}
	views := []*view{nil, {bids: []int{1, 2}, asks: []int{3}, seq: 4}, {bids: []int{5}, seq: 4}}
	var copied [][]int
	var held *view
	releases := 0
	read = PinnedRead(func() *view {
		v := views[0]
		views = views[1:]
		if v != nil {
			v.pinned, held = true, v
		}
		return v
	}, func(v *view) ([]int, []int, uint64) {
		if !v.pinned {
			t.Fatal("levels of an unpinned view")
		}
		copied = append(copied, v.bids, v.asks)
		return v.bids, v.asks, v.seq
	}, func(v *view) {
		if v != held {
			t.Fatal("released another view")
		}
		v.pinned = false
		releases++
	})
	if !read() || read() || releases != 2 || len(views) != 0 || len(copied) != 4 {
		t.Fatalf("%d releases, %d views left, copied %v", releases, len(views), copied)
	}
}
