package trading

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// Options configure a Hub.
type Options struct {
	// Speed paces the shared replay (replayer.Speed; 0: 1x). Deterministic
	// mode replays at replayer.SpeedMax, paced by the bots instead.
	Speed  replayer.Speed
	MaxGap time.Duration // replayer.WithMaxGap (0: replayer.DefaultMaxGap)
	// Deterministic: after each recorded frame forwarded to a client, the
	// replay waits for the bots before the next record reaches the
	// simulators (settle has the rule): for a client that acknowledges the
	// frames it has handled (Client.Acked), until it has; for one that
	// does not, until its socket has taken the frame and the API has been
	// quiet for Settle of wall time. A bot that acknowledges gets the same
	// fills on every run whatever the load; one that does not, if it reacts
	// within Settle.
	Deterministic bool
	Settle        time.Duration // default DefaultSettle
	// Backtest is every account's simulator configuration (models, fees,
	// starting cash).
	Backtest backtest.Config
	// MaxAccounts bounds the accounts (default DefaultMaxAccounts).
	MaxAccounts int
	// MaxOrders bounds the orders one account may send (default
	// DefaultMaxOrders); past it the venue's rate-limit error answers.
	MaxOrders int
	// Replay are further options of the shared replay (hash checks, window).
	Replay []replayer.Option
}

// Hub defaults.
const (
	DefaultSettle      = 100 * time.Millisecond
	DefaultMaxAccounts = 64
	DefaultMaxOrders   = 1_000_000
	// maxRecorded bounds the REST bodies kept for the API and for accounts
	// opened after the replay started.
	maxRecorded = 256
)

// ErrLimit means an account or order limit was reached.
var ErrLimit = errors.New("trading: limit reached")

// Client is a WebSocket client the hub forwards recorded frames to.
type Client interface {
	// Forward queues a recorded frame if the client's subscriptions select
	// it, reporting whether it did. Called with the hub's lock held: it
	// must not block.
	Forward(payload []byte, binary bool) bool
	// Flushed reports whether everything queued has been written.
	Flushed() bool
	// Acked returns how many forwarded frames the client has acknowledged
	// having handled, and whether it acknowledges at all (deterministic
	// mode waits for its acknowledgements instead of a quiet window).
	Acked() (n int64, lockstep bool)
}

// Hub is one shared replay of a recording driving one simulated exchange
// per account. It implements tradeapi.Exchange. Every method is safe for
// concurrent use.
type Hub struct {
	paths []string
	opt   Options

	mu        sync.Mutex
	waiters   atomic.Int64 // goroutines waiting for mu
	market    *backtest.Engine
	accounts  map[string]*account
	list      []*account
	clients   map[Client]int64 // → frames forwarded to it
	recorded  []recordedREST
	preview   [][]byte              // REST bodies recorded before the first frame, read at NewHub
	books     map[string]*book.Book // borrowed from the replayer (live: own's); read under mu
	live      bool                  // NewLive: fed by a live engine
	own       map[string]*book.Book // live: the hub's copies of the live books
	liveEv    feed.Event            // live: the event passed on, with the copy's book
	exNs      map[string]int64
	facts     map[string]instFact // what an account opened later must know
	seen      []string            // instruments in first-seen order
	nowNs     int64
	lastRec   [2]uint64 // dataset, seq of the last record seen
	owed      bool      // deterministic mode: a frame was forwarded; wait for the bots before the next record
	owedQuiet bool      // and a client that does not acknowledge got it
	ended     bool

	startOnce sync.Once
	startCh   chan struct{}
	done      chan struct{}
	summary   *replayer.Summary
	runErr    error

	busy     atomic.Int64 // API requests in progress, not waiting on the replay
	awaiting atomic.Int64 // API requests waiting on the replay
	wake     chan struct{}
	settling atomic.Bool  // deterministic mode: the replay waits for the bots
	late     atomic.Int64 // deterministic mode: requests that came while the replay ran
	activity atomic.Int64 // wall ns of the last API request start or end
	base     time.Time
}

// instFact is what the hub remembers of an instrument for accounts opened
// after its first event.
type instFact struct {
	venue, market string
	scale         book.Scale
}

// recordedREST is a copy of a REST body event, for the API (Recorded) and
// for accounts opened later (their engines learn the instruments from it).
type recordedREST struct {
	ev      feed.Event
	control datasets.Control
}

var _ tradeapi.Exchange = (*Hub)(nil)

// NewHub returns a hub over the datasets in paths; Run replays them.
func NewHub(paths []string, opt Options) (*Hub, error) {
	if len(paths) == 0 {
		return nil, replayer.ErrNoDatasets
	}
	if opt.Speed == 0 {
		opt.Speed = 1
	}
	if opt.Deterministic {
		opt.Speed = replayer.SpeedMax
	}
	if opt.Settle <= 0 {
		opt.Settle = DefaultSettle
	}
	if opt.MaxAccounts <= 0 {
		opt.MaxAccounts = DefaultMaxAccounts
	}
	if opt.MaxOrders <= 0 {
		opt.MaxOrders = DefaultMaxOrders
	}
	if opt.MaxGap == 0 {
		opt.MaxGap = replayer.DefaultMaxGap
	}
	if err := opt.Backtest.Validate(); err != nil {
		return nil, err
	}
	h := &Hub{paths: append([]string(nil), paths...), opt: opt, accounts: map[string]*account{},
		clients: map[Client]int64{}, wake: make(chan struct{}, 1), books: map[string]*book.Book{}, exNs: map[string]int64{}, facts: map[string]instFact{},
		startCh: make(chan struct{}), done: make(chan struct{}), base: time.Now()}
	h.market = backtest.NewEngine(noop{}, opt.Backtest)
	h.preview = previewREST(h.paths)
	return h, nil
}

// NewLive returns a hub fed by a live engine instead of a replay of its
// own (paper trading): give Live() to the recorder's Subscribe. Every
// event is applied as it comes, on the live engine's goroutine; there is no
// pacing and no deterministic mode (Speed, MaxGap, Deterministic, Settle
// and Replay are ignored). Run waits for its context, then ends the
// accounts' pending requests.
func NewLive(opt Options) (*Hub, error) {
	opt.Deterministic, opt.Speed, opt.Replay = false, 1, nil
	if opt.MaxAccounts <= 0 {
		opt.MaxAccounts = DefaultMaxAccounts
	}
	if opt.MaxOrders <= 0 {
		opt.MaxOrders = DefaultMaxOrders
	}
	if err := opt.Backtest.Validate(); err != nil {
		return nil, err
	}
	h := &Hub{opt: opt, live: true, accounts: map[string]*account{}, clients: map[Client]int64{}, wake: make(chan struct{}, 1),
		books: map[string]*book.Book{}, own: map[string]*book.Book{}, exNs: map[string]int64{}, facts: map[string]instFact{},
		startCh: make(chan struct{}), done: make(chan struct{}), base: time.Now()}
	h.market = backtest.NewEngine(noop{}, opt.Backtest)
	h.Start()
	return h, nil
}

// Live returns the subscriber a live hub is fed by (NewLive): for
// recorder.Recorder.Subscribe with an empty key. It applies each event
// under the hub's lock to a copy of the event's book the hub owns, so the
// API reads books the live engine is not writing.
func (h *Hub) Live() feed.Subscriber {
	var bids, asks []book.Level
	return feed.SubscriberFunc(func(ev *feed.Event) error {
		h.lock()
		defer h.mu.Unlock()
		if h.ended {
			return nil
		}
		if ev.Book != nil && ev.Instrument != "" {
			b := h.own[ev.Instrument]
			if b == nil {
				b = book.New(ev.Book.Scale())
				h.own[ev.Instrument] = b
			}
			bids, asks = ev.Book.Top(book.Bid, bids[:0], -1), ev.Book.Top(book.Ask, asks[:0], -1)
			if b.Replace(bids, asks) != nil || !ev.Book.Valid() {
				b.Invalidate()
			}
			h.liveEv = *ev
			h.liveEv.Book = b
			err := h.onEvent(&h.liveEv)
			h.liveEv = feed.Event{}
			return err
		}
		return h.onEvent(ev)
	})
}

// previewLimit bounds the records previewREST reads per dataset.
const previewLimit = 10_000

// previewREST returns the REST bodies each dataset recorded before its
// first frame (the listings and meta a capture fetches at its start), so
// the API can answer a bot's first questions (meta: the asset indexes)
// before the replay starts. A dataset that does not read gives none: the
// replay reports it.
func previewREST(paths []string) [][]byte {
	var out [][]byte
	for _, p := range paths {
		r, err := datasets.Open(p)
		if err != nil {
			continue
		}
		for n := 0; n < previewLimit && r.Next(); n++ {
			rec := r.Record()
			if rec.Kind == datasets.KindFrame {
				break
			}
			if rec.Kind == datasets.KindRESTResponse && len(out) < maxRecorded {
				out = append(out, append([]byte(nil), rec.Payload...))
			}
		}
		r.Close()
	}
	return out
}

type noop struct{}

func (noop) OnEvent(*backtest.Context, *feed.Event) {}

// lock takes the hub's lock, telling the replay goroutine someone waits.
func (h *Hub) lock() {
	h.waiters.Add(1)
	h.mu.Lock()
	h.waiters.Add(-1)
}

// Start starts the shared replay (once).
func (h *Hub) Start() { h.startOnce.Do(func() { close(h.startCh) }) }

// Done is closed when the replay has ended.
func (h *Hub) Done() <-chan struct{} { return h.done }

// Run waits for Start (or ctx), replays the recording once through every
// account's engine and the clients, and returns the replay's summary.
func (h *Hub) Run(ctx context.Context) (*replayer.Summary, error) {
	defer close(h.done)
	defer func() {
		h.lock()
		h.ended = true
		for _, a := range h.list {
			a.endAll()
		}
		h.mu.Unlock()
	}()
	if h.live {
		<-ctx.Done()
		return nil, nil
	}
	select {
	case <-h.startCh:
	case <-ctx.Done():
		return nil, nil
	}
	opts := append([]replayer.Option{replayer.WithSpeed(h.opt.Speed), replayer.WithMaxGap(h.opt.MaxGap),
		replayer.WithSleeper(&sleeper{h: h, base: time.Now(), timer: newStoppedTimer()})}, h.opt.Replay...)
	rp, err := replayer.New(h.paths, opts...)
	if err != nil {
		return nil, err
	}
	rp.Subscribe(replayer.Key{}, feed.SubscriberFunc(h.onEvent))
	h.lock()
	sum, err := rp.Run(ctx)
	h.mu.Unlock()
	h.summary, h.runErr = sum, err
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return sum, err
}

// onEvent runs on the replay goroutine with mu held.
func (h *Hub) onEvent(ev *feed.Event) error {
	rec := [2]uint64{uint64(ev.Dataset), ev.Seq}
	newRec := rec != h.lastRec
	h.lastRec = rec
	if newRec && h.owed {
		// The bots have seen the whole of the last record forwarded: wait
		// for them before this one reaches the simulators, so what they
		// sent meanwhile is submitted at its first event.
		quiet := h.owedQuiet
		h.owed, h.owedQuiet = false, false
		h.mu.Unlock()
		h.settle(quiet)
		h.lock()
	}
	if ev.RecvNs > h.nowNs {
		h.nowNs = ev.RecvNs
	}
	if ev.Instrument != "" && ev.Book != nil {
		h.books[ev.Instrument] = ev.Book
		if ev.Decoded != nil && ev.Decoded.ExchangeNs > h.exNs[ev.Instrument] {
			h.exNs[ev.Instrument] = ev.Decoded.ExchangeNs
		}
	}
	if d := ev.Decoded; d != nil && d.Instrument != "" {
		f, ok := h.facts[d.Instrument]
		if !ok {
			h.seen = append(h.seen, d.Instrument)
		}
		if !ok || (f.market == "" && d.Market != "") {
			h.facts[d.Instrument] = instFact{venue: ev.Venue, market: d.Market, scale: ev.Scale}
		}
	}
	if ev.Kind == datasets.KindRESTResponse && ev.Control != nil && ev.Decoded == nil {
		h.keepREST(ev)
	}
	_ = h.market.OnEvent(ev)
	for _, a := range h.list {
		_ = a.eng.OnEvent(ev)
	}
	if ev.Kind == datasets.KindFrame && newRec {
		for c, n := range h.clients {
			if c.Forward(ev.Payload, false) {
				h.clients[c] = n + 1
				h.owed = h.opt.Deterministic
				if _, lockstep := c.Acked(); !lockstep {
					h.owedQuiet = h.owed
				}
			}
		}
	}
	if !h.opt.Deterministic && h.waiters.Load() > 0 {
		// An API request waits: let it in between two events. (In
		// deterministic mode requests come in while the replay waits for
		// the bots, between two records.)
		h.mu.Unlock()
		runtime.Gosched()
		h.lock()
	}
	return nil
}

// keepREST copies a REST body event (bounded).
func (h *Hub) keepREST(ev *feed.Event) {
	r := recordedREST{ev: *ev, control: *ev.Control}
	r.ev.Payload = append([]byte(nil), ev.Payload...)
	r.ev.Control = nil
	r.ev.Book = nil
	if len(h.recorded) == maxRecorded {
		copy(h.recorded, h.recorded[1:])
		h.recorded = h.recorded[:maxRecorded-1]
	}
	h.recorded = append(h.recorded, r)
}

// settle waits for the bots after a record was forwarded (deterministic
// mode): quiet is whether a client that does not acknowledge got it.
//
// The rule: no API request may be in progress (requests waiting for the
// simulator — orders, cancels, modifies, which it processes at the next
// record — excepted), and every client that got a frame must be done with
// it: a client that acknowledges (Client.Acked) has acknowledged every
// frame forwarded to it, or is blocked on the replay (a request waits for
// the simulator and none is in progress: the bot that sent it cannot go
// on before the replay does); a client that does not has taken everything
// queued, and the API has been quiet for Settle since the record.
func (h *Hub) settle(quiet bool) {
	h.settling.Store(true)
	defer h.settling.Store(false)
	start := time.Since(h.base)
	var t *time.Timer
	if quiet {
		t = time.NewTimer(h.opt.Settle)
		defer t.Stop()
	}
	for {
		wait, ok := h.ready(quiet, start)
		if ok {
			return
		}
		if t == nil {
			<-h.wake
			continue
		}
		t.Reset(max(wait, time.Millisecond/2))
		select {
		case <-h.wake:
			if !t.Stop() {
				<-t.C
			}
		case <-t.C:
		}
	}
}

// ready reports whether settle may end, or how long the quiet window has
// left.
func (h *Hub) ready(quiet bool, start time.Duration) (time.Duration, bool) {
	busy := h.busy.Load()
	if busy > 0 {
		return h.opt.Settle, false
	}
	if quiet {
		now := time.Since(h.base)
		last := time.Duration(h.activity.Load())
		if w := max(start, last) + h.opt.Settle - now; w > 0 {
			return w, false
		}
	}
	blocked := h.awaiting.Load() > 0
	h.lock()
	defer h.mu.Unlock()
	for c, sent := range h.clients {
		if n, lockstep := c.Acked(); lockstep {
			if n < sent && !blocked {
				return 0, false
			}
		} else if quiet && !c.Flushed() {
			return 0, false
		}
	}
	return 0, h.busy.Load() == 0
}

// Wake tells a settling replay that something it waits for happened (a
// client acknowledged a frame).
func (h *Hub) Wake() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Begin and End bracket an API request (deterministic mode waits for
// requests in progress).
func (h *Hub) Begin() {
	h.busy.Add(1)
	h.activity.Store(int64(time.Since(h.base)))
}

// End ends what Begin began.
func (h *Hub) End() {
	h.activity.Store(int64(time.Since(h.base)))
	h.busy.Add(-1)
	h.Wake()
}

// noteLate counts an order, cancel or modify that came while the
// deterministic replay ran rather than waited for the bots.
func (h *Hub) noteLate() {
	if !h.opt.Deterministic || h.settling.Load() {
		return
	}
	select {
	case <-h.startCh:
		select {
		case <-h.done:
		default:
			h.late.Add(1)
		}
	default:
	}
}

// Late counts the orders, cancels and modifies of deterministic mode that
// arrived while the replay was running rather than waiting for the bots:
// each is a bot that broke the lockstep rule (see settle), or one that does
// not acknowledge and took longer than Settle to react — a run whose fills
// may differ from the next.
func (h *Hub) Late() int64 { return h.late.Load() }

// AddClient forwards recorded frames to c from now on; the returned func
// stops it.
func (h *Hub) AddClient(c Client) (remove func()) {
	h.lock()
	h.clients[c] = 0
	h.mu.Unlock()
	return func() {
		h.lock()
		delete(h.clients, c)
		h.mu.Unlock()
		h.Wake()
	}
}

// NowNs implements tradeapi.Exchange.
func (h *Hub) NowNs() int64 {
	h.lock()
	defer h.mu.Unlock()
	return h.nowNs
}

// Ended reports whether the replay has ended.
func (h *Hub) Ended() bool {
	h.lock()
	defer h.mu.Unlock()
	return h.ended
}

// Account implements tradeapi.Exchange.
func (h *Hub) Account(id string) (tradeapi.Account, bool) {
	h.lock()
	defer h.mu.Unlock()
	if a := h.accounts[id]; a != nil {
		return a, true
	}
	if len(h.list) >= h.opt.MaxAccounts {
		return nil, false
	}
	a := newAccount(h, id)
	// What REST bodies said so far (instrument listings, meta: size
	// decimals, ticks, fee schedules) is what this engine starts from.
	for i := range h.recorded {
		r := &h.recorded[i]
		ev := r.ev
		ctl := r.control
		ev.Control = &ctl
		_ = a.eng.OnEvent(&ev)
	}
	// And the instruments seen so far, each with its current book: a
	// snapshot event at the replay clock, which meets no order (the
	// account has none yet) and makes the engine follow the book.
	for _, id := range h.seen {
		f := h.facts[id]
		d := venue.Event{Type: venue.EventSnapshot, Instrument: id, Market: f.market, ExchangeNs: h.exNs[id]}
		_ = a.eng.OnEvent(&feed.Event{Venue: f.venue, RecvNs: h.nowNs, Kind: datasets.KindFrame, Channel: feed.ChannelBook,
			Instrument: id, Decoded: &d, Book: h.books[id], Scale: f.scale})
	}
	h.accounts[id] = a
	h.list = append(h.list, a)
	return a, true
}

// Lookup implements tradeapi.Exchange.
func (h *Hub) Lookup(id string) (tradeapi.Account, bool) {
	h.lock()
	defer h.mu.Unlock()
	a := h.accounts[id]
	if a == nil {
		return nil, false
	}
	return a, true
}

// Book implements tradeapi.Exchange.
func (h *Hub) Book(instrument string, depth int, bids, asks []book.Level) ([]book.Level, []book.Level, int64, bool) {
	h.lock()
	defer h.mu.Unlock()
	b := h.books[instrument]
	if b == nil || !b.Valid() {
		return bids, asks, 0, false
	}
	return b.Top(book.Bid, bids, depth), b.Top(book.Ask, asks, depth), h.exNs[instrument], true
}

// Instruments implements tradeapi.Exchange.
func (h *Hub) Instruments() []tradeapi.SimInstrument {
	h.lock()
	defer h.mu.Unlock()
	var out []tradeapi.SimInstrument
	{
		ctx := h.market.Context()
		for _, in := range ctx.Instruments() {
			mid, _ := in.Mid()
			rate, _, known := ctx.TakerFeeRate(in.ID)
			out = append(out, tradeapi.SimInstrument{ID: in.ID, Market: in.Market, Tick: in.Tick, MinSize: in.MinSize,
				SzDecimals: in.SzDecimals, Mid: mid, Resolved: in.Resolved, TakerFeeRate: rate, FeeKnown: known})
		}
	}
	return out
}

// Recorded implements tradeapi.Exchange.
func (h *Hub) Recorded() [][]byte {
	h.lock()
	defer h.mu.Unlock()
	if len(h.recorded) == 0 {
		return h.preview
	}
	out := make([][]byte, len(h.recorded))
	for i := range h.recorded {
		out[i] = h.recorded[i].ev.Payload
	}
	return out
}

// Results finishes every account's engine (after Run) and returns their
// results by account id, in the order the accounts were opened.
func (h *Hub) Results() ([]string, []*backtest.Result) {
	h.lock()
	defer h.mu.Unlock()
	ids := make([]string, 0, len(h.list))
	res := make([]*backtest.Result, 0, len(h.list))
	for _, a := range h.list {
		ids = append(ids, a.id)
		res = append(res, a.eng.Finish())
	}
	return ids, res
}

// Summary returns the shared replay's summary and error (after Run).
func (h *Hub) Summary() (*replayer.Summary, error) { return h.summary, h.runErr }

// sleeper paces the shared replay, releasing the hub's lock while it waits.
type sleeper struct {
	h     *Hub
	base  time.Time
	timer *time.Timer
}

func newStoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

func (s *sleeper) Now() int64 { return int64(time.Since(s.base)) }

func (s *sleeper) Sleep(ctx context.Context, d int64, wake <-chan struct{}) error {
	s.h.mu.Unlock()
	defer s.h.lock()
	s.timer.Reset(time.Duration(d))
	defer s.timer.Stop()
	select {
	case <-s.timer.C:
		return nil
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Hub) String() string { return fmt.Sprintf("trading hub over %v", h.paths) }
