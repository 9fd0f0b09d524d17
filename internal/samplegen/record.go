package samplegen

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
	"github.com/tapedeck/tapedeck/venue"
)

// Record makes a sample the way a real capture is made: the generated
// session feeds the loopback test exchange (recorder/fakeexchange, scripted:
// the venue driver's server side reads the client's frames and serves the
// REST API, the session says what the venue sends), and the real recorder
// (package recorder as `capture run` runs it, live engine and healing on)
// records it into a new dataset at dir. The recorder's dialer and HTTP
// client are pointed at the exchange on 127.0.0.1 (plain TCP where the URL
// says TLS), so the dataset names the venue's real endpoints.
//
// What the venue sends is the generator's: its frames, byte for byte, at
// their generated receive times (the recorder runs on a clock, WithClock,
// that is set to each frame's time before the frame is sent), its
// acknowledgements, its REST book summaries, its disconnect (the socket is
// cut: 1006), and its pongs, each after the latency of one of the session's
// (the generator's own pings are the recorder's to send). What a recorder
// writes is the recorder's: the REST records of discovery and book
// summaries, connects, subscribe frames, acknowledgement records, its
// heartbeats (on the session's clock, at the venue's interval from each
// connect), the disconnect and reconnect, the clean close of the
// connection and of the recorder.
//
// The result is deterministic, byte for byte: the exchange sends the next
// frame only once the recorder has taken the last one (whatever a frame
// makes the recorder write carries that frame's receive time), a heartbeat
// is due only once the recorder has sent the last one, a reconnect is held
// until the clock is at the session's reconnect, and the dataset seals
// blocks by size only.
func Record(ctx context.Context, venueName string, opts Options, dir string) (*Summary, error) {
	m, sp, err := manifest(venueName, opts)
	if err != nil {
		return nil, err
	}
	drv, _, err := generator(venueName)
	if err != nil {
		return nil, err
	}
	var gen collector
	if _, err := Generate(venueName, opts, &gen); err != nil {
		return nil, err
	}
	sc, err := scriptOf(drv, gen.recs)
	if err != nil {
		return nil, err
	}
	cfg := fakeexchange.Config{Venue: venueName, Scripted: true, Books: sc.books, Docs: sp.Listings}
	spec := recorder.Spec{Venue: venueName, Instruments: m.Instruments, Endpoint: sp.Endpoint, Channels: sp.Channels}
	if len(sc.pongAfter) == 0 { // a session too short for a heartbeat of its own
		sc.pongAfter = []int64{defaultPongAfter}
	}
	if sc.pong == nil { // the venue's answer, from its driver's server side
		ans := drv.Server().NewSession().Handle(drv.Client().Facts().PingFrame, false).Answers
		if len(ans) == 0 {
			return nil, fmt.Errorf("samplegen: the %s server answers no ping", venueName)
		}
		sc.pong = ans[0]
	}
	ex := fakeexchange.New(cfg)
	defer ex.Close()
	ex.Hold(true) // until the session's first connect
	u, err := url.Parse(ex.CLOBURL())
	if err != nil {
		return nil, err
	}
	redirect := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", u.Host)
	}

	clock := &sessionClock{now: sc.startNs}
	r, err := recorder.New(spec, recorder.WithClock(clock),
		recorder.WithDialer(&websocket.Dialer{NetDialContext: redirect, NetDialTLSContext: redirect, HandshakeTimeout: 10 * time.Second}),
		recorder.WithHTTPClient(&http.Client{Timeout: 30 * time.Second,
			Transport: &http.Transport{DialContext: redirect, DialTLSContext: redirect}}),
		// What runs on the real clock must not act within the session's
		// generated minutes: no stall, no suspect blamed by the real time
		// since a subscribe, and (the exchange holds reconnects) a short
		// backoff; the writer seals blocks by size only.
		recorder.WithStallTimeout(24*time.Hour),
		recorder.WithSuspectWindow(time.Nanosecond), recorder.WithBackoff(5*time.Millisecond, 10*time.Millisecond),
		recorder.WithFlushInterval(24*time.Hour), recorder.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	plan, err := r.Prepare(runCtx)
	if err != nil {
		return nil, fmt.Errorf("samplegen: record: %w", err)
	}
	if len(plan.Conns) != 1 {
		return nil, fmt.Errorf("samplegen: record: the recorder plans %d connections, the session has one", len(plan.Conns))
	}
	topics := len(plan.Conns[0].Items)
	rm := r.Manifest()
	rm.Host, rm.Source, rm.Notes = m.Host, m.Source, m.Notes+RecordedNote
	rm.ToolVersion = "tapedeck capture (samplegen " + m.Source + ")"
	w, err := datasets.Create(dir, rm, datasets.WithFlushInterval(0))
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx, w) }()

	fail := func(err error) (*Summary, error) {
		cancel()
		<-done
		w.Close()
		return nil, fmt.Errorf("samplegen: record %s: %w", venueName, err)
	}
	// await polls until ok holds, the recorder stops or 30 s pass.
	await := func(what string, ok func() bool) error {
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; !ok(); i++ {
			if i < 64 {
				runtime.Gosched()
				continue
			}
			select {
			case <-runCtx.Done():
				return runCtx.Err()
			case err := <-done:
				done <- err
				return fmt.Errorf("the recorder stopped waiting for %s: %v", what, err)
			case <-time.After(50 * time.Microsecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the recorder did not %s in 30 s", what)
			}
		}
		return nil
	}
	var conn *fakeexchange.Conn
	var frames uint64
	send := func(p []byte) error {
		if !conn.Send(p) {
			return errors.New("the exchange could not send a frame")
		}
		frames++
		// The frame is taken (its receive time read) once counted.
		return await("take a frame", func() bool { return r.Stats().Frames >= frames })
	}
	// heartbeats plays what is due up to t: the recorder's pings (its
	// ticker on the session's clock) and the venue's pongs.
	var pongs []int64 // when the pongs of the pings sent are due
	pinged := 0
	heartbeats := func(t int64) error {
		for {
			tick, ticking := clock.nextTick()
			if ticking && tick <= t && (len(pongs) == 0 || tick <= pongs[0]) {
				n := len(conn.Received())
				clock.tick()
				if err := await("send a heartbeat", func() bool { return len(conn.Received()) > n }); err != nil {
					return err
				}
				pongs = append(pongs, tick+sc.pongAfter[pinged%len(sc.pongAfter)])
				pinged++
				continue
			}
			if len(pongs) == 0 || pongs[0] > t {
				return nil
			}
			clock.set(pongs[0])
			pongs = pongs[1:]
			if err := send(sc.pong); err != nil {
				return err
			}
		}
	}
	for _, st := range sc.steps {
		if conn != nil {
			if err := heartbeats(st.t); err != nil {
				return fail(err)
			}
		}
		clock.set(st.t)
		switch st.kind {
		case stepConnect:
			// The recorder is waiting on the held exchange (its REST book
			// request or its dial): everything it records now, up to its
			// last subscribe frame, is stamped with the connect's time.
			n := len(ex.Conns())
			ex.Hold(false)
			err = await("connect and subscribe", func() bool {
				cs := ex.Conns()
				return len(cs) > n && len(cs[n].Subscriptions()) >= topics && clock.ticking()
			})
			ex.Hold(true)
			if err != nil {
				return fail(err)
			}
			conn = ex.Conns()[n]
		case stepFrame:
			if conn == nil {
				return fail(errors.New("a frame before the connection"))
			}
			if err := send(st.payload); err != nil {
				return fail(err)
			}
		case stepKill:
			if conn == nil {
				return fail(errors.New("a disconnect before the connection"))
			}
			rc := r.Stats().Reconnects
			conn.Kill()
			conn, pongs = nil, nil // the venue answers no ping it had not answered
			// The disconnect and reconnect records are queued once the
			// reconnect is counted; the redial then waits on the exchange.
			if err := await("see the disconnect", func() bool { return r.Stats().Reconnects > rc }); err != nil {
				return fail(err)
			}
		}
	}
	if conn != nil {
		if err := heartbeats(sc.endNs); err != nil {
			return fail(err)
		}
	}
	clock.set(sc.endNs)
	cancel()
	if err := <-done; err != nil {
		w.Close()
		return nil, fmt.Errorf("samplegen: record %s: %w", venueName, err)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return summarize(dir)
}

// RecordedNote ends the manifest notes of a session made by Record.
const RecordedNote = " RECORDED by the real recorder (package recorder, as capture run runs it, live engine on) from the " +
	"loopback test exchange this session fed: the venue's frames, their receive times, its acknowledgements, its pong " +
	"latencies and the REST book summaries are the session's; the REST, connect, subscribe-frame, acknowledgement, " +
	"heartbeat (the venue's ping interval from each connect), disconnect and reconnect records and the clean closes " +
	"are the recorder's."

// collector keeps a copy of every generated record.
type collector struct{ recs []datasets.Record }

func (c *collector) Append(r *datasets.Record) (uint64, error) {
	cp := *r
	cp.Payload = bytes.Clone(r.Payload)
	c.recs = append(c.recs, cp)
	return uint64(len(c.recs)), nil
}

type stepKind uint8

const (
	stepConnect stepKind = iota // the recorder (re)connects and subscribes
	stepFrame                   // the venue sends payload
	stepKill                    // the venue's socket drops (1006)
)

type step struct {
	kind    stepKind
	t       int64
	payload []byte
}

// script is what the exchange plays: the venue's side of the generated
// session.
type script struct {
	steps          []step
	books          map[string][]byte // REST book snapshots by instrument
	startNs, endNs int64
	pong           []byte  // the venue's answer to a ping
	pongAfter      []int64 // the session's ping-to-pong latencies, in order
}

// defaultPongAfter is the ping-to-pong latency of a session that has none
// of its own (about the generator's median).
const defaultPongAfter = 10 * int64(time.Millisecond)

// heartbeat returns the recognisers of the venue's heartbeats: its
// client's ping frame and the frames its Scan classifies as pongs.
func heartbeat(drv venue.Driver) (isPing, isPong func([]byte) bool) {
	cp := drv.Client()
	ping := cp.Facts().PingFrame
	isPing = func(p []byte) bool { return len(ping) > 0 && bytes.Equal(p, ping) }
	isPong = func(p []byte) bool {
		c, _ := cp.Scan(p, func(_, _ []byte) {})
		return c == venue.FramePong
	}
	return isPing, isPong
}

func scriptOf(drv venue.Driver, recs []datasets.Record) (*script, error) {
	sc := &script{books: map[string][]byte{}}
	isPing, isPong := heartbeat(drv)
	var pingAt int64
	for _, r := range recs {
		if sc.startNs == 0 {
			sc.startNs = r.WallNs
		}
		sc.endNs = r.WallNs
		switch r.Kind {
		case datasets.KindConnect:
			sc.steps = append(sc.steps, step{kind: stepConnect, t: r.WallNs})
		case datasets.KindDisconnect:
			sc.steps = append(sc.steps, step{kind: stepKill, t: r.WallNs})
		case datasets.KindSent:
			if isPing(r.Payload) {
				pingAt = r.WallNs
			}
		case datasets.KindFrame:
			if isPong(r.Payload) { // heartbeats are the recorder's (see Record)
				sc.pong = r.Payload
				sc.pongAfter = append(sc.pongAfter, r.WallNs-pingAt)
				continue
			}
			sc.steps = append(sc.steps, step{kind: stepFrame, t: r.WallNs, payload: r.Payload})
		case datasets.KindRESTResponse:
			// A REST book snapshot, served for the instrument it is of.
			ins, err := drv.Instruments(r.Payload)
			if err != nil || len(ins) != 1 || ins[0].Instrument == "" {
				return nil, fmt.Errorf("samplegen: a REST body that is not one instrument's book (%v): %.80s", err, r.Payload)
			}
			sc.books[ins[0].Instrument] = r.Payload
		}
	}
	return sc, nil
}

// sessionClock is the recording's clock (recorder.Clock): the time is the
// session's, set by Record; heartbeat tickers tick when Record says.
type sessionClock struct {
	mu      sync.Mutex
	now     int64
	tickers []*sessionTicker
}

type sessionTicker struct {
	c           chan time.Time
	every, next int64
}

func (c *sessionClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Unix(0, c.now)
}

func (c *sessionClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tk := &sessionTicker{c: make(chan time.Time, 1), every: int64(d), next: c.now + int64(d)}
	c.tickers = append(c.tickers, tk)
	return tk.c, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.tickers = slices.DeleteFunc(c.tickers, func(x *sessionTicker) bool { return x == tk })
	}
}

func (c *sessionClock) set(t int64) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// ticking reports whether a ticker runs (the connection's heartbeat).
func (c *sessionClock) ticking() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tickers) > 0
}

// nextTick returns when the earliest ticker is due.
func (c *sessionClock) nextTick() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tickers) == 0 {
		return 0, false
	}
	return slices.MinFunc(c.tickers, func(a, b *sessionTicker) int { return cmp.Compare(a.next, b.next) }).next, true
}

// tick moves the clock to the earliest ticker's time and ticks it.
func (c *sessionClock) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tickers) == 0 {
		return
	}
	tk := slices.MinFunc(c.tickers, func(a, b *sessionTicker) int { return cmp.Compare(a.next, b.next) })
	c.now = tk.next
	tk.next += tk.every
	select {
	case tk.c <- time.Unix(0, c.now):
	default:
	}
}

// summarize reads back what the recorder wrote.
func summarize(dir string) (*Summary, error) {
	rd, err := datasets.Open(dir)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var s Summary
	for rd.Next() {
		r := rd.Record()
		if s.Records == 0 {
			s.StartNs = r.WallNs
		}
		s.Records++
		s.EndNs = r.WallNs
		s.Bytes += int64(len(r.Payload))
		if r.Kind == datasets.KindFrame {
			s.Frames++
		}
	}
	return &s, rd.Err()
}
