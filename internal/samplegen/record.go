package samplegen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
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
// cut: 1006). What a recorder writes is the recorder's: the REST records of
// discovery and book summaries, connects, subscribe frames, acknowledgement
// records, the disconnect and reconnect, the clean close of the connection
// and of the recorder. Heartbeats are left out: the recorder's pings run on
// the real clock, which would put them at random places in generated time.
//
// The result is deterministic, byte for byte: the exchange sends the next
// frame only once the recorder has taken the last one (whatever a frame
// makes the recorder write carries that frame's receive time), holds a
// reconnect until the clock is at the session's reconnect, and the dataset
// seals blocks by size only.
func Record(ctx context.Context, venueName string, opts Options, dir string) (*Summary, error) {
	m, err := Manifest(venueName, opts)
	if err != nil {
		return nil, err
	}
	var gen collector
	if _, err := Generate(venueName, opts, &gen); err != nil {
		return nil, err
	}
	sc, err := scriptOf(gen.recs)
	if err != nil {
		return nil, err
	}
	cfg := fakeexchange.Config{Venue: venueName, Scripted: true, Books: sc.books}
	spec := recorder.Spec{Venue: venueName, Instruments: m.Instruments}
	switch venueName {
	case "hyperliquid":
		spec.Endpoint = HyperliquidEndpoint
		spec.Channels = []string{"l2Book", "bbo", "trades", "activeAssetCtx", "allMids"}
		if cfg.Meta, err = hlMeta(); err != nil {
			return nil, err
		}
		cfg.SpotMeta = []byte(`{"universe":[],"tokens":[]}`)
	default:
		spec.Endpoint = PolymarketEndpoint
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

	var clock atomic.Int64
	clock.Store(sc.startNs)
	r, err := recorder.New(spec,
		recorder.WithClock(func() time.Time { return time.Unix(0, clock.Load()) }),
		recorder.WithDialer(&websocket.Dialer{NetDialContext: redirect, NetDialTLSContext: redirect, HandshakeTimeout: 10 * time.Second}),
		recorder.WithHTTPClient(&http.Client{Timeout: 30 * time.Second,
			Transport: &http.Transport{DialContext: redirect, DialTLSContext: redirect}}),
		// What runs on the real clock must not act within the session's
		// generated minutes: no pings, no stall, no suspect blamed by the
		// real time since a subscribe, and (the exchange holds reconnects) a
		// short backoff; the writer seals blocks by size only.
		recorder.WithPingInterval(24*time.Hour), recorder.WithStallTimeout(24*time.Hour),
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
	for _, st := range sc.steps {
		clock.Store(st.t)
		switch st.kind {
		case stepConnect:
			// The recorder is waiting on the held exchange (its REST book
			// request or its dial): everything it records now, up to its
			// last subscribe frame, is stamped with the connect's time.
			n := len(ex.Conns())
			ex.Hold(false)
			err = await("connect and subscribe", func() bool {
				cs := ex.Conns()
				return len(cs) > n && len(cs[n].Subscriptions()) >= topics
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
			if !conn.Send(st.payload) {
				return fail(errors.New("the exchange could not send a frame"))
			}
			frames++
			// The frame is taken (its receive time read) once counted.
			if err := await("take a frame", func() bool { return r.Stats().Frames >= frames }); err != nil {
				return fail(err)
			}
		case stepKill:
			if conn == nil {
				return fail(errors.New("a disconnect before the connection"))
			}
			rc := r.Stats().Reconnects
			conn.Kill()
			conn = nil
			// The disconnect and reconnect records are queued once the
			// reconnect is counted; the redial then waits on the exchange.
			if err := await("see the disconnect", func() bool { return r.Stats().Reconnects > rc }); err != nil {
				return fail(err)
			}
		}
	}
	clock.Store(sc.endNs)
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
	"loopback test exchange this session fed: the venue's frames, their receive times, its acknowledgements and the REST " +
	"book summaries are the session's; the REST, connect, subscribe-frame, acknowledgement, disconnect and reconnect " +
	"records and the clean closes are the recorder's. No heartbeats: the recorder's pings run on the real clock."

// hlMeta is the Hyperliquid meta document the exchange lists: the
// generator's coins with their real size decimals and the maximum leverage
// the venue listed them with (perps only).
func hlMeta() ([]byte, error) {
	type asset struct {
		Name        string `json:"name"`
		SzDecimals  uint8  `json:"szDecimals"`
		MaxLeverage int    `json:"maxLeverage"`
	}
	lev := map[string]int{"BTC": 40, "DYDX": 20, "HYPE": 10}
	var u []asset
	for _, c := range hlCoinSpecs() {
		u = append(u, asset{c.coin, c.szDec, lev[c.coin]})
	}
	return json.Marshal(map[string]any{"universe": u, "marginTables": []any{}})
}

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
	books          map[string][]byte // Polymarket REST summary by token id
	startNs, endNs int64
}

func scriptOf(recs []datasets.Record) (*script, error) {
	sc := &script{books: map[string][]byte{}}
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
		case datasets.KindFrame:
			if p := r.Payload; string(p) == "PONG" || string(p) == `{"channel":"pong"}` {
				continue // heartbeats are the recorder's (see Record)
			}
			sc.steps = append(sc.steps, step{kind: stepFrame, t: r.WallNs, payload: r.Payload})
		case datasets.KindRESTResponse:
			var b struct {
				AssetID string `json:"asset_id"`
			}
			if err := json.Unmarshal(r.Payload, &b); err != nil || b.AssetID == "" {
				return nil, fmt.Errorf("samplegen: a REST summary without asset_id: %.80s", r.Payload)
			}
			sc.books[b.AssetID] = r.Payload
		}
	}
	return sc, nil
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
