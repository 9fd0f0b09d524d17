package export

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// Event flags of hftbacktest's event arrays (py-hftbacktest/hftbacktest/types.py,
// hftbacktest/src/types.rs): the kind in the low byte, the flags above it.
const (
	HbtDepthEvent    = 1       // a level's new quantity (0 deletes it)
	HbtTradeEvent    = 2       // a trade: px, qty, the initiator's side
	HbtDepthClear    = 3       // clear the book; no side flag: both sides, px NaN: every level
	HbtDepthSnapshot = 4       // a level of a snapshot, applied as a depth event
	HbtExchEvent     = 1 << 31 // the exchange processor handles it at exch_ts
	HbtLocalEvent    = 1 << 30 // the local (strategy) processor handles it at local_ts
	HbtBuyEvent      = 1 << 29 // bid side; for a trade, the initiator bought
	HbtSellEvent     = 1 << 28 // ask side; for a trade, the initiator sold

	// hbtDayStart marks, in the spool only, the rows of the snapshot that
	// opens a day file; their exchange time is set when the file is written.
	hbtDayStart = 1 << 8
)

// hbtEvent is one row of an event array; order_id, ival and fval are zero.
type hbtEvent struct {
	ev              uint64
	exchNs, localNs int64
	px, qty         float64
}

// HftBacktest writes hftbacktest's native data: for every instrument and UTC
// day (of the receive time) with data, one .npz holding "data", an array of
// hftbacktest's event_dtype (ev, exch_ts, local_ts, px, qty, order_id, ival,
// fval; times in ns) in the order its backtester reads: each row flagged
// HbtExchEvent, HbtLocalEvent or both, the exchange-flagged rows in exch_ts
// order and the local-flagged ones in local_ts order (a row whose exchange
// time is out of order appears twice, once per flag, as hftbacktest's own
// correct_event_order does). Replaying the local-flagged rows rebuilds the
// replay's book exactly:
//
//   - a venue snapshot is a HbtDepthClear (px NaN: every level of both
//     sides) and then a HbtDepthSnapshot row per level;
//   - a level change is a HbtDepthEvent (qty 0 deletes the level);
//   - any other change of the book (Hyperliquid's bbo merged into it) is the
//     HbtDepthEvent rows that turn the previous book into the new one;
//   - a loss or a rejected frame, which leaves the book invalid until its
//     next snapshot, is a HbtDepthClear: the backtest sees an empty book,
//     and the level changes until that snapshot are left out (they would
//     build a partial book; trades are kept);
//   - a trade is a HbtTradeEvent with the taker's side (backfilled trades,
//     history replayed by the venue at a subscribe, are left out);
//   - each file after an instrument's first opens with a HbtDepthClear and a
//     snapshot of the book as it was at 00:00 UTC (local_ts the day's start),
//     so a backtest can start on any day's file;
//   - in a windowed replay (the books built silently before the window), an
//     instrument's first event in the window opens its file with a
//     HbtDepthClear and a snapshot of the book as it then stands.
//
// exch_ts is the venue's time (local_ts when the message has none); local_ts
// is the receive time, never shifted: where the venue's clock is ahead of
// the receive clock exch_ts exceeds local_ts, and the file says so.
//
// Rows wait in an unlinked temporary file until their day ends; a day's
// files are built a group of instruments at a time, so memory holds about
// hbtBudgetRows rows or one instrument's day, whichever is more (an
// instrument's day is one array: hftbacktest loads it whole). Like a Sink,
// an HftBacktest is not safe for concurrent use and never closes the
// writers open returns.
type HftBacktest struct {
	open   func(venue, instrument, date string) (io.Writer, error)
	cfg    config
	insts  instIndex[hbtInst]
	byName map[string]*hbtInst
	names  interned
	all    []*hbtInst
	today  []*hbtInst // instruments with rows in the current day, in order of their first
	day    int64      // current UTC day number; valid once started
	start  bool
	spool  *os.File
	sw     *bufio.Writer
	budget int // rows per group when the day is written
	rows   uint64
	err    error
	closed bool
	old    []book.Level
	cur    []book.Level
}

type hbtInst struct {
	id        uint32
	dataset   int
	venue     string
	name      string
	mirror    *book.Book // the book as the rows so far describe it
	day       int64      // the last day it had rows; -1 none
	dayRows   int
	lastExch  int64
	rows      []hbtEvent // the day's rows, while its file is written
	scale     book.Scale
	inGroup   bool
	hasMirror bool
	synced    bool // a snapshot of its book has been written
}

// hbtBudgetRows bounds the rows held in memory while a day's files are built.
const hbtBudgetRows = 4 << 20

const nsPerDay = int64(24 * time.Hour)

// hbtSpoolBytes is one spooled row: instrument id (uint32) and the five
// non-zero fields.
const hbtSpoolBytes = 4 + 5*8

// NewHftBacktest returns an HftBacktest writing each instrument's day to
// the writer open returns for it (called once per file, when its day ends
// or at Close, with the venue, the instrument and the date as YYYYMMDD).
// Options: WithInstruments and WithShard select instruments; the others
// do not apply (ErrOption).
func NewHftBacktest(open func(venue, instrument, date string) (io.Writer, error), opts ...Option) (*HftBacktest, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.intervalNs != 0 || cfg.exact || cfg.quality || cfg.tardisExchange != "" || cfg.snapshots != 0 || cfg.nautilus != 0 {
		return nil, fmt.Errorf("%w: hftbacktest data takes instrument and shard options only", ErrOption)
	}
	return &HftBacktest{open: open, cfg: cfg, byName: map[string]*hbtInst{}, budget: hbtBudgetRows}, nil
}

// Rows returns the number of event rows written so far (a row flagged for
// both processors counts once).
func (h *HftBacktest) Rows() uint64 { return h.rows }

// OnEvent turns e into rows. It returns the first error of a write (sticky),
// and ErrClosed after Close.
func (h *HftBacktest) OnEvent(e *replayer.Event) error {
	if h.closed {
		return ErrClosed
	}
	if h.err != nil {
		return h.err
	}
	if e.Instrument == "" {
		return nil // each loss also arrives once per instrument it invalidates
	}
	if h.cfg.instruments != nil && !h.cfg.wanted(e) {
		return nil
	}
	if !h.cfg.owned(e) {
		return nil
	}
	if err := h.toDay(e.RecvNs); err != nil {
		return err
	}
	d := e.Decoded
	if e.Kind.IsLoss() || (d != nil && d.Type == venue.EventReject) {
		in, _ := h.insts.get(e.Dataset, e.Instrument)
		if in == nil || h.empty(in.mirror) {
			return nil
		}
		h.begin(in, false)
		h.put(in, hbtEvent{ev: HbtDepthClear, exchNs: in.lastExch, localNs: e.RecvNs, px: math.NaN()})
		in.mirror.Clear()
		return h.err
	}
	if d == nil {
		return nil
	}
	exch := d.ExchangeNs
	if exch == 0 {
		exch = e.RecvNs
	}
	switch d.Type {
	case venue.EventSnapshot:
		if e.Book == nil {
			return nil
		}
		in, err := h.inst(e)
		if err != nil {
			return err
		}
		h.snapshot(in, e.Book, exch, e.RecvNs)
	case venue.EventLevel:
		in, err := h.inst(e)
		if err != nil {
			return err
		}
		if h.opening(in, e, exch) || h.invalid(e) {
			return h.err
		}
		h.begin(in, false)
		in.lastExch = max(in.lastExch, exch)
		h.put(in, h.level(in, HbtDepthEvent, d.Side, book.Level{Price: d.Price, Size: d.Size}, exch, e.RecvNs))
		_ = in.mirror.Set(d.Side, d.Price, d.Size, 0)
	case venue.EventTrade:
		if d.Backfill {
			return nil
		}
		in, err := h.inst(e)
		if err != nil {
			return err
		}
		h.opening(in, e, exch)
		h.begin(in, false)
		in.lastExch = max(in.lastExch, exch)
		h.put(in, h.level(in, HbtTradeEvent, d.Side, book.Level{Price: d.Price, Size: d.Size}, exch, e.RecvNs))
	default:
		if e.Book == nil {
			return nil
		}
		in, err := h.inst(e)
		if err != nil {
			return err
		}
		if h.opening(in, e, exch) || h.invalid(e) {
			return h.err
		}
		h.diff(in, e.Book, exch, e.RecvNs)
	}
	return h.err
}

// snapshot writes b as a snapshot of in: a HbtDepthClear and a
// HbtDepthSnapshot row per level, at exch and local.
func (h *HftBacktest) snapshot(in *hbtInst, b *book.Book, exch, local int64) {
	h.begin(in, true)
	in.synced = true
	in.lastExch = max(in.lastExch, exch)
	h.put(in, hbtEvent{ev: HbtDepthClear, exchNs: exch, localNs: local, px: math.NaN()})
	in.mirror.Clear()
	for _, side := range [2]book.Side{book.Bid, book.Ask} {
		h.cur = b.Top(side, h.cur[:0], -1)
		for _, lv := range h.cur {
			h.put(in, h.level(in, HbtDepthSnapshot, side, lv, exch, local))
			_ = in.mirror.Set(side, lv.Price, lv.Size, 0)
		}
	}
}

// opening writes, on the first event of an instrument that had no venue
// snapshot yet while the engine holds its book valid, the book after that
// event as a snapshot, and reports whether it did. That is an instrument
// whose book a windowed replay built before the window (silently: the
// snapshot it came from is not delivered): without it the file would start
// from an empty book and be wrong until the venue's next snapshot, rare on
// Polymarket. A replay from the start never gets here: a book is valid only
// after a snapshot, which is delivered.
func (h *HftBacktest) opening(in *hbtInst, e *replayer.Event, exch int64) bool {
	if in.synced || e.Book == nil || !e.Book.Valid() {
		return false
	}
	h.snapshot(in, e.Book, exch, e.RecvNs)
	return true
}

// invalid reports whether e's book is invalid (after a loss or a rejected
// frame, before the next snapshot): its level changes are left out, so the
// backtest keeps the empty book the HbtDepthClear left rather than a
// partial one, until the snapshot that makes it whole again.
func (h *HftBacktest) invalid(e *replayer.Event) bool {
	return e.Book != nil && !e.Book.Valid()
}

// level is the row of a level or trade on side.
func (h *HftBacktest) level(in *hbtInst, kind uint64, side book.Side, lv book.Level, exch, local int64) hbtEvent {
	ev := kind | HbtSellEvent
	if side == book.Bid {
		ev = kind | HbtBuyEvent
	}
	return hbtEvent{ev: ev, exchNs: exch, localNs: local,
		px: columnar.FixedToFloat(lv.Price, in.scale.PriceDecimals), qty: columnar.FixedToFloat(lv.Size, in.scale.SizeDecimals)}
}

// diff writes the depth rows that turn the mirror into b.
func (h *HftBacktest) diff(in *hbtInst, b *book.Book, exch, local int64) {
	for _, side := range [2]book.Side{book.Bid, book.Ask} {
		h.old = in.mirror.Top(side, h.old[:0], -1)
		h.cur = b.Top(side, h.cur[:0], -1)
		for _, lv := range h.old {
			if sz, _ := b.Level(side, lv.Price); sz == 0 {
				h.begin(in, false)
				h.put(in, h.level(in, HbtDepthEvent, side, book.Level{Price: lv.Price}, exch, local))
			}
		}
		for _, lv := range h.cur {
			if sz, _ := in.mirror.Level(side, lv.Price); sz != lv.Size {
				h.begin(in, false)
				h.put(in, h.level(in, HbtDepthEvent, side, lv, exch, local))
			}
		}
		for _, lv := range h.old {
			_ = in.mirror.Set(side, lv.Price, 0, 0)
		}
		for _, lv := range h.cur {
			_ = in.mirror.Set(side, lv.Price, lv.Size, 0)
		}
	}
	in.lastExch = max(in.lastExch, exch)
}

func (h *HftBacktest) empty(b *book.Book) bool {
	return len(b.Top(book.Bid, h.old[:0], 1)) == 0 && len(b.Top(book.Ask, h.old[:0], 1)) == 0
}

// inst returns e's instrument, made on its first event. One instrument in
// two datasets would be two books for one file: refused.
func (h *HftBacktest) inst(e *replayer.Event) (*hbtInst, error) {
	in, x := h.insts.get(e.Dataset, e.Instrument)
	if in != nil {
		return in, nil
	}
	name := h.names.get(e.Instrument)
	if other := h.byName[name]; other != nil {
		h.err = fmt.Errorf("export: instrument %s is in datasets %d and %d: export them one at a time for hftbacktest", name, other.dataset, e.Dataset)
		return nil, h.err
	}
	in = &hbtInst{id: uint32(len(h.all)), dataset: e.Dataset, venue: h.names.get(e.Venue), name: name,
		mirror: book.New(e.Scale), day: -1, scale: e.Scale, lastExch: math.MinInt64}
	h.insts.add(instKey{e.Dataset, name}, in, x)
	h.byName[name] = in
	h.all = append(h.all, in)
	return in, nil
}

// toDay ends the current day when t is in a later one. A receive time
// earlier than the day (merged datasets whose clocks disagree) stays in it.
func (h *HftBacktest) toDay(t int64) error {
	d := floorDiv(t, nsPerDay)
	if !h.start {
		h.start, h.day = true, d
		return nil
	}
	if d <= h.day {
		return nil
	}
	if err := h.writeDay(); err != nil {
		return err
	}
	h.day = d
	return nil
}

// begin notes in's first row of the day; unless that row starts a snapshot,
// the day's file opens with the book as it was at the day's start.
func (h *HftBacktest) begin(in *hbtInst, snapshot bool) {
	if in.day == h.day {
		return
	}
	in.day = h.day
	h.today = append(h.today, in)
	if snapshot || h.empty(in.mirror) {
		return
	}
	t := h.day * nsPerDay
	h.put(in, hbtEvent{ev: HbtDepthClear | hbtDayStart, localNs: t, px: math.NaN()})
	for _, side := range [2]book.Side{book.Bid, book.Ask} {
		h.old = in.mirror.Top(side, h.old[:0], -1)
		for _, lv := range h.old {
			r := h.level(in, HbtDepthSnapshot, side, lv, 0, t)
			r.ev |= hbtDayStart
			h.put(in, r)
		}
	}
}

// newSpool creates the temporary file a native export's rows wait in until
// its files are written, unlinked at once: nothing is left behind, whatever
// ends the process.
func newSpool(format string) (*os.File, *bufio.Writer, error) {
	f, err := os.CreateTemp("", "tapedeck-"+format+"-*")
	if err != nil {
		return nil, nil, fmt.Errorf("export: %s spool: %w", format, err)
	}
	_ = os.Remove(f.Name())
	return f, bufio.NewWriterSize(f, 1<<20), nil
}

// put spools one row of in.
func (h *HftBacktest) put(in *hbtInst, r hbtEvent) {
	if h.err != nil {
		return
	}
	if h.spool == nil {
		if h.spool, h.sw, h.err = newSpool("hftbacktest"); h.err != nil {
			return
		}
	}
	var b [hbtSpoolBytes]byte
	binary.LittleEndian.PutUint32(b[0:], in.id)
	binary.LittleEndian.PutUint64(b[4:], r.ev)
	binary.LittleEndian.PutUint64(b[12:], uint64(r.exchNs))
	binary.LittleEndian.PutUint64(b[20:], uint64(r.localNs))
	binary.LittleEndian.PutUint64(b[28:], math.Float64bits(r.px))
	binary.LittleEndian.PutUint64(b[36:], math.Float64bits(r.qty))
	if _, err := h.sw.Write(b[:]); err != nil {
		h.err = fmt.Errorf("export: hftbacktest spool: %w", err)
		return
	}
	in.dayRows++
}

// writeDay writes the current day's file of every instrument with rows in
// it, a group of instruments of at most h.budget rows (or one instrument) a
// pass over the spool, and empties the spool.
func (h *HftBacktest) writeDay() error {
	if h.err != nil {
		return h.err
	}
	if len(h.today) == 0 {
		return nil
	}
	if err := h.sw.Flush(); err != nil {
		h.err = fmt.Errorf("export: hftbacktest spool: %w", err)
		return h.err
	}
	date := time.Unix(0, h.day*nsPerDay).UTC().Format("20060102")
	for lo := 0; lo < len(h.today); {
		hi, n := lo, 0
		for hi < len(h.today) && (hi == lo || n+h.today[hi].dayRows <= h.budget) {
			n += h.today[hi].dayRows
			h.today[hi].inGroup = true
			hi++
		}
		if err := h.readGroup(); err != nil {
			h.err = err
			return err
		}
		for _, in := range h.today[lo:hi] {
			if err := h.writeFile(in, date); err != nil {
				h.err = err
				return err
			}
			in.inGroup, in.rows, in.dayRows = false, nil, 0
		}
		lo = hi
	}
	h.today = h.today[:0]
	if err := h.spool.Truncate(0); err != nil {
		h.err = fmt.Errorf("export: hftbacktest spool: %w", err)
		return h.err
	}
	if _, err := h.spool.Seek(0, io.SeekStart); err != nil {
		h.err = fmt.Errorf("export: hftbacktest spool: %w", err)
		return h.err
	}
	h.sw.Reset(h.spool)
	return nil
}

// readGroup reads the spool once, keeping the rows of the instruments in the
// group.
func (h *HftBacktest) readGroup() error {
	if _, err := h.spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("export: hftbacktest spool: %w", err)
	}
	br := bufio.NewReaderSize(h.spool, 1<<20)
	var b [hbtSpoolBytes]byte
	for {
		if _, err := io.ReadFull(br, b[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("export: hftbacktest spool: %w", err)
		}
		in := h.all[binary.LittleEndian.Uint32(b[0:])]
		if !in.inGroup {
			continue
		}
		if in.rows == nil {
			in.rows = make([]hbtEvent, 0, in.dayRows)
		}
		in.rows = append(in.rows, hbtEvent{
			ev:      binary.LittleEndian.Uint64(b[4:]),
			exchNs:  int64(binary.LittleEndian.Uint64(b[12:])),
			localNs: int64(binary.LittleEndian.Uint64(b[20:])),
			px:      math.Float64frombits(binary.LittleEndian.Uint64(b[28:])),
			qty:     math.Float64frombits(binary.LittleEndian.Uint64(b[36:])),
		})
	}
}

// writeFile orders in's rows of the day for both processors and writes them.
func (h *HftBacktest) writeFile(in *hbtInst, date string) error {
	rows := in.rows
	// The opening snapshot goes first in exchange time too: at the day's
	// start, or before the earliest exchange time of the day's rows.
	first := h.day * nsPerDay
	for i := range rows {
		if rows[i].ev&hbtDayStart == 0 {
			first = min(first, rows[i].exchNs)
		}
	}
	for i := range rows {
		if rows[i].ev&hbtDayStart != 0 {
			rows[i].ev &^= hbtDayStart
			rows[i].exchNs = first
		}
	}
	out := hbtOrder(rows)
	w, err := h.open(in.venue, in.name, date)
	if err != nil {
		return err
	}
	if err := writeHbtNpz(w, out); err != nil {
		return &WriteError{Table: Table(0).String(), Format: FormatHftBacktest.String(), Err: err}
	}
	h.rows += uint64(len(rows))
	return nil
}

// hbtOrder returns rows (in local order, as spooled) flagged and ordered for
// hftbacktest: a merge of the rows in exch_ts order (flagged HbtExchEvent)
// and in local_ts order (HbtLocalEvent), both sorts stable; a row at the head
// of both at once is written once with both flags.
func hbtOrder(rows []hbtEvent) []hbtEvent {
	n := len(rows)
	lo := make([]int32, n)
	for i := range lo {
		lo[i] = int32(i)
	}
	ex := slices.Clone(lo)
	slices.SortStableFunc(lo, func(a, b int32) int { return cmp.Compare(rows[a].localNs, rows[b].localNs) })
	slices.SortStableFunc(ex, func(a, b int32) int { return cmp.Compare(rows[a].exchNs, rows[b].exchNs) })
	out := make([]hbtEvent, 0, n)
	i, j := 0, 0
	for i < n || j < n {
		switch {
		case i < n && j < n && ex[i] == lo[j]:
			r := rows[ex[i]]
			r.ev |= HbtExchEvent | HbtLocalEvent
			out = append(out, r)
			i++
			j++
		case j == n || (i < n && rows[ex[i]].exchNs <= rows[lo[j]].localNs):
			r := rows[ex[i]]
			r.ev |= HbtExchEvent
			out = append(out, r)
			i++
		default:
			r := rows[lo[j]]
			r.ev |= HbtLocalEvent
			out = append(out, r)
			j++
		}
	}
	return out
}

// Close writes the last day's files and releases the spool. It returns the
// first error met; it does not close the writers.
func (h *HftBacktest) Close() error {
	if h.closed {
		return ErrClosed
	}
	h.closed = true
	err := h.writeDay()
	if h.spool != nil {
		h.spool.Close()
	}
	return err
}
