// Package polymarket decodes the Polymarket CLOB market channel
// (wss://ws-subscriptions-clob.polymarket.com/ws/market) into L2 books and
// typed events, and holds what a capture session needs to talk to it.
//
// The Decoder reads raw frames in place (no JSON DOM, no encoding/json) and
// applies each message atomically: it parses and validates the whole frame
// first and touches a book only with a message that is good; the messages of
// an initial dump or a REST /books body stand alone, and a rejected one
// invalidates the books it would have changed. NOTES.md documents the
// shapes accepted (empty strings, empty-side sentinels) and the venue domain
// enforced. In steady state it
// allocates nothing per frame. It verifies the venue's book hashes where every
// hashed field is known and checks the local top of book against the
// best_bid/best_ask of each timestamp batch of price changes, counting the
// results in Quality and Stats; a mismatch never rejects data.
package polymarket

import (
	"crypto/sha1"
	"fmt"
	"hash"
	"slices"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/internal/jscan"
)

// Scale is the fixed-point scale of every Polymarket price and size: prices in
// units of 1e-4, the finest tick, so a tick_size_change never re-buckets a
// book; sizes in units of 1e-6, the most decimals a size carries. It is
// read-only: the decoder's fast paths are built for these two values.
var Scale = book.Scale{PriceDecimals: priceDecimals, SizeDecimals: sizeDecimals}

const (
	priceDecimals = 4
	sizeDecimals  = 6
)

// scale is Scale for the decoder's own use, immune to writes to Scale.
func scale() book.Scale { return book.Scale{PriceDecimals: priceDecimals, SizeDecimals: sizeDecimals} }

var _ venue.Decoder = (*Decoder)(nil)

// instrumentInfo supplies the per-asset fields of the book hash that WebSocket
// frames do not carry (they come from the REST /book summary or the market
// listing). The strings are decimals as the REST summary writes them.
type instrumentInfo struct {
	AssetID      string // token id; required
	Market       string // condition id; optional, otherwise learned from frames
	MinOrderSize string // e.g. "5"; required
	TickSize     string // e.g. "0.01"; optional, otherwise learned from frames
	NegRisk      bool
}

// Option configures a Decoder.
type Option func(*options)

type options struct {
	hashCheck  bool
	hashEvery  int64 // ms of the venue's time between sampled checks; 0: every hash
	hashWindow int64 // ms of the venue's time a pending hash waits for a trade
	infos      []instrumentInfo
}

// defaultHashWindow is how long, in the venue's time, a hash that only a
// trade not yet reported could explain waits for that trade
// (WithHashWindow).
const defaultHashWindow = time.Second

func defaultOptions() options {
	return options{hashCheck: true, hashWindow: defaultHashWindow.Milliseconds()}
}

// WithHashCheck turns book-hash verification on or off (default on). Hashes
// are computed only for books whose hashed fields are all known, so turning
// it off matters only when instrumentInfo is supplied or learned.
func WithHashCheck(on bool) Option { return func(o *options) { o.hashCheck = on } }

// WithHashSampling verifies at most one batch hash per asset per every of
// the venue's time (rounded up to a millisecond) instead of every one, and
// always the batch open before a snapshot replaces the book (unless the
// snapshot equals it, which confirms the levels), before a loss
// (Invalidate), before setInstrumentInfo and at the end (Flush). A diverged
// book stays diverged until one of those, so it is still caught.
// 0 (the default) checks every hash.
func WithHashSampling(every time.Duration) Option {
	return func(o *options) {
		o.hashEvery = 0
		if every > 0 {
			o.hashEvery = int64((every + time.Millisecond - 1) / time.Millisecond)
		}
	}
}

// WithHashWindow sets how long, in the venue's time (rounded up to a
// millisecond), a hash that does not match with the known last trade price
// stays pending, waiting for a last_trade_price of its asset or of the
// other asset of its market (at 1 − p) that explains it (NOTES.md, "Hash
// verdicts"). Default defaultHashWindow; 0 or less decides at once (a hash
// no known price explains is then unverifiable, not a mismatch, while the
// venue hashes the last trade price).
func WithHashWindow(d time.Duration) Option {
	return func(o *options) {
		o.hashWindow = 0
		if d > 0 {
			o.hashWindow = int64((d + time.Millisecond - 1) / time.Millisecond)
		}
	}
}

// withInstrumentInfo supplies hash fields for some assets, as setInstrumentInfo
// does. NewDecoder panics if one is invalid: validate data from the network
// with setInstrumentInfo instead.
func withInstrumentInfo(infos ...instrumentInfo) Option {
	return func(o *options) { o.infos = append(o.infos, infos...) }
}

// Decoder decodes the frames of one Polymarket market-channel connection and
// owns one book per asset id seen. It implements venue.Decoder and is not safe
// for concurrent use.
type Decoder struct {
	opts    options
	byID    map[string]*instrument
	list    []*instrument // every instrument, in order of first sight
	markets map[string]string
	pending []*instrument // instruments that may have an open batch
	waiting []*instrument // instruments with pending hash verdicts
	// ungapped are the instruments whose gap is false (a valid book, or one
	// never invalidated): all an invalidation of every book has to visit.
	// A rejected frame that may touch any book then costs the books made
	// valid since the last one, not every instrument ever seen (a stream
	// past 65,536 ids invalidated them all on each further frame).
	ungapped []*instrument
	// mktUngapped are the ungapped instruments by market, for a rejected
	// price_change of one market; a market an instrument was ever filed
	// under has an entry (maybe empty).
	mktUngapped map[string]*[]*instrument
	last        *instrument // the instrument lookup found last
	prev        *instrument // the one it found before last
	stats       venue.Stats
	nowMs       int64       // the latest venue time seen, ms
	discard     venue.Frame // out for a nil *Frame

	// Scratch reused by every frame; it grows to the largest frame seen.
	s       jscan.Scanner
	frame   []byte
	msgs    []msg
	levels  []book.Level
	changes []change
	sortBuf []book.Level
	hashBuf []byte           // a hash input's head, up to the bids
	errText []byte           // the texts of this frame's EventReject events
	rejs    []rejection      // this frame's rejected messages (msg.rej)
	topBuf  []book.Level     // levels for a hash cache rebuild
	sha     hash.Hash        // SHA-1, reset or restored for every hash check
	stBuf   []byte           // a SHA-1 state being saved
	ltpBuf  []byte           // a last trade price's text, for a pending hash
	sum     [sha1.Size]byte  // a pending hash's candidate sum
	sc      [numKeyCodes]val // the parsed message's scalars given (bit kc of scSet)
	scSet   uint32
	pad     [16]byte // at16's bytes near the end of a frame

	instHints   [1 << hintBits]instHint // hint.go
	marketHints [1 << hintBits]marketHint
}

// NewDecoder returns a Decoder with no books.
func NewDecoder(opts ...Option) *Decoder {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	d := &Decoder{
		opts:        o,
		byID:        make(map[string]*instrument),
		markets:     make(map[string]string),
		mktUngapped: make(map[string]*[]*instrument),
	}
	for _, info := range o.infos {
		if err := d.setInstrumentInfo(info); err != nil {
			panic("polymarket: WithInstrumentInfo: " + err.Error())
		}
	}
	return d
}

// instrument is the decoder's state for one asset id.
type instrument struct {
	id     string
	market string
	book   *book.Book
	q      venue.Quality
	gap    bool  // invalidated since the last snapshot (set through setGap, cleared through clearGap)
	ugAt   int32 // index+1 in Decoder.ungapped, 0 if not there
	mugAt  int32 // index+1 in its market's Decoder.mktUngapped list, 0 if not there
	// snapped: a snapshot was ever applied; level changes before that go
	// to an invalid book and are counted in Stats.Unsnapshotted.
	snapped bool

	// Hashed fields not in the levels, fixed-point; 0 means unknown.
	minOrder  int64 // size scale
	tick      int64 // price scale
	ltp       int64 // last trade price, price scale; -1 = sent as "" (no trade yet)
	negRisk   bool
	negKnown  bool
	ltpPrev   int64 // the last trade price before ltp (0 unknown)
	ltpComp   int64 // 1 − the latest trade price of the market's other asset (0 none)
	ltpSame   int64 // the latest trade price of the market's other asset itself (0 none)
	ltpFirst  bool  // the last matching hash had last_trade_price appended
	ltpPad    bool  // the last matching hash wrote it with three decimals at least ("0.500")
	ltpShared bool  // the last matching hash took the other asset's trade price as it is, not 1 − p
	okSeen    bool  // a hash ever matched (ltpFirst says in which form)
	inPending bool
	inWaiting bool      // in Decoder.waiting
	hc        hashCache // the book serialized for hash checks
	key       idKey     // the id's first 16 bytes, when long (hint.go)
	long      bool

	// comp is the other asset of the market, searched for when compN, the
	// number of instruments then known, is behind.
	comp  *instrument
	compN int

	// Hash verdicts. hashBad: the book was invalidated by a confirmed
	// mismatch (a later matching hash makes it valid again); goodSeq counts
	// snapshots and matching hashes, so a mismatch confirmed late does not
	// invalidate a book one of those has vouched for since.
	hashBad bool
	goodSeq uint64
	pend    [maxPendingHashes]pendingHash
	npend   int

	// Sampled hash checks: the ms of the last verified check.
	checkedMs  int64
	everHashed bool

	// The open timestamp batch of price changes, and the hash of its last
	// entry (the venue hashes the book after the batch).
	batchOpen  bool
	batchTs    int64 // ms
	topKnown   bool  // the batch's last entry gave a usable best_bid/best_ask
	bestBid    int64 // 0 = side empty
	bestAsk    int64
	batchHash  bool
	batchRaw   [2 * sha1.Size]byte // the batch's hash as sent (hex), decoded when judged
	batchTsTxt []byte
}

func (in *instrument) hashable() bool {
	return in.market != "" && in.minOrder > 0 && in.tick > 0 && in.negKnown
}

// setInstrumentInfo records the hash fields of one asset, creating its
// (invalid, empty) book if it was not seen yet. It returns an error naming the
// field if a decimal does not parse at Scale or the asset id is empty.
func (d *Decoder) setInstrumentInfo(info instrumentInfo) error {
	if info.AssetID == "" {
		return fmt.Errorf("polymarket: instrument info: asset_id: %w", ErrMissingField)
	}
	mo, err := book.ParseDecimal([]byte(info.MinOrderSize), sizeDecimals)
	if err != nil {
		return fmt.Errorf("polymarket: instrument info %s: %w", info.AssetID, book.NewDecimalError("min_order_size", []byte(info.MinOrderSize), err))
	}
	var tick int64
	if info.TickSize != "" {
		tick, err = book.ParseDecimal([]byte(info.TickSize), priceDecimals)
		if err != nil {
			return fmt.Errorf("polymarket: instrument info %s: %w", info.AssetID, book.NewDecimalError("tick_size", []byte(info.TickSize), err))
		}
	}
	if _, ok := d.byID[info.AssetID]; !ok && len(d.list) >= maxInstruments {
		return fmt.Errorf("polymarket: instrument info %s: %w", info.AssetID, ErrTooManyInstruments)
	}
	in := d.intern([]byte(info.AssetID), []byte(info.Market))
	d.closeBatch(in, true) // the open batch's hash describes the fields before this
	if info.Market != "" {
		d.fileMarket(in, []byte(info.Market))
	}
	in.minOrder = mo
	if tick > 0 {
		in.tick = tick
	}
	in.negRisk, in.negKnown = info.NegRisk, true
	return nil
}

// Book returns the asset's book, or nil if the asset was never seen. The book
// is owned by the decoder and changes with every Decode.
func (d *Decoder) Book(instrument string) *book.Book {
	if in := d.byID[instrument]; in != nil {
		return in.book
	}
	return nil
}

// Instruments appends the asset ids seen so far, sorted, to dst.
func (d *Decoder) Instruments(dst []string) []string {
	n := len(dst)
	for _, in := range d.list {
		dst = append(dst, in.id)
	}
	slices.Sort(dst[n:])
	return dst
}

// Quality returns the counters and flags of one asset's book; the zero
// Quality for an asset never seen.
func (d *Decoder) Quality(instrument string) venue.Quality {
	// A replayer asks after every event, for the asset just decoded.
	if in := d.last; in != nil && in.id == instrument {
		return in.q
	}
	if in := d.prev; in != nil && in.id == instrument {
		return in.q
	}
	if in := d.byID[instrument]; in != nil {
		return in.q
	}
	return venue.Quality{}
}

// Stats returns the counters so far.
func (d *Decoder) Stats() venue.Stats { return d.stats }

// Flush closes every open timestamp batch, running its top-of-book,
// crossed-book and hash checks, and decides every pending hash verdict (a
// trade that might explain it can no longer be told apart from one after a
// gap): mismatch if a trade was tried and none explained it, else
// unverifiable. It appends no events; out may be nil.
func (d *Decoder) Flush(out *venue.Frame) {
	for _, in := range d.pending {
		d.closeBatch(in, true)
		in.inPending = false
	}
	clear(d.pending)
	d.pending = d.pending[:0]
	d.expireHashes(0, true)
}

// Invalidate closes open batches, then marks every book invalid (levels kept
// for inspection) until its next snapshot. Quality.AfterGap is set from now
// until the second snapshot after the gap, so the state built on the first
// one stays labelled.
func (d *Decoder) Invalidate() {
	d.Flush(nil)
	// An instrument with gap set has an invalid book and AfterGap set
	// already: only the others change.
	for i := len(d.ungapped) - 1; i >= 0; i-- { // setGap takes d.ungapped[i] out
		in := d.ungapped[i]
		in.book.Invalidate()
		d.setGap(in)
		in.q.AfterGap = true
	}
}

// setGap sets in.gap, taking it out of d.ungapped and its market's list.
func (d *Decoder) setGap(in *instrument) {
	in.gap = true
	setRemove(&d.ungapped, in, func(in *instrument) *int32 { return &in.ugAt })
	if ml := d.mktUngapped[in.market]; ml != nil {
		setRemove(ml, in, func(in *instrument) *int32 { return &in.mugAt })
	}
}

// clearGap clears in.gap, putting it in d.ungapped and its market's list.
func (d *Decoder) clearGap(in *instrument) {
	in.gap = false
	setAdd(&d.ungapped, in, &in.ugAt)
	if ml := d.mktUngapped[in.market]; ml != nil {
		setAdd(ml, in, &in.mugAt)
	}
}

// setAdd appends in to list unless *at (its index+1 there) says it is in.
func setAdd(list *[]*instrument, in *instrument, at *int32) {
	if *at == 0 {
		*list = append(*list, in)
		*at = int32(len(*list))
	}
}

// setRemove takes in out of list (by swapping the last one into its
// place), at giving an instrument's index+1 field for list.
func setRemove(list *[]*instrument, in *instrument, at func(*instrument) *int32) {
	i := *at(in)
	if i == 0 {
		return
	}
	l := *list
	n := len(l) - 1
	last := l[n]
	l[i-1] = last
	*at(last) = i
	l[n] = nil
	*list = l[:n]
	*at(in) = 0
}

// fileMarket files in under market (interned), moving it between the
// markets' lists of ungapped instruments.
func (d *Decoder) fileMarket(in *instrument, market []byte) {
	if ml := d.mktUngapped[in.market]; ml != nil {
		setRemove(ml, in, func(in *instrument) *int32 { return &in.mugAt })
	}
	in.market = d.internMarket(market)
	ml := d.mktUngapped[in.market]
	if ml == nil {
		ml = new([]*instrument)
		d.mktUngapped[in.market] = ml
	}
	if !in.gap {
		setAdd(ml, in, &in.mugAt)
	}
}

// lookup returns the instrument of asset id, or nil. Consecutive messages
// are mostly for one asset, or for the two assets (Yes and No) of one market
// that a price_change entry pair touches, so the last two found are tried
// before the map: comparing ids of 77 bytes costs less than hashing them, and
// ids of two assets differ early or in length.
func (d *Decoder) lookup(id []byte) *instrument {
	if in := d.last; in != nil && in.id == string(id) {
		return in
	}
	if in := d.prev; in != nil && in.id == string(id) {
		d.prev, d.last = d.last, in
		return in
	}
	var in *instrument
	if k, ok := keyOf(id); ok && d.instHints[k.slot()].k == k && d.instHints[k.slot()].in != nil && d.instHints[k.slot()].in.id == string(id) {
		in = d.instHints[k.slot()].in // its hint, without hashing the id
	} else {
		in = d.byID[string(id)]
	}
	if in != nil {
		d.prev, d.last = d.last, in
	}
	return in
}

// intern returns the instrument for asset id, creating it with an empty,
// invalid book on first sight. The map lookup with string(id) does not
// allocate; only a new instrument does.
func (d *Decoder) intern(id, market []byte) *instrument {
	if in := d.byID[string(id)]; in != nil {
		if in.market == "" && len(market) > 0 {
			d.fileMarket(in, market)
		}
		return in
	}
	in := &instrument{id: string(id), book: book.New(scale())}
	if len(market) > 0 {
		d.fileMarket(in, market)
	}
	d.byID[in.id] = in
	d.list = append(d.list, in)
	d.clearGap(in)
	d.hintInstrument(in)
	return in
}

func (d *Decoder) internMarket(m []byte) string {
	if len(m) == 0 {
		return ""
	}
	if s, ok := d.markets[string(m)]; ok {
		return s
	}
	s := string(m)
	// Past the bound a hostile stream of new_market ids costs an allocation
	// per event instead of unbounded memory.
	if len(d.markets) < 2*maxInstruments {
		d.markets[s] = s
		d.hintMarket(s)
	}
	return s
}
