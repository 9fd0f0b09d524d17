package replayer

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// fakeDecoder is a tiny venue decoder for engine tests that must not depend
// on a real venue's wire format. A frame is events separated by ';', each a
// space-separated list:
//
//	snap INST BIDPX BIDSZ ASKPX ASKSZ   replace the book with one level a side
//	lvl INST b|a PX SZ                  set a level
//	trade INST PX SZ                    a trade
//	bad                                 the whole frame is rejected
//
// Prices and sizes are integers (scale 0).
type fakeDecoder struct {
	name   string
	books  map[string]*book.Book
	ids    map[string]string // interned instrument ids
	stats  venue.Stats
	levels [2]book.Level
}

func newFake(name string) *fakeDecoder {
	return &fakeDecoder{name: name, books: map[string]*book.Book{}, ids: map[string]string{}}
}

func fakeFactory(name string) (venue.Decoder, error) {
	if name != "fakevenue" && name != "othervenue" {
		return nil, ErrVenue
	}
	return newFake(name), nil
}

var _ venue.Decoder = (*fakeDecoder)(nil)

var errFakeBad = errors.New("fake: bad frame")

func (d *fakeDecoder) intern(b []byte) string {
	if s, ok := d.ids[string(b)]; ok {
		return s
	}
	s := string(b)
	d.ids[s] = s
	return s
}

func fakeInt(b []byte) int64 {
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return n
}

func (d *fakeDecoder) Decode(frame []byte, recvNs int64, out *venue.Frame) error {
	out.Events = out.Events[:0]
	d.stats.Frames++
	// Validate first so a rejected frame leaves the books untouched.
	rest := frame
	for len(rest) > 0 {
		part := rest
		if i := bytes.IndexByte(rest, ';'); i >= 0 {
			part, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if bytes.HasPrefix(bytes.TrimSpace(part), []byte("bad")) {
			d.stats.Errors++
			return errFakeBad
		}
	}
	rest = frame
	for len(rest) > 0 {
		part := rest
		if i := bytes.IndexByte(rest, ';'); i >= 0 {
			part, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		var f [6][]byte
		n := 0
		for _, tok := range bytes.Split(part, []byte(" ")) {
			if len(tok) > 0 && n < len(f) {
				f[n] = tok
				n++
			}
		}
		if n < 2 {
			continue
		}
		inst := d.intern(f[1])
		bk := d.books[inst]
		if bk == nil {
			bk = book.New(book.Scale{})
			d.books[inst] = bk
		}
		ev := venue.Event{Instrument: inst, ExchangeNs: recvNs, Raw: part}
		switch string(f[0]) {
		case "snap":
			d.levels[0] = book.Level{Price: fakeInt(f[2]), Size: fakeInt(f[3])}
			d.levels[1] = book.Level{Price: fakeInt(f[4]), Size: fakeInt(f[5])}
			bk.Replace(d.levels[:1], d.levels[1:])
			ev.Type, ev.Book = venue.EventSnapshot, bk
		case "lvl":
			side := book.Bid
			if string(f[2]) == "a" {
				side = book.Ask
			}
			bk.Set(side, fakeInt(f[3]), fakeInt(f[4]), 0)
			ev.Type, ev.Book, ev.Side, ev.Price, ev.Size = venue.EventLevel, bk, side, fakeInt(f[3]), fakeInt(f[4])
		case "trade":
			ev.Type, ev.Price, ev.Size = venue.EventTrade, fakeInt(f[2]), fakeInt(f[3])
		default:
			ev.Type = venue.EventUnknown
		}
		d.stats.Events[ev.Type]++
		out.Events = append(out.Events, ev)
	}
	return nil
}

// Flush appends nothing, like the Polymarket decoder: the replayer must not
// mistake the previous frame's events for flushed ones.
func (d *fakeDecoder) Flush(out *venue.Frame) {}

func (d *fakeDecoder) Invalidate() {
	for _, b := range d.books {
		b.Invalidate()
	}
}

func (d *fakeDecoder) Book(instrument string) *book.Book { return d.books[instrument] }

func (d *fakeDecoder) Instruments(dst []string) []string {
	n := len(dst)
	for k := range d.books {
		dst = append(dst, k)
	}
	slices.Sort(dst[n:])
	return dst
}

func (d *fakeDecoder) Quality(instrument string) venue.Quality {
	b := d.books[instrument]
	if b == nil {
		return venue.Quality{}
	}
	return venue.Quality{Crossed: b.Crossed()}
}

func (d *fakeDecoder) Stats() venue.Stats { return d.stats }

// rec is a test record: kind, connection, wall time and payload.
type rec struct {
	kind    datasets.Kind
	conn    uint32
	wallNs  int64
	payload string
}

func frame(conn uint32, wallNs int64, payload string) rec {
	return rec{datasets.KindFrame, conn, wallNs, payload}
}

// writeDataset creates a dataset in a new temporary directory.
func writeDataset(t testing.TB, venueName string, recs []rec) string {
	t.Helper()
	dir := t.TempDir() + "/ds"
	m := datasets.Manifest{Venue: venueName, Endpoint: "test://" + venueName}
	if len(recs) > 0 {
		m.StartNs = recs[0].wallNs
	}
	w, err := datasets.Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if _, err := w.Append(&datasets.Record{Kind: r.kind, Conn: r.conn, WallNs: r.wallNs, MonoNs: r.wallNs, Payload: []byte(r.payload)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
