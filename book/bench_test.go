package book

import (
	"fmt"
	"testing"
)

var benchLevels = []int{1, 16, 64, 100, 1000}

// BenchmarkSet applies level changes shaped like a live book (see benchOps)
// to a book of n levels per side; one op is one Set.
func BenchmarkSet(b *testing.B) {
	for _, n := range benchLevels {
		b.Run(fmt.Sprintf("levels=%d", n), func(b *testing.B) {
			f := newBenchFrames(n)
			ops := f.ops
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				o := &ops[i&(len(ops)-1)]
				_ = f.book.Set(o.side, o.price, o.size, 0)
			}
		})
	}
}

// BenchmarkReplace installs an n+n-level snapshot; one op is one snapshot,
// and level-ns is the cost per level installed.
func BenchmarkReplace(b *testing.B) {
	for _, order := range []string{"best-last", "best-first", "unordered"} {
		for _, n := range benchLevels {
			b.Run(fmt.Sprintf("order=%s/levels=%d", order, n), func(b *testing.B) {
				f := newBenchFrames(n) // bids and asks best first
				bids, asks := f.bids, f.asks
				switch order {
				case "best-last":
					bids, asks = reversed(bids), reversed(asks)
				case "unordered":
					bids, asks = shuffled(bids), shuffled(asks)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := f.book.Replace(bids, asks); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(2*n), "ns/level")
			})
		}
	}
}

// BenchmarkTop copies the top 10 levels (or all, when fewer) of both sides
// into a caller buffer.
func BenchmarkTop(b *testing.B) {
	for _, n := range benchLevels {
		b.Run(fmt.Sprintf("levels=%d", n), func(b *testing.B) {
			f := newBenchFrames(n)
			buf := make([]Level, 0, 32)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				buf = f.book.Top(Bid, buf[:0], 10)
				buf = f.book.Top(Ask, buf, 10)
			}
		})
	}
}

// BenchmarkPublish is the writer's cost of a Set at the touch followed by
// publishing a top-10 View, with no reader (see BenchmarkReaderUnderWriter
// for contention); "unchanged" publishes a book that did not change, which
// keeps the current View.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{16, 100} {
		b.Run(fmt.Sprintf("levels=%d/change=touch", n), func(b *testing.B) {
			f := newBenchFrames(n)
			p := NewPublisher(10, 1)
			best, _ := f.book.Best(Bid)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = f.book.Set(Bid, best.Price, 1e6+int64(i&1), 0)
				p.Publish(f.book, int64(i))
			}
			if p.Published() < uint64(b.N) {
				b.Fatalf("%d views for %d changes", p.Published(), b.N)
			}
		})
	}
	b.Run("levels=100/change=none", func(b *testing.B) {
		f := newBenchFrames(100)
		p := NewPublisher(10, 1)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p.Publish(f.book, int64(i))
		}
	})
}

// BenchmarkLoad is a reader's own cost of a consistent top-10 read with no
// writer running: the part of every read in BenchmarkReaderUnderWriter that
// does not wait for the writer's core. "refresh" is Refresh of a copy that
// is still current; "view" is Acquire, a copy of the View's levels and
// Release.
func BenchmarkLoad(b *testing.B) {
	f := newBenchFrames(100)
	p := NewPublisher(10, 1)
	p.Publish(f.book, 0)
	b.Run("load", func(b *testing.B) {
		var top Top
		p.Load(&top)
		b.ReportAllocs()
		for b.Loop() {
			p.Load(&top)
		}
	})
	b.Run("refresh", func(b *testing.B) {
		var top Top
		p.Refresh(&top)
		b.ReportAllocs()
		for b.Loop() {
			p.Refresh(&top)
		}
	})
	b.Run("view", func(b *testing.B) {
		bids, asks := make([]Level, 0, 16), make([]Level, 0, 16)
		b.ReportAllocs()
		for b.Loop() {
			v := p.Acquire()
			bids = append(bids[:0], v.Bids...)
			asks = append(asks[:0], v.Asks...)
			v.Release()
		}
	})
}

func BenchmarkParseDecimal(b *testing.B) {
	for _, s := range []string{"0.48", "219.217767", "104250.5"} {
		b.Run(s, func(b *testing.B) {
			in := []byte(s)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := ParseDecimal(in, 6); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func reversed(lv []Level) []Level {
	out := make([]Level, len(lv))
	for i := range lv {
		out[len(lv)-1-i] = lv[i]
	}
	return out
}

// shuffled returns lv in a fixed pseudo-random order.
func shuffled(lv []Level) []Level {
	out := append([]Level(nil), lv...)
	x := uint32(7)
	for i := len(out) - 1; i > 0; i-- {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		j := int(x % uint32(i+1))
		out[i], out[j] = out[j], out[i]
	}
	return out
}
