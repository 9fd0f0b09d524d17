package engine

import (
	"fmt"
	"testing"
)

// route finds each instrument's own route whatever its id: ids sharing their
// first 16 bytes (one hint slot), ids shorter than a hint key, and many ids
// interleaved; a route is made once per id.
func TestRouteHints(t *testing.T) {
	r := New(Config{})
	cs := &Conn{routes: make(map[string]*Route)}
	var ids []string
	for i := 0; i < 300; i++ {
		switch i % 3 {
		case 0:
			ids = append(ids, fmt.Sprintf("7132471234123412%061d", i)) // one shared 16-byte prefix
		case 1:
			ids = append(ids, fmt.Sprintf("%077d", i*7919))
		default:
			ids = append(ids, fmt.Sprint("c", i))
		}
	}
	seen := map[string]*Route{}
	for round := 0; round < 3; round++ {
		for k := range ids {
			id := ids[(k*37+round)%len(ids)]
			rt := r.route(cs, id)
			if rt.Instrument != id {
				t.Fatalf("route(%s) is %s's", id, rt.Instrument)
			}
			if prev, ok := seen[id]; ok && prev != rt {
				t.Fatalf("route(%s) made twice", id)
			}
			seen[id] = rt
		}
	}
	if len(cs.routes) != len(ids) {
		t.Fatalf("%d routes for %d ids", len(cs.routes), len(ids))
	}
}

// A route is found by where its id's bytes are (decoders intern ids), but
// only for that very string: an equal id in another string finds the same
// route, and a prefix of an interned id (same address, shorter) its own.
func TestRouteByAddress(t *testing.T) {
	r := New(Config{})
	cs := &Conn{routes: make(map[string]*Route)}
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = fmt.Sprintf("%07d%070d", 1000000+i*7919, i) // distinct 40-byte prefixes
	}
	for round := 0; round < 3; round++ {
		for k, id := range ids {
			copied := string([]byte(id)) // equal bytes elsewhere
			prefix := id[:40]            // the same address, shorter
			a, b, p := r.route(cs, id), r.route(cs, copied), r.route(cs, prefix)
			if a.Instrument != id || b != a {
				t.Fatalf("round %d id %d: route %q, its copy's %q", round, k, a.Instrument, b.Instrument)
			}
			if p == a || p.Instrument != prefix {
				t.Fatalf("round %d id %d: the prefix %q got route %q", round, k, prefix, p.Instrument)
			}
			if again := r.route(cs, id); again != a {
				t.Fatalf("round %d id %d: a second lookup found %q", round, k, again.Instrument)
			}
		}
	}
	if len(cs.routes) != 2*len(ids) {
		t.Fatalf("%d routes for %d ids and their prefixes", len(cs.routes), len(ids))
	}
	if cs.byPtr == nil {
		t.Fatalf("no address table for %d routes", len(cs.routes))
	}
	// A lookup allocates nothing.
	id := ids[3]
	r.route(cs, id)
	if allocs := testing.AllocsPerRun(100, func() { r.route(cs, id) }); allocs != 0 {
		t.Fatalf("%v allocations per lookup", allocs)
	}
}
