package columnar

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// rleDecode reads n values of the RLE / bit-packing hybrid at bit width bw
// as the Parquet format describes it, independently of rleAppend.
func rleDecode(t *testing.T, b []byte, bw, n int) []int32 {
	t.Helper()
	var out []int32
	for len(out) < n {
		h, k := binary.Uvarint(b)
		if k <= 0 {
			t.Fatalf("bad run header after %d values", len(out))
		}
		b = b[k:]
		if h&1 == 0 { // RLE run: count, then the value in ceil(bw/8) bytes
			var v int32
			for i := 0; i < (bw+7)/8; i++ {
				v |= int32(b[i]) << (8 * i)
			}
			b = b[(bw+7)/8:]
			for range h >> 1 {
				out = append(out, v)
			}
			continue
		}
		groups := int(h >> 1)
		bitsAt := func(i int) int32 { return int32(b[i/8]>>(i%8)) & 1 }
		for v := range groups * 8 {
			var x int32
			for j := 0; j < bw; j++ {
				x |= bitsAt(v*bw+j) << j
			}
			out = append(out, x)
		}
		b = b[groups*bw:]
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes left after %d values", len(b), n)
	}
	return out[:n]
}

// Runs of every length around 8, at several bit widths, read back by the
// format's rules: the values, then padding zeros only in the last group.
func TestRLEHybrid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, bw := range []int{1, 2, 3, 7, 8, 9, 13, 17, 24} {
		for trial := 0; trial < 200; trial++ {
			var v []int32
			for len(v) < 300 {
				x := int32(r.IntN(1 << bw))
				for range r.IntN(20) + 1 {
					v = append(v, x)
				}
			}
			v = v[:r.IntN(len(v)+1)]
			got := rleDecode(t, rleAppend(nil, v, bw), bw, len(v))
			if !slices.Equal(got, v) {
				t.Fatalf("bw %d: read %v, want %v", bw, got, v)
			}
		}
	}
	// Levels (uint8) take the same path.
	lv := []uint8{1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}
	got := rleDecode(t, rleAppend(nil, lv, 1), 1, len(lv))
	for i := range lv {
		if got[i] != int32(lv[i]) {
			t.Fatalf("levels %v, want %v", got, lv)
		}
	}
}

// fixedDict gives each distinct value one index, in order of first
// appearance, for values on both sides of directValues and negative ones,
// across chunks (reset) and table growth.
func TestFixedDict(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var d fixedDict
	for chunk := 0; chunk < 20; chunk++ {
		d.reset()
		want := map[int64]int32{}
		var order []int64
		for range 5000 {
			var x int64
			switch r.IntN(3) {
			case 0:
				x = int64(r.IntN(directValues + 10))
			case 1:
				x = r.Int64N(1<<40) - 1<<39
			default:
				x = int64(r.IntN(50)) * 1_000_000_007
			}
			k, ok := want[x]
			if !ok {
				k = int32(len(order))
				want[x] = k
				order = append(order, x)
			}
			if got := d.index(x); got != k {
				t.Fatalf("chunk %d: index(%d) = %d, want %d", chunk, x, got, k)
			}
		}
		if !slices.Equal(d.vals, order) {
			t.Fatalf("chunk %d: dictionary not in order of first appearance", chunk)
		}
	}
}
