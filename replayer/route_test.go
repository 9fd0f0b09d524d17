package replayer

import (
	"fmt"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
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

// A route is found by where its id's bytes are (decoders intern ids), but
// only for that very string: an equal id in another string finds the same
// route, and a prefix of an interned id (same address, shorter) its own.
func TestRouteByAddress(t *testing.T) {
	r := &Replayer{}
	cs := &connState{routes: make(map[string]*instRoute)}
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = fmt.Sprintf("%07d%070d", 1000000+i*7919, i) // distinct 40-byte prefixes
	}
	for round := 0; round < 3; round++ {
		for k, id := range ids {
			copied := string([]byte(id)) // equal bytes elsewhere
			prefix := id[:40]            // the same address, shorter
			a, b, p := r.route(cs, id), r.route(cs, copied), r.route(cs, prefix)
			if a.instrument != id || b != a {
				t.Fatalf("round %d id %d: route %q, its copy's %q", round, k, a.instrument, b.instrument)
			}
			if p == a || p.instrument != prefix {
				t.Fatalf("round %d id %d: the prefix %q got route %q", round, k, prefix, p.instrument)
			}
			if again := r.route(cs, id); again != a {
				t.Fatalf("round %d id %d: a second lookup found %q", round, k, again.instrument)
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

// Records of many connection slots interleaved, in two merged datasets,
// each reach their own slot's decoder and books (the replayer keeps the
// slot it found last at hand), and a slot closed cleanly starts over after
// its close whichever slot came in between.
func TestConnectionsKeepTheirBooks(t *testing.T) {
	type slot struct {
		ds   int
		conn uint32
	}
	var dsRecs [2][]rec
	seen := map[slot]bool{}
	var closedAt int64
	for i := range 300 {
		for d := range dsRecs {
			conn := uint32(1 + (i/2*7)%5) // runs of one slot, the same in both datasets
			wall := int64(10*i + d + 1)
			p := 10000*(d+1) + 1000*int(conn) + i
			payload := fmt.Sprintf("lvl a b %d 1", p)
			if !seen[slot{d, conn}] {
				seen[slot{d, conn}] = true
				payload = fmt.Sprintf("snap a %d 1 %d 1", p, p+100000)
			}
			dsRecs[d] = append(dsRecs[d], frame(conn, wall, payload))
			if i == 150 && d == 0 {
				dsRecs[d] = append(dsRecs[d], rec{datasets.KindCleanClose, 3, wall, ""})
				closedAt = wall
			}
		}
	}
	r := newFakeReplayer(t, []string{writeDataset(t, "fakevenue", dsRecs[0]), writeDataset(t, "fakevenue", dsRecs[1])})
	last := map[slot]int64{}
	books := map[slot]*book.Book{}
	var events int
	r.Subscribe(Key{Channel: ChannelBook}, SubscriberFunc(func(e *Event) error {
		s := slot{e.Dataset, e.Conn}
		best, _ := e.Book.Best(book.Bid)
		if best.Price/10000 != int64(s.ds+1) || (best.Price%10000)/1000 != int64(s.conn) {
			return fmt.Errorf("dataset %d conn %d got the level of another slot: %d", s.ds, s.conn, best.Price)
		}
		if b, ok := books[s]; ok && b != e.Book {
			return fmt.Errorf("dataset %d conn %d: another book", s.ds, s.conn)
		}
		books[s] = e.Book
		if want := s != (slot{0, 3}) || e.RecvNs <= closedAt; e.Book.Valid() != want {
			return fmt.Errorf("dataset %d conn %d at %d: book valid %v, want %v (closed at %d)", s.ds, s.conn, e.RecvNs, e.Book.Valid(), want, closedAt)
		}
		if best.Price <= last[s] || (e.Decoded.Type == venue.EventLevel && best.Price != e.Decoded.Price) {
			return fmt.Errorf("dataset %d conn %d: best bid %d after %d (the event's price %d)", s.ds, s.conn, best.Price, last[s], e.Decoded.Price)
		}
		last[s] = best.Price
		events++
		return nil
	}))
	s := run(t, r)
	if len(s.SubscriberFailures) > 0 {
		t.Fatal(s.SubscriberFailures[0].Err)
	}
	if events != 600 || len(books) != 10 {
		t.Fatalf("%d events in %d books, want 600 in 10", events, len(books))
	}
	for a, ba := range books {
		for b, bb := range books {
			if a != b && ba == bb {
				t.Fatalf("slots %v and %v share a book", a, b)
			}
		}
	}
}

// A subscriber added while Run is in progress gets the events of its
// instruments from the next record on, although their routes were
// resolved before it came.
func TestSubscribeDuringRun(t *testing.T) {
	var recs []rec
	for i := range 40 {
		recs = append(recs, frame(uint32(i%2), int64(i+1), fmt.Sprintf("lvl a b %d 1;lvl b b %d 1", 100+i, 200+i)))
	}
	r := newFakeReplayer(t, []string{writeDataset(t, "fakevenue", recs)})
	var late []uint64
	r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
		if e.Seq == 20 && e.Instrument == "a" {
			r.Subscribe(Key{Instrument: "b", Channel: ChannelBook}, SubscriberFunc(func(e *Event) error {
				if e.Instrument != "b" {
					return fmt.Errorf("instrument %q", e.Instrument)
				}
				late = append(late, e.Seq)
				return nil
			}))
		}
		return nil
	}))
	s := run(t, r)
	if len(s.SubscriberFailures) > 0 {
		t.Fatal(s.SubscriberFailures[0].Err)
	}
	if len(late) != 20 || late[0] != 21 || late[19] != 40 {
		t.Fatalf("the late subscriber got records %v, want 21 to 40", late)
	}
}
