package backtest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// What a run keeps while it runs. A full run keeps every order and fill:
// its result hands them back, and its tables are written from them. A
// summary-only run (ManyOptions.SummaryOnly) keeps what is still in play
// and folds the rest into its summary as it goes, so that what it holds
// grows with its open orders and reports in flight, not with the
// recording's length:
//
//   - An order goes once it is done at the exchange, the strategy has been
//     told so, and no action or report about it is in flight (Order.refs),
//     in ID order: its counts and submitted value are folded into the
//     summary (tally) and its final state into the digest, which hashes the
//     orders in ID order. An order still working holds back those after
//     it (a few hundred for the built-in market maker).
//   - A fill goes once its report reached the strategy. Its counts and
//     value are folded when it happens, its markouts keep what they need
//     of it (markout), and its part of the digest, which comes after every
//     order's and so cannot be hashed before the run ends, is kept as the
//     56 bytes the digest reads, encoded as differences from the previous
//     fill's, on disk past spillBytes (fillLog).
//   - The equity curve, positions and markouts are folded into the
//     summary's figures (curve, markoutSums) and kept as no series.
//
// A full run computes its summary with the same folds, over the whole
// lists at the end, so the two give the same summary and digest to the
// last bit.

// tally folds orders and fills into the summary's counts and values, in
// the order a full run's result reads them: orders in ID order, fills in
// execution order.
type tally struct {
	sub, fil     int64 // submitted and filled value (CashDecimals)
	maker, taker int
	venues       map[string]*VenueSummary
	units        map[string]int64 // filled size by venue
	// feeFirst is the first order (ID) of each instrument with a fee
	// model, for Summary.FeeRates' markets with orders and no fills.
	feeFirst map[*Instrument]uint64
	// strays are orders sent for an instrument no event had named (Venue
	// ""): the data may name it later, and the result counts them if so.
	// Folded last, in ID order, as their own venue's sums.
	strays []*Order
	// last is the venue venue last returned, by name: a run mostly trades
	// on one, whose name need not be hashed for each order and fill.
	lastName string
	last     *VenueSummary
}

func (t *tally) venue(name string) *VenueSummary {
	if t.last != nil && name == t.lastName {
		return t.last
	}
	if t.venues == nil {
		t.venues, t.units = map[string]*VenueSummary{}, map[string]int64{}
	}
	v := t.venues[name]
	if v == nil {
		v = &VenueSummary{}
		t.venues[name] = v
	}
	t.lastName, t.last = name, v
	return v
}

// order folds a done order (or, at the end, any); a stray one waits for
// the end (final true folds it).
func (t *tally) order(e *Engine, o *Order, final bool) {
	if o.Venue == "" && !final {
		t.strays = append(t.strays, o)
		return
	}
	in := e.instOf(o)
	if in == nil {
		return
	}
	v := t.venue(o.Venue)
	v.Orders++
	val := o.Amount * pow10(CashDecimals-in.Scale.PriceDecimals)
	if o.Amount == 0 {
		val = Notional(o.Price, o.Size, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
	}
	t.sub += val
	v.SubmittedValue += cashF(val)
	if in.rules != nil && in.rules.fees != nil {
		if t.feeFirst == nil {
			t.feeFirst = map[*Instrument]uint64{}
		}
		if id, ok := t.feeFirst[in]; !ok || o.ID < id {
			t.feeFirst[in] = o.ID
		}
	}
}

// fill folds a fill as it happens.
func (t *tally) fill(in *Instrument, f *Fill) {
	n := Notional(f.Price, f.Size, in.Scale.PriceDecimals, in.Scale.SizeDecimals)
	t.fil += n
	v := t.venue(f.Venue)
	v.Fills++
	v.FilledValue += cashF(n)
	t.units[f.Venue] += f.Size
	v.FilledSize = float64(t.units[f.Venue]) / float64(pow10(in.Scale.SizeDecimals))
	if f.Liquidity == Maker {
		t.maker++
	} else {
		t.taker++
	}
}

// filled takes a new fill (the last of e.fills) into the summary and, in
// a summary-only run, the digest.
func (e *Engine) filled(in *Instrument, f *Fill) {
	e.tally.fill(in, f)
	if e.summaryOnly {
		e.fillLog.add(f)
	}
}

// nextOrderID is the ID of the next order.
func (e *Engine) nextOrderID() uint64 { return e.orderBase + uint64(len(e.orders)) + 1 }

// orderIndex is the index in e.orders and e.view.orders of order id, which
// must be kept.
func (e *Engine) orderIndex(id uint64) int { return int(id - e.orderBase - 1) }

// noOrder is Cancel's and Amend's error for an order id not kept: never
// issued, or done and forgotten (summary-only runs).
func (e *Engine) noOrder(id uint64) error {
	if id > 0 && id <= e.orderBase {
		return &Error{OrderID: id, Reason: "order is done"}
	}
	return &Error{OrderID: id, Reason: "no such order"}
}

// release lets a summary-only run forget the orders and fills it no longer
// needs (see above), after each event.
func (e *Engine) release() {
	k := 0
	for ; k < len(e.orders); k++ {
		o, lo := e.orders[k], e.view.orders[k]
		if !o.Status.Done() || o.refs != 0 || !lo.Status.Done() {
			break
		}
		e.tally.order(e, o, false)
		e.hashOrder(o)
	}
	if k > 0 {
		e.orders = dropFront(e.orders, k)
		e.view.orders = dropFront(e.view.orders, k)
		e.orderBase += uint64(k)
		e.view.version++ // Context.Order forgets them
	}
	k = 0
	for k < len(e.fills) && e.fills[k].reported {
		k++
	}
	if k > 0 {
		e.fills = dropFront(e.fills, k)
		e.fillBase += k
	}
}

// roomFor returns s with room for one more element, doubling a full
// array. The run-long lists (orders, fills and the strategy's copies,
// markouts, equity) grow by append to the run's end; append's own growth
// of large slices (about 1.25×) allocates some five times the final size
// on the way, doubling about twice, for at most as much slack at the end.
// (The positions series is left to append: on the mm sample its last
// doubling overshot, allocating more in all.)
func roomFor[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	return slices.Grow(s, max(len(s), 16))
}

// dropFront removes s's first k elements in place, keeping its array.
func dropFront[T any](s []T, k int) []T {
	n := copy(s, s[k:])
	clear(s[n:])
	return s[:n]
}

// hashOrder adds an order's final state to a summary-only run's digest.
// The records gather in digBuf and are hashed digChunk bytes or so at a
// time: the digest reads the same bytes in the same order, and XXH64
// takes one long write at about twice the speed of a hundred-byte
// record's.
func (e *Engine) hashOrder(o *Order) {
	e.digBuf = appendOrderRecord(e.digBuf, o)
	if len(e.digBuf) >= digChunk {
		e.hashPending()
	}
}

// digChunk is how many bytes of records hashOrder gathers before hashing
// them.
const digChunk = 4 << 10

// hashPending hashes the records gathered in digBuf into the digest.
func (e *Engine) hashPending() {
	if e.dig == nil {
		e.dig = xxhash.New()
	}
	e.dig.Write(e.digBuf)
	e.digBuf = e.digBuf[:0]
}

// appendOrderRecord appends what the digest reads of an order.
func appendOrderRecord(b []byte, o *Order) []byte {
	b = binary.LittleEndian.AppendUint64(b, o.ID)
	b = append(b, o.Instrument...)
	b = binary.LittleEndian.AppendUint64(b, uint64(o.Side)<<8|uint64(o.TIF)<<16|uint64(o.Status)<<24)
	b = binary.LittleEndian.AppendUint64(b, uint64(o.Price))
	b = binary.LittleEndian.AppendUint64(b, uint64(o.Size))
	b = binary.LittleEndian.AppendUint64(b, uint64(o.Filled))
	return append(b, o.Reason...)
}

// fillRecordSize is the size of appendFillRecord's record.
const fillRecordSize = 7 * 8

// fillFields are what the digest reads of a fill, in its order.
func fillFields(f *Fill) [7]int64 {
	return [...]int64{int64(f.OrderID), f.Price, f.Size, int64(f.Liquidity), f.Queue, f.Fee, f.RecvNs}
}

// appendFillRecord appends what the digest reads of a fill.
func appendFillRecord(b []byte, f *Fill) []byte {
	for _, v := range fillFields(f) {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// spillBytes is how much of its fills' digest records (encoded, see
// fillLog) a summary-only run keeps in memory before it appends them to a
// temporary file.
var spillBytes = 16 << 10

// fillLog is a summary-only run's digest records of its fills, in
// execution order: the digest hashes them after every order's final
// state, so they wait for the end; in memory up to spillBytes, then in a
// temporary file (opened for each append, so that many runs hold no
// descriptors), removed when read. Where the file cannot be written they
// stay in memory (err says why).
//
// Each record is kept as its fields' differences from the previous
// record's, as varints (binary.AppendVarint): consecutive fills share
// their order, price and size or come close, a few bytes each where the
// record is 56, so that a run of a thousand fills (the shipped samples')
// never touches the disk, whose every spill costs a run more than its
// whole bookkeeping. writeTo rebuilds the records, byte for byte.
type fillLog struct {
	buf     []byte
	prev    [7]int64 // the last record's fields, what the next is encoded against
	path    string   // the temporary file, "" before the first spill
	spilled int64    // bytes in it
	err     error
}

func (l *fillLog) add(f *Fill) {
	for i, v := range fillFields(f) {
		l.buf = binary.AppendVarint(l.buf, v-l.prev[i])
		l.prev[i] = v
	}
	if len(l.buf) >= spillBytes && l.err == nil {
		l.spill()
	}
}

func (l *fillLog) spill() {
	var f *os.File
	var err error
	if l.path == "" {
		f, err = os.CreateTemp("", "tapedeck-fills-*")
		if err == nil {
			l.path = f.Name()
		}
	} else {
		f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		l.err = err
		return
	}
	_, err = f.Write(l.buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// What a short write left past spilled is never read.
		l.err = err
		return
	}
	l.spilled += int64(len(l.buf))
	l.buf = l.buf[:0]
}

// writeTo writes the records to w in order and removes the file.
func (l *fillLog) writeTo(w io.Writer) error {
	var r io.Reader = bytes.NewReader(l.buf)
	if l.path != "" {
		f, err := os.Open(l.path)
		if err != nil {
			return err
		}
		defer l.close()
		defer f.Close()
		r = io.MultiReader(io.LimitReader(f, l.spilled), r)
	}
	br := bufio.NewReader(r)
	var prev [7]int64
	out := make([]byte, 0, 64*fillRecordSize)
	for {
		for i := range prev {
			d, err := binary.ReadVarint(br)
			if err == io.EOF && i == 0 {
				_, err = w.Write(out)
				return err
			}
			if err != nil {
				return fmt.Errorf("fill record: %w", err)
			}
			prev[i] += d
			out = binary.LittleEndian.AppendUint64(out, uint64(prev[i]))
		}
		if len(out) == cap(out) {
			if _, err := w.Write(out); err != nil {
				return err
			}
			out = out[:0]
		}
	}
}

// close removes the temporary file, if any.
func (l *fillLog) close() {
	if l.path != "" {
		os.Remove(l.path)
		l.path = ""
	}
}

// digest is XXH64 over every order's final state and every fill, in order,
// then the cash: same data, strategy and parameters give the same digest.
// A summary-only run has hashed the orders it released already (release)
// and kept its fills' records (fillLog).
func (e *Engine) digest() (string, error) {
	if !e.summaryOnly {
		e.dig = nil // a full run hashes it all here, each time it is asked
	}
	for _, o := range e.orders {
		e.hashOrder(o)
	}
	e.hashPending()
	h := e.dig
	if e.summaryOnly {
		if err := e.fillLog.writeTo(h); err != nil {
			return "", fmt.Errorf("backtest: digest: read back the fills' records: %w", err)
		}
	} else {
		for i := range e.fills {
			e.digBuf = appendFillRecord(e.digBuf, &e.fills[i])
			if len(e.digBuf) >= digChunk {
				e.hashPending()
			}
		}
	}
	e.digBuf = binary.LittleEndian.AppendUint64(e.digBuf, uint64(e.cash))
	e.hashPending()
	return fmt.Sprintf("xxh64:%016x", h.Sum64()), nil
}
