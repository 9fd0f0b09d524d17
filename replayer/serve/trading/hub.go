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
)

// Options configure a Hub.
type Options struct {
	// Speed paces the shared replay (replayer.Speed; 0: 1x). Deterministic
	// mode replays at replayer.SpeedMax, paced by the bots instead.
	Speed  replayer.Speed
	MaxGap time.Duration // replayer.WithMaxGap (0: replayer.DefaultMaxGap)
	// Deterministic: after each recorded frame forwarded to a client, the
	// replay waits until every such client's socket has taken it and no API
	// request has arrived or been in progress (other than orders waiting
	// for the replay itself) for Settle of wall time. A bot that reacts
	// within Settle gets the same fills on every run.
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
}

// Hub is one shared replay of a recording driving one simulated exchange
// per account. It implements venue.Exchange. Every method is safe for
// concurrent use.
type Hub struct {
	paths []string
	opt   Options

	mu       sync.Mutex
	waiters  atomic.Int64 // goroutines waiting for mu
	market   *backtest.Engine
	accounts map[string]*account
	list     []*account
	clients  map[Client]struct{}
	recorded []recordedREST
	preview  [][]byte              // REST bodies recorded before the first frame, read at NewHub
	books    map[string]*book.Book // borrowed from the replayer; read under mu
	exNs     map[string]int64
	facts    map[string]instFact // what an account opened later must know
	seen     []string            // instruments in first-seen order
	nowNs    int64
	lastRec  [2]uint64 // dataset, seq of the last record seen
	ended    bool

	startOnce sync.Once
	startCh   chan struct{}
	done      chan struct{}
	summary   *replayer.Summary
	runErr    error

	busy     atomic.Int64 // API requests in progress, not waiting on the replay
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

var _ venue.Exchange = (*Hub)(nil)

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
		clients: map[Client]struct{}{}, books: map[string]*book.Book{}, exNs: map[string]int64{}, facts: map[string]instFact{},
		startCh: make(chan struct{}), done: make(chan struct{}), base: time.Now()}
	h.market = backtest.NewEngine(noop{}, opt.Backtest)
	h.preview = previewREST(h.paths)
	return h, nil
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
	rec := [2]uint64{uint64(ev.Dataset), ev.Seq}
	forwarded := false
	if ev.Kind == datasets.KindFrame && rec != h.lastRec {
		h.lastRec = rec
		for c := range h.clients {
			if c.Forward(ev.Payload, false) {
				forwarded = true
			}
		}
	}
	switch {
	case forwarded && h.opt.Deterministic:
		h.mu.Unlock()
		h.settle()
		h.lock()
	case h.waiters.Load() > 0:
		// An API request waits: let it in between two events.
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

// settle waits until the clients have taken what was forwarded and the
// API has been quiet for Settle (deterministic mode).
func (h *Hub) settle() {
	h.settling.Store(true)
	defer h.settling.Store(false)
	start := time.Since(h.base)
	for {
		time.Sleep(time.Millisecond / 2)
		if h.busy.Load() > 0 {
			continue
		}
		now := time.Since(h.base)
		last := time.Duration(h.activity.Load())
		if now-start < h.opt.Settle || now-last < h.opt.Settle {
			continue
		}
		h.lock()
		flushed := true
		for c := range h.clients {
			if !c.Flushed() {
				flushed = false
				break
			}
		}
		h.mu.Unlock()
		if flushed {
			return
		}
	}
}

// Begin and End bracket an API request (deterministic mode waits for
// requests in progress).
func (h *Hub) Begin() {
	if h.opt.Deterministic && !h.settling.Load() {
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
	h.busy.Add(1)
	h.activity.Store(int64(time.Since(h.base)))
}

// End ends what Begin began.
func (h *Hub) End() {
	h.activity.Store(int64(time.Since(h.base)))
	h.busy.Add(-1)
}

// Late counts the API requests of deterministic mode that arrived while
// the replay was running rather than waiting for the bots: each is a bot
// that took longer than Settle to react, and a run whose fills may differ
// from the next (raise Settle).
func (h *Hub) Late() int64 { return h.late.Load() }

// AddClient forwards recorded frames to c from now on; the returned func
// stops it.
func (h *Hub) AddClient(c Client) (remove func()) {
	h.lock()
	h.clients[c] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.lock()
		delete(h.clients, c)
		h.mu.Unlock()
	}
}

// NowNs implements venue.Exchange.
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

// Account implements venue.Exchange.
func (h *Hub) Account(id string) (venue.Account, bool) {
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

// Lookup implements venue.Exchange.
func (h *Hub) Lookup(id string) (venue.Account, bool) {
	h.lock()
	defer h.mu.Unlock()
	a := h.accounts[id]
	if a == nil {
		return nil, false
	}
	return a, true
}

// Book implements venue.Exchange.
func (h *Hub) Book(instrument string, depth int, bids, asks []book.Level) ([]book.Level, []book.Level, int64, bool) {
	h.lock()
	defer h.mu.Unlock()
	b := h.books[instrument]
	if b == nil || !b.Valid() {
		return bids, asks, 0, false
	}
	return b.Top(book.Bid, bids, depth), b.Top(book.Ask, asks, depth), h.exNs[instrument], true
}

// Instruments implements venue.Exchange.
func (h *Hub) Instruments() []venue.SimInstrument {
	h.lock()
	defer h.mu.Unlock()
	var out []venue.SimInstrument
	{
		ctx := h.market.Context()
		for _, in := range ctx.Instruments() {
			mid, _ := in.Mid()
			out = append(out, venue.SimInstrument{ID: in.ID, Market: in.Market, Tick: in.Tick, MinSize: in.MinSize,
				SzDecimals: in.SzDecimals, Mid: mid, Resolved: in.Resolved})
		}
	}
	return out
}

// Recorded implements venue.Exchange.
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
