package export

import (
	"fmt"
	"strings"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// tardisHead is the four leading columns of every Tardis CSV layout. Tardis'
// timestamp is the exchange's, or the local one when the exchange gives none.
func tardisHead(exch, local, ven, inst int) []columnar.CSVField {
	return []columnar.CSVField{
		csvField("exchange", ven, columnar.CSVString),
		csvField("symbol", inst, columnar.CSVString),
		{Header: "timestamp", Col: exch, How: columnar.CSVMicros, Alt: local},
		csvField("local_timestamp", local, columnar.CSVMicros),
	}
}

// csvField is a Tardis CSV column printing column col of the table.
func csvField(header string, col int, how columnar.CSVHow) columnar.CSVField {
	return columnar.CSVField{Header: header, Col: col, How: how, Alt: -1}
}

// interned keeps the sink's own copy of the venue and instrument strings, so
// rows never point into memory the replayer lends for one call.
// Rows of a few dozen instruments interleave, so a copy is first looked
// for in recent, a direct-mapped cache compared by content: a 78-digit
// Polymarket id costs a compare, not a hash and a map probe.
type interned struct {
	m      map[string]string
	recent [recentSlots]string
}

func (n *interned) get(s string) string {
	h := recentSlot(0, s)
	if v := n.recent[h]; v == s {
		return v
	}
	v, ok := n.m[s]
	if !ok {
		if n.m == nil {
			n.m = make(map[string]string)
		}
		v = strings.Clone(s)
		n.m[v] = v
	}
	n.recent[h] = v
	return v
}

// instIndex maps a book, (dataset, instrument), to a table's state for it,
// with a direct-mapped cache of recent books in front of the map: rows of a
// few dozen instruments interleave, and comparing a recent key beats
// hashing an instrument id of up to 78 digits on every event.
type instIndex[T any] struct {
	m      map[instKey]instEntry[T]
	recent [recentSlots]instEntry[T]
}

type instEntry[T any] struct {
	k instKey // its instrument interned
	v *T
}

// get returns the state of the book, nil if it has none, and the cache
// slot to hand add.
func (x *instIndex[T]) get(dataset int, inst string) (*T, int) {
	h := recentSlot(dataset, inst)
	if r := &x.recent[h]; r.v != nil && r.k.dataset == dataset && r.k.instrument == inst {
		return r.v, h
	}
	en, ok := x.m[instKey{dataset, inst}]
	if ok {
		x.recent[h] = en
	}
	return en.v, h
}

// add sets the state of book k (its instrument interned), got at slot h.
func (x *instIndex[T]) add(k instKey, v *T, h int) {
	if x.m == nil {
		x.m = make(map[instKey]instEntry[T])
	}
	en := instEntry[T]{k, v}
	x.m[k] = en
	x.recent[h] = en
}

func (x *instIndex[T]) len() int { return len(x.m) }

// recentSlots is the size of the direct-mapped caches in front of the
// per-instrument maps (interned, instIndex).
const recentSlots = 512

// recentSlot is the cache slot of instrument s of dataset: ids of one
// venue differ most in their last characters.
func recentSlot(dataset int, s string) int {
	h := uint(len(s)) + 31*uint(dataset)
	for i := len(s) - 1; i >= max(0, len(s)-4); i-- {
		h = 131*h + uint(s[i])
	}
	return int(h % recentSlots)
}

// changesTable: one row per level change (Tardis incremental_book_L2).
//
// Tardis consumers (NautilusTrader) reset a book when its rows turn from
// is_snapshot=false to true; hftbacktest clears only the price range a
// snapshot covers. Either way a level the venue dropped between two
// snapshots could linger: a snapshot that follows another with no change in
// between (Hyperliquid sends nothing else; a Polymarket book after a trade)
// does not reset the first kind, and a deep level outside the new range
// survives the second. So the table keeps, per book, a mirror of what its
// rows have said so far. With full snapshots (the default, as Tardis writes
// every venue book) each venue snapshot is an is_snapshot=true block of all
// its levels, followed by a size-0 is_snapshot=false row for every level of
// the mirror the snapshot no longer has. With diff snapshots a later
// snapshot is the difference from the mirror (is_snapshot=false: changed
// levels, size 0 for levels that went away), and a full block is written
// only for the first snapshot of a book and the first after a loss
// (disconnect, gap…), unless the rows just before were themselves a block.
// Every way, a consumer's book equals ours after every snapshot.
//
// Hyperliquid bbo merges between snapshots are estimates and are not level
// changes: they are in the depth table (estimated=true), not here.
type changesTable struct {
	full                         bool // SnapshotsFull
	counts                       bool
	cExch, cLocal, cVenue, cInst int
	cSnap, cSide, cPrice, cSize  int
	cCount                       int
	names                        interned
	insts                        instIndex[changesInst]
	old, cur                     []book.Level
}

type changesInst struct {
	key      instKey    // its instrument interned
	venue    string     // interned
	mirror   *book.Book // the book as the rows so far describe it
	lastSnap bool       // the last rows written were a snapshot block
	loss     bool       // a loss since the last rows
}

func (t *changesTable) columns(b *columnar.Batch, caps venue.Capabilities) {
	t.counts, t.names, t.insts = caps.LevelCounts, interned{}, instIndex[changesInst]{}
	t.cExch = b.Add("exchange_ts_ns", columnar.Timestamp, true)
	t.cLocal = b.Add("local_ts_ns", columnar.Timestamp, false)
	t.cVenue = b.Add("venue", columnar.String, false)
	t.cInst = b.Add("instrument", columnar.String, false)
	t.cSnap = b.Add("is_snapshot", columnar.Bool, false)
	t.cSide = b.Add("side", columnar.String, false)
	t.cPrice = b.Add("price", columnar.Price, false)
	t.cSize = b.Add("size", columnar.Size, false)
	if t.counts {
		t.cCount = b.Add("count", columnar.Int32, false)
	}
}

func (t *changesTable) inst(e *replayer.Event) (*changesInst, bool) {
	in, h := t.insts.get(e.Dataset, e.Instrument)
	if in != nil {
		return in, false
	}
	k := instKey{e.Dataset, t.names.get(e.Instrument)}
	in = &changesInst{key: k, venue: t.names.get(e.Venue), mirror: book.New(e.Scale)}
	t.insts.add(k, in, h)
	return in, true
}

func (t *changesTable) onEvent(s *Sink, e *replayer.Event) error {
	if e.Instrument == "" {
		return nil
	}
	if e.Kind.IsLoss() {
		if in, _ := t.insts.get(e.Dataset, e.Instrument); in != nil {
			in.loss = true
		}
		return nil
	}
	d := e.Decoded
	if d == nil {
		return nil
	}
	switch d.Type {
	case venue.EventReject:
		// A rejected message invalidated the book: like a loss, the next
		// snapshot is written as a full block.
		if in, _ := t.insts.get(e.Dataset, e.Instrument); in != nil {
			in.loss = true
		}
		return nil
	case venue.EventLevel:
		in, _ := t.inst(e)
		_ = in.mirror.Set(d.Side, d.Price, d.Size, d.Count) // sizes were validated by the decoder
		in.lastSnap, in.loss = false, false
		return t.row(s, e, in, false, d.Side, book.Level{Price: d.Price, Size: d.Size, Count: d.Count})
	case venue.EventSnapshot:
		if e.Book == nil {
			return nil
		}
		in, first := t.inst(e)
		if t.full {
			in.lastSnap, in.loss = true, false
			return t.fullSnapshot(s, e, in)
		}
		if first || (in.loss && !in.lastSnap) {
			in.lastSnap, in.loss = true, false
			return t.snapshot(s, e, in)
		}
		in.loss = false
		return t.diff(s, e, in)
	}
	return nil
}

// snapshot writes every level of e.Book as an is_snapshot block.
func (t *changesTable) snapshot(s *Sink, e *replayer.Event, in *changesInst) error {
	for _, side := range [2]book.Side{book.Bid, book.Ask} {
		t.cur = e.Book.Top(side, t.cur[:0], -1)
		for _, lv := range t.cur {
			if err := t.row(s, e, in, true, side, lv); err != nil {
				return err
			}
		}
	}
	return t.sync(e, in)
}

// fullSnapshot writes every level of e.Book as an is_snapshot block, then a
// size-0 row for each level of the mirror that e.Book no longer has.
func (t *changesTable) fullSnapshot(s *Sink, e *replayer.Event, in *changesInst) error {
	for _, side := range [2]book.Side{book.Bid, book.Ask} {
		t.cur = e.Book.Top(side, t.cur[:0], -1)
		for _, lv := range t.cur {
			if err := t.row(s, e, in, true, side, lv); err != nil {
				return err
			}
		}
	}
	for _, side := range [2]book.Side{book.Bid, book.Ask} {
		t.old = in.mirror.Top(side, t.old[:0], -1)
		for _, lv := range t.old {
			if sz, _ := e.Book.Level(side, lv.Price); sz != 0 {
				continue
			}
			if err := t.row(s, e, in, false, side, book.Level{Price: lv.Price}); err != nil {
				return err
			}
		}
	}
	return t.sync(e, in)
}

// diff writes the changes that turn the mirror into e.Book.
func (t *changesTable) diff(s *Sink, e *replayer.Event, in *changesInst) error {
	wrote := false
	for _, side := range [2]book.Side{book.Bid, book.Ask} {
		t.old = in.mirror.Top(side, t.old[:0], -1)
		t.cur = e.Book.Top(side, t.cur[:0], -1)
		// Both are best first: bids descending, asks ascending.
		better := func(a, b int64) bool {
			if side == book.Bid {
				return a > b
			}
			return a < b
		}
		i, j := 0, 0
		for i < len(t.old) || j < len(t.cur) {
			var lv book.Level
			switch {
			case j == len(t.cur) || (i < len(t.old) && better(t.old[i].Price, t.cur[j].Price)):
				lv = book.Level{Price: t.old[i].Price} // gone: size 0
				i++
			case i == len(t.old) || better(t.cur[j].Price, t.old[i].Price):
				lv = t.cur[j] // new level
				j++
			default: // same price
				lv = t.cur[j]
				same := t.old[i] == t.cur[j]
				i++
				j++
				if same {
					continue
				}
			}
			if err := t.row(s, e, in, false, side, lv); err != nil {
				return err
			}
			wrote = true
		}
	}
	if wrote {
		in.lastSnap = false
	}
	return t.sync(e, in)
}

// sync makes the mirror equal e.Book.
func (t *changesTable) sync(e *replayer.Event, in *changesInst) error {
	bids := e.Book.Top(book.Bid, t.old[:0], -1)
	asks := e.Book.Top(book.Ask, t.cur[:0], -1)
	if len(bids) == 0 && len(asks) == 0 {
		in.mirror.Clear()
		return nil
	}
	if err := in.mirror.Replace(bids, asks); err != nil {
		return fmt.Errorf("export: book_changes mirror of %s: %w", e.Instrument, err)
	}
	return nil
}

func (t *changesTable) row(s *Sink, e *replayer.Event, in *changesInst, snap bool, side book.Side, lv book.Level) error {
	b := s.b
	appendTimes(b, t.cExch, t.cLocal, e)
	b.String(t.cVenue, in.venue)
	b.String(t.cInst, in.key.instrument)
	b.Bool(t.cSnap, snap)
	if side == book.Bid {
		b.String(t.cSide, "bid")
	} else {
		b.String(t.cSide, "ask")
	}
	b.Int64(t.cPrice, lv.Price)
	b.Int64(t.cSize, lv.Size)
	if t.counts {
		b.Int32(t.cCount, lv.Count)
	}
	return s.endRow()
}

func (t *changesTable) finish(*Sink) error { return nil }

func (t *changesTable) csvFields(bool) []columnar.CSVField {
	return append(tardisHead(t.cExch, t.cLocal, t.cVenue, t.cInst),
		csvField("is_snapshot", t.cSnap, columnar.CSVBool),
		csvField("side", t.cSide, columnar.CSVString),
		csvField("price", t.cPrice, columnar.CSVPrice),
		csvField("amount", t.cSize, columnar.CSVSize))
}

func appendTimes(b *columnar.Batch, cExch, cLocal int, e *replayer.Event) {
	if x := exchangeNs(e); x != 0 {
		b.Int64(cExch, x)
	} else {
		b.Null(cExch)
	}
	b.Int64(cLocal, e.RecvNs)
}

// tradesTable: one row per trade (Tardis trades). backfill marks a trade
// the venue replayed from before the subscription (Hyperliquid's first
// trades frame after a subscribe; venue.Event.Backfill): history, not a live
// print. The Tardis CSV layout cannot say so, so it leaves those rows out
// (as tardis-machine does) unless the quality columns are asked for, which
// end with backfill.
type tradesTable struct {
	cExch, cLocal, cVenue, cInst int
	cID, cSide, cPrice, cSize    int
	cBackfill                    int
	names                        interned
}

func (t *tradesTable) columns(b *columnar.Batch, _ venue.Capabilities) {
	t.names = interned{}
	t.cExch = b.Add("exchange_ts_ns", columnar.Timestamp, true)
	t.cLocal = b.Add("local_ts_ns", columnar.Timestamp, false)
	t.cVenue = b.Add("venue", columnar.String, false)
	t.cInst = b.Add("instrument", columnar.String, false)
	t.cID = b.Add("id", columnar.String, true)
	t.cSide = b.Add("side", columnar.String, false)
	t.cPrice = b.Add("price", columnar.Price, false)
	t.cSize = b.Add("size", columnar.Size, false)
	t.cBackfill = b.Add("backfill", columnar.Bool, false)
}

func (t *tradesTable) onEvent(s *Sink, e *replayer.Event) error {
	d := e.Decoded
	if d == nil || d.Type != venue.EventTrade {
		return nil
	}
	if d.Backfill && s.format == FormatTardis && !s.cfg.quality {
		return nil
	}
	b := s.b
	appendTimes(b, t.cExch, t.cLocal, e)
	b.String(t.cVenue, t.names.get(e.Venue))
	b.String(t.cInst, t.names.get(e.Instrument))
	if len(d.ID) > 0 {
		b.StringBytes(t.cID, d.ID)
	} else {
		b.Null(t.cID)
	}
	if d.Side == book.Bid { // the taker's side: a bid taker bought
		b.String(t.cSide, "buy")
	} else {
		b.String(t.cSide, "sell")
	}
	b.Int64(t.cPrice, d.Price)
	b.Int64(t.cSize, d.Size)
	b.Bool(t.cBackfill, d.Backfill)
	return s.endRow()
}

func (t *tradesTable) finish(*Sink) error { return nil }

func (t *tradesTable) csvFields(quality bool) []columnar.CSVField {
	f := append(tardisHead(t.cExch, t.cLocal, t.cVenue, t.cInst),
		csvField("id", t.cID, columnar.CSVString),
		csvField("side", t.cSide, columnar.CSVString),
		csvField("price", t.cPrice, columnar.CSVPrice),
		csvField("amount", t.cSize, columnar.CSVSize))
	if quality {
		f = append(f, csvField("backfill", t.cBackfill, columnar.CSVBool))
	}
	return f
}

// quotesTable: one row whenever a book's best bid or ask (price, size or
// presence) or its validity changes (Tardis quotes), source "book"; and one
// row per top-of-book message of the venue that is not merged into a book
// (Polymarket best_bid_ask), source "venue", with the venue's prices (sizes
// null: it sends none; an empty side null). A Hyperliquid bbo is merged into
// its book, so it shows as a "book" row. The Tardis CSV layout has no source
// column: venue rows are written only with the quality columns, which end
// with source.
type quotesTable struct {
	cExch, cLocal, cVenue, cInst int
	cBidP, cBidS, cAskP, cAskS   int
	cValid, cSource              int
	names                        interned
	last                         instIndex[quoteState] // each book's last row
}

type quoteState struct {
	bid, ask       book.Level
	hasBid, hasAsk bool
	valid          bool
}

func newQuotesTable() *quotesTable { return &quotesTable{} }

func (t *quotesTable) columns(b *columnar.Batch, _ venue.Capabilities) {
	t.names = interned{}
	t.cExch = b.Add("exchange_ts_ns", columnar.Timestamp, true)
	t.cLocal = b.Add("local_ts_ns", columnar.Timestamp, false)
	t.cVenue = b.Add("venue", columnar.String, false)
	t.cInst = b.Add("instrument", columnar.String, false)
	t.cBidP = b.Add("bid_price", columnar.Price, true)
	t.cBidS = b.Add("bid_size", columnar.Size, true)
	t.cAskP = b.Add("ask_price", columnar.Price, true)
	t.cAskS = b.Add("ask_size", columnar.Size, true)
	t.cValid = b.Add("book_valid", columnar.Bool, false)
	t.cSource = b.Add("source", columnar.String, false)
}

func (t *quotesTable) onEvent(s *Sink, e *replayer.Event) error {
	if d := e.Decoded; d != nil && d.Type == venue.EventQuote && d.Book == nil && e.Instrument != "" {
		if s.format == FormatTardis && !s.cfg.quality {
			return nil
		}
		return t.venueRow(s, e, d)
	}
	if e.Book == nil || e.Instrument == "" {
		return nil
	}
	var q quoteState
	q.bid, q.hasBid = e.Book.Best(book.Bid)
	q.ask, q.hasAsk = e.Book.Best(book.Ask)
	q.bid.Count, q.ask.Count = 0, 0
	q.valid = e.Book.Valid()
	if old, h := t.last.get(e.Dataset, e.Instrument); old == nil {
		first := q // on the heap once per book, not per event
		t.last.add(instKey{e.Dataset, t.names.get(e.Instrument)}, &first, h)
	} else if *old == q {
		return nil
	} else {
		*old = q
	}
	b := s.b
	appendTimes(b, t.cExch, t.cLocal, e)
	b.String(t.cVenue, t.names.get(e.Venue))
	b.String(t.cInst, t.names.get(e.Instrument))
	if q.hasBid {
		b.Int64(t.cBidP, q.bid.Price)
		b.Int64(t.cBidS, q.bid.Size)
	} else {
		b.Null(t.cBidP)
		b.Null(t.cBidS)
	}
	if q.hasAsk {
		b.Int64(t.cAskP, q.ask.Price)
		b.Int64(t.cAskS, q.ask.Size)
	} else {
		b.Null(t.cAskP)
		b.Null(t.cAskS)
	}
	b.Bool(t.cValid, q.valid)
	b.String(t.cSource, "book")
	return s.endRow()
}

// venueRow writes the venue's own top of book message d.
func (t *quotesTable) venueRow(s *Sink, e *replayer.Event, d *venue.Event) error {
	b := s.b
	appendTimes(b, t.cExch, t.cLocal, e)
	b.String(t.cVenue, t.names.get(e.Venue))
	b.String(t.cInst, t.names.get(e.Instrument))
	side := func(has bool, px, sz int64, cP, cS int) {
		if has {
			b.Int64(cP, px)
		} else {
			b.Null(cP)
		}
		if has && sz > 0 {
			b.Int64(cS, sz)
		} else {
			b.Null(cS)
		}
	}
	side(d.HasBid, d.BidPrice, d.BidSize, t.cBidP, t.cBidS)
	side(d.HasAsk, d.AskPrice, d.AskSize, t.cAskP, t.cAskS)
	b.Bool(t.cValid, e.Book != nil && e.Book.Valid())
	b.String(t.cSource, "venue")
	return s.endRow()
}

func (t *quotesTable) finish(*Sink) error { return nil }

func (t *quotesTable) csvFields(quality bool) []columnar.CSVField {
	f := append(tardisHead(t.cExch, t.cLocal, t.cVenue, t.cInst),
		csvField("ask_amount", t.cAskS, columnar.CSVSize),
		csvField("ask_price", t.cAskP, columnar.CSVPrice),
		csvField("bid_price", t.cBidP, columnar.CSVPrice),
		csvField("bid_amount", t.cBidS, columnar.CSVSize))
	if quality {
		f = append(f, csvField("book_valid", t.cValid, columnar.CSVBool),
			csvField("source", t.cSource, columnar.CSVString))
	}
	return f
}

// eventsTable: one row per control record (its connection-wide delivery),
// per rejected message, and per event after which a book's venue hash
// verdicts grew by a mismatch or an unverifiable.
type eventsTable struct {
	cLocal, cVenue, cDataset, cConn, cSeq, cKind       int
	cURL, cCode, cReason, cErr, cAttempt, cInstruments int
	cDropped, cFrom, cTo, cOffset, cText               int
	names                                              interned
	verdicts                                           instIndex[verdictCounts]
}

// verdictCounts are a book's hash verdict counters at its last event.
type verdictCounts struct{ mismatch, unverifiable uint64 }

func (t *eventsTable) columns(b *columnar.Batch, _ venue.Capabilities) {
	t.names = interned{}
	t.verdicts = instIndex[verdictCounts]{}
	t.cLocal = b.Add("local_ts_ns", columnar.Timestamp, false)
	t.cVenue = b.Add("venue", columnar.String, false)
	t.cDataset = b.Add("dataset", columnar.Int32, false)
	t.cConn = b.Add("conn", columnar.Int64, false)
	t.cSeq = b.Add("seq", columnar.Int64, false)
	t.cKind = b.Add("kind", columnar.String, false)
	t.cURL = b.Add("url", columnar.String, true)
	t.cCode = b.Add("code", columnar.Int32, true)
	t.cReason = b.Add("reason", columnar.String, true)
	t.cErr = b.Add("error", columnar.String, true)
	t.cAttempt = b.Add("attempt", columnar.Int32, true)
	t.cInstruments = b.Add("instruments", columnar.String, true)
	t.cDropped = b.Add("dropped", columnar.Int64, true)
	t.cFrom = b.Add("from_ns", columnar.Timestamp, true)
	t.cTo = b.Add("to_ns", columnar.Timestamp, true)
	t.cOffset = b.Add("offset_ns", columnar.Int64, true)
	t.cText = b.Add("text", columnar.String, true)
}

func (t *eventsTable) onEvent(s *Sink, e *replayer.Event) error {
	if d := e.Decoded; d != nil && d.Type == venue.EventReject {
		return t.rejectRow(s, e, d)
	}
	if q := &e.Quality; q.HashMismatch|q.HashUnverifiable != 0 && e.Instrument != "" {
		if err := t.verdictRows(s, e); err != nil {
			return err
		}
	}
	// A loss record also arrives once per instrument it invalidates, and a
	// REST response a decoder took also arrives as its decoded snapshot; the
	// connection-wide control delivery (Instrument "", no Decoded) is the one
	// row per record.
	if e.Kind == datasets.KindFrame || e.Kind == datasets.KindSent || e.Instrument != "" || e.Decoded != nil {
		return nil
	}
	b := s.b
	b.Int64(t.cLocal, e.RecvNs)
	b.String(t.cVenue, t.names.get(e.Venue))
	b.Int32(t.cDataset, int32(e.Dataset))
	b.Int64(t.cConn, int64(e.Conn))
	b.Int64(t.cSeq, int64(e.Seq))
	b.String(t.cKind, t.names.get(e.Kind.String()))
	var c datasets.Control
	if e.Control != nil {
		c = *e.Control
	}
	optStr(b, t.cURL, c.URL)
	optI32(b, t.cCode, c.Code)
	optStr(b, t.cReason, c.Reason)
	optStr(b, t.cErr, c.Err)
	optI32(b, t.cAttempt, c.Attempt)
	optStr(b, t.cInstruments, strings.Join(c.Instruments, ","))
	optI64(b, t.cDropped, int64(c.Dropped))
	optI64(b, t.cFrom, c.FromNs)
	optI64(b, t.cTo, c.ToNs)
	optI64(b, t.cOffset, c.OffsetNs)
	optStr(b, t.cText, c.Text)
	return s.endRow()
}

// rejectRow writes a message the decoder rejected: kind "rejected", error
// its error, instruments the book it invalidated (null when none).
func (t *eventsTable) rejectRow(s *Sink, e *replayer.Event, d *venue.Event) error {
	return t.detailRow(s, e, "rejected", "", string(d.Text), "")
}

// verdictRows writes a row of kind "hash_mismatch" or "hash_unverifiable"
// (reason the same, instruments the book, text the book's verdict counts)
// for each of the two that grew since the book's last event: the decoder
// gives a verdict when a batch closes or a pending hash is decided, so the
// row carries the event that did it.
func (t *eventsTable) verdictRows(s *Sink, e *replayer.Event) error {
	v, h := t.verdicts.get(e.Dataset, e.Instrument)
	if v == nil {
		v = &verdictCounts{}
		t.verdicts.add(instKey{e.Dataset, strings.Clone(e.Instrument)}, v, h)
	}
	q := &e.Quality
	for _, k := range [...]struct {
		kind      string
		now, last uint64
	}{{datasets.CheckHashMismatch, q.HashMismatch, v.mismatch}, {"hash_unverifiable", q.HashUnverifiable, v.unverifiable}} {
		if k.now <= k.last {
			continue
		}
		text := fmt.Sprintf("hash verdicts: %d ok, %d mismatch, %d unverifiable of %d", q.HashOK, q.HashMismatch, q.HashUnverifiable, q.HashChecked)
		if err := t.detailRow(s, e, k.kind, k.kind, "", text); err != nil {
			return err
		}
	}
	v.mismatch, v.unverifiable = q.HashMismatch, q.HashUnverifiable
	return nil
}

// detailRow writes a row about e's book that is not a control record:
// kind, and of the details only reason, error, instruments (e's) and text.
func (t *eventsTable) detailRow(s *Sink, e *replayer.Event, kind, reason, errText, text string) error {
	b := s.b
	b.Int64(t.cLocal, e.RecvNs)
	b.String(t.cVenue, t.names.get(e.Venue))
	b.Int32(t.cDataset, int32(e.Dataset))
	b.Int64(t.cConn, int64(e.Conn))
	b.Int64(t.cSeq, int64(e.Seq))
	b.String(t.cKind, kind)
	b.Null(t.cURL)
	b.Null(t.cCode)
	optStr(b, t.cReason, reason)
	optStr(b, t.cErr, errText)
	b.Null(t.cAttempt)
	optStr(b, t.cInstruments, t.names.get(e.Instrument))
	b.Null(t.cDropped)
	b.Null(t.cFrom)
	b.Null(t.cTo)
	b.Null(t.cOffset)
	optStr(b, t.cText, text)
	return s.endRow()
}

// Control fields are omitted when zero; the table says so with a null.
func optStr(b *columnar.Batch, c int, v string) {
	if v == "" {
		b.Null(c)
	} else {
		b.String(c, v)
	}
}

func optI64(b *columnar.Batch, c int, v int64) {
	if v == 0 {
		b.Null(c)
	} else {
		b.Int64(c, v)
	}
}

func optI32(b *columnar.Batch, c int, v int) {
	if v == 0 {
		b.Null(c)
	} else {
		b.Int32(c, int32(v))
	}
}

func (t *eventsTable) finish(*Sink) error { return nil }

func (t *eventsTable) csvFields(bool) []columnar.CSVField {
	return []columnar.CSVField{
		csvField("local_timestamp", t.cLocal, columnar.CSVMicros),
		csvField("local_ts_ns", t.cLocal, columnar.CSVInt),
		csvField("venue", t.cVenue, columnar.CSVString),
		csvField("dataset", t.cDataset, columnar.CSVInt),
		csvField("conn", t.cConn, columnar.CSVInt),
		csvField("seq", t.cSeq, columnar.CSVInt),
		csvField("kind", t.cKind, columnar.CSVString),
		csvField("url", t.cURL, columnar.CSVString),
		csvField("code", t.cCode, columnar.CSVInt),
		csvField("reason", t.cReason, columnar.CSVString),
		csvField("error", t.cErr, columnar.CSVString),
		csvField("attempt", t.cAttempt, columnar.CSVInt),
		csvField("instruments", t.cInstruments, columnar.CSVString),
		csvField("dropped", t.cDropped, columnar.CSVInt),
		csvField("from_ns", t.cFrom, columnar.CSVInt),
		csvField("to_ns", t.cTo, columnar.CSVInt),
		csvField("offset_ns", t.cOffset, columnar.CSVInt),
		csvField("text", t.cText, columnar.CSVString),
	}
}
