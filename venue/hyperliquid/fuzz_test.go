package hyperliquid

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// FuzzDecode feeds arbitrary frames to a decoder that already holds books.
// It must never panic; a rejected frame leaves every level and instrument
// as before and yields only EventReject events; an accepted frame leaves
// every book strictly sorted with positive sizes, and is valid JSON unless it
// was taken as non-JSON text.
func FuzzDecode(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.*json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	for _, name := range files {
		for _, l := range lines(f, filepath.Base(name)) {
			f.Add(l)
			f.Add(l[:len(l)*2/3]) // truncated
		}
	}
	for _, s := range []string{snap, bbo(`null`, `{"px":"100.5","sz":"3"}`), `{"channel":"pong"}`,
		`{"data":{"coin":"X","levels":[[],[]]},"channel":"l2Book"}`, "PING", "",
		"null", `"str"`, "[]", "42", `{"universe":[]}`,
		`{"channel":"subscriptionResponse","data":{"method":"subscribe","subscription":{"type":"trades","coin":"X"}}}`,
		`{"channel":"l2Book","data":{"coin":"X","time":1,"levels":[[{"px":"101","sz":"1","n":1}],[{"px":"100","sz":"1","n":1}]]}}`} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "l2book_btc_20x2.json")); err == nil {
		f.Add(bytes.ReplaceAll(b, []byte(`"118234.0"`), []byte(`"118234.000000001"`)))
	}

	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 1<<20 {
			t.Skip("frames are bounded by the recorder; keep the harness small")
		}
		var ds [2]*Decoder
		for i := range ds {
			d := NewDecoder(WithMaxLevels(64), WithMaxInstruments(8))
			d.generic = i == 1
			mustDecode(t, d, snap)
			mustDecode(t, d, `{"channel":"l2Book","data":{"coin":"BTC","time":1,"levels":[[{"px":"84143","sz":"1","n":3}],[]]}}`)
			mustDecode(t, d, bbo(`{"px":"99.5","sz":"1"}`, `{"px":"101","sz":"2"}`))
			ds[i] = d
		}
		// RouteFrame walks the same bytes for the serve mode: it must not
		// panic, and it routes every envelope the decoder accepts.
		route, routeErr := RouteFrame(frame)
		if routeErr == nil && route.Channel == nil {
			t.Fatalf("RouteFrame gave no channel for %q", frame)
		}
		d := ds[0]
		before := captureLevels(d)
		var out, slow venue.Frame
		err := d.Decode(frame, 1, &out)
		// Two paths to one answer: the generic path agrees with the fast one.
		errSlow := ds[1].Decode(frame, 1, &slow)
		if (err == nil) != (errSlow == nil) || (err != nil && err.Error() != errSlow.Error()) {
			t.Fatalf("fast path: %v\ngeneric path: %v", err, errSlow)
		}
		if !sameEvents(out.Events, slow.Events) || !capture(d).equal(capture(ds[1])) {
			t.Fatalf("fast and generic paths disagree on %q", frame)
		}
		if err != nil {
			for _, ev := range out.Events {
				if ev.Type != venue.EventReject {
					t.Fatalf("%v event with error %v", ev.Type, err)
				}
			}
			if after := captureLevels(d); !before.equal(after) {
				t.Fatalf("state changed on error %v:\n%v\n%v", err, before, after)
			}
			if de, ok := err.(*DecodeError); !ok || de.Offset < 0 || de.Offset > len(frame) {
				t.Fatalf("error %T %v: not a DecodeError inside the frame", err, err)
			}
			if strings.Contains(err.Error(), "%!") {
				t.Fatalf("bad format: %v", err)
			}
			return
		}
		trimmed := bytes.TrimSpace(frame)
		if len(trimmed) > 0 && trimmed[0] == '{' && !json.Valid(frame) {
			t.Fatalf("accepted invalid JSON %q", frame)
		}
		// An envelope-less object of another shape (an info body) is a
		// skipped message with no channel, not routed.
		skipped := len(out.Events) == 1 && out.Events[0].Type == venue.EventUnknown && out.Events[0].Text == nil
		if routeErr != nil && len(trimmed) > 0 && trimmed[0] == '{' && !skipped && (len(out.Events) == 0 || out.Events[0].Type != venue.EventSnapshot) {
			t.Fatalf("decoded but not routed (%v): %q", routeErr, frame)
		}
		if len(out.Events) == 0 && !bytes.Contains(frame, []byte("trades")) {
			t.Fatalf("no events for %q", frame)
		}
		for _, name := range d.Instruments(nil) {
			b := d.Book(name)
			for side := book.Bid; side <= book.Ask; side++ {
				lv := b.Top(side, nil, -1)
				for i, l := range lv {
					if l.Size <= 0 || l.Price <= 0 {
						t.Fatalf("%s %v[%d] = %+v", name, side, i, l)
					}
					if i > 0 && ((side == book.Bid) != (l.Price < lv[i-1].Price)) {
						t.Fatalf("%s %v not strictly best-first: %v", name, side, lv)
					}
				}
			}
		}
		for _, e := range out.Events {
			if e.Book != nil && e.Book != d.Book(e.Instrument) {
				t.Fatalf("event book is not the instrument's")
			}
			if e.Type == venue.EventSnapshot && !e.Book.Valid() {
				t.Fatalf("snapshot left an invalid book")
			}
		}
	})
}

// sameEvents compares events field by field, books by instrument.
func sameEvents(a, b []venue.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !bytes.Equal(x.Raw, y.Raw) || !bytes.Equal(x.Text, y.Text) || (x.Book == nil) != (y.Book == nil) {
			return false
		}
		x.Raw, x.Text, x.Book = nil, nil, nil
		y.Raw, y.Text, y.Book = nil, nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}
