package venuesample

import (
	"container/heap"
	"errors"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
)

// Rand is xoshiro256** seeded through splitmix64: small, fast and fixed
// forever, unlike the streams math/rand may change between releases.
type Rand struct{ s [4]uint64 }

func newRNG(seed uint64) *Rand {
	r := &Rand{}
	x := seed
	for i := range r.s {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		r.s[i] = z ^ z>>31
	}
	return r
}

func rotl(x uint64, k uint) uint64 { return x<<k | x>>(64-k) }

// U64 returns the next 64 random bits.
func (r *Rand) U64() uint64 {
	s := &r.s
	res := rotl(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = rotl(s[3], 45)
	return res
}

// Intn returns a uniform int in [0, n); n must be positive.
func (r *Rand) Intn(n int) int {
	if n <= 1 {
		return 0
	}
	return int(r.U64() % uint64(n)) // bias < n/2^64: irrelevant here
}

// Int64n returns a uniform int64 in [0, n).
func (r *Rand) Int64n(n int64) int64 {
	if n <= 1 {
		return 0
	}
	return int64(r.U64() % uint64(n))
}

// Pct reports true with probability p percent.
func (r *Rand) Pct(p int) bool { return r.Intn(100) < p }

// quantile draws from a ×1000 quantile table, interpolating between entries.
func (r *Rand) quantile(tab *[256]int64) int64 {
	u := r.U64()
	i := int(u >> 56)
	frac := int64(u>>46) & 1023
	a := tab[i]
	b := a
	if i < 255 {
		b = tab[i+1]
	}
	return a + (b-a)*frac/1024
}

// ExpNs draws an exponential duration with the given mean.
func (r *Rand) ExpNs(mean int64) int64 { return mean * r.quantile(&expQ) / 1000 }

// LognNs draws a lognormal duration with the given median from a table.
func (r *Rand) LognNs(median int64, tab *[256]int64) int64 { return median * r.quantile(tab) / 1000 }

// Hex appends n random lower-case hex digits.
func (r *Rand) Hex(dst []byte, n int) []byte {
	for n > 0 {
		u := r.U64()
		for k := 0; k < 16 && n > 0; k++ {
			dst = append(dst, "0123456789abcdef"[u&15])
			u >>= 4
			n--
		}
	}
	return dst
}

// outRec is a record waiting in the engine's time-ordered queue.
type outRec struct {
	t        int64
	order    uint64 // push order: ties keep the order records were made in
	kind     datasets.Kind
	received bool // a frame from the socket, lost if the socket drops first
	payload  []byte
}

type outHeap []*outRec

func (h outHeap) Len() int { return len(h) }
func (h outHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].order < h[j].order
}
func (h outHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *outHeap) Push(x any)   { *h = append(*h, x.(*outRec)) }
func (h *outHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// errFramesDone stops a session once Options.Frames frames are out.
var errFramesDone = errors.New("venuesample: frame budget reached")

// Session orders a generated session's records by receive time and
// appends them. A venue's Generator runs processes (Proc) in time order
// through Loop; a record made at simulation time Now never has a time
// before Now, so every queued record at or before Now is final and can be
// appended. The exported fields are the generator's to read (R, Start, Now,
// LastRecv) and to set (Up, on its first connect); a Session is not safe for
// concurrent use.
type Session struct {
	R         *Rand // the session's PRNG, seeded by Options.Seed and the venue's name
	dst       Appender
	opts      Options
	Start     int64 // wall time of the session's start, ns
	end       int64 // exclusive end of the session; 1<<62 when unbounded
	maxFrames int64
	Now       int64 // the simulation's time, ns

	q     outHeap
	free  []*outRec
	order uint64

	Up       bool  // the socket is up: frames sent while down are lost
	LastRecv int64 // FIFO receive clock: frames arrive in the order sent

	rec datasets.Record
	sum Summary
	buf []byte // scratch for building payloads
}

// NewSession starts the session opts describes of the named venue (the
// name salts the seed), appending to dst.
func NewSession(opts Options, venue string, dst Appender) *Session {
	start := opts.WallStart()
	e := &Session{R: newRNG(opts.Seed ^ venueSalt(venue)), dst: dst, opts: opts, Start: start, Now: start,
		maxFrames: opts.Frames, end: 1 << 62, LastRecv: start}
	d := opts.Duration
	if d == 0 && opts.Frames == 0 {
		d = DefaultDuration
	}
	if d > 0 {
		e.end = start + int64(d)
	}
	return e
}

// Options returns what the session was started with.
func (e *Session) Options() Options { return e.opts }

// Summary returns what the session has appended so far.
func (e *Session) Summary() Summary { return e.sum }

func venueSalt(venue string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(venue); i++ {
		h = (h ^ uint64(venue[i])) * 1099511628211
	}
	return h
}

// Push queues a record at time t; payload is copied.
func (e *Session) Push(kind datasets.Kind, t int64, payload []byte, received bool) {
	var o *outRec
	if n := len(e.free); n > 0 {
		o, e.free = e.free[n-1], e.free[:n-1]
	} else {
		o = &outRec{}
	}
	e.order++
	o.t, o.order, o.kind, o.received = t, e.order, kind, received
	o.payload = append(o.payload[:0], payload...)
	heap.Push(&e.q, o)
}

// Control queues a control record at time t.
func (e *Session) Control(kind datasets.Kind, t int64, c datasets.Control) {
	e.Push(kind, t, datasets.EncodeControl(c), false)
}

// Recv queues a frame the venue sent at exchange time sentNs and that took
// latency to arrive; the socket delivers in order, so it never arrives
// before the previous frame. A frame sent while the socket is down is lost.
func (e *Session) Recv(sentNs, latency int64, payload []byte) {
	if !e.Up {
		return
	}
	t := sentNs + latency
	if min := e.LastRecv + 20_000 + e.R.Int64n(150_000); t < min { // 20–170 µs apart
		t = min
	}
	e.LastRecv = t
	e.Push(datasets.KindFrame, t, payload, true)
}

// flush appends every queued record with time <= upTo.
func (e *Session) flush(upTo int64) error {
	for len(e.q) > 0 && e.q[0].t <= upTo {
		o := heap.Pop(&e.q).(*outRec)
		if o.kind == datasets.KindFrame && e.maxFrames > 0 && e.sum.Frames >= e.maxFrames {
			e.free = append(e.free, o)
			return errFramesDone
		}
		e.rec = datasets.Record{Kind: o.kind, WallNs: o.t, MonoNs: o.t - e.Start, Payload: o.payload}
		if _, err := e.dst.Append(&e.rec); err != nil {
			return err
		}
		if e.sum.Records == 0 {
			e.sum.StartNs = o.t
		}
		e.sum.Records++
		e.sum.EndNs = o.t
		e.sum.Bytes += int64(len(o.payload))
		if o.kind == datasets.KindFrame {
			e.sum.Frames++
		}
		e.free = append(e.free, o)
	}
	return nil
}

// dropInFlight forgets frames queued to arrive after now: the socket closed
// before they came.
func (e *Session) dropInFlight() {
	kept := e.q[:0]
	for _, o := range e.q {
		if o.received && o.t > e.Now {
			e.free = append(e.free, o)
			continue
		}
		kept = append(kept, o)
	}
	e.q = kept
	heap.Init(&e.q)
	e.LastRecv = e.Now
}

// Proc is one recurring activity of a session.
type Proc struct {
	Next int64
	Run  func() // does the work at e.Now and sets Next
}

// Loop runs the processes in time order until the session ends, then
// appends what is queued and the closing records.
func (e *Session) Loop(procs []*Proc, closing func()) error {
	for {
		p := procs[0]
		for _, q := range procs[1:] {
			if q.Next < p.Next {
				p = q
			}
		}
		if p.Next >= e.end {
			break
		}
		if err := e.flush(p.Next); err != nil {
			if err == errFramesDone {
				break
			}
			return err
		}
		e.Now = p.Next
		p.Run()
	}
	if e.Now < e.end && e.end < 1<<62 {
		e.Now = e.end
	}
	if err := e.flush(e.Now); err != nil && err != errFramesDone {
		return err
	}
	// Frames queued beyond the end never arrive: the recorder stopped.
	e.q = e.q[:0]
	// A session cut at --frames may have appended frames received after
	// now (they were queued before the cut): the closing records come after
	// the last record, or the receive time would go backwards.
	if e.sum.Records > 0 && e.sum.EndNs > e.Now {
		e.Now = e.sum.EndNs
	}
	closing()
	return e.flush(1 << 62)
}

// AppendDec appends v at the given decimals, trimmed like the venues' wire
// (book.AppendDecimal).
func AppendDec(dst []byte, v int64, decimals uint8) []byte {
	return book.AppendDecimal(dst, v, decimals)
}

// AppendFloatish appends v like Hyperliquid's wire (Python float repr):
// trimmed, but with ".0" when the value is whole.
func AppendFloatish(dst []byte, v int64, decimals uint8) []byte {
	n := len(dst)
	dst = book.AppendDecimal(dst, v, decimals)
	for _, c := range dst[n:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, '.', '0')
}

// Outage describes a session's disconnects: the first drop, the delay before
// the reconnect attempt and before the socket is up again (minimum plus a
// random span, ns), and the endpoint recorded on connect.
type Outage struct {
	First                int64
	Retry, RetrySpan     int64
	Connect, ConnectSpan int64
	URL                  string
}

// Disconnects returns the two processes of a session's outages: a drop at
// o.First and every 600 s after, and the reconnect that follows it, after
// which resubscribe(t) sends the subscriptions again.
func (e *Session) Disconnects(o Outage, resubscribe func(t int64)) []*Proc {
	attempt := 0
	reconnect := &Proc{Next: 1 << 62}
	drop := &Proc{Next: o.First}
	drop.Run = func() {
		e.dropInFlight()
		e.Up = false
		e.Control(datasets.KindDisconnect, e.Now, datasets.Control{Code: 1006,
			Err: "websocket: close 1006 (abnormal closure): unexpected EOF"})
		attempt = 0
		reconnect.Next = e.Now + o.Retry + e.R.Int64n(o.RetrySpan)
		drop.Next = e.Now + 600e9
	}
	reconnect.Run = func() {
		attempt++
		e.Control(datasets.KindReconnect, e.Now, datasets.Control{Attempt: attempt})
		t := e.Now + o.Connect + e.R.Int64n(o.ConnectSpan)
		e.Control(datasets.KindConnect, t, datasets.Control{URL: o.URL})
		e.Up = true
		e.LastRecv = t
		resubscribe(t + 1e6)
		reconnect.Next = 1 << 62
	}
	return []*Proc{drop, reconnect}
}
