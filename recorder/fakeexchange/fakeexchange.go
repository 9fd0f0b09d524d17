// Package fakeexchange runs loopback stand-ins of the Polymarket market
// channel and the Hyperliquid WebSocket (plus their REST discovery
// endpoints and Polymarket's CLOB book summaries) for tests and benchmarks.
// Their protocol is the venue driver's server side (venue.Driver.Server, the
// one replay serve speaks): heartbeats, acknowledgements and the venue's
// errors on the WebSocket, and the REST endpoints (Gamma /markets, CLOB
// /books and /book, Hyperliquid /info) answering from the Config; this package
// adds the data, from real captured frames — snapshots before updates, a
// feed per subscription — and the 1006 close on an unknown coin, and can be
// told to misbehave (or, Scripted, send only what a test tells it to):
// stall while still answering pings, close abruptly or with a code, send
// garbage or oversized frames, refuse connections. Every frame a server sent
// is kept per connection so tests can compare it with what was recorded.
//
// Servers listen on 127.0.0.1 only (httptest).
package fakeexchange

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// Venue names, as in package venue.
const (
	Polymarket  = venue.Polymarket
	Hyperliquid = venue.Hyperliquid
)

// Template is a real frame with the instrument it names (a Polymarket token
// id or a Hyperliquid coin); the server substitutes the subscribed
// instrument for every occurrence of ID.
type Template struct {
	Frame []byte
	ID    string
}

// Config sets up a server.
type Config struct {
	Venue string
	// Feed is cycled per connection once something is subscribed: for
	// Hyperliquid keyed by channel ("l2Book", "bbo", …), for Polymarket
	// under "market".
	Feed map[string][]Template
	// Snapshot is the Polymarket book sent for every newly subscribed asset,
	// in one JSON array per subscribe frame (the initial dump).
	Snapshot Template
	// Interval spaces data frames per connection (0 = 1 ms).
	Interval time.Duration
	// Flood makes every connection send data frames as fast as the socket
	// takes them, written in batches of prebuilt frames (benchmarks); sent
	// frames are then counted, not kept.
	Flood bool
	// FloodRate caps a flooding connection at this many frames per second
	// (0 = as fast as the socket takes them).
	FloodRate int
	// Markets is the Polymarket Gamma market list (GET /markets), a JSON array.
	Markets []byte
	// Summary is the Polymarket CLOB REST book summary served for every
	// token asked for (POST /books answers an array of them, GET /book one),
	// the token id substituted for ID. Empty: /books answers [] and /book 404.
	Summary Template
	// Meta and SpotMeta are the Hyperliquid info responses.
	Meta, SpotMeta []byte
	// Docs are REST listing documents by the name the venue's driver asks
	// for (venue.RESTDocs.Listing): other venues', and those of Markets,
	// Meta and SpotMeta when they are nil.
	Docs map[string][]byte
	// BadCoins close the socket abruptly (1006, no message) when subscribed,
	// as Hyperliquid does for an unknown coin.
	BadCoins []string
	// Books are Polymarket CLOB REST book summaries by token id, served
	// instead of Summary for the tokens they hold.
	Books map[string][]byte
	// CountOnly keeps no copy of the frames sent (Sent returns none;
	// SentCount counts them), for soaks that send millions.
	CountOnly bool
	// Scripted makes the server send nothing of its own on the WebSocket:
	// no data feed, no acknowledgements, pongs or errors, no initial dump.
	// It still reads every client frame through the venue's server session
	// (Received, Subscriptions); what the venue says is written by the test
	// with Conn.Send. The sample generator plays a generated session so.
	Scripted bool
}

// Server is one fake venue. Its methods are safe for concurrent use.
type Server struct {
	cfg  Config
	drv  venue.Driver
	http *httptest.Server
	up   websocket.Upgrader

	mu     sync.Mutex
	conns  []*Conn
	refuse int
	closed bool

	hold    chan struct{} // non-nil while Hold is on; closed to release
	stalled atomic.Bool
	stallMu sync.RWMutex // held for reading while a pump sends, so that Stall can wait for it
	burst   atomic.Int32 // data frames per tick of a connection (SetBurst; 0 = 1)
	muted   sync.Map     // instrument → true: no data for it (Mute)
	wg      sync.WaitGroup

	bmu        sync.Mutex
	bookReqs   [][]string
	bookStatus int
	bookDelay  time.Duration
	bookNext   chan struct{} // closed at the next book-summary request
}

// Conn is one accepted connection as the server saw it.
type Conn struct {
	ID int
	s  *Server
	ws *websocket.Conn

	wmu   sync.Mutex // one writer at a time
	mu    sync.Mutex
	sess  venue.ServerSession
	sent  [][]byte
	nSent int64
	recv  [][]byte
	subs  []venue.Topic
	dead  bool
	done  chan struct{}
	wake  chan struct{}
}

// New starts a server on 127.0.0.1. It panics on a venue with no driver (a
// test's own mistake).
func New(cfg Config) *Server {
	if cfg.Interval == 0 {
		cfg.Interval = time.Millisecond
	}
	drv, err := registry.Lookup(cfg.Venue)
	if err != nil {
		panic("fakeexchange: " + err.Error())
	}
	s := &Server{cfg: cfg, drv: drv, up: websocket.Upgrader{ReadBufferSize: 16 << 10, WriteBufferSize: 64 << 10,
		CheckOrigin: func(*http.Request) bool { return true }}}
	mux := http.NewServeMux()
	// The WebSocket at both shipped venues' paths (tests dial them) and at
	// the venue's own (Endpoints.ServePath).
	paths := []string{"/ws", "/ws/market"}
	if p := drv.Endpoints().ServePath; p != "" && !slices.Contains(paths, p) {
		paths = append(paths, p)
	}
	for _, p := range paths {
		mux.HandleFunc(p, s.serveWS)
	}
	// The venue's REST API (discovery, book snapshots) is its driver's too.
	mux.Handle("/", drv.Server().REST(venue.RESTDocs{Listing: s.listingDoc, Book: s.bookDoc, BookRequest: s.bookRequest}))
	s.http = httptest.NewServer(mux)
	return s
}

// WSURL is the WebSocket endpoint (ws://127.0.0.1:port/ws…).
func (s *Server) WSURL() string {
	return "ws" + strings.TrimPrefix(s.http.URL, "http") + s.drv.Endpoints().ServePath
}

// RESTURL is the discovery endpoint: the Gamma base URL for Polymarket, the
// info URL for Hyperliquid.
func (s *Server) RESTURL() string {
	m, ok := s.drv.Client().(venue.Mirrorer)
	if !ok {
		return ""
	}
	return m.Mirror(s.http.URL, s.drv.Endpoints().ServePath).Discovery
}

// CLOBURL is the Polymarket CLOB REST base URL (POST /books, GET /book).
func (s *Server) CLOBURL() string { return s.http.URL }

// BookRequests returns the token ids of every book-summary request served
// or failed so far, one slice per request, in order.
func (s *Server) BookRequests() [][]string {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	out := make([][]string, len(s.bookReqs))
	for i, r := range s.bookReqs {
		out[i] = append([]string(nil), r...)
	}
	return out
}

// NextBookRequest returns a channel closed when the server next records a
// book-summary request (before FailBooks or DelayBooks apply to it), so a
// test can act once a request has reached the server rather than after
// some time.
func (s *Server) NextBookRequest() <-chan struct{} {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	if s.bookNext == nil {
		s.bookNext = make(chan struct{})
	}
	return s.bookNext
}

// FailBooks makes book-summary requests answer HTTP status with a JSON
// error body (0 = serve them again).
func (s *Server) FailBooks(status int) {
	s.bmu.Lock()
	s.bookStatus = status
	s.bmu.Unlock()
}

// DelayBooks makes book-summary requests wait d before answering (or until
// the client gives up), to test timeouts.
func (s *Server) DelayBooks(d time.Duration) {
	s.bmu.Lock()
	s.bookDelay = d
	s.bmu.Unlock()
}

// SetListing replaces the REST listing served from now on: the Gamma market
// list for Polymarket, meta and spotMeta for Hyperliquid (nil keeps one).
func (s *Server) SetListing(markets, meta, spotMeta []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if markets != nil {
		s.cfg.Markets = markets
	}
	if meta != nil {
		s.cfg.Meta = meta
	}
	if spotMeta != nil {
		s.cfg.SpotMeta = spotMeta
	}
}

func (s *Server) listing() (markets, meta, spotMeta []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Markets, s.cfg.Meta, s.cfg.SpotMeta
}

// Hold makes new WebSocket connections and book-summary requests wait
// (true) until released (false) or the server closes, so that a test can
// decide when a reconnecting client gets through.
func (s *Server) Hold(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case on && s.hold == nil:
		s.hold = make(chan struct{})
	case !on && s.hold != nil:
		close(s.hold)
		s.hold = nil
	}
}

// waitHold waits while Hold is on; false if ctx ended first.
func (s *Server) waitHold(ctx context.Context) bool {
	s.mu.Lock()
	h := s.hold
	s.mu.Unlock()
	if h == nil {
		return true
	}
	select {
	case <-h:
		return true
	case <-ctx.Done():
		return false
	}
}

// Close kills every connection and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.Hold(false)
	s.KillAll()
	s.http.CloseClientConnections()
	s.http.Close()
	s.wg.Wait()
}

// Conns returns every connection accepted so far, in order.
func (s *Server) Conns() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Conn(nil), s.conns...)
}

// Live returns the connections still open.
func (s *Server) Live() []*Conn {
	var out []*Conn
	for _, c := range s.Conns() {
		c.mu.Lock()
		if !c.dead {
			out = append(out, c)
		}
		c.mu.Unlock()
	}
	return out
}

// Sent returns copies of the frames the server wrote on c, in order.
func (c *Conn) Sent() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.sent...)
}

// SentCount returns how many frames the server wrote on c.
func (c *Conn) SentCount() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nSent
}

// Received returns the frames the client sent on c, in order.
func (c *Conn) Received() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.recv...)
}

// Subscriptions returns what c currently carries, by the keys of the
// venue's server protocol: token ids, or Hyperliquid "type@coin" keys.
func (c *Conn) Subscriptions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.subs))
	for i, t := range c.subs {
		out[i] = t.Key
	}
	return out
}

// Stall stops (true) or resumes (false) data on every connection; pings are
// still answered, as the frozen Polymarket channel did. Stall(true) returns
// once no data frame is being written (Flood: none after the batch being
// written): every data frame sent before the stall is then in Sent, and none
// follows until Stall(false).
func (s *Server) Stall(on bool) {
	s.stallMu.Lock()
	s.stalled.Store(on)
	s.stallMu.Unlock()
}

// SetBurst makes every connection send n data frames at each tick of its
// Interval (n <= 1: one), the bursts of a busy venue.
func (s *Server) SetBurst(n int) { s.burst.Store(int32(min(max(n, 1), 1<<20))) }

// Mute stops (true) or resumes (false) the data of one instrument (a token
// id or coin) on every connection while the others flow, as a venue does for
// a subscription it silently stopped serving.
func (s *Server) Mute(instrument string, on bool) {
	if on {
		s.muted.Store(instrument, true)
	} else {
		s.muted.Delete(instrument)
	}
}

// Refuse makes the next n connection attempts fail with HTTP 503.
func (s *Server) Refuse(n int) {
	s.mu.Lock()
	s.refuse = n
	s.mu.Unlock()
}

// KillAll drops every live connection without a close frame: the client
// sees an abnormal closure (1006).
func (s *Server) KillAll() {
	for _, c := range s.Live() {
		c.kill()
	}
}

// CloseAll closes every live connection with a close frame.
func (s *Server) CloseAll(code int, reason string) {
	for _, c := range s.Live() {
		c.wmu.Lock()
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
		c.wmu.Unlock()
		c.kill()
	}
}

// Send writes frame as a text message on c and reports whether the write
// succeeded (the frame is then kept as sent).
func (c *Conn) Send(frame []byte) bool { return c.write(frame) }

// Kill drops c without a close frame, as KillAll does for every connection.
func (c *Conn) Kill() { c.kill() }

// SendAll writes frame as a text message on every live connection (garbage,
// oversized frames); it is kept as sent where the write succeeds.
func (s *Server) SendAll(frame []byte) {
	for _, c := range s.Live() {
		c.write(frame)
	}
}

// kill ends the connection without a close frame (the client sees 1006).
// It half-closes: the FIN follows every frame already written, so the client
// reads all of them before the end. A full close with unread client data in
// the server's buffer sends a RST, which can make the client's kernel drop
// frames already delivered — a loss of the network, not of the recorder,
// that the tests could then not tell apart. The read side closes when the
// client hangs up, or after two seconds.
func (c *Conn) kill() {
	c.mu.Lock()
	first := !c.dead
	if first {
		c.dead = true
		close(c.done)
	}
	c.mu.Unlock()
	if !first {
		return
	}
	nc := c.ws.UnderlyingConn()
	c.wmu.Lock() // never between the bytes of a frame
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.CloseWrite()
	} else {
		nc.Close()
	}
	c.wmu.Unlock()
	nc.SetReadDeadline(time.Now().Add(2 * time.Second))
}

// write sends one text frame and keeps it as sent if the write succeeded.
func (c *Conn) write(frame []byte) bool {
	// The record is kept under the write lock so that the order of sent
	// matches the order on the wire when the pump and the responder race. It
	// is kept before the write: a client may act on the frame (and a test
	// look at Sent) before WriteMessage returns here; a failed write takes it
	// back (only writers, who hold wmu, append).
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(frame)
}

// writeLocked is write for a caller that holds c.wmu.
func (c *Conn) writeLocked(frame []byte) bool {
	keep := !c.s.cfg.Flood && !c.s.cfg.CountOnly
	c.mu.Lock()
	if keep {
		c.sent = append(c.sent, append([]byte(nil), frame...))
	}
	c.nSent++
	c.mu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
		c.mu.Lock()
		if keep {
			c.sent = c.sent[:len(c.sent)-1]
		}
		c.nSent--
		c.mu.Unlock()
		return false
	}
	return true
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if !s.waitHold(r.Context()) {
		return
	}
	s.mu.Lock()
	if s.refuse > 0 || s.closed {
		s.refuse--
		s.mu.Unlock()
		http.Error(w, "refused by test", http.StatusServiceUnavailable)
		return
	}
	s.mu.Unlock()
	ws, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	c := &Conn{ID: len(s.conns) + 1, s: s, ws: ws, sess: s.drv.Server().NewSession(), done: make(chan struct{}), wake: make(chan struct{}, 1)}
	s.conns = append(s.conns, c)
	s.wg.Add(2)
	s.mu.Unlock()
	go func() { defer s.wg.Done(); c.pump() }()
	go func() { defer s.wg.Done(); c.readLoop() }()
}

func (c *Conn) readLoop() {
	defer func() {
		c.kill()
		c.ws.UnderlyingConn().Close()
	}()
	for {
		typ, msg, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		c.mu.Lock()
		c.recv = append(c.recv, msg)
		c.mu.Unlock()
		c.clientMsg(msg, typ == websocket.BinaryMessage)
	}
}

// clientMsg answers one client frame as the venue's server protocol says,
// then sends the initial dump of newly subscribed instruments (Polymarket's
// snapshot array) and wakes the pump.
func (c *Conn) clientMsg(msg []byte, binary bool) {
	c.mu.Lock()
	r := c.sess.Handle(msg, binary)
	answers := make([][]byte, len(r.Answers))
	for i, a := range r.Answers {
		answers[i] = append([]byte(nil), a...)
	}
	c.mu.Unlock()
	if c.s.cfg.Scripted {
		c.mu.Lock()
		for _, t := range r.Removed {
			c.subs = slices.DeleteFunc(c.subs, func(x venue.Topic) bool { return x.Key == t.Key })
		}
		c.subs = append(c.subs, r.Added...)
		c.mu.Unlock()
		return
	}
	if r.Close {
		c.kill() // as the venue does on frames over its limits
		return
	}
	for _, t := range r.Added {
		if slices.Contains(c.s.cfg.BadCoins, t.Instrument) {
			c.kill() // 1006, no message, as Hyperliquid does for an unknown coin
			return
		}
	}
	for _, a := range answers {
		c.write(a)
	}
	// The new subscriptions and their initial dump go in under the write
	// lock: the pump may see them as soon as they are in c.subs, and its
	// first update for them must wait until the dump is on the wire (on a
	// loaded host a pump tick fell between the two, and an update went out
	// before its book).
	var dump [][]byte
	c.wmu.Lock()
	c.mu.Lock()
	for _, t := range r.Removed {
		c.subs = slices.DeleteFunc(c.subs, func(x venue.Topic) bool { return x.Key == t.Key })
	}
	for _, t := range r.Added {
		c.subs = append(c.subs, t)
		if snap := c.s.cfg.Snapshot; len(snap.Frame) > 0 {
			dump = append(dump, bytes.ReplaceAll(snap.Frame, []byte(snap.ID), []byte(t.Instrument)))
		}
	}
	c.mu.Unlock()
	if len(dump) > 0 {
		// Initial dump: one book per new instrument, in one array frame,
		// before any update for them.
		frame := append([]byte{'['}, bytes.Join(dump, []byte{','})...)
		c.writeLocked(append(frame, ']'))
	}
	c.wmu.Unlock()
	c.poke()
}

func (c *Conn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// pump sends data frames for the current subscriptions, round robin over
// subscriptions and through each channel's feed.
func (c *Conn) pump() {
	if c.s.cfg.Scripted {
		return
	}
	if c.s.cfg.Flood {
		c.flood()
		return
	}
	t := time.NewTicker(c.s.cfg.Interval)
	defer t.Stop()
	pos := map[string]int{}
	next := 0
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		case <-c.wake:
			continue
		}
		if !c.sendBurst(pos, &next) {
			return
		}
	}
}

// sendBurst sends one tick's data frames unless the server is stalled; false
// means a write failed.
func (c *Conn) sendBurst(pos map[string]int, next *int) bool {
	c.s.stallMu.RLock()
	defer c.s.stallMu.RUnlock()
	if c.s.stalled.Load() {
		return true
	}
	for range max(c.s.burst.Load(), 1) {
		frame := c.nextFrame(pos, next)
		if frame != nil && !c.write(frame) {
			return false
		}
	}
	return true
}

func (c *Conn) nextFrame(pos map[string]int, next *int) []byte {
	c.mu.Lock()
	if len(c.subs) == 0 {
		c.mu.Unlock()
		return nil
	}
	sub := c.subs[*next%len(c.subs)]
	*next++
	c.mu.Unlock()
	ch, inst := sub.Channel, sub.Instrument
	if _, muted := c.s.muted.Load(inst); muted && inst != "" {
		return nil
	}
	feed := c.s.cfg.Feed[ch]
	if len(feed) == 0 {
		return nil
	}
	t := feed[pos[ch]%len(feed)]
	pos[ch]++
	if t.ID == "" || inst == "" {
		return t.Frame
	}
	return bytes.ReplaceAll(t.Frame, []byte(t.ID), []byte(inst))
}

// flood writes prebuilt unmasked text frames straight to the socket in
// batches of about 64 KB, once something is subscribed.
func (c *Conn) flood() {
	pos := map[string]int{}
	next := 0
	for {
		select {
		case <-c.done:
			return
		case <-c.wake:
		}
		c.mu.Lock()
		n := len(c.subs)
		c.mu.Unlock()
		if n > 0 {
			break
		}
	}
	// Build one batch covering every subscription and feed position.
	var batch []byte
	frames := 0
	for len(batch) < 64<<10 || frames < 64 {
		f := c.nextFrame(pos, &next)
		if f == nil {
			return
		}
		batch = appendFrameHeader(batch, len(f))
		batch = append(batch, f...)
		frames++
	}
	conn := c.ws.UnderlyingConn()
	start := time.Now()
	var total int64
	for {
		select {
		case <-c.done:
			return
		default:
		}
		if c.s.stalled.Load() {
			time.Sleep(time.Millisecond)
			continue
		}
		if r := c.s.cfg.FloodRate; r > 0 {
			// Ahead of the rate: wait until the schedule catches up.
			if due := start.Add(time.Duration(total * int64(time.Second) / int64(r))); time.Until(due) > 0 {
				time.Sleep(time.Until(due))
			}
		}
		total += int64(frames)
		c.wmu.Lock()
		conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, err := conn.Write(batch)
		c.wmu.Unlock()
		if err != nil {
			return
		}
		c.mu.Lock()
		c.nSent += int64(frames)
		c.mu.Unlock()
	}
}

// appendFrameHeader appends a final, unmasked text-frame header (RFC 6455
// §5.2) for a payload of n bytes.
func appendFrameHeader(b []byte, n int) []byte {
	b = append(b, 0x81)
	switch {
	case n < 126:
		return append(b, byte(n))
	case n < 1<<16:
		return binary.BigEndian.AppendUint16(append(b, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 127), uint64(n))
	}
}

// listingDoc answers the REST listing documents from the Config: the
// Gamma market list, Hyperliquid's meta and spotMeta, else Docs.
func (s *Server) listingDoc(name string) []byte {
	markets, meta, spot := s.listing()
	var doc []byte
	switch name {
	case "markets":
		doc = markets
	case "meta":
		doc = meta
	case "spotMeta":
		doc = spot
	}
	if doc == nil {
		doc = s.cfg.Docs[name]
	}
	return doc
}

// bookDoc is the token's entry in Books, else the Summary template for it,
// nil without one.
func (s *Server) bookDoc(id string) []byte {
	if b, ok := s.cfg.Books[id]; ok {
		return b
	}
	sum := s.cfg.Summary
	if len(sum.Frame) == 0 {
		return nil
	}
	return bytes.ReplaceAll(sum.Frame, []byte(sum.ID), []byte(id))
}

// bookRequest records a book-summary request and applies FailBooks and
// DelayBooks.
func (s *Server) bookRequest(ctx context.Context, ids []string) int {
	s.bmu.Lock()
	s.bookReqs = append(s.bookReqs, ids)
	if s.bookNext != nil {
		close(s.bookNext)
		s.bookNext = nil
	}
	status, delay := s.bookStatus, s.bookDelay
	s.bmu.Unlock()
	if !s.waitHold(ctx) {
		return status
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return status
}
