package polymarket

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// FuzzDecode: never panics; a rejected object or non-array frame changes
// no level and yields only EventReject events; every book stays sorted with
// positive sizes; an object decodes the same alone and wrapped in an array,
// accepted or rejected.
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
				// Frames under 2 KiB: an input and the minimising of a new
				// one stay quick (with the 5 KB books as seeds it ran 85
				// inputs in 20 s); the large books are the unit tests'.
				if len(line) > 0 && len(line) <= 2<<10 {
					f.Add(line)
				}
			}
		}
	}
	f.Add([]byte("PONG"))
	for _, seed := range []string{"null", "[]", `"str"`, "[null]", "true", "[1,{}]",
		`[{"asset_id":"1","market":"0x1","bids":[],"asks":[],"last_trade_price":""},{"asset_id":"2","bids":[{"price":"0.5","size":"-1"}],"asks":[]}]`,
		`{"event_type":"price_change","market":"0x1","price_changes":[{"asset_id":"1","price":"0.5","size":"1","side":"BUY","hash":"","best_bid":"","best_ask":"1"}]}`,
		`{"event_type":"best_bid_ask","asset_id":"1","best_bid":"","best_ask":"1"}`} {
		f.Add([]byte(seed))
	}
	f.Add([]byte(`{"event_type":"book","asset_id":"1","bids":[{"price":".5","size":"1"}, {"price":"0.40","size":"2.000000"}],"asks":[]}`))
	base := readLines(f, "real/polypy_hash_vector_ws_2025-10.ndjson")[0]
	newDecoder := func() *Decoder {
		d := NewDecoder(withInstrumentInfo(instrumentInfo{AssetID: pyAsset, MinOrderSize: "5", TickSize: "0.01"}))
		var out venue.Frame
		if err := d.Decode(base, 0, &out); err != nil {
			f.Fatal(err)
		}
		return d
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 16<<10 {
			return
		}
		d := newDecoder()
		before := levelsDigest(d)
		out := venue.Frame{Events: make([]venue.Event, 3)}
		err := d.Decode(frame, 0, &out)
		trimmed := bytes.TrimSpace(frame)
		array := len(trimmed) > 0 && trimmed[0] == '['
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			if !array {
				for _, ev := range out.Events {
					if ev.Type != venue.EventReject {
						t.Fatalf("%v event with error %v", ev.Type, err)
					}
				}
				if levelsDigest(d) != before {
					t.Fatalf("levels changed by rejected frame: %v", err)
				}
			}
		}
		d.Flush(nil)
		for _, id := range d.Instruments(nil) {
			checkInvariants(t, d.Book(id))
		}
		if len(trimmed) > 0 && trimmed[0] == '{' {
			d2 := newDecoder()
			wrapped := append(append([]byte("["), frame...), ']')
			err2 := d2.Decode(wrapped, 0, &venue.Frame{})
			if (err == nil) != (err2 == nil) {
				t.Fatalf("object alone: %v; inside an array: %v", err, err2)
			}
			d2.Flush(nil)
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
