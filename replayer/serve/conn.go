package serve

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// conn is one client of a Server. Three goroutines share it: the
// reader (ServeHTTP's own, handling client frames), the writer (the only one
// writing data frames to the socket, draining out) and, once the client has
// subscribed, the replay (reading the datasets and queueing what matches).
type conn struct {
	s      *Server
	ws     *websocket.Conn
	ctx    context.Context // ends when the client goes away or is kicked
	cancel context.CancelFunc
	out    chan outMsg // the send queue of recorded frames
	ctrl   chan outMsg // answers to the client (acks, pongs), written first
	wg     sync.WaitGroup

	mu    sync.Mutex // guards sess, started, subs and inBytes
	sess  venue.ServerSession
	trade tradeapi.TradingSession // trading mode: the venue's user channels, post requests
	// Trading mode, deterministic: the client acknowledges the recorded
	// frames it has handled (lockstepMsg).
	lockstep atomic.Bool
	acks     atomic.Int64
	unhub    func() // trading mode: stops the hub's forwarding
	started  bool
	subs     int   // subscriptions held (Added minus Removed)
	inBytes  int64 // bytes of client frames so far

	queued atomic.Int64 // bytes of recorded frames in out

	kickOnce  sync.Once
	kicked    chan struct{} // closed by kick
	closeCode int           // set by kick before kicked closes
	closeText string
	drain     bool // flush the queue before the close frame (normal end)
}

// outMsg is one queued message; buf comes from bufPool.
type outMsg struct {
	typ      int
	buf      *[]byte
	recorded bool // a recorded frame (counted in stats), not a reply
}

// bufPool recycles message copies: the recorded payload is borrowed from the
// dataset reader and must be copied to outlive the next record.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func newConn(s *Server, ws *websocket.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	q := s.opts.queue
	if s.opts.speed == replayer.SpeedMax {
		// The replay waits for the client here, so a deep queue would only
		// hold copies: keep the read-ahead short.
		q = min(q, maxReadAhead)
	}
	c := &conn{s: s, ws: ws, ctx: ctx, cancel: cancel, out: make(chan outMsg, q),
		ctrl: make(chan outMsg, ctrlQueue), kicked: make(chan struct{})}
	c.sess = s.drv.Server().NewSession()
	if s.hub != nil {
		c.ctrl = make(chan outMsg, tradingCtrlQueue)
		c.trade = s.api.NewSession(s.hub, s.opts.trading.api, func(b []byte) { c.reply(websocket.TextMessage, b) })
	}
	return c
}

// run serves the connection until it ends and then releases it.
func (c *conn) run() {
	c.ws.SetReadLimit(1 << 20) // client frames are subscriptions and pings
	c.wg.Add(1)
	go c.writeLoop()
	c.readLoop()
	c.cancel()
	if c.trade != nil {
		c.trade.Close()
	}
	c.mu.Lock()
	unhub := c.unhub
	c.mu.Unlock()
	if unhub != nil {
		unhub()
	}
	c.wg.Wait()
	c.ws.Close()
	for _, q := range []chan outMsg{c.ctrl, c.out} {
		for len(q) > 0 {
			bufPool.Put((<-q).buf)
		}
	}
}

// readLoop handles client frames until the socket fails or closes.
func (c *conn) readLoop() {
	for {
		typ, msg, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.inBytes += int64(len(msg)); c.inBytes > c.s.opts.maxIn {
			c.mu.Unlock()
			c.overLimit(fmt.Sprintf("tapedeck: client sent over %d bytes of frames", c.s.opts.maxIn))
			c.discard()
			return
		}
		c.mu.Unlock()
		if c.trade != nil && typ == websocket.TextMessage && c.lockstepMsg(msg) {
			continue
		}
		if c.trade != nil && typ == websocket.TextMessage {
			// Outside c.mu: the trading session takes the hub's lock, and
			// the hub calls Forward (which takes c.mu) under it.
			c.s.hub.Begin()
			answers, handled := c.trade.Handle(msg)
			c.s.hub.End()
			if handled {
				for _, a := range answers {
					c.reply(websocket.TextMessage, a)
				}
				continue
			}
		}
		c.mu.Lock()
		r := c.sess.Handle(msg, typ == websocket.BinaryMessage)
		if c.subs += len(r.Added) - len(r.Removed); c.subs > c.s.opts.maxSubs {
			c.mu.Unlock()
			c.overLimit(fmt.Sprintf("tapedeck: over %d subscriptions on one connection", c.s.opts.maxSubs))
			c.discard()
			return
		}
		for _, a := range r.Answers {
			c.reply(websocket.TextMessage, a) // copied into the queue
		}
		start := len(r.Added) > 0 && !c.started
		if start {
			c.started = true
		}
		c.mu.Unlock()
		if r.Close {
			// The venue drops such a client without a close frame.
			c.kick(websocket.ClosePolicyViolation, "tapedeck: the venue closes the socket on this frame", false)
			c.discard()
			return
		}
		if start && c.s.hub != nil {
			c.wg.Add(1)
			go c.joinHub()
		} else if start {
			c.wg.Add(1)
			go c.replay()
		}
	}
}

// Lockstep messages of a trading server's client (deterministic mode):
// "tapedeck:lockstep" says the client will acknowledge every recorded frame
// it is sent, "tapedeck:ack" acknowledges one (and implies the former).
const (
	msgLockstep = "tapedeck:lockstep"
	msgAck      = "tapedeck:ack"
)

// lockstepMsg handles a lockstep message, reporting whether msg was one.
func (c *conn) lockstepMsg(msg []byte) bool {
	switch string(msg) {
	case msgAck:
		c.acks.Add(1)
	case msgLockstep:
	default:
		return false
	}
	c.lockstep.Store(true)
	c.s.hub.Wake()
	return true
}

// overLimit closes a client that went over a limit (1008 and the reason).
// The reader stops reading its frames.
func (c *conn) overLimit(reason string) {
	c.s.stats.overLimit.Add(1)
	c.kick(websocket.ClosePolicyViolation, reason, false)
}

// discard reads and drops the client's frames after a kick until its answer
// to the close frame, a read error or the deadline finish sets. Closing the
// socket with client bytes unread makes the kernel send a reset, which can
// reach the client before the close frame it has not read yet: the client
// would see "connection reset" instead of the reason.
func (c *conn) discard() {
	for {
		if _, _, err := c.ws.NextReader(); err != nil {
			return
		}
	}
}

// reply queues an answer to a client frame.
func (c *conn) reply(typ int, b []byte) { c.send(typ, b, false) }

// maxReadAhead is the send queue of a replayer.SpeedMax replay.
const maxReadAhead = 256

// closeWait is how long a kicked client has to answer the close frame.
const closeWait = 2 * time.Second

// ctrlQueue bounds the answers waiting for one client: only a client that
// sends requests without reading the answers fills it.
const ctrlQueue = 256

// tradingCtrlQueue bounds the answers and user-channel messages (order
// updates, fills) waiting for one client of a trading server.
const tradingCtrlQueue = 8192

// send queues a copy of b: a recorded frame on out, an answer on ctrl. When
// a queue is full the client is not keeping up and is kicked, except for
// recorded frames at replayer.SpeedMax, where the client's own pace is the replay's
// and the replay waits for it (this client's cursor only: no other client
// shares it). It reports false once the connection is ending.
func (c *conn) send(typ int, b []byte, recorded bool) bool {
	select {
	case <-c.kicked:
		return false
	default:
	}
	bp := bufPool.Get().(*[]byte)
	*bp = append((*bp)[:0], b...)
	m := outMsg{typ: typ, buf: bp, recorded: recorded}
	q := c.ctrl
	if recorded {
		q = c.out
		if c.s.opts.speed == replayer.SpeedMax {
			select {
			case q <- m:
				c.queued.Add(int64(len(b)))
				return true
			case <-c.kicked:
				bufPool.Put(bp)
				return false
			case <-c.ctx.Done():
				// The client went away without a kick (closed, or cut
				// off by the write timeout): nobody drains the queue, and
				// the replay must end to release its files and buffers.
				bufPool.Put(bp)
				return false
			}
		}
		if c.queued.Load()+int64(len(b)) > c.s.opts.maxQueued {
			bufPool.Put(bp)
			c.s.stats.slow.Add(1)
			c.kick(websocket.ClosePolicyViolation,
				fmt.Sprintf("tapedeck: client too slow: over %d bytes queued", c.s.opts.maxQueued), false)
			return false
		}
	}
	select {
	case q <- m:
		if recorded {
			c.queued.Add(int64(len(b)))
		}
		return true
	default:
		bufPool.Put(bp)
		c.s.stats.slow.Add(1)
		c.kick(websocket.ClosePolicyViolation,
			fmt.Sprintf("tapedeck: client too slow: send queue of %d messages full", cap(q)), false)
		return false
	}
}

// kick ends the connection with a close frame (code, text); drain sends what
// is queued first. The first kick wins.
func (c *conn) kick(code int, text string, drain bool) {
	c.kickOnce.Do(func() {
		if len(text) > 123 { // the close frame's limit
			text = text[:123]
		}
		c.closeCode, c.closeText, c.drain = code, text, drain
		close(c.kicked)
		c.cancel()
	})
}

// writeLoop writes queued messages until the client goes away or is kicked.
func (c *conn) writeLoop() {
	defer c.wg.Done()
	for {
		// A kick takes priority over queued data.
		select {
		case <-c.kicked:
			c.finish()
			return
		default:
		}
		// Answers go before recorded frames: an ack precedes the data it
		// enables, and a pong is not stuck behind a full queue.
		var m outMsg
		select {
		case m = <-c.ctrl:
		default:
			select {
			case m = <-c.ctrl:
			case m = <-c.out:
				// Both queues may have filled while this select began, and it
				// picks at random: answers queued by now still go first.
				for drained := false; !drained; {
					select {
					case a := <-c.ctrl:
						if err := c.write(a); err != nil {
							bufPool.Put(m.buf)
							c.ws.Close()
							return
						}
					default:
						drained = true
					}
				}
			case <-c.ctx.Done():
				select {
				case <-c.kicked:
					c.finish()
				default: // the client went away
				}
				return
			}
		}
		if err := c.write(m); err != nil {
			c.ws.Close() // unblocks the reader
			return
		}
	}
}

func (c *conn) write(m outMsg) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.s.opts.writeTimeout))
	err := c.ws.WriteMessage(m.typ, *m.buf)
	if m.recorded {
		c.queued.Add(-int64(len(*m.buf)))
	}
	if err == nil && m.recorded {
		c.s.stats.frames.Add(1)
		c.s.stats.bytes.Add(uint64(len(*m.buf)))
	}
	bufPool.Put(m.buf)
	return err
}

// finish sends the close frame of a kick and gives the client the write
// timeout to answer it; the reader then ends the connection.
func (c *conn) finish() {
	if c.drain {
		for _, q := range []chan outMsg{c.ctrl, c.out} {
			for len(q) > 0 {
				if err := c.write(<-q); err != nil {
					c.ws.Close()
					return
				}
			}
		}
	}
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.closeCode, c.closeText),
		time.Now().Add(c.s.opts.writeTimeout))
	// A client answers a close at once; one that does not is not waited for.
	_ = c.ws.SetReadDeadline(time.Now().Add(min(c.s.opts.writeTimeout, closeWait)))
}

// replay reads the recording from its start and queues the frames the client
// subscribed to, paced by a clock of its own.
func (c *conn) replay() {
	defer c.wg.Done()
	if !c.waitWindow() {
		return
	}
	err := c.replayFrames()
	if err != nil {
		if c.ctx.Err() != nil {
			return // the client went away or was kicked meanwhile
		}
		c.s.stats.failed.Add(1)
		c.kick(websocket.CloseInternalServerErr, "tapedeck: "+err.Error(), true)
		return
	}
	if c.s.opts.closeAtEnd {
		c.kick(websocket.CloseNormalClosure, "tapedeck: end of recording", true)
	}
}

// replayFrames runs the merge; it returns nil at the end of the recording or
// when the connection ends, and a read error otherwise.
func (c *conn) replayFrames() error {
	readers := make([]*datasets.Reader, 0, len(c.s.paths))
	defer func() {
		for _, r := range readers {
			r.Close()
		}
	}()
	for _, p := range c.s.paths {
		r, err := datasets.Open(p)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		readers = append(readers, r)
	}
	m := replayer.NewMerger(readers)
	clock := replayer.NewClockWith(c.s.opts.speed, c.s.opts.sleeper)
	clock.SetMaxGap(c.s.opts.maxGap)
	defer func() { c.s.addSkipped(clock.Skipped()) }()
	for m.Next() {
		_, rec := m.Record()
		if rec.Kind.IsLoss() {
			clock.Loss(rec.WallNs) // nobody saw data around it: no silence for it
		}
		if rec.Kind != datasets.KindFrame {
			continue
		}
		c.mu.Lock()
		want := c.sess.Wants(rec.Payload)
		c.mu.Unlock()
		if !want {
			continue
		}
		if err := clock.Wait(c.ctx, rec.WallNs); err != nil {
			return nil // the connection ended
		}
		typ := websocket.TextMessage
		if rec.Flags&datasets.FlagBinary != 0 {
			typ = websocket.BinaryMessage
		}
		if !c.send(typ, rec.Payload, true) {
			return nil
		}
	}
	return m.Err()
}

// joinHub makes the client a receiver of the trading server's shared
// replay, one subscribe window after its first subscription, and starts
// that replay if it has not started.
func (c *conn) joinHub() {
	defer c.wg.Done()
	if !c.waitWindow() {
		return
	}
	un := c.s.hub.AddClient(hubClient{c})
	c.mu.Lock()
	c.unhub = un
	gone := c.ctx.Err() != nil
	c.mu.Unlock()
	if gone {
		un()
		return
	}
	c.s.hub.Start()
}

// hubClient is a conn as the hub's Client.
type hubClient struct{ c *conn }

func (h hubClient) Forward(payload []byte, binary bool) bool {
	c := h.c
	c.mu.Lock()
	want := c.sess.Wants(payload)
	c.mu.Unlock()
	if !want {
		return false
	}
	typ := websocket.TextMessage
	if binary {
		typ = websocket.BinaryMessage
	}
	return c.send(typ, payload, true)
}

func (h hubClient) Acked() (int64, bool) {
	return h.c.acks.Load(), h.c.lockstep.Load()
}

func (h hubClient) Flushed() bool {
	c := h.c
	select {
	case <-c.kicked:
		return true
	default:
	}
	return len(c.out) == 0 && len(c.ctrl) == 0 && c.queued.Load() == 0
}

// waitWindow waits out the subscribe window; false: the connection ended.
func (c *conn) waitWindow() bool {
	if w := c.s.opts.window; w > 0 {
		t := time.NewTimer(w)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return false
		}
	}
	return c.ctx.Err() == nil
}
