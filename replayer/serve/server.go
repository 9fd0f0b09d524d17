package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/registry"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// Server serves recordings as a WebSocket server that speaks the recorded
// venue's own protocol, so a client written for the live venue (an SDK, a
// trading bot) can be pointed at a recording unchanged:
//
//   - The client connects (any path: /ws, /ws/market, …) and sends its usual
//     subscribe frames. Each connection replays the recording from its start
//     on a cursor and clock of its own, so every client sees the whole
//     recording however late it connects. The replay starts one subscribe
//     window (WithSubscribeWindow) after the client's first subscribe, so
//     that the several subscribe frames a client sends on connecting all take
//     effect from the first recorded frame; a subscription made later takes
//     effect from the point the replay has reached.
//   - Recorded frames (datasets.KindFrame) are sent byte-identical, with the
//     message type they arrived with, and only those the client's
//     subscriptions select, paced at the server's speed: the first selected
//     frame goes out at once and each later one at its recorded distance from
//     it divided by the speed (datasets merge as in replayer.Merger). Other record kinds, including
//     loss records, are not sent: a recorded gap is silence, as it was live
//     (replay inspect lists the gaps).
//   - The server answers like the venue, with the venue driver's server
//     protocol (venue.ServerProtocol, the one the test exchange speaks too):
//     Hyperliquid subscribe/unsubscribe get a subscriptionResponse echoing
//     the client's subscription with the venue's defaults filled in, a
//     duplicate gets the venue's "Already subscribed:" error,
//     {"method":"ping"} gets {"channel":"pong"}. The recorded acks, pongs and
//     post replies (answers to the recorder's own requests) are not
//     forwarded. Polymarket has no acks (its initial book dump is part of the
//     recording); the text PING gets PONG, and a subscribe frame over the
//     venue's 100 ids closes the connection as the venue does.
//   - Which recorded frames a client gets is the driver's choice too:
//     Hyperliquid frames are selected on (channel, coin) — interval for
//     candles, dex for allMids; l2Book options (nSigFigs, mantissa, fast)
//     are not compared. Polymarket frames are selected on their asset ids: a
//     frame naming any subscribed asset is sent whole, even when it also
//     names assets the client did not subscribe to (an initial dump array, a
//     price_change touching both tokens of a market); a JSON frame naming no
//     asset goes to every client with a subscription.
//   - A client that does not keep up with a paced replay (1x, 10x) — its send
//     queue (WithSendQueue) is full — is disconnected with close code 1008 and
//     a reason saying so; no other client notices, as none shares its cursor.
//     At replayer.SpeedMax "as fast as possible" means as fast as the client reads: its
//     replay waits for queue space instead. A client that stops reading
//     entirely is cut off after the write timeout (WithWriteTimeout).
//     Answers (acks, pongs) have a queue of their own and go first.
//
// At the end of the recording the connection stays open and keeps answering
// pings (a live venue does not hang up either), unless WithCloseAtEnd.
// Every method is safe for concurrent use. The server is meant for loopback
// use by one researcher: it has no authentication and accepts any origin.
type Server struct {
	paths []string
	venue string
	drv   venue.Driver
	opts  options
	up    websocket.Upgrader

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup

	// Trading mode (WithTrading): the shared replay and simulated
	// exchange, the venue's trading API over it, and its REST handler.
	hub  *trading.Hub
	api  tradeapi.TradingAPI
	rest http.Handler

	stats struct {
		accepted, slow, failed, frames, bytes atomic.Uint64
		overLimit                             atomic.Uint64
		skipMu                                sync.Mutex
		skipped                               replayer.Skipped
		active                                atomic.Int64
	}
}

// Stats counts what a Server has done so far.
type Stats struct {
	Connections     uint64 // WebSocket connections accepted
	Active          int64  // connections open now
	SlowDisconnects uint64 // clients disconnected because their send queue was full
	OverLimit       uint64 // clients closed for going over a client limit (WithClientLimits)
	// Skipped sums the recorded time the connections' paced replays did not
	// wait out (around losses, past the max gap).
	Skipped    replayer.Skipped
	ReadErrors uint64 // replays stopped by a damaged dataset (the client got close code 1011)
	FramesSent uint64 // recorded frames written to clients
	BytesSent  uint64 // bytes of those frames
}

// New returns a Server for the datasets in paths, which must all be
// recordings of one venue (Hyperliquid or Polymarket). It reads only the
// manifests; each connection opens its own readers. Errors: ErrNoDatasets,
// an option error wrapping ErrOption, a manifest read error, or ErrVenue for
// an unsupported venue or a mix of venues.
func New(paths []string, opts ...Option) (*Server, error) {
	if len(paths) == 0 {
		return nil, ErrNoDatasets
	}
	s := &Server{paths: append([]string(nil), paths...), opts: defaults(), conns: map[*conn]struct{}{}}
	for _, o := range opts {
		if err := o(&s.opts); err != nil {
			return nil, err
		}
	}
	for _, p := range paths {
		m, err := datasets.ReadManifest(p)
		if err != nil {
			return nil, fmt.Errorf("serve %s: %w", p, err)
		}
		d, err := s.opts.driver, error(nil)
		if d == nil || d.Name() != m.Venue {
			d, err = registry.Lookup(m.Venue)
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w %q: serve %s", ErrVenue, m.Venue, p)
		case s.venue != "" && m.Venue != s.venue:
			return nil, fmt.Errorf("%w: serve needs recordings of one venue; %s is %s, %s is %s",
				ErrVenue, paths[0], s.venue, p, m.Venue)
		}
		s.venue, s.drv = m.Venue, d
	}
	if t := s.opts.trading; t != nil {
		ts, ok := s.drv.(tradeapi.TradingServer)
		if !ok {
			return nil, fmt.Errorf("%w: no trading API is simulated for %s", ErrVenue, s.venue)
		}
		hub, err := trading.NewHub(s.paths, t.hub)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrOption, err)
		}
		s.hub, s.api = hub, ts.TradingAPI()
		s.rest = s.api.Handler(hub, t.api)
	}
	s.up = websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferSize: 32 << 10,
		CheckOrigin:     func(*http.Request) bool { return true },
	}
	return s, nil
}

// NewLive returns a trading server over a live hub (trading.NewLive) fed
// by a running capture of venueName: paper trading. The venue's trading
// API answers from the hub's simulator, and every WebSocket client gets
// the live frames its subscriptions select as the hub receives them; the
// client limits, queue and subscribe-window options apply, the replay
// options do not. Errors: ErrVenue for a venue without a simulated trading
// API, an option error wrapping ErrOption.
func NewLive(venueName string, hub *trading.Hub, api tradeapi.TradingOptions, opts ...Option) (*Server, error) {
	s := &Server{opts: defaults(), conns: map[*conn]struct{}{}}
	for _, o := range opts {
		if err := o(&s.opts); err != nil {
			return nil, err
		}
	}
	d, err := registry.Lookup(venueName)
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrVenue, venueName)
	}
	ts, ok := d.(tradeapi.TradingServer)
	if !ok {
		return nil, fmt.Errorf("%w: no trading API is simulated for %s", ErrVenue, venueName)
	}
	s.venue, s.drv, s.hub, s.api = venueName, d, hub, ts.TradingAPI()
	s.opts.trading = &tradingOpts{api: api}
	s.rest = s.api.Handler(hub, api)
	s.up = websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 32 << 10, CheckOrigin: func(*http.Request) bool { return true }}
	return s, nil
}

// Hub returns the simulated exchange of a trading server (WithTrading),
// nil otherwise. Its results (Hub.Results) are complete once Serve returned.
func (s *Server) Hub() *trading.Hub { return s.hub }

// Venue returns the venue whose protocol the server speaks.
func (s *Server) Venue() string { return s.venue }

// Path returns the URL path the venue's clients connect to (its driver's
// Endpoints().ServePath, "/ws" when it names none); the server answers on
// any path.
func (s *Server) Path() string {
	if p := s.drv.Endpoints().ServePath; p != "" {
		return p
	}
	return "/ws"
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	return Stats{
		Connections:     s.stats.accepted.Load(),
		Active:          s.stats.active.Load(),
		SlowDisconnects: s.stats.slow.Load(),
		OverLimit:       s.stats.overLimit.Load(),
		Skipped:         s.skippedSoFar(),
		ReadErrors:      s.stats.failed.Load(),
		FramesSent:      s.stats.frames.Load(),
		BytesSent:       s.stats.bytes.Load(),
	}
}

func (s *Server) skippedSoFar() replayer.Skipped {
	s.stats.skipMu.Lock()
	defer s.stats.skipMu.Unlock()
	return s.stats.skipped
}

// addSkipped adds one finished replay's skipped time.
func (s *Server) addSkipped(k replayer.Skipped) {
	s.stats.skipMu.Lock()
	defer s.stats.skipMu.Unlock()
	t := &s.stats.skipped
	t.Losses, t.LossNs, t.Capped, t.CappedNs = t.Losses+k.Losses, t.LossNs+k.LossNs, t.Capped+k.Capped, t.CappedNs+k.CappedNs
}

// ServeHTTP upgrades the request to a WebSocket and serves one client until
// it disconnects, is disconnected, or the server closes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		http.Error(w, "replay server closed", http.StatusServiceUnavailable)
		return
	}
	if s.rest != nil && !websocket.IsWebSocketUpgrade(r) {
		// The venue's REST API; deterministic mode waits for requests in
		// progress before it replays on.
		s.hub.Begin()
		defer s.hub.End()
		s.rest.ServeHTTP(w, r)
		return
	}
	ws, err := s.up.Upgrade(w, r, nil) // on failure it has answered the request
	if err != nil {
		return
	}
	c := newConn(s, ws)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.kick(websocket.CloseGoingAway, "tapedeck: server shutting down", false)
	} else {
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			s.wg.Done()
		}()
	}
	s.stats.accepted.Add(1)
	s.stats.active.Add(1)
	defer s.stats.active.Add(-1)
	c.run()
}

// Close disconnects every client with close code 1001 and waits for their
// connections to end; later connections are refused. It does not close
// listeners: Serve does that when its context ends.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.kick(websocket.CloseGoingAway, "tapedeck: server shutting down", false)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Serve accepts connections on ln until ctx ends, then closes ln and every
// client connection (see Close) and returns nil. It returns the listener's
// error if accepting fails first.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	hubDone := make(chan struct{})
	hctx, hcancel := context.WithCancel(ctx)
	defer func() { hcancel(); <-hubDone }()
	if s.hub != nil {
		go func() {
			defer close(hubDone)
			_, _ = s.hub.Run(hctx)
			if s.opts.closeAtEnd {
				s.mu.Lock()
				for c := range s.conns {
					c.kick(websocket.CloseNormalClosure, "tapedeck: end of recording", true)
				}
				s.mu.Unlock()
			}
		}()
	} else {
		close(hubDone)
	}
	var end <-chan struct{} // nil: never
	if s.hub != nil && s.opts.exitAtEnd {
		end = s.hub.Done()
	}
	var err error
	select {
	case <-ctx.Done():
	case <-end:
	case err = <-done:
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutCtx) // closes ln; hijacked WebSockets are ours to close
	s.Close()
	if err == nil {
		err = <-done
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serve: %w", err)
}

// ListenAndServe listens on the TCP address addr (use a loopback address such
// as 127.0.0.1:8765) and calls Serve.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return s.Serve(ctx, ln)
}
