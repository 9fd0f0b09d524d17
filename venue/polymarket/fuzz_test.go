package polymarket

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// FuzzDecode: never panics; a rejected frame leaves every book as it was and
// yields no events; an accepted one leaves every book sorted with positive
// sizes; an object decodes the same alone and wrapped in an array.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"real", "bench"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*json*"))
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			for _, line := range bytes.Split(b, []byte("\n")) {
				if len(line) > 0 {
					f.Add(line)
				}
			}
		}
	}
	f.Add([]byte("PONG"))
	f.Add([]byte(`{"event_type":"book","asset_id":"1","bids":[{"price":".5","size":"1"}, {"price":"0.40","size":"2.000000"}],"asks":[]}`))
	base := readLines(f, "real/polypy_hash_vector_ws_2025-10.ndjson")[0]
	newDecoder := func() *Decoder {
		d := NewDecoder(WithInstrumentInfo(InstrumentInfo{AssetID: pyAsset, MinOrderSize: "5", TickSize: "0.01"}))
		var out venue.Frame
		if err := d.Decode(base, 0, &out); err != nil {
			f.Fatal(err)
		}
		return d
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 1<<20 {
			return
		}
		d := newDecoder()
		before := digest(d)
		out := venue.Frame{Events: make([]venue.Event, 3)}
		err := d.Decode(frame, 0, &out)
		if err != nil {
			if len(out.Events) != 0 {
				t.Fatalf("%d events with error %v", len(out.Events), err)
			}
			if digest(d) != before {
				t.Fatalf("books changed by rejected frame: %v", err)
			}
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			return
		}
		d.Flush(nil)
		for _, id := range d.Instruments(nil) {
			checkInvariants(t, d.Book(id))
		}
		if trimmed := bytes.TrimSpace(frame); len(trimmed) > 0 && trimmed[0] == '{' {
			d2 := newDecoder()
			wrapped := append(append([]byte("["), frame...), ']')
			if err := d2.Decode(wrapped, 0, &venue.Frame{}); err != nil {
				t.Fatalf("object accepted but rejected inside an array: %v", err)
			}
			if digest(d2) != digest(d) {
				t.Fatal("object and [object] gave different books")
			}
		}
	})
}

func checkInvariants(t *testing.T, b *book.Book) {
	t.Helper()
	for _, side := range []book.Side{book.Bid, book.Ask} {
		lv := b.Top(side, nil, -1)
		for i, l := range lv {
			if l.Size <= 0 || l.Price < 0 {
				t.Fatalf("%v level %d: %+v", side, i, l)
			}
			if i > 0 && (side == book.Bid && l.Price >= lv[i-1].Price || side == book.Ask && l.Price <= lv[i-1].Price) {
				t.Fatalf("%v side not sorted best first at %d: %v", side, i, lv)
			}
		}
	}
}
