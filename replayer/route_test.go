package replayer

import (
	"fmt"
	"testing"
)

// route finds each instrument's own route whatever its id: ids sharing their
// first 16 bytes (one hint slot), ids shorter than a hint key, and many ids
// interleaved; a route is made once per id.
func TestRouteHints(t *testing.T) {
	r := &Replayer{}
	cs := &connState{routes: make(map[string]*instRoute)}
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
	seen := map[string]*instRoute{}
	for round := 0; round < 3; round++ {
		for k := range ids {
			id := ids[(k*37+round)%len(ids)]
			rt := r.route(cs, id)
			if rt.instrument != id {
				t.Fatalf("route(%s) is %s's", id, rt.instrument)
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
