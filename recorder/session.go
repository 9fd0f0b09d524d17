package recorder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
)

// writeTimeout bounds one send; a socket that cannot take a small frame in
// this time is dead.
const writeTimeout = 10 * time.Second

// healthyAfter caps how long a connection must live (carrying data) for the
// reconnect backoff to start over.
const healthyAfter = 10 * time.Second

// closeWait is how long a graceful shutdown waits for the server to answer
// our close frame.
const closeWait = 2 * time.Second

// slot is one connection of the session: a dial/subscribe/heartbeat/watchdog
// goroutine (the only writer to the socket) and, while connected, a reader
// goroutine (the only reader). The slot survives reconnects; its number is
// the Conn of every record it produces.
type slot struct {
	r  *Recorder
	id uint32
	cm connMetrics

	drops drops
	ctl   chan slotOp

	mu         sync.Mutex
	items      []string
	pending    map[string]pendingSub // subscriptions sent and not yet acknowledged (venues with acks)
	sendSeq    uint64
	lastSubAt  time.Time
	lastSubIts []string
	suspects   map[string]int       // consecutive deaths right after subscribing this item
	strikes    map[string]int       // times an item was removed as a suspect (reset by its data or ack)
	retryAt    map[string]time.Time // removed items and when they are subscribed again
	pendingN   atomic.Int32         // len(pending), for the reader's touch
	dataAcks   []string             // reader-owned: items the frame being scanned acknowledged by its data

	watch    atomic.Pointer[watchSet]
	lastData atomic.Int64 // mono ns of the last data frame
	lastPong atomic.Int64 // mono ns of the last pong
	// flowSince is the mono ns the reader's current run of frames began: the
	// first frame after a stretch of half the instrument stall timeout in
	// which it processed none (a silent socket, or a reader starved of
	// CPU). Frames read before it give no evidence against an instrument.
	flowSince atomic.Int64
	lastFrame int64        // reader-owned: mono ns of the last frame processed
	subDone   atomic.Int64 // mono ns the subscribe frames were all sent (0 = not yet)
	firstData atomic.Bool  // a data frame arrived since the last subscribe
	nowMono   int64        // reader-owned: mono ns of the frame being scanned
	touchFn   func(channel, instrument []byte)
}

type slotOp struct {
	add    []string
	remove []string
	// resub resubscribes items the slot carries to heal their books
	// (live_heal.go), for reason, the attempt-th time.
	resub   []string
	reason  string
	attempt int
	text    string
}

// watchSet maps (channel, instrument) to the mono ns of its last frame.
// Built per connection and never mutated after: the reader reads it without
// locks and stores through the atomics.
type watchSet struct {
	m      map[string]map[string]*atomic.Int64
	steady map[*atomic.Int64]string   // the ones the instrument watchdog checks, with their item
	items  map[*atomic.Int64][]string // every item routed to each key
}

func (r *Recorder) startSlot(ctx context.Context, items []string) *slot {
	r.mu.Lock()
	s := &slot{r: r, id: uint32(len(r.slots) + 1), ctl: make(chan slotOp, 64),
		items: slices.Clone(items), pending: map[string]pendingSub{}, suspects: map[string]int{},
		strikes: map[string]int{}, retryAt: map[string]time.Time{}}
	s.cm = r.m.conn(s.id)
	s.touchFn = s.touch
	r.slots = append(r.slots, s)
	for _, it := range items {
		r.assigned[it] = s
	}
	r.mu.Unlock()
	r.slotWG.Go(func() { s.run(ctx) })
	return s
}

func (s *slot) touch(channel, instrument []byte) {
	ws := s.watch.Load()
	if ws == nil {
		return
	}
	if m := ws.m[string(channel)]; m != nil {
		if a := m[string(instrument)]; a != nil {
			a.Store(s.nowMono)
			if s.pendingN.Load() > 0 {
				s.ackByData(ws.items[a])
			}
		}
	}
}

func (s *slot) snapshotItems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.items)
}

func (s *slot) mono() int64 { return int64(s.r.now().Sub(s.r.base)) }

// run dials, serves and redials until ctx ends.
func (s *slot) run(ctx context.Context) {
	r := s.r
	attempt := 0
	var lastErr error
	for {
		if attempt > 0 {
			c := datasets.Control{Attempt: attempt, URL: r.endpoint}
			if lastErr != nil {
				c.Err = lastErr.Error()
			}
			r.control(s.id, datasets.KindReconnect, c)
			s.cm.reconnects.Inc()
			r.stats.reconnects.Add(1)
			if !sleepCtx(ctx, s.backoff(attempt)) {
				return
			}
		}
		if err := r.dialPacer.Wait(ctx); err != nil {
			return
		}
		s.readdDue() // removed suspects whose retry time has come
		// Before dialing, so that the WebSocket initial dump, which replaces
		// the books, comes after the summaries in the dataset.
		s.fetchBooks(ctx)
		if ctx.Err() != nil {
			return
		}
		dialer := r.o.dialer
		if dialer == nil {
			dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: r.o.dialTimeout,
				ReadBufferSize: 64 << 10, WriteBufferSize: 16 << 10}
		}
		conn, resp, err := dialer.DialContext(ctx, r.endpoint, nil)
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if resp != nil {
				err = fmt.Errorf("dial %s: HTTP %d: %w", r.endpoint, resp.StatusCode, err)
			} else {
				err = fmt.Errorf("dial %s: %w", r.endpoint, err)
			}
			r.log.Warn("connect failed", "conn", s.id, "attempt", attempt+1, "err", err)
			lastErr = err
			attempt++
			continue
		}
		r.control(s.id, datasets.KindConnect, datasets.Control{URL: r.endpoint})
		r.log.Info("connected", "conn", s.id, "url", r.endpoint)
		healthy, err := s.serve(ctx, conn)
		s.cm.connected.Set(0)
		if ctx.Err() != nil {
			return
		}
		lastErr = err
		if healthy {
			attempt = 1
		} else {
			attempt++
		}
	}
}

// backoff returns the delay before reconnect attempt n (1-based):
// exponential from backoffMin to backoffMax, jittered in [d/2, d] so that
// many connections dropped together do not come back together.
func (s *slot) backoff(n int) time.Duration {
	d := s.r.o.backoffMin
	for i := 1; i < n && d < s.r.o.backoffMax; i++ {
		d *= 2
	}
	d = min(d, s.r.o.backoffMax)
	return d/2 + rand.N(d/2+1)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// readerExit is how a reader goroutine ended.
type readerExit struct{ err error }

// serve subscribes and keeps one connection until it ends. healthy reports
// whether it carried data and lived at least the longest backoff, or
// healthyAfter if shorter (the backoff then starts over): a server that sends a frame and hangs up must
// not be redialled at the shortest delay forever.
func (s *slot) serve(ctx context.Context, conn *websocket.Conn) (healthy bool, err error) {
	r := s.r
	started := time.Now()
	conn.SetReadLimit(r.o.maxFrameBytes)
	s.buildWatch()
	now := s.mono()
	s.lastData.Store(now)
	s.lastPong.Store(now)
	s.flowSince.Store(now)
	s.lastFrame = now
	s.subDone.Store(0)
	s.firstData.Store(false)
	s.mu.Lock()
	clear(s.pending) // acknowledgements do not survive a connection
	s.pendingN.Store(0)
	s.lastSubAt = time.Time{}
	s.mu.Unlock()

	connCtx, cancelConn := context.WithCancel(ctx)
	defer cancelConn()
	done := make(chan readerExit, 1)
	go func() {
		err := s.readLoop(conn)
		cancelConn()
		done <- readerExit{err}
	}()
	// The reader must be gone before we return: it owns conn's read side
	// and pushes records with this slot's number.
	finish := func(c datasets.Control, ex readerExit, waited bool) (bool, error) {
		if !waited {
			conn.Close()
			ex = <-done
		} else {
			conn.Close()
		}
		if c.Code == 0 && c.Err == "" {
			c = s.describeExit(ex.err)
		}
		r.control(s.id, datasets.KindDisconnect, c)
		lvl := r.log.Warn
		if c.Code == websocket.CloseNormalClosure {
			lvl = r.log.Info
		}
		lvl("disconnected", "conn", s.id, "code", c.Code, "reason", c.Reason, "err", c.Err, "suspect", c.Instruments)
		// When we ended it (stall, failed send), our reason is the error,
		// not the reader's "use of closed network connection".
		var e error = ex.err
		if e == nil || !waited {
			e = errors.New(c.Err)
		}
		return s.firstData.Load() && time.Since(started) >= min(r.o.backoffMax, healthyAfter), e
	}

	// sendFailed ends the connection after a failed send: a shutdown, a
	// reader that ended first (its error says why, and names a suspect
	// subscription), or a write that failed on its own.
	sendFailed := func(what string, err error) (bool, error) {
		if ctx.Err() != nil {
			return s.shutdown(conn, done)
		}
		if connCtx.Err() != nil { // only the reader cancels connCtx while ctx lives
			return finish(datasets.Control{}, <-done, true)
		}
		return finish(datasets.Control{Code: websocket.CloseAbnormalClosure, Err: what + ": " + err.Error()}, readerExit{}, false)
	}

	// Subscribe, paced; a reader exit aborts the wait.
	for _, f := range r.p.SubscribeFrames(s.snapshotItems()) {
		if err := s.send(connCtx, conn, f); err != nil {
			return sendFailed("send subscribe", err)
		}
	}
	s.subDone.Store(s.mono())
	s.lastData.Store(s.mono())
	s.cm.connected.Set(1)

	var ping <-chan time.Time // nil: the venue wants no application heartbeat
	if r.o.pingInterval > 0 {
		var stopPing func()
		ping, stopPing = r.o.clock.NewTicker(r.o.pingInterval)
		defer stopPing()
	}
	wd := time.NewTicker(s.watchdogTick())
	defer wd.Stop()
	for {
		select {
		case ex := <-done:
			return finish(datasets.Control{}, ex, true)
		case <-ctx.Done():
			return s.shutdown(conn, done)
		case <-ping:
			if err := s.send(connCtx, conn, venue.SendFrame{Data: r.facts.PingFrame}); err != nil {
				return sendFailed("send ping", err)
			}
		case <-wd.C:
			if due := s.dueRetries(time.Now()); len(due) > 0 {
				if err := s.apply(connCtx, conn, slotOp{add: due}); err != nil {
					return sendFailed("send", err)
				}
			}
			if c, stalled := s.checkStall(); stalled {
				r.control(s.id, datasets.KindStall, c)
				s.cm.stalls.Inc()
				r.stats.stalls.Add(1)
				r.log.Warn("stall", "conn", s.id, "instruments", len(c.Instruments), "text", c.Text)
				if s.healStall(c) {
					continue
				}
				return finish(datasets.Control{Code: websocket.CloseAbnormalClosure, Reason: "stall", Err: "watchdog: " + c.Text}, readerExit{}, false)
			}
		case op := <-s.ctl:
			if err := s.apply(connCtx, conn, op); err != nil {
				return sendFailed("send", err)
			}
		}
	}
}

// shutdown closes the connection gracefully: a close frame (1000), a short
// wait for the server's answer, and the connection's KindCleanClose record.
// A clean close is not a loss: the books the connection leaves are the
// venue's at that moment, and stay valid at the end of the recording. So it
// is the connection's last record: the live engine first writes what it
// found in the connection's frames and still holds (settle).
func (s *slot) shutdown(conn *websocket.Conn, done chan readerExit) (bool, error) {
	_ = conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, "shutdown"), time.Now().Add(closeWait))
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		conn.Close()
		<-done
	}
	conn.Close()
	s.r.liveEngine().settle(s.id)
	s.r.control(s.id, datasets.KindCleanClose, datasets.Control{Code: websocket.CloseNormalClosure, Reason: "shutdown"})
	return true, nil
}

// send records a frame as KindSent and writes it. The record goes first so
// that in the dataset it precedes the venue's answer to it.
func (s *slot) send(ctx context.Context, conn *websocket.Conn, f venue.SendFrame) error {
	r := s.r
	if err := r.sendPacer.Wait(ctx); err != nil {
		return err
	}
	r.q.push(r.wctx, entry{rec: datasets.Record{Kind: datasets.KindSent, Conn: s.id, Payload: f.Data}})
	if len(f.Items) > 0 {
		s.mu.Lock()
		s.lastSubAt = time.Now()
		s.lastSubIts = f.Items
		if r.p.Acks() {
			for _, it := range f.Items {
				s.sendSeq++
				s.pending[it] = pendingSub{seq: s.sendSeq, at: s.lastSubAt}
			}
			s.pendingN.Store(int32(len(s.pending)))
		}
		s.mu.Unlock()
	}
	conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	return conn.WriteMessage(websocket.TextMessage, f.Data)
}

// describeExit turns a reader's error into a disconnect record, naming the
// subscriptions suspected of killing the connection when it died right
// after a subscribe.
func (s *slot) describeExit(err error) datasets.Control {
	c := datasets.Control{Code: websocket.CloseAbnormalClosure}
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		c.Code, c.Reason = ce.Code, ce.Text
		c.Err = err.Error()
	case errors.Is(err, websocket.ErrReadLimit):
		c.Code = websocket.CloseMessageTooBig
		c.Err = fmt.Sprintf("frame over the %d-byte read limit: %v", s.r.o.maxFrameBytes, err)
	case err != nil:
		c.Err = err.Error()
	}
	s.mu.Lock()
	var removal *datasets.Control
	defer func() {
		s.mu.Unlock()
		if removal != nil {
			s.recordRemoval(*removal)
		}
	}()
	recent := !s.lastSubAt.IsZero() && time.Since(s.lastSubAt) <= s.r.o.suspectWindow && c.Code != websocket.CloseNormalClosure
	switch {
	case len(s.pending) > 0:
		// A venue with acks (Hyperliquid) answers subscriptions in order: the first one without
		// an answer is what it choked on (an unknown coin closes the socket
		// with 1006 and no message); the later ones were never read.
		// Data for a subscription acknowledged it too (ackByData), and only
		// a death within the suspect window of its send is blamed on it.
		var all []string
		for it := range s.pending {
			all = append(all, it)
		}
		slices.SortFunc(all, func(a, b string) int { return cmp.Compare(s.pending[a].seq, s.pending[b].seq) })
		since := time.Since(s.pending[all[0]].at)
		if since > s.r.o.suspectWindow || c.Code == websocket.CloseNormalClosure {
			c.Text = fmt.Sprintf("connection died with %d subscriptions unacknowledged, the first sent %v before (outside the %v suspect window): no suspect",
				len(all), since.Round(time.Millisecond), s.r.o.suspectWindow)
			break
		}
		c.Instruments = all[:1]
		c.Text = "connection died with subscriptions unacknowledged; suspect subscription: " + all[0]
		if len(all) > 1 {
			c.Text += fmt.Sprintf(" (first of %d unacknowledged: %s)", len(all), strings.Join(all[:min(len(all), 10)], " "))
		}
		removal = s.noteSuspect(all[0])
	case recent && !s.r.p.Acks():
		// No acknowledgements to go by: name what was just subscribed.
		c.Instruments = s.lastSubIts
		c.Text = "connection died " + time.Since(s.lastSubAt).Round(time.Millisecond).String() +
			" after subscribing; suspect subscription: " + strings.Join(s.lastSubIts, " ")
	}
	return c
}

func (s *slot) buildWatch() {
	ws := &watchSet{m: map[string]map[string]*atomic.Int64{}, steady: map[*atomic.Int64]string{},
		items: map[*atomic.Int64][]string{}}
	now := s.mono()
	for _, it := range s.snapshotItems() {
		ch, inst, steady := s.r.p.WatchKey(it)
		m := ws.m[ch]
		if m == nil {
			m = map[string]*atomic.Int64{}
			ws.m[ch] = m
		}
		a := m[inst]
		if a == nil {
			a = new(atomic.Int64)
			a.Store(now)
			m[inst] = a
		}
		if steady {
			ws.steady[a] = it
		}
		ws.items[a] = append(ws.items[a], it)
	}
	s.watch.Store(ws)
}

func (s *slot) watchdogTick() time.Duration {
	d := s.r.o.stallTimeout / 4
	if it := s.r.o.instStall; it > 0 {
		d = min(d, it/4)
	}
	return max(min(d, time.Second), time.Millisecond)
}

// checkStall reports a silent stall: no data frame for the stall timeout
// (whether or not pongs still arrive), or a steady instrument without a
// frame for the instrument stall timeout while others on the socket flow.
// An instrument's age is judged against the newest frame the reader
// processed for any watched instrument, not the clock alone, and counts
// only from the start of the reader's current run of frames (flowSince): a
// stretch in which it processed nothing (a silent venue, or frames not yet
// read by a recorder starved of CPU — the data cannot tell them apart)
// gives no evidence against one instrument; the connection-level check
// covers it.
func (s *slot) checkStall() (datasets.Control, bool) {
	r := s.r
	now := s.mono()
	wall := r.base.UnixNano() + now
	last := s.lastData.Load()
	if d := time.Duration(now - last); d >= r.o.stallTimeout {
		pong := "and no pong either"
		if p := s.lastPong.Load(); p > last {
			pong = fmt.Sprintf("while pongs still arrive (last %v ago)", time.Duration(now-p).Round(time.Millisecond))
		}
		return datasets.Control{Instruments: s.snapshotItems(), FromNs: r.base.UnixNano() + last, ToNs: wall,
			Text: fmt.Sprintf("no data for %v %s", d.Round(time.Millisecond), pong)}, true
	}
	if r.o.instStall <= 0 {
		return datasets.Control{}, false
	}
	ws := s.watch.Load()
	latest := int64(math.MinInt64) // the newest frame routed to any watched key
	for a := range ws.items {
		latest = max(latest, a.Load())
	}
	flow := s.flowSince.Load()
	var stalled []string
	from := now
	for a, it := range ws.steady {
		t := a.Load()
		if time.Duration(latest-max(t, flow)) >= r.o.instStall {
			stalled = append(stalled, it)
			from = min(from, t)
		}
	}
	if len(stalled) == 0 {
		return datasets.Control{}, false
	}
	slices.Sort(stalled)
	return datasets.Control{Instruments: stalled, FromNs: r.base.UnixNano() + from, ToNs: wall,
		Text: fmt.Sprintf("%d subscriptions without data while the connection carried other instruments' data for %v after their last frame",
			len(stalled), r.o.instStall)}, true
}

// apply changes the slot's items and, when connected, subscribes or
// unsubscribes them on the open connection.
func (s *slot) apply(ctx context.Context, conn *websocket.Conn, op slotOp) error {
	if len(op.resub) > 0 {
		if conn == nil {
			return nil
		}
		return s.resubscribe(ctx, conn, op)
	}
	s.mu.Lock()
	var add, rm []string
	for _, it := range op.add {
		if !slices.Contains(s.items, it) {
			s.items = append(s.items, it)
			add = append(add, it)
		}
	}
	for _, it := range op.remove {
		if i := slices.Index(s.items, it); i >= 0 {
			s.items = slices.Delete(s.items, i, i+1)
			rm = append(rm, it)
		}
	}
	s.mu.Unlock()
	s.buildWatch()
	if conn == nil {
		return nil
	}
	for _, f := range s.r.p.RemoveFrames(rm) {
		f.Items = nil // an unsubscribe cannot be a suspect
		if err := s.send(ctx, conn, f); err != nil {
			return err
		}
	}
	for _, f := range s.r.p.AddFrames(add) {
		if err := s.send(ctx, conn, f); err != nil {
			return err
		}
	}
	return nil
}

// readLoop reads frames until the connection ends and returns why.
func (s *slot) readLoop(conn *websocket.Conn) error {
	for {
		typ, rd, err := conn.NextReader()
		if err != nil {
			s.flushDrops(true)
			return err
		}
		buf, err := readFrame(rd, s.r.q.getBuf())
		if err != nil {
			s.r.q.putBuf(buf)
			s.flushDrops(true)
			return err
		}
		s.handle(buf, typ == websocket.BinaryMessage, s.r.now())
	}
}

// readFrame reads one whole message into buf (grown as needed; the read
// limit set on the connection bounds it).
func readFrame(rd io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// handle hands one received frame to the queue and updates the watchdog
// state. It takes ownership of buf. now is when the read returned. It does
// not allocate for ordinary data frames.
func (s *slot) handle(buf []byte, binary bool, now time.Time) {
	r := s.r
	mono := int64(now.Sub(r.base))
	s.nowMono = mono
	if r.o.instStall > 0 && time.Duration(mono-s.lastFrame) >= r.o.instStall/2 {
		s.flowSince.Store(mono)
	}
	s.lastFrame = mono
	class, exNs := r.p.Scan(buf, s.touchFn)
	// Whatever needs the bytes is taken before the buffer is handed over.
	var ack string
	var errText string
	var life listingChange
	switch class {
	case venue.FrameAck:
		ack, _ = r.p.AckItem(buf)
	case venue.FrameError:
		errText = string(buf[:min(len(buf), 512)])
	}
	if r.lifecycle != nil {
		var err error
		if life.added, life.removed, err = r.p.Listing(buf); err != nil {
			r.log.Warn("market lifecycle frame", "conn", s.id, "err", err)
		}
	}

	if s.drops.pending.Load() {
		s.flushDrops(false)
	}
	n := len(buf)
	e := entry{rec: datasets.Record{Kind: datasets.KindFrame, Conn: s.id, Payload: buf}, pooled: true}
	if binary {
		e.rec.Flags = datasets.FlagBinary
	}
	if r.q.tryPush(&e, now) {
		s.cm.frames.Inc()
		s.cm.bytes.Add(float64(n))
		r.stats.frames.Add(1)
		r.stats.bytes.Add(uint64(n))
	} else {
		s.drops.add(now.UnixNano())
		s.cm.drops.Inc()
		r.stats.dropped.Add(1)
		r.q.putBuf(buf)
	}

	if len(s.dataAcks) > 0 {
		for _, it := range s.dataAcks {
			r.controlAt(s.id, datasets.KindSubscribed, datasets.Control{Text: it, Instruments: []string{it},
				Reason: "data before its acknowledgement"}, now)
		}
		s.dataAcks = s.dataAcks[:0]
	}
	switch class {
	case venue.FramePong:
		s.lastPong.Store(mono)
	case venue.FrameData:
		s.lastData.Store(mono)
		if exNs > 0 {
			s.cm.recvLag.Set(float64(now.UnixNano()-exNs) / 1e9)
		}
		if !s.firstData.Load() {
			s.firstData.Store(true)
			if !r.p.Acks() {
				r.controlAt(s.id, datasets.KindSubscribed, datasets.Control{Instruments: s.snapshotItems(),
					Text: "first data after subscribe"}, now)
			}
		}
	case venue.FrameAck:
		s.lastData.Store(mono)
		s.acked(ack)
		r.controlAt(s.id, datasets.KindSubscribed, datasets.Control{Text: ack}, now)
	case venue.FrameError:
		r.log.Warn("venue error", "conn", s.id, "frame", errText)
	}
	if len(life.added) > 0 || len(life.removed) > 0 {
		select {
		case r.lifecycle <- life:
		case <-r.runCtx.Done():
		}
	}
}

// flushDrops gets a pending overload record of this connection into the
// queue: without blocking before a frame (a failure leaves it pending), or
// waiting when the connection ends.
func (s *slot) flushDrops(block bool) {
	s.drops.mu.Lock()
	defer s.drops.mu.Unlock()
	c, ok := s.drops.peekLocked()
	if !ok {
		return
	}
	e := entry{rec: datasets.Record{Kind: datasets.KindOverload, Conn: s.id, Payload: datasets.EncodeControl(c)}}
	var pushed bool
	if block {
		pushed = s.r.q.push(s.r.wctx, e)
	} else {
		pushed = s.r.q.tryPush(&e, s.r.now())
	}
	if pushed {
		s.drops.clearLocked()
		s.r.log.Warn("writer queue overflowed", "conn", s.id, "dropped", c.Dropped)
	}
}
