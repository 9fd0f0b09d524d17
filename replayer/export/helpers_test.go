package export

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// Receive times of the test datasets: a 2025 base and a step that puts
// several frames in one 100ms bucket and skips others.
const (
	baseNs = 1_761_179_880_000_000_000
	stepNs = 37_000_000
)

// rec is one record of a test dataset: a frame (payload) or a control.
type rec struct {
	kind    datasets.Kind
	payload []byte
	ctl     *datasets.Control
}

func frames(t testing.TB, name string) []rec {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []rec
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		out = append(out, rec{kind: datasets.KindFrame, payload: bytes.Clone(sc.Bytes())})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func ctl(k datasets.Kind, c datasets.Control) rec { return rec{kind: k, ctl: &c} }

// writeDataset writes recs stepNs apart from baseNs+offsetNs into a new
// dataset under t.TempDir and returns its path.
func writeDataset(t testing.TB, venueName string, offsetNs int64, recs []rec) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), venueName)
	w, err := datasets.Create(dir, datasets.Manifest{Venue: venueName, Endpoint: "wss://test.invalid/ws"})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		now := baseNs + offsetNs + int64(i)*stepNs
		p := r.payload
		if r.ctl != nil {
			p = datasets.EncodeControl(*r.ctl)
		}
		if _, err := w.Append(&datasets.Record{Kind: r.kind, WallNs: now, MonoNs: now - baseNs, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pmRecords is a Polymarket session built from real frames: a connection,
// books and price changes of three assets, a trade, a disconnect with a
// reconnect (books invalid until the next snapshot), a gap, then the stream
// again from its initial dump.
func pmRecords(t testing.TB) []rec {
	var r []rec
	r = append(r, ctl(datasets.KindConnect, datasets.Control{URL: "wss://ws-subscriptions-clob.polymarket.com/ws/market"}))
	r = append(r, frames(t, "polypy_hash_vector_ws_2025-10.ndjson")...)
	r = append(r, frames(t, "nautilus_ws_book_2024-10.ndjson")...)
	r = append(r, frames(t, "polypy_semisynthetic_stream_single_asset.ndjson")...)
	r = append(r, ctl(datasets.KindDisconnect, datasets.Control{Code: 1006, Reason: "abnormal closure", Err: "read: connection reset by peer"}))
	r = append(r, ctl(datasets.KindReconnect, datasets.Control{Attempt: 1}))
	r = append(r, ctl(datasets.KindConnect, datasets.Control{URL: "wss://ws-subscriptions-clob.polymarket.com/ws/market"}))
	r = append(r, frames(t, "polypy_semisynthetic_stream_single_asset.ndjson")...)
	r = append(r, ctl(datasets.KindGap, datasets.Control{FromNs: baseNs, ToNs: baseNs + stepNs, Text: "test gap"}))
	r = append(r, frames(t, "polypy_hash_vector_ws_2025-10.ndjson")...)
	r = append(r, ctl(datasets.KindCleanClose, datasets.Control{}))
	return r
}

// hlRecords is a Hyperliquid session from real frames: acks, two BTC
// l2Book snapshots, a bbo merged between them, trades, and a stall.
func hlRecords(t testing.TB) []rec {
	var r []rec
	r = append(r, ctl(datasets.KindConnect, datasets.Control{URL: "wss://api.hyperliquid.xyz/ws"}))
	r = append(r, frames(t, "order_book_server_ack_l2book_trades_2025-07.ndjson")...)
	r = append(r, ctl(datasets.KindStall, datasets.Control{Instruments: []string{"BTC"}, FromNs: baseNs, ToNs: baseNs + 3*stepNs}))
	r = append(r, frames(t, "arbitrage_observatory_probe_2026-09_core.ndjson")...)
	r = append(r, ctl(datasets.KindCleanClose, datasets.Control{}))
	return r
}

// sampleMiddle returns the shipped sample of venue v and the middle third of
// its receive times, [from, to): a window whose books were built before it.
func sampleMiddle(t testing.TB, v string) (path string, from, to int64) {
	t.Helper()
	path = filepath.Join("..", "..", "datasets", "samples", v)
	r, err := replayer.New([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	span := r.EndNs() - r.StartNs()
	return path, r.StartNs() + span/3, r.StartNs() + 2*span/3
}

// replay runs the datasets through the real replayer into subs (each with Key{}).
func replay(t testing.TB, paths []string, subs ...replayer.Subscriber) *replayer.Summary {
	t.Helper()
	return replayWith(t, paths, nil, subs...)
}

// replayWith is replay with options for the replayer (a window).
func replayWith(t testing.TB, paths []string, ropts []replayer.Option, subs ...replayer.Subscriber) *replayer.Summary {
	t.Helper()
	r, err := replayer.New(paths, ropts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		r.Subscribe(replayer.Key{}, s)
	}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sum.SubscriberFailures {
		t.Fatalf("subscriber failed: %+v", f)
	}
	return sum
}

// state is a book as the truth recorder saw it, prices and sizes as the
// exact decimal text book.FormatDecimal gives.
type state struct {
	recvNs     int64
	exchNs     int64
	dataset    int
	instrument string
	bids, asks [][3]string // price, size, count
	valid      bool
	crossed    bool
	estimated  bool
}

// truth records the book after every event that changed it, independently
// of the sink: a second path to the same answer.
type truth struct {
	levels int
	states []state
	gens   map[instKey]uint64
}

func newTruth(levels int) *truth { return &truth{levels: levels, gens: map[instKey]uint64{}} }

func (tr *truth) OnEvent(e *replayer.Event) error {
	if e.Book == nil || e.Instrument == "" {
		return nil
	}
	k := instKey{e.Dataset, e.Instrument}
	if g, ok := tr.gens[k]; ok && g == e.Book.Generation() {
		return nil
	}
	tr.gens[k] = e.Book.Generation()
	st := state{recvNs: e.RecvNs, dataset: e.Dataset, instrument: e.Instrument,
		valid: e.Book.Valid(), crossed: e.Quality.Crossed, estimated: e.Quality.Estimated}
	if e.Decoded != nil {
		st.exchNs = e.Decoded.ExchangeNs
	}
	st.bids = levelsText(e.Book, book.Bid, tr.levels, e.Scale)
	st.asks = levelsText(e.Book, book.Ask, tr.levels, e.Scale)
	tr.states = append(tr.states, st)
	return nil
}

// lastValid returns, in order, each instrument's last state at each receive
// time where that state is valid: the books an export must rebuild as of
// that time.
func (tr *truth) lastValid() []state { return tr.last(false) }

// last returns, in order, each instrument's last state at each receive
// time: the valid ones only, or (withInvalid) the invalid ones too.
func (tr *truth) last(withInvalid bool) []state {
	last := map[string]int{}
	key := func(st *state) string { return st.instrument + "\x00" + strconv.FormatInt(st.recvNs, 10) }
	for i := range tr.states {
		last[key(&tr.states[i])] = i
	}
	var out []state
	for i := range tr.states {
		if st := &tr.states[i]; last[key(st)] == i && (st.valid || withInvalid) {
			out = append(out, *st)
		}
	}
	return out
}

func levelsText(b *book.Book, side book.Side, n int, sc book.Scale) [][3]string {
	var out [][3]string
	for _, l := range b.Top(side, nil, n) {
		out = append(out, [3]string{book.FormatDecimal(l.Price, sc.PriceDecimals),
			book.FormatDecimal(l.Size, sc.SizeDecimals), itoa(int64(l.Count))})
	}
	return out
}

// sinkTo builds a sink writing into buf, failing the test on an option error.
func sinkTo(t testing.TB, buf *bytes.Buffer, tb Table, f Format, opts ...Option) *Sink {
	t.Helper()
	s, err := New(buf, tb, f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// synthBook drives a book the way a decoder would and hands the sink events,
// for tests and benchmarks that must not depend on a venue's wire format.
type synthBook struct {
	bk    *book.Book
	ev    replayer.Event
	dec   venue.Event
	now   int64
	scale book.Scale
}

func newSynthBook(inst string, levels int) *synthBook {
	sc := book.Scale{PriceDecimals: 4, SizeDecimals: 6}
	s := &synthBook{bk: book.New(sc), now: baseNs, scale: sc}
	bids := make([]book.Level, levels)
	asks := make([]book.Level, levels)
	for i := range bids {
		bids[i] = book.Level{Price: int64(4800 - i*10), Size: int64(100_250_000 + i*1_000_000)}
		asks[i] = book.Level{Price: int64(5200 + i*10), Size: int64(90_500_000 + i*1_000_000)}
	}
	if err := s.bk.Replace(bids, asks); err != nil {
		panic(err)
	}
	s.ev = replayer.Event{Venue: venue.Polymarket, Kind: datasets.KindFrame, Channel: replayer.ChannelBook,
		Instrument: inst, Decoded: &s.dec, Book: s.bk, Scale: sc}
	s.dec = venue.Event{Type: venue.EventSnapshot, Instrument: inst, Book: s.bk}
	return s
}

// next applies the i-th synthetic level change and returns its event.
func (s *synthBook) next(i int) *replayer.Event {
	s.now += 1_000_000 // 1ms
	side := book.Side(i & 1)
	off := int64((i >> 1) % 20)
	price := int64(4800) - off*10
	if side == book.Ask {
		price = 5200 + off*10
	}
	size := int64(1_000_000 + (i%97)*250_000)
	if i%11 == 0 {
		size = 0
	}
	_ = s.bk.Set(side, price, size, 0)
	s.dec = venue.Event{Type: venue.EventLevel, Instrument: s.ev.Instrument, ExchangeNs: s.now - 5_000_000,
		Side: side, Price: price, Size: size, Book: s.bk}
	s.ev.RecvNs = s.now
	s.ev.Seq++
	return &s.ev
}
