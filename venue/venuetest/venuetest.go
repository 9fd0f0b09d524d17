// Package venuetest is the conformance table every venue driver passes: one
// Suite per driver, built from the venue's real frames, run by Run in the
// driver's own tests and fuzzed by Fuzz from the same seeds. A new venue is
// done when its Suite passes.
//
// What it checks, on the driver's decoder (venue.Driver.NewDecoder):
//
//   - bad input: every Bad frame, decoded after the stream, is rejected with
//     an error that names the field and the byte offset (venue.Locator) and
//     leaves every book's levels as they were;
//   - snapshots and deltas agree: the books built from the stream (a
//     snapshot, then deltas) equal the books a fresh decoder builds from a
//     later snapshot of the same state (Suite.Snapshot);
//   - loss flushes: after Invalidate every book is invalid, Flush has
//     nothing pending, and the stream's snapshots make the books valid
//     again;
//   - zero allocations per frame in steady state (testing.AllocsPerRun);
//   - the fast path equals the generic path: the same frames re-spaced
//     (white space after every ':' and ',', which the fast paths decline)
//     yield the same events and books;
//   - the client and server protocols agree: what the client protocol
//     subscribes, the venue's server session accepts as the same number of
//     subscriptions and answers the heartbeat; fuzz seeds are shared.
package venuetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
)

// Suite is one driver's conformance input, from the venue's real frames.
type Suite struct {
	Driver  venue.Driver
	Options venue.DecoderOptions
	// Stream is a real stream of the venue in order. The first frame that
	// touches an instrument is a snapshot of it.
	Stream [][]byte
	// Bad frames, each rejected after the stream.
	Bad []Bad
	// Snapshot encodes b as the venue's snapshot frame of instrument: what
	// the venue would send on a fresh subscribe.
	Snapshot func(instrument string, b *book.Book) []byte
	// Items are client items to subscribe (venue.ClientProtocol), at least
	// one.
	Items []string
}

// Bad is a frame the decoder must reject, and the field its error names.
type Bad struct {
	Name  string
	Frame []byte
	Field string
}

func (s *Suite) decoder(t testing.TB) venue.Decoder {
	t.Helper()
	return s.Driver.NewDecoder(s.Options)
}

// feed decodes frames, failing the test on an error.
func feed(t testing.TB, d venue.Decoder, frames [][]byte, out *venue.Frame) {
	t.Helper()
	for i, f := range frames {
		if err := d.Decode(f, int64(i+1), out); err != nil {
			t.Fatalf("frame %d (%.80s): %v", i, f, err)
		}
	}
}

// Levels renders every book of d (levels, sorted by instrument), for
// comparisons.
func Levels(d venue.Decoder) string {
	var b bytes.Buffer
	var lv []book.Level
	for _, inst := range d.Instruments(nil) {
		bk := d.Book(inst)
		if bk == nil {
			continue
		}
		fmt.Fprintf(&b, "%s:", inst)
		for _, side := range []book.Side{book.Bid, book.Ask} {
			lv = bk.Top(side, lv[:0], bk.Len(side))
			fmt.Fprintf(&b, " %v", lv)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Run runs the conformance table.
func Run(t *testing.T, s Suite) {
	if len(s.Stream) == 0 || s.Snapshot == nil || len(s.Items) == 0 {
		t.Fatal("venuetest: a Suite needs a Stream, a Snapshot encoder and Items")
	}
	t.Run("bad input", func(t *testing.T) { s.badInput(t) })
	t.Run("snapshot then deltas", func(t *testing.T) { s.snapshotDeltas(t) })
	t.Run("loss flushes", func(t *testing.T) { s.lossFlushes(t) })
	t.Run("allocs", func(t *testing.T) { s.allocs(t) })
	t.Run("fast equals generic", func(t *testing.T) { s.fastGeneric(t) })
	t.Run("protocols", func(t *testing.T) { s.protocols(t) })
}

func (s *Suite) badInput(t *testing.T) {
	if len(s.Bad) == 0 {
		t.Fatal("no bad frames")
	}
	d := s.decoder(t)
	var out venue.Frame
	feed(t, d, s.Stream, &out)
	for _, b := range s.Bad {
		before := Levels(d)
		err := d.Decode(b.Frame, 1, &out)
		if err == nil {
			t.Errorf("%s: accepted", b.Name)
			continue
		}
		var loc venue.Locator
		if !errors.As(err, &loc) {
			t.Errorf("%s: %T %v does not say where (venue.Locator)", b.Name, err, err)
			continue
		}
		field, off := loc.Where()
		if field != b.Field || off < 0 || off > len(b.Frame) {
			t.Errorf("%s: field %q offset %d (frame %d bytes), want field %q: %v", b.Name, field, off, len(b.Frame), b.Field, err)
		}
		if after := Levels(d); after != before {
			t.Errorf("%s: levels changed:\n%s\nto\n%s", b.Name, before, after)
		}
		for _, ev := range out.Events {
			if ev.Type != venue.EventReject {
				t.Errorf("%s: rejected frame yielded a %v event", b.Name, ev.Type)
			}
		}
	}
}

func (s *Suite) snapshotDeltas(t *testing.T) {
	d := s.decoder(t)
	var out venue.Frame
	feed(t, d, s.Stream, &out)
	d.Flush(&out)
	insts := d.Instruments(nil)
	if len(insts) == 0 {
		t.Fatal("the stream built no book")
	}
	fresh := s.decoder(t)
	for _, inst := range insts {
		bk := d.Book(inst)
		// Decoder and driver agree: every book is at the driver's scale,
		// the scale replay gives the events.
		if bk != nil && bk.Scale() != s.Driver.Scale() {
			t.Fatalf("%s: book at scale %+v, the driver says %+v", inst, bk.Scale(), s.Driver.Scale())
		}
		if bk == nil || bk.Len(book.Bid)+bk.Len(book.Ask) == 0 {
			continue
		}
		feed(t, fresh, [][]byte{s.Snapshot(inst, bk)}, &out)
		if got, want := one(fresh, inst), one(d, inst); got != want {
			t.Errorf("%s: a later snapshot gives\n%s\nthe stream gave\n%s", inst, got, want)
		}
	}
}

func one(d venue.Decoder, inst string) string {
	bk := d.Book(inst)
	if bk == nil {
		return "no book"
	}
	var lv []book.Level
	var b bytes.Buffer
	for _, side := range []book.Side{book.Bid, book.Ask} {
		lv = bk.Top(side, lv[:0], bk.Len(side))
		fmt.Fprintf(&b, "%v ", lv)
	}
	return b.String()
}

func (s *Suite) lossFlushes(t *testing.T) {
	d := s.decoder(t)
	var out venue.Frame
	feed(t, d, s.Stream, &out)
	d.Invalidate()
	for _, inst := range d.Instruments(nil) {
		if bk := d.Book(inst); bk != nil && bk.Valid() {
			t.Errorf("%s: book valid after Invalidate", inst)
		}
		if q := d.Quality(inst); d.Book(inst) != nil && !q.AfterGap {
			t.Errorf("%s: quality %+v does not say after gap", inst, q)
		}
	}
	out.Events = out.Events[:0] // Flush appends, and may append nothing
	d.Flush(&out)
	if len(out.Events) != 0 {
		t.Errorf("Flush after Invalidate yielded %d events: the loss did not close the pending batch", len(out.Events))
	}
	feed(t, d, s.Stream, &out)
	d.Flush(&out)
	for _, inst := range d.Instruments(nil) {
		if bk := d.Book(inst); bk != nil && bk.Len(book.Bid)+bk.Len(book.Ask) > 0 && !bk.Valid() {
			t.Errorf("%s: still invalid after the stream's snapshot", inst)
		}
	}
}

func (s *Suite) allocs(t *testing.T) {
	d := s.decoder(t)
	var out venue.Frame
	for range 3 { // warm every pool and map
		feed(t, d, s.Stream, &out)
	}
	i := 0
	n := testing.AllocsPerRun(200, func() {
		f := s.Stream[i%len(s.Stream)]
		i++
		if err := d.Decode(f, int64(i), &out); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per frame, want 0", n)
	}
}

// Spaced returns frame with a space after every ':' and ',' outside JSON
// strings: the same JSON, in a shape the fast paths decline. Non-JSON text
// is returned as is.
func Spaced(frame []byte) []byte {
	t := bytes.TrimSpace(frame)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return frame
	}
	out := make([]byte, 0, len(frame)*5/4)
	in, esc := false, false
	for _, c := range frame {
		out = append(out, c)
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ':' || c == ','):
			out = append(out, ' ')
		}
	}
	return out
}

// events renders the venue-visible content of a frame's events.
func events(out *venue.Frame) string {
	var b bytes.Buffer
	for _, e := range out.Events {
		fmt.Fprintf(&b, "%v %s %s %d %v %d %d %d %d/%d %d/%d %v%v %s %v %s|", e.Type, e.Instrument, e.Market, e.ExchangeNs,
			e.Side, e.Price, e.Size, e.Count, e.BidPrice, e.BidSize, e.AskPrice, e.AskSize, e.HasBid, e.HasAsk, e.ID, e.Backfill, e.Text)
	}
	return b.String()
}

func (s *Suite) fastGeneric(t *testing.T) {
	fast, slow := s.decoder(t), s.decoder(t)
	var a, b venue.Frame
	spacedAny := false
	for i, f := range s.Stream {
		g := Spaced(f)
		spacedAny = spacedAny || len(g) != len(f)
		errA, errB := fast.Decode(f, int64(i+1), &a), slow.Decode(g, int64(i+1), &b)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("frame %d: fast %v, generic %v", i, errA, errB)
		}
		if ea, eb := events(&a), events(&b); ea != eb {
			t.Fatalf("frame %d events:\nfast    %s\ngeneric %s", i, ea, eb)
		}
	}
	if !spacedAny {
		t.Fatal("no JSON frame in the stream")
	}
	fast.Flush(&a)
	slow.Flush(&b)
	if la, lb := Levels(fast), Levels(slow); la != lb {
		t.Errorf("books:\nfast\n%s\ngeneric\n%s", la, lb)
	}
}

func (s *Suite) protocols(t *testing.T) {
	c := s.Driver.Client()
	f := c.Facts()
	if f.PingInterval < 0 || (f.PingInterval > 0) != (len(f.PingFrame) > 0) || f.MaxFrameBytes <= 0 || f.MaxConnItems <= 0 {
		t.Fatalf("facts %+v", f)
	}
	sess := s.Driver.Server().NewSession()
	if f.PingInterval == 0 {
		// No application heartbeat.
	} else if r := sess.Handle(f.PingFrame, false); len(r.Answers) != 1 || r.Close {
		t.Errorf("ping %q: server answers %q", f.PingFrame, r.Answers)
	} else if cl, _ := c.Scan(r.Answers[0], func(_, _ []byte) {}); cl != venue.FramePong {
		t.Errorf("the server's answer to ping %q is not a pong to the client (%v)", r.Answers[0], cl)
	}
	added := 0
	for _, sf := range c.SubscribeFrames(s.Items) {
		r := sess.Handle(sf.Data, false)
		if r.Close {
			t.Fatalf("the server closes on the client's subscribe %s", sf.Data)
		}
		added += len(r.Added)
		for _, a := range r.Answers {
			acker, acks := c.(venue.Acker)
			if cl, _ := c.Scan(a, func(_, _ []byte) {}); acks && cl == venue.FrameAck {
				if it, ok := acker.AckItem(a); !ok || !contains(sf.Items, it) {
					t.Errorf("ack %s names %q, not one of %v", a, it, sf.Items)
				}
			}
		}
	}
	if added != len(s.Items) {
		t.Errorf("%d items subscribed, the server took %d", len(s.Items), added)
	}
	removed := 0
	for _, rf := range c.RemoveFrames(s.Items) {
		removed += len(sess.Handle(rf.Data, false).Removed)
	}
	if removed != len(s.Items) {
		t.Errorf("%d items unsubscribed, the server dropped %d", len(s.Items), removed)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Seeds returns the fuzz seeds every driver shares: the stream, each frame
// truncated and re-spaced, the bad frames, and shapes hostile to any JSON
// decoder.
func Seeds(s Suite) [][]byte {
	var out [][]byte
	for _, f := range s.Stream {
		out = append(out, f, f[:len(f)*2/3], Spaced(f))
	}
	for _, b := range s.Bad {
		out = append(out, b.Frame)
	}
	for _, x := range []string{"", "null", "[]", "{}", `"str"`, "42", "[null]", "[1,{}]", "PING", "PONG",
		`{"a":` + string(bytes.Repeat([]byte("["), 200)), "\xff\xfe"} {
		out = append(out, []byte(x))
	}
	return out
}

// Bounds of Fuzz's seeds and inputs, in bytes.
const (
	MaxFuzzSeed  = 2 << 10
	MaxFuzzInput = 16 << 10
)

// Fuzz registers the shared seeds and fuzzes the driver's decoder after the
// stream: no panic; a rejected frame says where (venue.Locator, an offset
// inside the frame) and leaves every level as it was; every book stays
// sorted with positive sizes.
//
// Seeds over MaxFuzzSeed bytes are left out and inputs over MaxFuzzInput
// skipped, so that an input and the minimising of a new one stay quick
// (Polymarket's 5 KB books as seeds: 51 inputs in 20 s).
func Fuzz(f *testing.F, s Suite) {
	for _, seed := range Seeds(s) {
		if len(seed) <= MaxFuzzSeed {
			f.Add(seed)
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > MaxFuzzInput {
			t.Skip("bounded so that the fuzzer explores")
		}
		d := s.decoder(t)
		var out venue.Frame
		feed(t, d, s.Stream, &out)
		before := Levels(d)
		err := d.Decode(frame, 1, &out)
		if err != nil {
			var loc venue.Locator
			if !errors.As(err, &loc) {
				t.Fatalf("%T %v does not say where", err, err)
			}
			if _, off := loc.Where(); off < 0 || off > len(frame) {
				t.Fatalf("offset %d outside the %d-byte frame: %v", off, len(frame), err)
			}
			t := bytes.TrimSpace(frame)
			if len(t) == 0 || t[0] != '[' { // an array applies element by element
				if after := Levels(d); after != before {
					panic(fmt.Sprintf("levels changed by a rejected frame: %v", err))
				}
			}
		}
		d.Flush(&out)
		var lv []book.Level
		for _, inst := range d.Instruments(nil) {
			bk := d.Book(inst)
			if bk == nil {
				continue
			}
			for _, side := range []book.Side{book.Bid, book.Ask} {
				lv = bk.Top(side, lv[:0], bk.Len(side))
				for i, l := range lv {
					if l.Size <= 0 || (i > 0 && ((side == book.Bid && l.Price >= lv[i-1].Price) || (side == book.Ask && l.Price <= lv[i-1].Price))) {
						t.Fatalf("%s %v: bad level %d in %v", inst, side, i, lv)
					}
				}
			}
		}
	})
}
