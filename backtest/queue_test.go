package backtest

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQueueOrder pushes timers mostly in time order, some behind (to the
// heap), and pops at random moments in between: every pop must give the
// smallest (time, seq) queued, whichever of the FIFO and the heap holds
// it, through the FIFO's compactions and growths.
func TestQueueOrder(t *testing.T) {
	for _, c := range []struct {
		name     string
		behind   float64 // share of pushes stamped before the last one
		popShare float64 // chance of a pop after each push
	}{
		{"in-order", 0, 0.5},
		{"in-order-backlog", 0, 0.3},
		{"mixed", 0.2, 0.5},
		{"mostly-behind", 0.8, 0.4},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var q queue[timer]
			var want []timer // what is queued, kept sorted
			var now int64
			var seq uint64
			pop := func() {
				got := q.pop()
				if got != want[0] {
					t.Fatalf("pop %+v, want %+v (%d queued)", got, want[0], len(want))
				}
				want = want[1:]
				if q.len() != len(want) {
					t.Fatalf("len %d after a pop, want %d", q.len(), len(want))
				}
			}
			for range 20000 {
				now += rng.Int64N(3) // equal times too: seq decides
				at := now
				if rng.Float64() < c.behind {
					at -= rng.Int64N(50)
				}
				seq++
				x := timer{atNs: at, seq: seq, tag: int64(seq)}
				q.push(x)
				i, _ := slices.BinarySearchFunc(want, x, cmpTimer)
				want = slices.Insert(want, i, x)
				if q.len() != len(want) || *q.peek() != want[0] {
					t.Fatalf("after push: len %d first %+v, want %d %+v", q.len(), *q.peek(), len(want), want[0])
				}
				for len(want) > 0 && rng.Float64() < c.popShare {
					pop()
				}
			}
			n := 0
			for range q.all() {
				n++
			}
			if n != len(want) {
				t.Fatalf("all yields %d items, %d queued", n, len(want))
			}
			for len(want) > 0 {
				pop()
			}
		})
	}
}

func cmpTimer(a, b timer) int {
	if c := cmp.Compare(a.atNs, b.atNs); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// TestQueueSteadyNoAllocs: a queue that holds about the same number of
// items as they come and go reuses its arrays (the FIFO compacts instead
// of growing without end).
func TestQueueSteadyNoAllocs(t *testing.T) {
	var q queue[note]
	var at int64
	var seq uint64
	step := func() {
		for range 3 {
			at++
			seq++
			q.push(note{atNs: at, seq: seq})
		}
		for range 3 {
			q.pop()
		}
	}
	for range 64 {
		at++
		seq++
		q.push(note{atNs: at, seq: seq}) // a backlog that never drains
	}
	for range 1000 {
		step()
	}
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Fatalf("%v allocations per step, want 0", n)
	}
}
