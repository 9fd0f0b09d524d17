package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/venue"
)

// Plan is what a recorder will do: its connections, what each carries, the
// frames that subscribe them, and the pacing of those frames. It is the
// output of capture plan and the start of Run.
type Plan struct {
	Venue    string     `json:"venue"`
	Endpoint string     `json:"endpoint"`
	Conns    []ConnPlan `json:"connections"`
	Pacing   Pacing     `json:"pacing"`
	// RESTBooks is the URL of the REST book snapshots (Polymarket: batch
	// book summaries) fetched for each connection's items before every
	// (re)connect ("" = none: Hyperliquid, or Spec.DisableRESTBooks).
	RESTBooks string `json:"rest_books,omitempty"`
	// Checked is true when instruments were checked against the venue's
	// listing (Discover ran); Notes say what was not.
	Checked bool     `json:"checked"`
	Notes   []string `json:"notes,omitempty"`
}

// ConnPlan is one connection slot. Conn is the slot number its records
// carry (1-based; 0 is the session).
type ConnPlan struct {
	Conn        uint32   `json:"conn"`
	Instruments []string `json:"instruments"`
	// Items are what the slot subscribes: Polymarket token ids,
	// Hyperliquid subscription specs ("l2Book+fast@BTC").
	Items []string `json:"items"`
	// Frames are the subscribe frames sent after every (re)connect, in order.
	Frames []string `json:"frames"`
	// RESTBookRequests is how many book-summary requests precede every
	// (re)connect (see Plan.RESTBooks).
	RESTBookRequests int `json:"rest_book_requests,omitempty"`
}

// Pacing is how sends are spaced: at most Burst frames per Window and
// PerMinute per minute across all connections (0 = unpaced), a heartbeat
// every PingInterval, and how long the first subscribe of every connection
// takes at that pace.
type Pacing struct {
	Burst        int           `json:"burst,omitempty"`
	Window       time.Duration `json:"window_ns,omitempty"`
	PerMinute    int           `json:"per_minute,omitempty"`
	PingInterval time.Duration `json:"ping_interval_ns"`
	// New connections (first dials and reconnects) are paced too: at most
	// DialBurst per DialWindow and DialPerMinute per minute.
	DialBurst      int           `json:"dial_burst"`
	DialWindow     time.Duration `json:"dial_window_ns"`
	DialPerMinute  int           `json:"dial_per_minute"`
	SubscribeSends int           `json:"subscribe_frames"`
	SubscribeTime  time.Duration `json:"subscribe_time_ns"`
}

// Plan returns the plan. It touches the network only when the spec needs
// discovery (all markets, Polymarket slugs or condition ids) and Discover has
// not run yet; call Discover first to also check Hyperliquid coins against
// meta. The plan is computed once and then returned as is.
func (r *Recorder) Plan(ctx context.Context) (*Plan, error) {
	return r.planFor(ctx, false)
}

// Prepare does what Run would do before connecting: discovery when the spec
// needs it, and on Hyperliquid always (meta and spotMeta are checked against
// and stored), then the plan. Call it before Manifest when creating the
// dataset for Run; Run then reuses the result.
func (r *Recorder) Prepare(ctx context.Context) (*Plan, error) {
	return r.planFor(ctx, true)
}

// planFor computes the plan; forRun also fetches what a run must store
// (Hyperliquid meta).
func (r *Recorder) planFor(ctx context.Context, forRun bool) (*Plan, error) {
	r.mu.Lock()
	p, done := r.plan, r.discovered
	r.mu.Unlock()
	if p != nil && (done || !forRun || !r.facts.DiscoverForRun) {
		return p, nil
	}
	if !done && (r.needsDiscovery() || (forRun && r.facts.DiscoverForRun)) {
		if err := r.Discover(ctx); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	insts := r.spec.Instruments
	if r.discovered {
		insts = r.instruments
	}
	p = &Plan{Venue: r.spec.Venue, Endpoint: r.endpoint, Checked: r.discovered}
	cps, err := r.p.Plan(venue.PlanRequest{Channels: r.spec.Channels, Instruments: insts,
		ConnItems: r.spec.AssetsPerConn, Conns: r.spec.Conns})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	for i, c := range cps {
		books := r.p.BookRequests(r.clobURL, c.Items)
		cp := ConnPlan{Conn: uint32(i + 1), Instruments: c.Instruments, Items: c.Items, RESTBookRequests: len(books)}
		if len(books) > 0 {
			p.RESTBooks = books[0].URL
		}
		for _, f := range r.p.SubscribeFrames(c.Items) {
			cp.Frames = append(cp.Frames, string(f.Data))
		}
		p.Conns = append(p.Conns, cp)
	}
	if !r.discovered && r.facts.UncheckedNote != "" {
		p.Notes = append(p.Notes, r.facts.UncheckedNote)
	}
	if r.clobURL == "" && r.facts.BooksOffNote != "" {
		p.Notes = append(p.Notes, r.facts.BooksOffNote)
	}
	if len(p.Conns) == 0 {
		return nil, fmt.Errorf("%w: nothing to subscribe", ErrSpec)
	}
	p.Pacing.PingInterval = r.o.pingInterval
	p.Pacing.DialBurst, p.Pacing.DialWindow, p.Pacing.DialPerMinute = r.o.dialPace.burst, r.o.dialPace.window, r.o.dialPace.perMinute
	for _, c := range p.Conns {
		p.Pacing.SubscribeSends += len(c.Frames)
	}
	if pc := r.o.subscribePace; pc != nil {
		p.Pacing.Burst, p.Pacing.Window, p.Pacing.PerMinute = pc.burst, pc.window, pc.perMinute
		p.Pacing.SubscribeTime = pc.planDuration(p.Pacing.SubscribeSends)
	}
	r.plan = p
	return p, nil
}

// WriteText writes the plan for people: one block per connection with its
// instruments and subscribe frames, then the pacing.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "venue     %s\nendpoint  %s\nconnections %d\n", p.Venue, p.Endpoint, len(p.Conns))
	for _, c := range p.Conns {
		fmt.Fprintf(&b, "\nconn %d: %d instruments, %d subscriptions, %d subscribe frames\n", c.Conn, len(c.Instruments), len(c.Items), len(c.Frames))
		fmt.Fprintf(&b, "  instruments: %s\n", strings.Join(c.Instruments, " "))
		if c.RESTBookRequests > 0 {
			reqs := "1 request"
			if c.RESTBookRequests > 1 {
				reqs = fmt.Sprintf("%d requests", c.RESTBookRequests)
			}
			fmt.Fprintf(&b, "  before every (re)connect: POST %s for the %d tokens' book summaries in %s (hash fields a WebSocket book lacks)\n",
				p.RESTBooks, len(c.Instruments), reqs)
		}
		for _, f := range c.Frames {
			fmt.Fprintf(&b, "  send %s\n", f)
		}
	}
	pc := p.Pacing
	b.WriteString("\npacing\n")
	if pc.Burst > 0 {
		fmt.Fprintf(&b, "  at most %d frames per %v and %d per minute across all connections\n", pc.Burst, pc.Window, pc.PerMinute)
	} else {
		b.WriteString("  subscribe frames unpaced\n")
	}
	fmt.Fprintf(&b, "  %d subscribe frames, sent in %v after startup (and again after every reconnect of a connection)\n", pc.SubscribeSends, pc.SubscribeTime)
	if pc.PingInterval > 0 {
		fmt.Fprintf(&b, "  heartbeat every %v per connection\n", pc.PingInterval)
	} else {
		fmt.Fprintf(&b, "  no application heartbeat\n")
	}
	fmt.Fprintf(&b, "  new connections: at most %d per %v and %d per minute; reconnects back off exponentially with jitter\n",
		pc.DialBurst, pc.DialWindow, pc.DialPerMinute)
	if len(p.Notes) > 0 {
		b.WriteString("\nnotes\n")
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the plan as one indented JSON document.
func (p *Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}
