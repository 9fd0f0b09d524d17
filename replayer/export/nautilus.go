package export

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"strconv"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// NautilusVersion is the NautilusTrader release whose ParquetDataCatalog
// layout, Arrow schemas and metadata the nautilus export writes (read from
// its source: nautilus_trader/persistence/catalog/parquet.py,
// persistence/funcs.py, serialization/arrow/implementations/instruments.py,
// crates/serialization/src/arrow/{delta,quote,trade}.rs and
// crates/serialization/src/arrow/instrument/).
const NautilusVersion = "1.231.0"

// Nautilus's record flags (crates/model/src/enums.rs RecordFlag) and book
// actions (BookAction), as an OrderBookDelta's flags and action columns
// hold them.
const (
	NautilusFLast     = 1 << 7 // the last delta of a venue event for its instrument
	NautilusFSnapshot = 1 << 5 // part of a snapshot (the CLEAR that opens it too)

	NautilusAdd    = 1
	NautilusUpdate = 2
	NautilusDelete = 3
	NautilusClear  = 4
)

// Nautilus's order sides (OrderSide) and aggressor sides (AggressorSide):
// 0 none, 1 buy, 2 sell in both.
const (
	nautNoSide = 0
	nautBuy    = 1
	nautSell   = 2
)

// NautilusPrecision is how wide Nautilus's fixed-point integers are: its
// builds differ (the precision mode), and a catalog written for one is
// refused by the other.
type NautilusPrecision uint8

const (
	// NautilusHigh is the 128-bit mode of the Linux and macOS Python wheels
	// (the default): prices and sizes as 16-byte little-endian integers of
	// value × 10^16.
	NautilusHigh NautilusPrecision = iota + 1
	// NautilusStandard is the 64-bit mode (the Windows wheels, Rust crates
	// built without the high-precision feature): 8-byte little-endian
	// integers of value × 10^9.
	NautilusStandard
)

// ParseNautilusPrecision parses "high" or "standard".
func ParseNautilusPrecision(s string) (NautilusPrecision, error) {
	switch s {
	case "high":
		return NautilusHigh, nil
	case "standard":
		return NautilusStandard, nil
	}
	return 0, fmt.Errorf("export: unknown nautilus precision %q (want high, standard)", s)
}

// bytes is the width of a raw value; fixed the number of decimals of the
// scale (FIXED_PRECISION).
func (p NautilusPrecision) bytes() int {
	if p == NautilusStandard {
		return 8
	}
	return 16
}

func (p NautilusPrecision) fixed() uint8 {
	if p == NautilusStandard {
		return 9
	}
	return 16
}

// The row kinds of a Nautilus export, one Parquet file each per instrument.
const (
	nautDelta = iota
	nautQuote
	nautTrade
	nautKinds
)

// nautRow is one OrderBookDelta, QuoteTick or TradeTick. Prices and sizes
// are at the instrument's book.Scale.
type nautRow struct {
	kind                uint8
	action, side, flags uint8 // delta: action, side, flags; trade: side
	a, b                int64 // delta, trade: price, size; quote: bid price, bid size
	c, d                int64 // quote: ask price, ask size
	tsEvent, tsInit     int64
	seq                 uint64
	id                  string // trade id
}

// Nautilus writes NautilusTrader's own data catalog (ParquetDataCatalog,
// NautilusVersion): under its root, for every instrument,
//
//	data/order_book_deltas/ID/START_END.parquet  OrderBookDelta
//	data/quote_tick/ID/START_END.parquet         QuoteTick
//	data/trade_tick/ID/START_END.parquet         TradeTick
//	data/binary_option/ID/T_T.parquet            the instrument (or
//	data/crypto_perpetual/…, data/currency_pair/…)
//
// START and END the first and last ts_init as Nautilus names them
// (2025-10-23T00-38-00-000000000Z), each file the Arrow schema Nautilus
// writes (fixed-point prices and sizes as FixedSizeBinary, see
// NautilusPrecision) with its instrument_id, price_precision and
// size_precision in the Parquet key-value metadata, rows in ts_init order.
// ID is Nautilus's adapters' instrument id: CONDITION-TOKEN.POLYMARKET,
// COIN-USD-PERP.HYPERLIQUID, BASE-QUOTE-SPOT.HYPERLIQUID.
//
// The deltas rebuild the replay's books exactly, as Nautilus's own adapters
// send them: a venue snapshot is a CLEAR and an ADD per level, all flagged
// F_SNAPSHOT; a level change an ADD, UPDATE or DELETE; any other change of a
// book (Hyperliquid's bbo merged in) the deltas that turn the previous book
// into the new one; a loss or a rejected frame, after which the book is
// invalid until its next snapshot, a CLEAR (an empty book). The last delta
// of each instrument in each recorded message carries F_LAST, so
// OrderBookDeltas.batch groups them as the venue sent them. A QuoteTick is
// the top of the book after each such batch, when it changed and both sides
// have a level; a TradeTick each trade (backfilled ones left out) with the
// taker's side and the venue's trade id, or where that is missing or longer
// than Nautilus's 36 characters (Polymarket's transaction hashes) the id
// Nautilus's Polymarket adapter derives.
//
// Rows wait in an unlinked temporary file until Close, which writes the
// files a group of instruments at a time (memory about nautBudgetRows rows
// or one instrument's rows, whichever is more): a file's metadata holds the
// precision of all its rows, known only at the end. Like a Sink, a Nautilus
// is not safe for concurrent use and never closes the writers open returns.
type Nautilus struct {
	open   func(kind, id string, firstNs, lastNs int64) (io.Writer, error)
	cfg    config
	prec   NautilusPrecision
	insts  instIndex[nautInst]
	byName map[string]*nautInst
	names  interned
	all    []*nautInst
	facts  *instrumentsTable

	// The recorded message being delivered, and its instruments with a
	// delta held back to learn whether it is their last.
	curSet     bool
	curDataset int
	curSeq     uint64
	dirty      []*nautInst

	spool   *os.File
	sw      *bufio.Writer
	budget  int
	rows    uint64
	clamped uint64
	err     error
	closed  bool
	old     []book.Level
	cur     []book.Level
	notes   []string
	idBuf   []byte
}

type nautInst struct {
	id      uint32
	dataset int
	venue   string
	name    string
	market  string // from events (Polymarket condition id)
	mirror  *book.Book
	scale   book.Scale

	held    nautRow
	hasHeld bool
	synced  bool     // the mirror follows the book: a snapshot was written
	quote   [4]int64 // the last QuoteTick: bid, bid size, ask, ask size
	quoted  bool

	lastInit  int64
	lastEvent int64
	pxDec     uint8 // most decimals of a price or size written
	szDec     uint8
	n         [nautKinds]int
	first     [nautKinds]int64
	last      [nautKinds]int64

	rows    []nautRow // while its files are written
	inGroup bool
}

// nautBudgetRows bounds the rows held in memory while the files are built.
const nautBudgetRows = 1 << 20

// nautSpoolBytes is a spooled row's fixed part: instrument id, kind, action
// (a trade: its id's length), side, flags, six int64 and the sequence; a
// trade's id follows.
const nautSpoolBytes = 8 + 7*8

// nautMaxTradeID is the longest TradeId Nautilus takes (StackStr capacity).
const nautMaxTradeID = 36

// NewNautilus returns a Nautilus writing each file to the writer open
// returns for it, called once per file at Close with the file's kind (its
// directory under data/: order_book_deltas, quote_tick, trade_tick,
// binary_option, crypto_perpetual, currency_pair), the instrument id and the
// first and last ts_init of its rows. Options: WithInstruments and WithShard
// select instruments, WithWindow the receive times to write (give the replay
// no window: the definitions come from the REST bodies stored at the start
// of a recording), WithNautilusPrecision the integers' width (default
// NautilusHigh); the others do not apply (ErrOption).
func NewNautilus(open func(kind, id string, firstNs, lastNs int64) (io.Writer, error), opts ...Option) (*Nautilus, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.intervalNs != 0 || cfg.exact || cfg.quality || cfg.tardisExchange != "" || cfg.snapshots != 0 {
		return nil, fmt.Errorf("%w: nautilus data takes instrument, shard and precision options only", ErrOption)
	}
	prec := cfg.nautilus
	if prec == 0 {
		prec = NautilusHigh
	}
	return &Nautilus{open: open, cfg: cfg, prec: prec, byName: map[string]*nautInst{}, facts: newInstrumentsTable(),
		budget: nautBudgetRows}, nil
}

// Rows returns the number of rows written so far (at Close).
func (n *Nautilus) Rows() uint64 { return n.rows }

// Problems returns what the export could not say as Nautilus would, one line
// each (an instrument with no definition, times made non-decreasing).
func (n *Nautilus) Problems() []string {
	out := append([]string(nil), n.notes...)
	for _, p := range n.facts.problems {
		out = append(out, "instrument facts left out: "+p)
	}
	if n.clamped > 0 {
		out = append(out, fmt.Sprintf("%d rows received before an earlier row of their instrument: ts_init raised to that row's (Nautilus needs non-decreasing ts_init)", n.clamped))
	}
	return out
}

// OnEvent turns e into rows. It returns the first error of a write (sticky),
// and ErrClosed after Close.
func (n *Nautilus) OnEvent(e *replayer.Event) error {
	if n.closed {
		return ErrClosed
	}
	if n.err != nil {
		return n.err
	}
	if !n.curSet || e.Dataset != n.curDataset || e.Seq != n.curSeq {
		n.endMessage()
		n.curSet, n.curDataset, n.curSeq = true, e.Dataset, e.Seq
	}
	_ = n.facts.onEvent(nil, e)
	if e.Instrument == "" {
		return n.err // each loss also arrives once per instrument it invalidates
	}
	if e.RecvNs < n.cfg.fromNs || (n.cfg.toNs != 0 && e.RecvNs >= n.cfg.toNs) {
		return nil
	}
	if n.cfg.instruments != nil && !n.cfg.wanted(e) {
		return nil
	}
	if !n.cfg.owned(e) {
		return nil
	}
	d := e.Decoded
	if e.Kind.IsLoss() || (d != nil && d.Type == venue.EventReject) {
		in, _ := n.insts.get(e.Dataset, e.Instrument)
		if in == nil {
			return nil
		}
		// The book is invalid until its next snapshot: empty meanwhile, and
		// the changes the venue sends before it are left out.
		in.synced = false
		if n.empty(in.mirror) {
			return nil
		}
		ts := n.tsInit(in, e.RecvNs)
		n.delta(in, nautRow{action: NautilusClear, flags: NautilusFSnapshot, tsEvent: max(in.lastEvent, e.RecvNs), tsInit: ts, seq: e.Seq})
		in.mirror.Clear()
		return n.err
	}
	if d == nil {
		return nil
	}
	exch := d.ExchangeNs
	if exch <= 0 {
		exch = e.RecvNs
	}
	if d.Type == venue.EventSnapshot || (e.Book != nil && d.Type != venue.EventTrade) {
		in, err := n.inst(e)
		if err != nil {
			return err
		}
		if d.Type == venue.EventSnapshot || !in.synced {
			// A venue snapshot; or the first book event of an instrument
			// whose book was built before the window (or whose snapshot
			// came before its first level): the book as it stands, as a
			// snapshot, once the engine holds it valid.
			if e.Book == nil || (d.Type != venue.EventSnapshot && !e.Book.Valid()) {
				return nil
			}
			n.snapshot(in, e.Book, exch, n.tsInit(in, e.RecvNs), e.Seq)
			return n.err
		}
	}
	switch d.Type {
	case venue.EventLevel:
		in, err := n.inst(e)
		if err != nil {
			return err
		}
		n.level(in, d.Side, d.Price, d.Size, exch, n.tsInit(in, e.RecvNs), e.Seq)
	case venue.EventTrade:
		if d.Backfill {
			return nil
		}
		in, err := n.inst(e)
		if err != nil {
			return err
		}
		r := nautRow{kind: nautTrade, side: nautSide(d.Side), a: d.Price, b: d.Size, tsEvent: exch,
			tsInit: n.tsInit(in, e.RecvNs), id: n.tradeID(in, d, exch)}
		n.put(in, &r)
	default:
		if e.Book == nil {
			return nil
		}
		in, err := n.inst(e)
		if err != nil {
			return err
		}
		n.diff(in, e.Book, exch, n.tsInit(in, e.RecvNs), e.Seq)
	}
	return n.err
}

func nautSide(s book.Side) uint8 {
	if s == book.Bid {
		return nautBuy
	}
	return nautSell
}

// tsInit is the receive time as in's ts_init: never before the ts_init of
// its rows so far (Nautilus reads a file in ts_init order).
func (n *Nautilus) tsInit(in *nautInst, recv int64) int64 {
	if recv < in.lastInit {
		n.clamped++
		return in.lastInit
	}
	in.lastInit = recv
	return recv
}

// snapshot writes b as a snapshot of in: a CLEAR and an ADD per level, all
// flagged F_SNAPSHOT.
func (n *Nautilus) snapshot(in *nautInst, b *book.Book, exch, ts int64, seq uint64) {
	in.synced = true
	n.delta(in, nautRow{action: NautilusClear, flags: NautilusFSnapshot, tsEvent: exch, tsInit: ts, seq: seq})
	in.mirror.Clear()
	for _, side := range [2]book.Side{book.Bid, book.Ask} {
		n.cur = b.Top(side, n.cur[:0], -1)
		for _, lv := range n.cur {
			n.delta(in, nautRow{action: NautilusAdd, side: nautSide(side), flags: NautilusFSnapshot,
				a: lv.Price, b: lv.Size, tsEvent: exch, tsInit: ts, seq: seq})
			_ = in.mirror.Set(side, lv.Price, lv.Size, 0)
		}
	}
}

// level writes the delta that sets side's level at price to size, if it
// changes the book.
func (n *Nautilus) level(in *nautInst, side book.Side, price, size, exch, ts int64, seq uint64) {
	old, _ := in.mirror.Level(side, price)
	r := nautRow{side: nautSide(side), a: price, b: size, tsEvent: exch, tsInit: ts, seq: seq}
	switch {
	case size == old:
		return // no change (nothing to delete when both are 0)
	case size == 0:
		r.action = NautilusDelete
	case old == 0:
		r.action = NautilusAdd
	default:
		r.action = NautilusUpdate
	}
	n.delta(in, r)
	_ = in.mirror.Set(side, price, size, 0)
}

// diff writes the deltas that turn the mirror into b.
func (n *Nautilus) diff(in *nautInst, b *book.Book, exch, ts int64, seq uint64) {
	for _, side := range [2]book.Side{book.Bid, book.Ask} {
		n.old = in.mirror.Top(side, n.old[:0], -1)
		for _, lv := range n.old {
			if sz, _ := b.Level(side, lv.Price); sz == 0 {
				n.level(in, side, lv.Price, 0, exch, ts, seq)
			}
		}
		n.cur = b.Top(side, n.cur[:0], -1)
		for _, lv := range n.cur {
			n.level(in, side, lv.Price, lv.Size, exch, ts, seq)
		}
	}
}

func (n *Nautilus) empty(b *book.Book) bool {
	return len(b.Top(book.Bid, n.old[:0], 1)) == 0 && len(b.Top(book.Ask, n.old[:0], 1)) == 0
}

// delta holds r back as in's latest delta of the message, spooling the one
// it replaces (not its message's last).
func (n *Nautilus) delta(in *nautInst, r nautRow) {
	in.lastEvent = max(in.lastEvent, r.tsEvent)
	if in.hasHeld {
		n.put(in, &in.held)
	} else {
		n.dirty = append(n.dirty, in)
	}
	in.held, in.hasHeld = r, true
}

// endMessage spools every held delta flagged F_LAST, and a QuoteTick where
// the top of the book changed.
func (n *Nautilus) endMessage() {
	for _, in := range n.dirty {
		r := in.held
		in.hasHeld = false
		r.flags |= NautilusFLast
		n.put(in, &r)
		bid, okB := in.mirror.Best(book.Bid)
		ask, okA := in.mirror.Best(book.Ask)
		if !okB || !okA {
			continue
		}
		q := [4]int64{bid.Price, bid.Size, ask.Price, ask.Size}
		if in.quoted && q == in.quote {
			continue
		}
		in.quote, in.quoted = q, true
		n.put(in, &nautRow{kind: nautQuote, a: q[0], b: q[1], c: q[2], d: q[3], tsEvent: r.tsEvent, tsInit: r.tsInit})
	}
	n.dirty = n.dirty[:0]
}

// tradeID is the venue's trade id when Nautilus can take it, else the id
// Nautilus's Polymarket adapter derives (common/parse.rs determine_trade_id:
// FNV-1a 64 of the asset, side, price, size and millisecond timestamp as
// the venue writes them, 0x1f between, in 16 hex digits).
func (n *Nautilus) tradeID(in *nautInst, d *venue.Event, exch int64) string {
	if l := len(d.ID); l > 0 && l <= nautMaxTradeID && printable(d.ID) {
		return string(d.ID)
	}
	side := byte('S')
	if d.Side == book.Bid {
		side = 'B'
	}
	b := append(n.idBuf[:0], in.name...)
	b = append(b, 0x1f, side, 0x1f)
	b = book.AppendDecimal(b, d.Price, in.scale.PriceDecimals)
	b = append(b, 0x1f)
	b = book.AppendDecimal(b, d.Size, in.scale.SizeDecimals)
	b = append(b, 0x1f)
	b = strconv.AppendInt(b, exch/1e6, 10)
	n.idBuf = b
	h := uint64(0xcbf29ce484222325)
	for _, c := range b {
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	return fmt.Sprintf("%016x", h)
}

func printable(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// inst returns e's instrument, made on its first event. One instrument in
// two datasets would be two books for one file: refused.
func (n *Nautilus) inst(e *replayer.Event) (*nautInst, error) {
	in, x := n.insts.get(e.Dataset, e.Instrument)
	if in == nil {
		name := n.names.get(e.Instrument)
		if other := n.byName[name]; other != nil {
			n.err = fmt.Errorf("export: instrument %s is in datasets %d and %d: export them one at a time for nautilus", name, other.dataset, e.Dataset)
			return nil, n.err
		}
		in = &nautInst{id: uint32(len(n.all)), dataset: e.Dataset, venue: n.names.get(e.Venue), name: name,
			mirror: book.New(e.Scale), scale: e.Scale}
		n.insts.add(instKey{e.Dataset, name}, in, x)
		n.byName[name] = in
		n.all = append(n.all, in)
	}
	if d := e.Decoded; d != nil && d.Market != "" && in.market == "" {
		in.market = n.names.get(d.Market)
	}
	return in, nil
}

// decimals is the number of decimals v at dec decimals needs.
func decimals(v int64, dec uint8) uint8 {
	if v == 0 {
		return 0
	}
	for dec > 0 && v%10 == 0 {
		v /= 10
		dec--
	}
	return dec
}

// put spools row r of in.
func (n *Nautilus) put(in *nautInst, r *nautRow) {
	if n.err != nil {
		return
	}
	if n.spool == nil {
		if n.spool, n.sw, n.err = newSpool("nautilus"); n.err != nil {
			return
		}
	}
	for _, p := range [2]int64{r.a, r.c} {
		in.pxDec = max(in.pxDec, decimals(p, in.scale.PriceDecimals))
	}
	for _, s := range [2]int64{r.b, r.d} {
		in.szDec = max(in.szDec, decimals(s, in.scale.SizeDecimals))
	}
	if in.n[r.kind] == 0 {
		in.first[r.kind] = r.tsInit
	}
	in.n[r.kind]++
	in.last[r.kind] = r.tsInit
	var b [nautSpoolBytes]byte
	binary.LittleEndian.PutUint32(b[0:], in.id)
	b[4], b[5], b[6], b[7] = r.kind, r.action, r.side, r.flags
	if r.kind == nautTrade {
		b[5] = uint8(len(r.id))
	}
	for i, v := range [6]int64{r.a, r.b, r.c, r.d, r.tsEvent, r.tsInit} {
		binary.LittleEndian.PutUint64(b[8+8*i:], uint64(v))
	}
	binary.LittleEndian.PutUint64(b[56:], r.seq)
	if _, err := n.sw.Write(b[:]); err != nil {
		n.err = fmt.Errorf("export: nautilus spool: %w", err)
		return
	}
	if r.kind == nautTrade {
		if _, err := n.sw.WriteString(r.id); err != nil {
			n.err = fmt.Errorf("export: nautilus spool: %w", err)
		}
	}
}

// readGroup reads the spool once, keeping the rows of the instruments in the
// group.
func (n *Nautilus) readGroup() error {
	if _, err := n.spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("export: nautilus spool: %w", err)
	}
	br := bufio.NewReaderSize(n.spool, 1<<20)
	var b [nautSpoolBytes]byte
	var id [nautMaxTradeID]byte
	for {
		if _, err := io.ReadFull(br, b[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("export: nautilus spool: %w", err)
		}
		in := n.all[binary.LittleEndian.Uint32(b[0:])]
		r := nautRow{kind: b[4], action: b[5], side: b[6], flags: b[7]}
		var v [6]int64
		for i := range v {
			v[i] = int64(binary.LittleEndian.Uint64(b[8+8*i:]))
		}
		r.a, r.b, r.c, r.d, r.tsEvent, r.tsInit = v[0], v[1], v[2], v[3], v[4], v[5]
		r.seq = binary.LittleEndian.Uint64(b[56:])
		if r.kind == nautTrade {
			l := int(r.action)
			r.action = 0
			if _, err := io.ReadFull(br, id[:l]); err != nil {
				return fmt.Errorf("export: nautilus spool: %w", err)
			}
			if in.inGroup {
				r.id = string(id[:l])
			}
		}
		if !in.inGroup {
			continue
		}
		if in.rows == nil {
			in.rows = make([]nautRow, 0, in.n[0]+in.n[1]+in.n[2])
		}
		in.rows = append(in.rows, r)
	}
}

// Close writes every file, a group of instruments of at most n.budget rows
// (or one instrument) a pass over the spool, and releases the spool. It
// returns the first error met; it does not close the writers.
func (n *Nautilus) Close() error {
	if n.closed {
		return ErrClosed
	}
	n.closed = true
	defer func() {
		if n.spool != nil {
			n.spool.Close()
		}
	}()
	n.endMessage()
	if n.err != nil {
		return n.err
	}
	if n.spool != nil {
		if err := n.sw.Flush(); err != nil {
			return fmt.Errorf("export: nautilus spool: %w", err)
		}
	}
	defs := n.definitions()
	for lo := 0; lo < len(n.all); {
		hi, rows := lo, 0
		for hi < len(n.all) && (hi == lo || rows+n.all[hi].total() <= n.budget) {
			rows += n.all[hi].total()
			n.all[hi].inGroup = true
			hi++
		}
		if n.spool != nil && rows > 0 {
			if err := n.readGroup(); err != nil {
				return err
			}
		}
		for _, in := range n.all[lo:hi] {
			if err := n.writeInst(in, defs[in]); err != nil {
				return err
			}
			in.inGroup, in.rows = false, nil
		}
		lo = hi
	}
	return nil
}

func (in *nautInst) total() int { return in.n[0] + in.n[1] + in.n[2] }

// nautRaw appends v (at dec decimals) as Nautilus's raw integer: v ×
// 10^(fixed−dec), little-endian, in p's width. Sizes and prices are well
// inside both widths' range at tapedeck's scales (at most 18 significant
// digits, fixed ≥ dec).
func nautRaw(dst []byte, v int64, dec uint8, p NautilusPrecision) []byte {
	mul := uint64(book.Pow10(p.fixed() - dec))
	if p == NautilusStandard {
		return binary.LittleEndian.AppendUint64(dst, uint64(v)*mul)
	}
	neg := v < 0
	m := uint64(v)
	if neg {
		m = uint64(-v)
	}
	hi, lo := bits.Mul64(m, mul)
	if neg { // two's complement of the 128-bit magnitude
		lo, hi = ^lo+1, ^hi
		if lo == 0 {
			hi++
		}
	}
	dst = binary.LittleEndian.AppendUint64(dst, lo)
	return binary.LittleEndian.AppendUint64(dst, hi)
}

// nautFits reports whether v at dec decimals fits p's raw integers.
func nautFits(v int64, dec uint8, p NautilusPrecision) bool {
	if dec > p.fixed() {
		return false
	}
	if p == NautilusStandard {
		mul := book.Pow10(p.fixed() - dec)
		return v == 0 || (v < math.MaxInt64/mul && v > -math.MaxInt64/mul)
	}
	return true
}
