// Package recorder owns live capture: it connects to a venue's WebSocket,
// subscribes, keeps the connections alive and honest (heartbeats, reconnects
// with backoff, stall watchdogs), and hands every received frame,
// byte-identical and stamped with its receive times, to a dataset writer.
// Nothing is lost silently: every frame that could not be kept, every
// disconnect, stall and write failure is itself a record of the dataset.
//
// While it records, a live engine (live.go) decodes every record it wrote,
// in order, with the decoders and books replay uses, off the write path: it
// keeps live books (LiveBooks, LiveStats), writes integrity records when a
// book disagrees with the venue and resubscribes the instrument to heal it
// (live_heal.go), and delivers feed events to live subscribers (Subscribe)
// exactly as a replay of the recording would.
//
// What the frames mean lives in venue/*; how records are stored lives in
// datasets. The venue-specific URLs, frames, limits and discovery come from
// the venue's driver (venue.Driver.Client, found in venue/registry): the
// recorder names no venue.
package recorder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// Sink is what the recorder needs of a dataset writer; *datasets.Writer
// implements it. Append must copy the record (the recorder reuses payload
// buffers) and follow datasets.Writer's contract: seq != 0 means the record
// was accepted even if err reports an earlier failed write. Only the
// recorder's writer goroutine calls the Sink.
type Sink interface {
	Append(r *datasets.Record) (seq uint64, err error)
	Flush() error
}

var _ Sink = (*datasets.Writer)(nil)

// Spec says what to record.
type Spec struct {
	// Venue is a venue name of venue/registry ("polymarket", "hyperliquid").
	Venue string
	// Endpoint is the WebSocket URL ("" = the venue's public one).
	Endpoint string
	// RESTEndpoint is the discovery base URL ("" = the venue's, or derived
	// from Endpoint when that is not the venue's public one): Polymarket
	// Gamma (GET /markets), Hyperliquid info (POST, the full URL).
	RESTEndpoint string
	// Instruments are Polymarket token ids, market slugs or condition ids
	// (resolved to token ids by Discover), or Hyperliquid coins.
	Instruments []string
	// Channels are Hyperliquid channel specs ("l2Book", "l2Book+fast",
	// "bbo", "trades", "allMids", "activeAssetCtx", "candle+interval=1m"),
	// crossed with the coins; empty means the venue's defaults
	// (Hyperliquid: l2Book and trades).
	// Polymarket has one channel and accepts only "market" or nothing.
	Channels []string
	// AllMarkets records every listed instrument (Polymarket: every active
	// market's tokens, following new_market and market_resolved;
	// Hyperliquid: every coin of meta and spotMeta), refreshed periodically.
	AllMarkets bool
	// AssetsPerConn is the Polymarket shard size (0 = the venue default).
	AssetsPerConn int
	// Conns is the number of Hyperliquid connections to spread over (0 = as
	// few as the plan allows).
	Conns int
	// CLOBEndpoint is the Polymarket CLOB REST base URL the book summaries
	// come from ("" = the driver's Endpoints().Books, or Endpoint's host when that
	// is not the public WebSocket). Ignored for Hyperliquid.
	CLOBEndpoint string
	// DisableRESTBooks turns off what Polymarket sessions do by default:
	// before every connect and reconnect of a connection, fetch the REST
	// book summaries of its tokens (POST /books) and store each body as a
	// KindRESTResponse of that connection, so that a replay learns the hash
	// fields WebSocket books lack (min_order_size, neg_risk) and can verify
	// book hashes. Ignored for Hyperliquid.
	DisableRESTBooks bool
}

// ErrSpec reports a Spec that cannot be recorded; the message names the field.
var ErrSpec = errors.New("recorder: invalid spec")

// Recorder records one venue into one dataset. Create it with New, optionally
// call Discover and Plan, then Run once. Stats, Plan and Manifest are safe to
// call concurrently with Run.
type Recorder struct {
	spec     Spec
	o        options
	drv      venue.Driver
	p        protocol
	facts    venue.ClientFacts
	endpoint string
	restURL  string
	clobURL  string // "" = no REST book summaries
	base     time.Time
	reg      *prometheus.Registry // private registry unless WithMetrics
	m        *metrics
	log      *slog.Logger

	mu          sync.Mutex
	discovered  bool
	rest        []RESTResponse
	instruments []string // resolved instruments, in order
	plan        *Plan
	ran         bool
	slots       []*slot
	assigned    map[string]*slot // item → slot carrying it

	q         *queue
	w         *writer
	sendPacer *pacer
	dialPacer *pacer
	runCtx    context.Context
	wctx      context.Context // ends only when the writer is gone: control records wait on it
	slotWG    sync.WaitGroup
	lifecycle chan listingChange

	// The live engine of Run (live.go) and the subscriptions it delivers to.
	lm        *liveMetrics
	liveSubMu sync.Mutex
	live      *liveEngine
	liveSubs  []liveSub

	// What LiveStatus reports, fed by the writer (livestatus.go).
	track *statusTracker

	stats struct {
		frames, bytes, dropped, reconnects, stalls atomic.Uint64
		restBooks, restBookErrors                  atomic.Uint64
	}
}

// New validates spec and opts. It does not touch the network.
func New(spec Spec, opts ...Option) (*Recorder, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	drv := o.driver
	switch {
	case drv == nil:
		d, err := registry.Lookup(spec.Venue)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSpec, err)
		}
		drv = d
	case spec.Venue == "":
		spec.Venue = drv.Name()
	case spec.Venue != drv.Name():
		return nil, fmt.Errorf("%w: venue %q, driver %q", ErrSpec, spec.Venue, drv.Name())
	}
	var err error
	p := newProtocol(drv.Client())
	f := p.Facts()
	r := &Recorder{spec: spec, o: o, drv: drv, p: p, facts: f, base: o.now(), log: o.logger, track: newStatusTracker(p.WatchKey)}
	ep := drv.Endpoints()
	r.endpoint = spec.Endpoint
	if r.endpoint == "" {
		r.endpoint = ep.WebSocket
	}
	r.restURL = spec.RESTEndpoint
	if r.restURL == "" {
		r.restURL = ep.Discovery
	}
	if len(spec.Instruments) == 0 && !spec.AllMarkets {
		return nil, fmt.Errorf("%w: no instruments (give some, or all markets)", ErrSpec)
	}
	if r.spec.Channels, err = p.Channels(spec.Channels); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	if f.ShardByItems {
		if spec.AssetsPerConn < 0 || spec.AssetsPerConn > f.MaxConnItems {
			return nil, fmt.Errorf("%w: %d assets per connection, want 1..%d", ErrSpec, spec.AssetsPerConn, f.MaxConnItems)
		}
		if spec.Conns != 0 {
			return nil, fmt.Errorf("%w: a connection count does not apply to %s, which shards by assets per connection", ErrSpec, spec.Venue)
		}
	} else {
		if spec.AssetsPerConn != 0 {
			return nil, fmt.Errorf("%w: assets per connection does not apply to %s, which spreads over a connection count", ErrSpec, spec.Venue)
		}
		if spec.Conns < 0 || (f.MaxConns > 0 && spec.Conns > f.MaxConns) {
			return nil, fmt.Errorf("%w: %d connections, want 0..%d", ErrSpec, spec.Conns, f.MaxConns)
		}
	}
	if !o.instStallSet {
		r.o.instStall = 0
		if f.SteadyFeeds {
			r.o.instStall = o.stallTimeout
		}
	}
	if !spec.DisableRESTBooks && ep.Books != "" {
		r.clobURL = spec.CLOBEndpoint
		if r.clobURL == "" {
			r.clobURL = ep.Books
		}
	}
	if err := r.deriveREST(ep.WebSocket); err != nil {
		return nil, err
	}
	if r.o.pingInterval == 0 {
		r.o.pingInterval = f.PingInterval
	}
	if len(f.PingFrame) == 0 {
		r.o.pingInterval = 0 // no application heartbeat
	}
	if r.o.maxFrameBytes == 0 {
		r.o.maxFrameBytes = min(f.MaxFrameBytes, datasets.MaxPayloadSize)
	}
	if r.o.subscribePace == nil {
		r.o.subscribePace = pacingOf(f.Pacing)
	}
	reg := o.registerer
	if reg == nil {
		r.reg = prometheus.NewRegistry()
		reg = r.reg
	}
	m, err := newMetrics(reg, spec.Venue)
	if err != nil {
		return nil, fmt.Errorf("recorder: register metrics: %w", err)
	}
	r.m = m
	if r.lm, err = newLiveMetrics(reg, spec.Venue); err != nil {
		return nil, fmt.Errorf("recorder: register metrics: %w", err)
	}
	return r, nil
}

// Gatherer returns the private metrics registry, or nil when WithMetrics
// was given (the caller's registry then holds the series).
func (r *Recorder) Gatherer() prometheus.Gatherer {
	if r.reg == nil {
		return nil
	}
	return r.reg
}

// needsDiscovery reports whether planning needs the network: all markets, or
// Polymarket instruments named by slug or condition id.
func (r *Recorder) needsDiscovery() bool {
	return r.spec.AllMarkets || r.p.NeedsDiscovery(r.spec.Instruments)
}

// Manifest returns the manifest to create the dataset with: venue,
// endpoint, the planned instruments and subscriptions, and the clock base
// the recorder stamps MonoNs against. Call it after Plan (or Discover) so
// discovered instruments are listed.
func (r *Recorder) Manifest() datasets.Manifest {
	r.mu.Lock()
	defer r.mu.Unlock()
	host, _ := os.Hostname()
	m := datasets.Manifest{
		FormatVersion:  datasets.FormatVersion,
		Venue:          r.spec.Venue,
		Endpoint:       r.endpoint,
		ToolVersion:    "tapedeck capture",
		Host:           host,
		StartNs:        r.base.UnixNano(),
		MonoBaseWallNs: r.base.UnixNano(),
	}
	if r.plan != nil {
		var items []string
		for _, c := range r.plan.Conns {
			m.Instruments = append(m.Instruments, c.Instruments...)
			items = append(items, c.Items...)
		}
		m.Subscriptions = r.p.Subscriptions(r.spec.Channels, items)
		slices.Sort(m.Instruments)
		m.Instruments = slices.Compact(m.Instruments)
	}
	return m
}

// Stats are what a recorder has seen so far.
type Stats struct {
	Frames      uint64 `json:"frames"`       // frames received and queued
	Bytes       uint64 `json:"frame_bytes"`  // their payload bytes
	Dropped     uint64 `json:"dropped"`      // frames dropped on a full queue (all reported by overload records)
	Reconnects  uint64 `json:"reconnects"`   // reconnect attempts
	Stalls      uint64 `json:"stalls"`       // connection stalls the watchdog found
	Records     uint64 `json:"records"`      // records appended to the sink (frames and control)
	WriteErrors uint64 `json:"write_errors"` // failed appends or flushes (retried)
	Lost        uint64 `json:"lost"`         // records given up after the sink kept refusing them at shutdown (a KindGap covers them when the sink takes it)
	LostFrames  uint64 `json:"lost_frames"`  // the frames among Lost
	// RESTBooks counts stored REST book-summary bodies (Polymarket), and
	// RESTBookErrors the requests for them that failed (each one a KindNote).
	RESTBooks      uint64 `json:"rest_books"`
	RESTBookErrors uint64 `json:"rest_book_errors"`
	// DiskLag is the distribution of the time from socket read to the end of
	// the flush that wrote the frame.
	DiskLag LagStats `json:"read_to_disk"`
}

// Stats returns the counts so far.
func (r *Recorder) Stats() Stats {
	s := Stats{
		Frames: r.stats.frames.Load(), Bytes: r.stats.bytes.Load(), Dropped: r.stats.dropped.Load(),
		Reconnects: r.stats.reconnects.Load(), Stalls: r.stats.stalls.Load(),
		RESTBooks: r.stats.restBooks.Load(), RESTBookErrors: r.stats.restBookErrors.Load(),
	}
	r.mu.Lock()
	w := r.w
	r.mu.Unlock()
	if w != nil {
		s.Records, s.WriteErrors, s.Lost, s.LostFrames = w.records.Load(), w.errors.Load(), w.lost.Load(), w.lostFrames.Load()
		s.DiskLag = w.lag.stats()
	}
	return s
}

// ErrRan reports a second call to Run.
var ErrRan = errors.New("recorder: already ran")

// Run records into sink until ctx ends, then shuts down gracefully: every
// connection is closed (1000) and recorded as its KindCleanClose (not a
// loss: its books stay valid), the queue is drained, the recorder's
// KindCleanClose (conn 0) is appended, the sink flushed and the live engine
// drained. It returns nil
// after a graceful shutdown; the caller then closes the sink (sealing the
// dataset). It returns early with an error only when recording cannot go on
// (discovery failed, the sink is closed) or when records were lost because
// the sink still failed at shutdown. Connection failures never end Run: they
// are recorded and retried.
func (r *Recorder) Run(ctx context.Context, sink Sink) error {
	r.mu.Lock()
	if r.ran {
		r.mu.Unlock()
		return ErrRan
	}
	r.ran = true
	r.mu.Unlock()
	if sink == nil {
		return fmt.Errorf("%w: nil sink", ErrSpec)
	}
	plan, err := r.planFor(ctx, true)
	if err != nil {
		return err
	}

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	q := newQueue(r.o.queueFrames, r.o.queueBytes, r.base)
	q.now = r.o.now
	w := newWriter(r, sink, q)
	r.mu.Lock()
	r.q, r.w, r.runCtx = q, w, runCtx
	r.sendPacer = newPacer(r.o.subscribePace)
	r.dialPacer = newPacer(&r.o.dialPace)
	r.assigned = map[string]*slot{}
	r.mu.Unlock()
	live := r.startLive()
	wctx, wcancel := context.WithCancel(context.Background())
	r.mu.Lock()
	r.wctx = wctx
	r.mu.Unlock()
	writerDone := make(chan error, 1)
	go func() {
		defer wcancel()
		writerDone <- w.loop(func(err error) { stop(err) })
	}()

	for _, rr := range r.restSnapshot() {
		r.pushREST(0, rr)
	}
	if r.spec.AllMarkets {
		r.lifecycle = make(chan listingChange, 1024)
	}
	for _, c := range plan.Conns {
		r.startSlot(runCtx, c.Items)
	}
	var mgrWG sync.WaitGroup
	if r.spec.AllMarkets {
		mgrWG.Go(func() { r.manage(runCtx) })
	}
	r.log.Info("capture started", "venue", r.spec.Venue, "endpoint", r.endpoint, "connections", len(plan.Conns))

	<-runCtx.Done()
	w.stopAt.CompareAndSwap(0, time.Now().UnixNano()) // bounds the retries of a refusing sink from now on
	mgrWG.Wait()
	r.slotWG.Wait()
	live.settle(0)
	q.close()
	werr := <-writerDone
	live.close()
	cause := context.Cause(runCtx)
	if ctx.Err() != nil && errors.Is(cause, ctx.Err()) {
		cause = nil // the caller asked us to stop: graceful
	}
	r.log.Info("capture stopped", "frames", r.stats.frames.Load(), "dropped", r.stats.dropped.Load())
	return errors.Join(cause, werr)
}

// pushREST stores a REST response the session (conn 0) or a connection slot
// relied on: a note naming the request (the record kind has no room for the
// URL), then the raw body.
func (r *Recorder) pushREST(conn uint32, rr RESTResponse) {
	text := rr.Method + " " + rr.URL
	if len(rr.Request) > 0 {
		text += " " + string(rr.Request)
	}
	r.q.push(r.wctx, entry{rec: datasets.Record{Kind: datasets.KindNote, Conn: conn,
		Payload: datasets.EncodeControl(datasets.Control{URL: rr.URL, Code: rr.Status, Text: "rest_response follows: " + text})}})
	r.q.push(r.wctx, entry{rec: datasets.Record{Kind: datasets.KindRESTResponse, Conn: conn, Payload: rr.Body}})
}

func (r *Recorder) restSnapshot() []RESTResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.rest)
}

// Note records c as a KindNote of the session (conn 0) while Run runs,
// waiting for room in the queue like every control record: what other
// parts of a capture (an uploader) must say in the dataset. It reports
// false when Run has not started or its writer is gone.
func (r *Recorder) Note(c datasets.Control) bool {
	r.mu.Lock()
	q, wctx := r.q, r.wctx
	r.mu.Unlock()
	if q == nil || wctx == nil {
		return false
	}
	return q.push(wctx, entry{rec: datasets.Record{Kind: datasets.KindNote, Payload: datasets.EncodeControl(c)}})
}

// control queues a control record of a connection slot (0 = the session),
// waiting for room: control records are what make losses visible.
func (r *Recorder) control(conn uint32, k datasets.Kind, c datasets.Control) {
	r.q.push(r.wctx, entry{rec: datasets.Record{Kind: k, Conn: conn, Payload: datasets.EncodeControl(c)}})
}

// controlAt is control for a record a frame received at t caused (an
// acknowledgement): it is stamped with the frame's receive time.
func (r *Recorder) controlAt(conn uint32, k datasets.Kind, c datasets.Control, t time.Time) {
	r.q.pushAt(r.wctx, entry{rec: datasets.Record{Kind: k, Conn: conn, Payload: datasets.EncodeControl(c)}}, t)
}
