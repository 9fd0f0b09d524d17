package latency

import (
	"runtime"
	"slices"
	"testing"
	"unsafe"
)

// The histogram's quantiles are a sorted slice's elements at the same rank:
// exact below 2 µs, within 1/64 (never above) beyond.
func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	var all []int64
	x := uint64(88172645463325252)
	for i := 0; i < 100000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		var v int64
		switch i % 10 {
		case 0:
			v = int64(x % (1 << 40)) // far tail
		case 1, 2:
			v = int64(x % 100000)
		default:
			v = int64(x % 3000)
		}
		h.Add(v)
		all = append(all, v)
	}
	h.Add(-5) // a clock step back counts as 0
	all = append(all, 0)
	slices.Sort(all)
	if h.Count() != uint64(len(all)) || h.Max() != all[len(all)-1] {
		t.Fatalf("count %d max %d, want %d %d", h.Count(), h.Max(), len(all), all[len(all)-1])
	}
	for _, q := range []float64{0, 0.01, 0.5, 0.7, 0.9, 0.99, 0.999, 0.9999, 1} {
		want := all[min(int(q*float64(len(all))), len(all)-1)]
		got := h.Quantile(q)
		if want < exact && got != want {
			t.Errorf("q%v = %d, want exactly %d", q, got, want)
		}
		if got > want || float64(want-got) > float64(want)/64 {
			t.Errorf("q%v = %d, want %d within 1/64 below", q, got, want)
		}
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Max() != 0 {
		t.Fatal("empty histogram")
	}
}

// Every bucket's lower bound maps back to that bucket, and bounds increase.
func TestHistogramBuckets(t *testing.T) {
	prev := int64(-1)
	for i := 0; i < len(Histogram{}.counts); i++ {
		lo := lower(i)
		if lo <= prev || bucket(uint64(lo)) != i {
			t.Fatalf("bucket %d: lower %d (previous %d) maps to %d", i, lo, prev, bucket(uint64(lo)))
		}
		prev = lo
	}
	if bucket(1<<63-1) != len(Histogram{}.counts)-1 {
		t.Fatalf("largest value in bucket %d of %d", bucket(1<<63-1), len(Histogram{}.counts))
	}
}

// The transfer rounds hand every line over and time each load, also when
// the two sides share one CPU (they yield rather than spin forever), and
// the three words never share a pair of lines.
func TestXferRounds(t *testing.T) {
	var x xfer
	for _, w := range []uintptr{unsafe.Offsetof(x.ack) - unsafe.Offsetof(x.flag), unsafe.Offsetof(x.data) - unsafe.Offsetof(x.ack)} {
		if w < 2*cacheLine {
			t.Fatalf("words %d bytes apart", w)
		}
	}
	for _, procs := range []int{2, 1} {
		old := runtime.GOMAXPROCS(procs)
		x := new(xfer)
		done := make(chan struct{})
		go func() { x.write(); close(done) }()
		h := x.read()
		<-done
		runtime.GOMAXPROCS(old)
		if h.Count() != xferRounds || x.ack.Load() != xferRounds || x.data.Load() != xferRounds {
			t.Fatalf("GOMAXPROCS %d: %d timed loads, ack %d, data %d", procs, h.Count(), x.ack.Load(), x.data.Load())
		}
	}
}
