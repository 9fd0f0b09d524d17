// Package hyperliquid decodes the Hyperliquid WebSocket API
// (wss://api.hyperliquid.xyz/ws) into tapedeck books and events: the Decoder
// walks each raw frame in place, with no JSON DOM and no allocation per frame
// once warmed up, and applies it atomically to the per-coin books it owns.
//
// Frames are envelopes {"channel":…,"data":…} in any key order. l2Book frames
// are full snapshots and replace the book; bbo frames are merged into it as an
// estimate until the next snapshot (see Decoder.Decode). The bare body of an
// HTTP POST /info {"type":"l2Book"} response ({"coin","time","levels"}) is
// accepted as a snapshot too, so REST snapshots recorded beside the socket
// replay through the same path.
package hyperliquid

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/internal/jscan"
)

// Scale is the fixed-point scale of every price and size the Decoder yields.
// It holds every real px and sz exactly: perp prices have at most 6 decimals,
// spot prices and sizes at most 8. A value that needs more is rejected, never
// rounded.
var Scale = book.Scale{PriceDecimals: 8, SizeDecimals: 8}

// maxMs is the largest millisecond timestamp whose nanosecond value fits int64.
const maxMs = (1<<63 - 1) / 1_000_000

// chanKind is what a frame's channel means to the decoder.
type chanKind uint8

const (
	chUnknown chanKind = iota
	chL2Book
	chBbo
	chTrades
	chAllMids
	chAssetCtx
	chCandle
	chControl
)

func channelKind(ch []byte) chanKind {
	switch string(ch) {
	case "l2Book":
		return chL2Book
	case "bbo":
		return chBbo
	case "trades":
		return chTrades
	case "allMids":
		return chAllMids
	case "activeAssetCtx", "activeSpotAssetCtx":
		return chAssetCtx
	case "candle":
		return chCandle
	case "subscriptionResponse", "pong", "error", "post":
		return chControl
	}
	return chUnknown
}

// instrument is the state of one coin.
type instrument struct {
	name string
	book *book.Book
	q    venue.Quality
	// gap: invalidated since the last snapshot, so the next snapshot is the
	// first after a gap and reports Quality.AfterGap.
	gap bool
}

// Decoder decodes the frames of one Hyperliquid connection and owns one book
// per coin. It implements venue.Decoder and, like every decoder, is not safe
// for concurrent use.
type Decoder struct {
	opts  options
	insts map[string]*instrument
	names []string    // sorted coin names, for Instruments
	last  *instrument // the coin of the previous lookup: frames of one coin come in runs
	stats venue.Stats

	// Per-frame state. A frame is parsed into the scratch below and into
	// out.Events first; only a fully valid frame is committed to the books.
	sc       jscan.Scanner
	base     int    // offset of sc's text within the frame
	frame    []byte // the frame being decoded
	ch       []byte // its channel, for error messages
	bids     []book.Level
	asks     []book.Level
	coins    [][]byte // coin of out.Events[i], nil when the event has none
	bboCount [2]int32 // order counts of the pending bbo's bid and ask
	nonJSON  bool
	ack      ackInfo // the subscriptionResponse of this frame, if any

	// Backfill: per coin, whether its next trades frame is the venue's
	// replay of trades from before the subscription (see Sent).
	subs     map[string]*tradeSub
	armedN   int         // coins armed: while 0, trades cost nothing extra
	seenSubs []*tradeSub // armed coins this frame's trades were for

	errText []byte // the text of this frame's EventReject events

	generic bool // tests only: never take the fast path, to compare both
}

var _ venue.Decoder = (*Decoder)(nil)

// NewDecoder returns a Decoder with no books.
func NewDecoder(opts ...Option) *Decoder {
	d := &Decoder{opts: defaultOptions(), insts: make(map[string]*instrument)}
	for _, o := range opts {
		o(&d.opts)
	}
	return d
}

// Decode parses one frame received at recvNs and applies it; see
// venue.Decoder. It yields:
//
//   - l2Book (or a bare POST /info l2Book body): one EventSnapshot that replaces
//     the coin's book; levels must be strictly best-first with positive sizes.
//     BidPrice… carry the new touch.
//   - bbo: one EventQuote. Between snapshots it is merged into the book: bids
//     above the new best bid and asks below the new best ask are dropped and
//     the touch is set; a null side means the venue's side is empty and clears
//     it. Quality.Estimated stays set until the next snapshot.
//   - trades: one EventTrade per trade (Side is the taker's: "B" = Bid, buy;
//     "A" = Ask, sell), Raw the trade object, ID the tid's text. The first
//     trades frame for a coin after a trades subscribe (seen by Sent, or by
//     its subscriptionResponse) replays trades from before the subscription:
//     its events have Backfill set.
//   - allMids: one EventMids, Size = the number of mids.
//   - activeAssetCtx / activeSpotAssetCtx: one EventAssetCtx, Price = markPx
//     (0 if absent).
//   - candle: one EventCandle, Instrument = s, ExchangeNs = t, Price = c,
//     Size = v, Count = n.
//
// markPx and candle values are outside the books: more digits than Scale
// are rounded half up, never rejected (NOTES.md); book and trade prices and
// sizes must fit Scale exactly.
//   - subscriptionResponse, pong, error, post: one EventControl, Text = the channel.
//   - any other channel: one EventUnknown, Text = the channel (Stats.UnknownTypes).
//   - text that is not JSON (a legacy greeting): one EventControl, Text = the
//     text (Stats.NonJSON).
//
// Errors are *DecodeError, and nothing of the frame is applied. A frame that
// would have changed a book (l2Book, bbo, or a malformed frame that names
// one) invalidates the coin's book until its next snapshot, or every book
// when the coin cannot be read; out.Events then holds one EventReject per
// invalidated book (else one without an instrument), Text the error.
// NOTES.md lists what is validated against the venue's domain. recvNs is
// not used: every timestamp the decoder yields is the venue's.
func (d *Decoder) Decode(frame []byte, recvNs int64, out *venue.Frame) error {
	out.Events = out.Events[:0]
	d.coins = d.coins[:0]
	d.stats.Frames++
	d.frame, d.ch, d.base, d.nonJSON = frame, nil, 0, false
	d.ack.trades = false
	err := d.parse(frame, out)
	if err == nil {
		err = d.reserve()
	}
	if err == nil {
		err = d.commit(out)
	}
	if err != nil {
		out.Events = out.Events[:0]
		d.stats.Errors++
		d.stats.Rejected++
		d.reject(frame, err, out)
	}
	d.frame = nil
	return err
}

// reject handles a rejected frame: nothing of it is applied, but a book it
// would have changed (an l2Book or bbo frame, or one that may be one) is
// invalid until its next snapshot — the coin's when it can be read, every
// book of the connection when it cannot — and EventReject events say so.
func (d *Decoder) reject(frame []byte, err error, out *venue.Frame) {
	d.errText = append(d.errText[:0], err.Error()...)
	bookish := false
	switch channelKind(d.ch) {
	case chL2Book, chBbo:
		bookish = true
	case chUnknown:
		bookish = d.ch == nil && !errors.Is(err, ErrNotObject) && !errors.Is(err, ErrEmptyFrame) &&
			(bytes.Contains(frame, []byte(`"l2Book"`)) || bytes.Contains(frame, []byte(`"bbo"`)) ||
				bytes.Contains(frame, []byte(`"levels"`)))
	}
	if string(d.ch) == string(infoBody) {
		bookish = true
	}
	n := 0
	if bookish {
		if coin, ok := coinOf(frame); ok {
			if in, found := d.insts[string(coin)]; found {
				d.invalidate(in, out)
				n++
			}
		} else {
			for _, name := range d.names {
				d.invalidate(d.insts[name], out)
				n++
			}
		}
	}
	if n == 0 {
		d.stats.Events[venue.EventReject]++
		out.Events = append(out.Events, venue.Event{Type: venue.EventReject, Text: d.errText, Raw: frame})
	}
}

// invalidate marks a coin's book invalid after a rejected frame and appends
// its EventReject.
func (d *Decoder) invalidate(in *instrument, out *venue.Frame) {
	in.book.Invalidate()
	in.q.AfterGap, in.gap = true, true
	d.stats.Invalidated++
	d.stats.Events[venue.EventReject]++
	out.Events = append(out.Events, venue.Event{Type: venue.EventReject, Instrument: in.name,
		Book: in.book, Text: d.errText, Raw: d.frame})
}

// coinOf finds the first "coin" string of a rejected frame (error path only).
func coinOf(frame []byte) ([]byte, bool) {
	i := bytes.Index(frame, []byte(`"coin":"`))
	if i < 0 {
		return nil, false
	}
	rest := frame[i+len(`"coin":"`):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return nil, false
	}
	return rest[:j], true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parse validates the whole frame into out.Events and the scratch, touching
// no book.
func (d *Decoder) parse(frame []byte, out *venue.Frame) error {
	i := 0
	for i < len(frame) && isSpace(frame[i]) {
		i++
	}
	if i == len(frame) {
		return d.errOff("", i, ErrEmptyFrame)
	}
	switch c := frame[i]; {
	case c == '{':
	case c == '[' || c == '"' || c == '-' || c >= '0' && c <= '9' || isLiteral(frame[i:]):
		// JSON, but not an object: not a frame, whatever the value.
		return d.errOff("", i, ErrNotObject)
	default:
		j := len(frame)
		for j > i && isSpace(frame[j-1]) {
			j--
		}
		d.nonJSON = true
		d.push(out, venue.Event{Type: venue.EventControl, Text: frame[i:j], Raw: frame}, nil)
		return nil
	}
	sc := &d.sc
	sc.Reset(frame)
	_ = sc.BeginObject() // cannot fail: the first byte is '{'
	key, ok, err := sc.NextKey(true)
	if err != nil {
		return d.errAt("", err)
	}
	if !ok {
		return d.errOff("channel", sc.Offset(), ErrMissingField)
	}
	switch string(key) {
	case "coin", "levels", "time":
		// The bare body of POST /info {"type":"l2Book"}: no envelope.
		sc.Reset(frame)
		if err := d.parseBook(out); err != nil {
			return err
		}
		return d.end()
	}

	kind := chUnknown
	haveCh, haveData := false, false
	dataStart, dataEnd := -1, -1
	for first := true; ; first = false {
		if !first {
			if key, ok, err = sc.NextKey(false); err != nil {
				return d.errAt("", err)
			}
			if !ok {
				break
			}
		}
		switch string(key) {
		case "channel":
			if haveCh {
				return d.errAt("channel", ErrDuplicateField)
			}
			at := d.valueStart()
			ch, err := sc.String()
			if err != nil {
				return d.errOff("channel", at, err)
			}
			d.ch, kind, haveCh = ch, channelKind(ch), true
		case "data":
			if haveData {
				return d.errAt("data", ErrDuplicateField)
			}
			haveData = true
			if haveCh {
				if err := d.parseData(kind, out); err != nil {
					return err
				}
				continue
			}
			// The channel comes later: validate the data now and parse it
			// once the channel is known.
			dataStart = d.valueStart()
			if _, err := sc.Skip(); err != nil {
				return d.errAt("data", err)
			}
			dataEnd = sc.Offset()
		default:
			if _, err := sc.Skip(); err != nil {
				return d.errAt("", err)
			}
		}
	}
	if err := d.end(); err != nil {
		return err
	}
	if !haveCh && !haveData {
		// An object of another shape, such as the body of POST /info
		// {"type":"meta"} recorded beside the socket: a message we skip.
		d.push(out, venue.Event{Type: venue.EventUnknown, Raw: frame}, nil)
		return nil
	}
	if !haveCh {
		return d.errOff("channel", 0, ErrMissingField)
	}
	if dataStart >= 0 {
		sc.Reset(frame[dataStart:dataEnd])
		d.base = dataStart
		if err := d.parseData(kind, out); err != nil {
			return err
		}
		d.base = 0
	}
	switch kind {
	case chControl, chUnknown:
		t := venue.EventControl
		if kind == chUnknown {
			t = venue.EventUnknown
		}
		d.push(out, venue.Event{Type: t, Text: d.ch, Raw: frame}, nil)
	default:
		if !haveData {
			return d.errOff("data", 0, ErrMissingField)
		}
	}
	return nil
}

// end checks that only white space follows the value just scanned.
func (d *Decoder) end() error {
	if !d.sc.AtEnd() {
		return d.errAt("", ErrTrailingData)
	}
	return nil
}

func (d *Decoder) push(out *venue.Frame, ev venue.Event, coin []byte) {
	out.Events = append(out.Events, ev)
	d.coins = append(d.coins, coin)
}

// parseData parses the data value at the scanner for a channel.
func (d *Decoder) parseData(kind chanKind, out *venue.Frame) error {
	switch kind {
	case chL2Book:
		return d.parseBook(out)
	case chBbo:
		return d.parseBbo(out)
	case chTrades:
		return d.parseTrades(out)
	case chAllMids:
		return d.parseMids(out)
	case chAssetCtx:
		return d.parseCtx(out)
	case chCandle:
		return d.parseCandle(out)
	case chControl:
		if string(d.ch) == "subscriptionResponse" {
			return d.parseAck()
		}
	}
	if _, err := d.sc.Skip(); err != nil {
		return d.errAt("data", err)
	}
	return nil
}

// reserve checks, before anything is committed, that the coins new to this
// frame fit WithMaxInstruments.
func (d *Decoder) reserve() error {
	n := 0
	for _, c := range d.coins {
		if c != nil && !d.known(c) {
			n++
		}
	}
	if n == 0 || len(d.insts)+n <= d.opts.maxInstruments {
		return nil
	}
	// Rare: count distinct new coins exactly.
	seen := make(map[string]struct{}, n)
	for _, c := range d.coins {
		if c == nil {
			continue
		}
		if _, ok := d.insts[string(c)]; !ok {
			seen[string(c)] = struct{}{}
		}
	}
	if len(d.insts)+len(seen) > d.opts.maxInstruments {
		return d.errOff("coin", 0, ErrTooManyInstruments)
	}
	return nil
}

// commit applies a fully parsed frame to the books and counters.
func (d *Decoder) commit(out *venue.Frame) error {
	for i := range out.Events {
		ev := &out.Events[i]
		var in *instrument
		if c := d.coins[i]; c != nil {
			in = d.instrument(c)
			ev.Instrument = in.name
		}
		switch ev.Type {
		case venue.EventSnapshot:
			if err := in.book.Replace(d.bids, d.asks); err != nil {
				// Unreachable: parseSide checked everything Replace does.
				return d.errOff("levels", 0, err)
			}
			in.q.Estimated = false
			in.q.AfterGap = in.gap
			in.gap = false
			d.touched(in)
			ev.Book = in.book
		case venue.EventQuote:
			b := in.book
			mergeTouch(b, book.Bid, ev.HasBid, ev.BidPrice, ev.BidSize, d.bboCount[0])
			mergeTouch(b, book.Ask, ev.HasAsk, ev.AskPrice, ev.AskSize, d.bboCount[1])
			in.q.Estimated = true
			d.touched(in)
			ev.Book = b
		case venue.EventUnknown:
			d.stats.UnknownTypes++
		case venue.EventTrade:
			if d.armedN > 0 {
				if sub := d.subs[in.name]; sub != nil && sub.armed {
					ev.Backfill = true
					if !sub.seen {
						sub.seen = true
						d.seenSubs = append(d.seenSubs, sub)
					}
				}
			}
		}
		d.stats.Events[ev.Type]++
	}
	if d.armedN > 0 {
		// A trades frame is the first after the subscribe: its coins'
		// next frames are live.
		for _, sub := range d.seenSubs {
			sub.armed, sub.seen = false, false
			d.armedN--
		}
		clear(d.seenSubs)
		d.seenSubs = d.seenSubs[:0]
	}
	if d.ack.trades {
		d.acked(d.ack)
	}
	if d.nonJSON {
		d.stats.NonJSON++
	}
	return nil
}

// touched updates the crossed flags after a book change: every Hyperliquid
// frame is a batch of its own.
func (d *Decoder) touched(in *instrument) {
	c := in.book.Crossed()
	in.q.Crossed = c
	if c {
		in.q.CrossedBatch++
		d.stats.CrossedBatches++
	}
}

// mergeTouch sets the best level of one side from a bbo: it drops every level
// better than the new touch, then sets it. has == false (a null side) empties
// the side. Prices and sizes were validated positive, so Set cannot fail.
func mergeTouch(b *book.Book, side book.Side, has bool, px, sz int64, n int32) {
	for {
		l, ok := b.Best(side)
		if !ok {
			break
		}
		if has && ((side == book.Bid && l.Price <= px) || (side == book.Ask && l.Price >= px)) {
			break
		}
		_ = b.Set(side, l.Price, 0, 0)
	}
	if has {
		_ = b.Set(side, px, sz, n)
	}
}

// known reports whether a coin has been seen.
func (d *Decoder) known(coin []byte) bool {
	if d.last != nil && d.last.name == string(coin) {
		return true
	}
	_, ok := d.insts[string(coin)]
	return ok
}

// instrument returns the state of a coin, creating it on first sight.
func (d *Decoder) instrument(coin []byte) *instrument {
	if d.last != nil && d.last.name == string(coin) {
		return d.last
	}
	if in, ok := d.insts[string(coin)]; ok {
		d.last = in
		return in
	}
	name := string(coin)
	in := &instrument{name: name, book: book.New(Scale)}
	d.insts[name] = in
	i, _ := slices.BinarySearch(d.names, name)
	d.names = slices.Insert(d.names, i, name)
	return in
}

// Flush has nothing to complete, since every Hyperliquid frame is a batch of
// its own; it truncates out.Events.
func (d *Decoder) Flush(out *venue.Frame) { out.Events = out.Events[:0] }

// Invalidate marks every book invalid until its next snapshot; the levels stay
// for inspection. Quality.AfterGap is set until the snapshot after next.
func (d *Decoder) Invalidate() {
	for _, in := range d.insts {
		in.book.Invalidate()
		in.q.AfterGap = true
		in.gap = true
	}
}

// Book returns the coin's book, or nil if the coin was never seen. A coin seen
// only in trades, contexts or candles has an empty, invalid book. The book is
// owned by the decoder and changes with every Decode.
func (d *Decoder) Book(instrument string) *book.Book {
	if in, ok := d.insts[instrument]; ok {
		return in.book
	}
	return nil
}

// Instruments appends every coin seen, sorted, to dst.
func (d *Decoder) Instruments(dst []string) []string { return append(dst, d.names...) }

// Quality returns what is known of a coin's book; the zero Quality if unseen.
func (d *Decoder) Quality(instrument string) venue.Quality {
	if in, ok := d.insts[instrument]; ok {
		return in.q
	}
	return venue.Quality{}
}

// Stats returns the counters so far.
func (d *Decoder) Stats() venue.Stats { return d.stats }

// valueStart skips white space and returns the scanner's offset.
func (d *Decoder) valueStart() int {
	d.sc.Peek()
	return d.sc.Offset()
}

// errAt reports err about field at the scanner's position.
func (d *Decoder) errAt(field string, err error) error {
	return d.errOff(field, d.sc.Offset(), err)
}

// errOff reports err about field at offset off of the scanner's text. A JSON
// syntax error keeps its own offset, rebased onto the frame.
func (d *Decoder) errOff(field string, off int, err error) error {
	var se *jscan.SyntaxError
	if errors.As(err, &se) {
		se.Offset += d.base
		off = se.Offset
	} else {
		off += d.base
	}
	return &DecodeError{Channel: string(d.ch), Field: field, Offset: off, Err: err}
}

// isLiteral reports whether b starts a JSON literal: true, false or null.
func isLiteral(b []byte) bool {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b) >= len(lit) && string(b[:len(lit)]) == lit {
			rest := b[len(lit):]
			if len(rest) == 0 || !(rest[0] >= 'a' && rest[0] <= 'z' || rest[0] >= 'A' && rest[0] <= 'Z') {
				return true
			}
		}
	}
	return false
}

// tradeSub is one coin's trades subscription as far as backfill goes.
type tradeSub struct {
	armed    bool // the coin's next trades frame is backfill
	awaitAck bool // armed by a subscribe Sent; its ack must not re-arm
	seen     bool // scratch: flagged in the frame being committed
}

// ackInfo is a trades subscriptionResponse read from a frame.
type ackInfo struct {
	trades    bool // a trades subscription was acknowledged
	subscribe bool // subscribe (else unsubscribe)
	coin      string
}

// Sent implements venue.SentObserver: a subscribe to a coin's trades arms
// backfill for it, an unsubscribe disarms it. The venue answers a trades
// subscribe with the subscriptionResponse, then one frame of recent trades
// from before the subscription (seconds to minutes old); that frame's trades
// are marked Event.Backfill. Without Sent (a recording without sent frames)
// the acknowledgement arms it instead. Malformed or other frames are ignored.
func (d *Decoder) Sent(frame []byte, sentNs int64) {
	var m struct {
		Method       string `json:"method"`
		Subscription struct {
			Type string `json:"type"`
			Coin string `json:"coin"`
		} `json:"subscription"`
	}
	if json.Unmarshal(frame, &m) != nil || m.Subscription.Type != "trades" || m.Subscription.Coin == "" {
		return
	}
	sub := d.tradeSub(m.Subscription.Coin)
	if sub == nil {
		return
	}
	switch m.Method {
	case "subscribe":
		d.arm(sub, true)
		sub.awaitAck = true
	case "unsubscribe":
		d.arm(sub, false)
		sub.awaitAck = false
	}
}

// acked applies a trades subscriptionResponse: it arms the coin unless a
// Sent subscribe already did (the ack comes before the data; a late one
// must not flag live trades).
func (d *Decoder) acked(a ackInfo) {
	sub := d.tradeSub(a.coin)
	if sub == nil {
		return
	}
	switch {
	case !a.subscribe:
		d.arm(sub, false)
		sub.awaitAck = false
	case sub.awaitAck:
		sub.awaitAck = false
	default:
		d.arm(sub, true)
	}
}

func (d *Decoder) arm(sub *tradeSub, on bool) {
	if sub.armed != on {
		sub.armed = on
		if on {
			d.armedN++
		} else {
			d.armedN--
		}
	}
}

// tradeSub returns a coin's subscription state, nil past the instrument bound.
func (d *Decoder) tradeSub(coin string) *tradeSub {
	if sub := d.subs[coin]; sub != nil {
		return sub
	}
	if len(d.subs) >= d.opts.maxInstruments {
		return nil
	}
	if d.subs == nil {
		d.subs = make(map[string]*tradeSub)
	}
	sub := &tradeSub{}
	d.subs[coin] = sub
	return sub
}

// parseAck reads a subscriptionResponse's data,
// {"method":…,"subscription":{"type":…,"coin":…,…}}, for trades
// subscriptions; any other shape is skipped, as an ack always was.
func (d *Decoder) parseAck() error {
	sc := &d.sc
	if sc.Peek() != '{' {
		if _, err := sc.Skip(); err != nil {
			return d.errAt("data", err)
		}
		return nil
	}
	_ = sc.BeginObject()
	var method, typ, coin []byte
	for first := true; ; first = false {
		key, ok, err := sc.NextKey(first)
		if err != nil {
			return d.errAt("data", err)
		}
		if !ok {
			break
		}
		switch {
		case string(key) == "method" && sc.Peek() == '"':
			if method, err = sc.String(); err != nil {
				return d.errAt("data.method", err)
			}
		case string(key) == "subscription" && sc.Peek() == '{':
			_ = sc.BeginObject()
			for first := true; ; first = false {
				key, ok, err := sc.NextKey(first)
				if err != nil {
					return d.errAt("data.subscription", err)
				}
				if !ok {
					break
				}
				switch {
				case string(key) == "type" && sc.Peek() == '"':
					typ, err = sc.String()
				case string(key) == "coin" && sc.Peek() == '"':
					coin, err = sc.String()
				default:
					_, err = sc.Skip()
				}
				if err != nil {
					return d.errAt("data.subscription", err)
				}
			}
		default:
			if _, err := sc.Skip(); err != nil {
				return d.errAt("data", err)
			}
		}
	}
	if string(typ) == "trades" && len(coin) > 0 && (string(method) == "subscribe" || string(method) == "unsubscribe") {
		d.ack = ackInfo{trades: true, subscribe: string(method) == "subscribe", coin: d.internAck(coin)}
	}
	return nil
}

// internAck returns a coin name for an ack without allocating for a coin
// already known.
func (d *Decoder) internAck(coin []byte) string {
	if in, ok := d.insts[string(coin)]; ok {
		return in.name
	}
	for name := range d.subs {
		if name == string(coin) {
			return name
		}
	}
	return string(coin)
}
