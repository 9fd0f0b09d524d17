package backtest

import (
	"math"
	"reflect"
	"testing"

	"github.com/tapedeck/tapedeck/book"
)

// markoutList is the plain way to take markouts: one list in the order
// they were scheduled, scanned whole whenever the earliest is due. The
// engine's queues (markQueue) must take the same ones, at the same
// events, in the same order.
type markoutList struct {
	marks []listed
	out   []Markout
	sums  []float64
}

type listed struct {
	markout
	horizon int64
	hi      int
}

func (l *markoutList) take(nowNs, mid int64, decimals uint8) {
	k := 0
	for _, m := range l.marks {
		if m.atNs > nowNs {
			l.marks[k] = m
			k++
			continue
		}
		d := mid - m.price
		if m.side == Sell {
			d = -d
		}
		l.sums[m.hi] += float64(d) / float64(pow10(decimals))
		l.out = append(l.out, Markout{Fill: m.seq, Horizon: m.horizon, Mid: mid, PnL: d})
	}
	l.marks = l.marks[:k]
}

// TestMarkoutsOrder: fills on an exchange clock that now and then goes
// back (an event stamped before the clock), horizons given twice, and
// events between them, some before any markout is due: the engine takes
// its markouts as the plain list does, value for value and in its order,
// so the summary's float sums come out the same to the last bit.
func TestMarkoutsOrder(t *testing.T) {
	horizons := []int64{1e9, 10e9, 1e9, 300e6}
	e := NewEngine(nil, Config{MarkoutsNs: horizons})
	sc := book.Scale{PriceDecimals: 3, SizeDecimals: 2}
	in := &Instrument{ID: "x", Scale: sc, Book: book.New(sc)}
	ref := markoutList{sums: make([]float64, len(horizons))}
	x, backs := uint64(7), 0
	rnd := func(n int) int64 {
		x = x*6364136223846793005 + 1442695040888963407
		return int64(x>>33) % int64(n)
	}
	clock, seq := int64(1e12), uint64(0)
	for range 20000 {
		now := clock + rnd(200)*1e6
		if rnd(20) == 0 {
			now = clock - rnd(5000)*1e6 // applied before the clock
			backs++
		}
		clock = max(clock, now)
		mid := 400 + rnd(200)
		if err := in.Book.Replace([]book.Level{{Price: mid - 1, Size: 100}}, []book.Level{{Price: mid + 1, Size: 100}}); err != nil {
			t.Fatal(err)
		}
		e.xNs = now
		e.markouts(in, now)
		ref.take(now, mid, sc.PriceDecimals)
		if rnd(3) == 0 {
			seq++
			price, side := mid+rnd(5)-2, Side(rnd(2))
			e.addMarkouts(in, seq, price, side)
			for i, h := range horizons {
				ref.marks = append(ref.marks, listed{markout{seq: seq, price: price, side: side, atNs: now + h}, h, e.markHi[i]})
			}
		}
	}
	if backs < 100 || len(ref.out) < 10000 {
		t.Fatalf("%d clock steps back, %d markouts: the case shows little", backs, len(ref.out))
	}
	if !reflect.DeepEqual(e.marksOut, ref.out) {
		for i := range min(len(e.marksOut), len(ref.out)) {
			if e.marksOut[i] != ref.out[i] {
				t.Fatalf("markout %d of %d (engine %d): engine %+v, list %+v", i, len(ref.out), len(e.marksOut), e.marksOut[i], ref.out[i])
			}
		}
		t.Fatalf("engine took %d markouts, list %d", len(e.marksOut), len(ref.out))
	}
	for hi, s := range ref.sums {
		if math.Float64bits(e.markSums.sum[hi]) != math.Float64bits(s) {
			t.Fatalf("horizon %d: sum %v, list %v", hi, e.markSums.sum[hi], s)
		}
	}
	if n := len(ref.marks); in.marksN != n {
		t.Fatalf("%d markouts pending, list %d", in.marksN, n)
	}
}
