package export

import (
	"sort"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/columnar"
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
	hashes     bool // the venue's books carry hashes: hash_* columns

	cExch, cLocal, cVenue, cInst int
	cLevel0, perLevel            int // column of bid_price_0 and columns per level
	cFlags                       int // first of the flag columns (t.flagNames())
	cEstimated                   int // the last flag column
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

// flagNames are the table's flag columns: the hash verdicts only for a
// venue whose books carry hashes (venue.Capabilities.BookHashes).
func (t *depthTable) flagNames() []string {
	if t.hashes {
		return flagNames[:]
	}
	return []string{flagNames[0], flagNames[1], flagNames[2], flagNames[7]}
}

func (t *depthTable) columns(b *columnar.Batch, caps venue.Capabilities) {
	t.counts, t.hashes = caps.LevelCounts, caps.BookHashes
	counts := t.counts
	t.cExch = b.Add("exchange_ts_ns", columnar.Timestamp, true)
	t.cLocal = b.Add("local_ts_ns", columnar.Timestamp, false)
	t.cVenue = b.Add("venue", columnar.String, false)
	t.cInst = b.Add("instrument", columnar.String, false)
	t.nBids, t.nAsks = b.AddLevelCount(), b.AddLevelCount()
	t.cLevel0 = b.Columns()
	for i := 0; i < t.levels; i++ {
		n := strconv.Itoa(i)
		b.AddLevel("bid_price_"+n, columnar.Price, t.nBids, i)
		b.AddLevel("bid_size_"+n, columnar.Size, t.nBids, i)
		if counts {
			b.AddLevel("bid_count_"+n, columnar.Int32, t.nBids, i)
		}
		b.AddLevel("ask_price_"+n, columnar.Price, t.nAsks, i)
		b.AddLevel("ask_size_"+n, columnar.Size, t.nAsks, i)
		if counts {
			b.AddLevel("ask_count_"+n, columnar.Int32, t.nAsks, i)
		}
	}
	t.perLevel = (b.Columns() - t.cLevel0) / t.levels
	t.cFlags = b.Columns()
	for _, f := range t.flagNames() {
		t.cEstimated = b.Add(f, columnar.Bool, false)
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
	b := s.b
	if exch != 0 {
		b.Int64(t.cExch, exch)
	} else {
		b.Null(t.cExch)
	}
	b.Int64(t.cLocal, local)
	b.String(t.cVenue, in.venue)
	b.String(t.cInst, in.key.instrument)
	b.SetBook(in.id)
	b.SetLevelCount(t.nBids, int32(min(len(bids), t.levels)))
	b.SetLevelCount(t.nAsks, int32(min(len(asks), t.levels)))
	b.SetSides(t.cLevel0, t.levels, t.counts, bids, asks)
	b.Bool(t.cFlags, f.valid)
	b.Bool(t.cFlags+1, f.afterGap)
	b.Bool(t.cFlags+2, f.crossed)
	if t.hashes {
		b.Bool(t.cFlags+3, f.hashChecked)
		b.Bool(t.cFlags+4, f.hashOK)
		b.Bool(t.cFlags+5, f.hashMismatch)
		b.Bool(t.cFlags+6, f.hashUnverifiable)
	}
	b.Bool(t.cEstimated, f.estimated)
	return s.endRow()
}

func (t *depthTable) csvFields(quality bool) []columnar.CSVField {
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
			csvField("asks["+n+"].price", ask, columnar.CSVPrice),
			csvField("asks["+n+"].amount", ask+1, columnar.CSVSize),
			csvField("bids["+n+"].price", bid, columnar.CSVPrice),
			csvField("bids["+n+"].amount", bid+1, columnar.CSVSize))
	}
	if quality {
		for i, name := range t.flagNames() {
			f = append(f, csvField(name, t.cFlags+i, columnar.CSVBool))
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
