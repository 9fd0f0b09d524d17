package replayer

import (
	"fmt"
	"testing"
)

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"0/4", "5/4", "1/0", "a/b", "1", "1/4/2", "-1/4", "1/70000"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	s, err := ParseShard("3/4")
	if err != nil || s.K != 3 || s.N != 4 || s.String() != "3/4" || s.Whole() {
		t.Fatalf("3/4: %+v %v", s, err)
	}
	if w, _ := ParseShard(""); !w.Whole() || !w.Owns("polymarket", "x") {
		t.Fatal("the whole job does not own everything")
	}
}

// TestShardsPartition: every instrument belongs to exactly one of N shards,
// the same one every time, and the shards are not all one.
func TestShardsPartition(t *testing.T) {
	const n = 4
	count := make([]int, n+1)
	for i := 0; i < 1000; i++ {
		inst := fmt.Sprintf("%077d", i*7919)
		owners := 0
		for k := 1; k <= n; k++ {
			if (Shard{K: k, N: n}).Owns("polymarket", inst) {
				owners++
				count[k]++
			}
		}
		if owners != 1 || ShardOf("polymarket", inst, n) != ShardOf("polymarket", inst, n) {
			t.Fatalf("%s has %d owners", inst, owners)
		}
	}
	for k := 1; k <= n; k++ {
		if count[k] < 150 {
			t.Errorf("shard %d owns %d of 1000 instruments", k, count[k])
		}
	}
	if ShardOf("hyperliquid", "", n) != 1 {
		t.Error("connection-wide records are not shard 1's")
	}
}

// TestWithShard: N sharded replays deliver each instrument's events in
// exactly one of them, all of them, and the connection-wide events in each.
func TestWithShard(t *testing.T) {
	run := func(s Shard) (map[string]int, int) {
		r, err := New([]string{"../datasets/samples/hyperliquid", "../datasets/samples/polymarket"}, WithShard(s))
		if err != nil {
			t.Fatal(err)
		}
		per, wide := map[string]int{}, 0
		r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
			if e.Instrument == "" {
				wide++
			} else {
				per[e.Venue+"/"+e.Instrument]++
			}
			return nil
		}))
		if _, err := r.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		return per, wide
	}
	all, wide := run(Shard{})
	got := map[string]int{}
	for k := 1; k <= 3; k++ {
		per, w := run(Shard{K: k, N: 3})
		if w != wide {
			t.Errorf("shard %d/3: %d connection-wide events, unsharded %d", k, w, wide)
		}
		for inst, n := range per {
			if _, dup := got[inst]; dup {
				t.Fatalf("%s delivered in two shards", inst)
			}
			got[inst] = n
		}
	}
	if len(got) != len(all) || len(all) < 4 {
		t.Fatalf("shards delivered %d instruments, unsharded %d", len(got), len(all))
	}
	for inst, n := range all {
		if got[inst] != n {
			t.Errorf("%s: %d events in its shard, %d unsharded", inst, got[inst], n)
		}
	}
}
