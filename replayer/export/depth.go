package export

import (
	"sort"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// instKey names one book: the same instrument in two datasets is two books.
type instKey struct {
	dataset    int
	instrument string
}

// flags is what a depth or quotes row says about how far to trust the book.
type flags struct {
	valid, afterGap, crossed, hashChecked, hashOK, hashMismatch, hashUnverifiable, estimated bool
}

// depthInst is the per-book state of the depth table.
type depthInst struct {
	key   instKey
	venue string
	id    int32 // the book's number (batch.books)

	gen     uint64
	haveGen bool
	// Quality counters at the last event, to turn cumulative counts into
	// "a hash verdict was given since the last row", "every one was ok", "one
	// was a mismatch", "one was unverifiable".
	lastChecked, lastOK, lastMismatch, lastUnverifiable  uint64
	pendChecked, pendBad, pendMismatch, pendUnverifiable bool

	// Sampled mode: the state after the last change in the current bucket.
	dirty      bool
	exchNs     int64
	localNs    int64 // exchange buckets: receive time of the last event
	bids, asks []book.Level
	fl         flags
}

type depthTable struct {
	levels     int
	intervalNs int64
	byExchange bool // BucketExchange
	counts     bool

	cExch, cLocal, cVenue, cInst int
	cLevel0, perLevel            int // column of bid_price_0 and columns per level
	cFlags                       int // first of the flag columns (flagNames)
	nBids, nAsks                 int // level counts of the two sides

	insts  instIndex[depthInst]
	order  []*depthInst // sorted by (dataset, instrument): deterministic bucket flushes
	bucket int64
	inBkt  bool
	bids   []book.Level // scratch for every-event rows
	asks   []book.Level
}

func newDepthTable(levels int, intervalNs int64, byExchange bool) *depthTable {
	return &depthTable{levels: levels, intervalNs: intervalNs, byExchange: byExchange,
		bids: make([]book.Level, 0, levels), asks: make([]book.Level, 0, levels)}
}

var flagNames = [...]string{"book_valid", "after_gap", "crossed", "hash_checked", "hash_ok", "hash_mismatch", "hash_unverifiable", "estimated"}

func (t *depthTable) columns(b *batch, _ string, counts bool) {
	t.counts = counts
	t.cExch = b.add("exchange_ts_ns", kTime, true)
	t.cLocal = b.add("local_ts_ns", kTime, false)
	t.cVenue = b.add("venue", kString, false)
	t.cInst = b.add("instrument", kString, false)
	t.nBids, t.nAsks = b.addLevelCount(), b.addLevelCount()
	t.cLevel0 = len(b.cols)
	for i := 0; i < t.levels; i++ {
		n := strconv.Itoa(i)
		b.addLevel("bid_price_"+n, kPrice, t.nBids, i)
		b.addLevel("bid_size_"+n, kSize, t.nBids, i)
		if counts {
			b.addLevel("bid_count_"+n, kInt32, t.nBids, i)
		}
		b.addLevel("ask_price_"+n, kPrice, t.nAsks, i)
		b.addLevel("ask_size_"+n, kSize, t.nAsks, i)
		if counts {
			b.addLevel("ask_count_"+n, kInt32, t.nAsks, i)
		}
	}
	t.perLevel = (len(b.cols) - t.cLevel0) / t.levels
	t.cFlags = len(b.cols)
	for _, f := range flagNames {
		b.add(f, kBool, false)
	}
}

func (t *depthTable) inst(e *replayer.Event) *depthInst {
	in, h := t.insts.get(e.Dataset, e.Instrument)
	if in != nil {
		return in
	}
	k := instKey{e.Dataset, strings.Clone(e.Instrument)}
	in = &depthInst{key: k, venue: strings.Clone(e.Venue), id: int32(t.insts.len())}
	if t.intervalNs > 0 {
		in.bids = make([]book.Level, 0, t.levels)
		in.asks = make([]book.Level, 0, t.levels)
	}
	t.insts.add(k, in, h)
	i := sort.Search(len(t.order), func(i int) bool { return !keyLess(t.order[i].key, k) })
	t.order = append(t.order, nil)
	copy(t.order[i+1:], t.order[i:])
	t.order[i] = in
	return in
}

func keyLess(a, b instKey) bool {
	if a.dataset != b.dataset {
		return a.dataset < b.dataset
	}
	return a.instrument < b.instrument
}

// trackQuality folds the event's cumulative hash counters into the pending
// flags of the next row.
func (in *depthInst) trackQuality(q *venue.Quality) {
	if q.HashChecked > in.lastChecked {
		in.pendChecked = true
		if q.HashOK-in.lastOK != q.HashChecked-in.lastChecked {
			in.pendBad = true
		}
		in.pendMismatch = in.pendMismatch || q.HashMismatch > in.lastMismatch
		in.pendUnverifiable = in.pendUnverifiable || q.HashUnverifiable > in.lastUnverifiable
	}
	in.lastChecked, in.lastOK = q.HashChecked, q.HashOK
	in.lastMismatch, in.lastUnverifiable = q.HashMismatch, q.HashUnverifiable
}

// stateFlags reads the flags that describe the book itself.
func stateFlags(bk *book.Book, q *venue.Quality) flags {
	// crossed is the decoder's verdict after the last completed same-timestamp
	// batch: a book crossed inside a Polymarket match is not flagged.
	return flags{valid: bk.Valid(), afterGap: q.AfterGap, crossed: q.Crossed, estimated: q.Estimated}
}

// takeHash sets the hash flags from the checks since the last row and starts
// a new period.
func (in *depthInst) takeHash(f *flags) {
	f.hashChecked = in.pendChecked
	f.hashOK = in.pendChecked && !in.pendBad
	f.hashMismatch, f.hashUnverifiable = in.pendMismatch, in.pendUnverifiable
	in.pendChecked, in.pendBad, in.pendMismatch, in.pendUnverifiable = false, false, false, false
}

func exchangeNs(e *replayer.Event) int64 {
	if e.Decoded != nil {
		return e.Decoded.ExchangeNs
	}
	return 0
}

func (t *depthTable) onEvent(s *Sink, e *replayer.Event) error {
	if t.intervalNs > 0 {
		ts := e.RecvNs
		if t.byExchange {
			ts = exchangeNs(e) // 0: no venue time, the open bucket
		}
		if ts != 0 {
			bk := floorDiv(ts, t.intervalNs)
			if !t.inBkt {
				t.bucket, t.inBkt = bk, true
			} else if bk > t.bucket {
				if err := t.flushBucket(s); err != nil {
					return err
				}
				t.bucket = bk
			}
		}
	}
	if e.Book == nil || e.Instrument == "" {
		return nil
	}
	in := t.inst(e)
	in.trackQuality(&e.Quality)
	g := e.Book.Generation()
	if in.haveGen && g == in.gen {
		return nil
	}
	in.gen, in.haveGen = g, true
	if t.intervalNs > 0 {
		in.bids = e.Book.Top(book.Bid, in.bids[:0], t.levels)
		in.asks = e.Book.Top(book.Ask, in.asks[:0], t.levels)
		if x := exchangeNs(e); x != 0 {
			in.exchNs = x
		}
		in.localNs = e.RecvNs
		in.fl = stateFlags(e.Book, &e.Quality)
		in.dirty = true
		return nil
	}
	t.bids = e.Book.Top(book.Bid, t.bids[:0], t.levels)
	t.asks = e.Book.Top(book.Ask, t.asks[:0], t.levels)
	f := stateFlags(e.Book, &e.Quality)
	in.takeHash(&f)
	return t.row(s, in, exchangeNs(e), e.RecvNs, t.bids, t.asks, f)
}

func (t *depthTable) flushBucket(s *Sink) error {
	end := (t.bucket + 1) * t.intervalNs
	for _, in := range t.order {
		if !in.dirty {
			continue
		}
		in.dirty = false
		f := in.fl
		in.takeHash(&f)
		exch, local := in.exchNs, end
		if t.byExchange {
			exch, local = end, in.localNs
		}
		if err := t.row(s, in, exch, local, in.bids, in.asks, f); err != nil {
			return err
		}
	}
	return nil
}

func (t *depthTable) finish(s *Sink) error {
	if t.intervalNs > 0 && t.inBkt {
		return t.flushBucket(s)
	}
	return nil
}

func (t *depthTable) row(s *Sink, in *depthInst, exch, local int64, bids, asks []book.Level, f flags) error {
	b := &s.b
	if exch != 0 {
		b.i64(t.cExch, exch)
	} else {
		b.i64Null(t.cExch)
	}
	b.i64(t.cLocal, local)
	b.str(t.cVenue, in.venue)
	b.str(t.cInst, in.key.instrument)
	b.setBook(in.id)
	b.setLevelCount(t.nBids, int32(min(len(bids), t.levels)))
	b.setLevelCount(t.nAsks, int32(min(len(asks), t.levels)))
	// The hundred level stores of a row, from locals: through b, each
	// store would reload the batch's columns and row for fear of aliasing.
	cols, r, c := b.cols, b.rows, t.cLevel0
	for i := 0; i < t.levels; i++ {
		c = t.side(cols, r, c, bids, i)
		c = t.side(cols, r, c, asks, i)
	}
	b.bool(t.cFlags, f.valid)
	b.bool(t.cFlags+1, f.afterGap)
	b.bool(t.cFlags+2, f.crossed)
	b.bool(t.cFlags+3, f.hashChecked)
	b.bool(t.cFlags+4, f.hashOK)
	b.bool(t.cFlags+5, f.hashMismatch)
	b.bool(t.cFlags+6, f.hashUnverifiable)
	b.bool(t.cFlags+7, f.estimated)
	return s.endRow()
}

// side sets level i of one side in row r at column c of cols (the batch's)
// and returns the next column.
// A missing level is null through the side's count; its slots are zeroed so
// that no value of an earlier batch reaches an Arrow buffer.
func (t *depthTable) side(cols []column, r, c int, lv []book.Level, i int) int {
	var l book.Level
	if i < len(lv) {
		l = lv[i]
	}
	cols[c].i64[r] = l.Price
	cols[c+1].i64[r] = l.Size
	if t.counts {
		cols[c+2].i32[r] = l.Count
		return c + 3
	}
	return c + 2
}

func (t *depthTable) csvFields(quality bool) []csvField {
	f := tardisHead(t.cExch, t.cLocal, t.cVenue, t.cInst)
	per := 2
	if t.counts {
		per = 3
	}
	for i := 0; i < t.levels; i++ {
		n := strconv.Itoa(i)
		bid := t.cLevel0 + i*2*per
		ask := bid + per
		f = append(f,
			csvField{"asks[" + n + "].price", ask, csvPrice, -1, ""},
			csvField{"asks[" + n + "].amount", ask + 1, csvSize, -1, ""},
			csvField{"bids[" + n + "].price", bid, csvPrice, -1, ""},
			csvField{"bids[" + n + "].amount", bid + 1, csvSize, -1, ""})
	}
	if quality {
		for i, name := range flagNames {
			f = append(f, csvField{name, t.cFlags + i, csvBool, -1, ""})
		}
	}
	return f
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
