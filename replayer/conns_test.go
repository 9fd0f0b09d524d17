package replayer

import (
	"fmt"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

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
