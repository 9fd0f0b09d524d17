package recorder

import (
	"slices"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/datasets"
)

// The status tracker sees every record the sink accepted, on the writer
// goroutine, and keeps what a status page shows of a running capture: per
// connection its state, uptime, counts and a frame-rate history, per
// instrument its losses and integrity findings, and the latest control
// records. A frame costs one uncontended lock and a few adds (no
// allocation); a control record decodes its payload (they are rare).

// Rate history of a connection: RateBuckets buckets of RateBucket each (the
// last hour).
const (
	RateBucket  = 10 * time.Second
	RateBuckets = 360
	// maxEvents is how many of the latest control records a status keeps.
	maxEvents = 50
)

// LiveStatus is a running capture's state, as its status page and
// /status.json show it. Times are wall-clock unix ns; ages are NowNs minus
// the time, in ns (0 when there is no such time yet).
type LiveStatus struct {
	Venue     string `json:"venue"`
	Endpoint  string `json:"endpoint"`
	StartedNs int64  `json:"started_ns"`
	NowNs     int64  `json:"now_ns"`
	UptimeNs  int64  `json:"uptime_ns"`
	// Totals of the session (Recorder.Stats) and of its live engine.
	Stats Stats     `json:"stats"`
	Live  LiveStats `json:"live"`
	// RateBucketNs is the width of each ConnStatus.Rate bucket.
	RateBucketNs int64              `json:"rate_bucket_ns"`
	Conns        []ConnStatus       `json:"connections"`
	Instruments  []InstrumentStatus `json:"instruments"`
	// Events are the latest control records (connects, disconnects,
	// stalls, overloads, write errors, integrity findings…), newest first.
	Events []StatusEvent `json:"events"`
}

// ConnStatus is one connection slot.
type ConnStatus struct {
	Conn uint32 `json:"conn"`
	// State is connecting (never connected yet), connected, reconnecting
	// (a reconnect attempt is under way after a disconnect), down (it
	// dropped) or closed (closed cleanly at shutdown).
	State       string `json:"state"`
	ConnectedNs int64  `json:"connected_ns,omitempty"` // the current connection's connect record
	UptimeNs    int64  `json:"uptime_ns"`              // of the current connection (0 unless connected)
	Connects    uint64 `json:"connects"`
	Disconnects uint64 `json:"disconnects"`
	Reconnects  uint64 `json:"reconnects"` // reconnect attempts
	Stalls      uint64 `json:"stalls"`     // stall records of the slot: the connection's and its instruments'
	Overloads   uint64 `json:"overloads"`
	Dropped     uint64 `json:"dropped_frames"`
	Losses      uint64 `json:"losses"` // loss records of this slot (Kind.IsLoss)
	Frames      uint64 `json:"frames"`
	Bytes       uint64 `json:"frame_bytes"`
	LastFrameNs int64  `json:"last_frame_ns,omitempty"`
	// LastFrameAgeNs is NowNs - LastFrameNs (0 without a frame).
	LastFrameAgeNs int64  `json:"last_frame_age_ns"`
	LastError      string `json:"last_error,omitempty"`
	// Rejected counts the frames of the slot the live decoder rejected
	// that name no instrument it could tell (integrity records of check
	// rejected without instruments), LastReject the last one's error.
	Rejected    uint64 `json:"rejected_frames"`
	LastReject  string `json:"last_reject,omitempty"`
	Instruments int    `json:"instruments"`
	// Rate is frames per second in each RateBucket of the last hour,
	// oldest first, the last bucket being the current one (partial).
	Rate []float64 `json:"rate"`
}

// InstrumentStatus is one instrument on one connection.
type InstrumentStatus struct {
	Instrument string `json:"instrument"`
	Conn       uint32 `json:"conn"`
	// UpdatedNs is when the live book last changed (0 without one).
	UpdatedNs int64 `json:"updated_ns,omitempty"`
	AgeNs     int64 `json:"age_ns"`
	// Stalls are instrument stalls plus stalls of its connection; Gaps every
	// loss record of its connection or of the whole session, plus those
	// naming it.
	Stalls uint64 `json:"stalls"`
	Gaps   uint64 `json:"gaps"`
	// Integrity findings: the live decoder's counts (as LiveStats totals
	// them) or, without a live book, the findings its KindIntegrity records
	// name (hash mismatches: confirmed ones only); HashChecked, HashOK and
	// HashUnverifiable are the decoder's hash verdicts.
	HashMismatches uint64 `json:"hash_mismatches"`
	TopMismatches  uint64 `json:"top_mismatches"`
	CrossedBooks   uint64 `json:"crossed_books"`
	// Rejected counts the frames carrying the instrument that the live
	// decoder rejected (its integrity records of check rejected), and
	// LastReject is the last one's error: why a book is missing or invalid.
	Rejected     uint64 `json:"rejected_frames"`
	LastReject   string `json:"last_reject,omitempty"`
	Resubscribes uint64 `json:"resubscribes"`
	HashChecked  uint64 `json:"hash_checked"`
	HashOK       uint64 `json:"hash_ok"`
	// HashUnverifiable: hashes the data could not decide (no trade came to
	// explain them); never a finding.
	HashUnverifiable uint64 `json:"hash_unverifiable"`
	// Book: top of the live book, prices and sizes as decimals ("" for an
	// empty side); Valid false until a snapshot, and after a loss.
	HasBook bool   `json:"has_book"`
	Valid   bool   `json:"valid"`
	Crossed bool   `json:"crossed"`
	BidPx   string `json:"bid_px,omitempty"`
	BidSz   string `json:"bid_sz,omitempty"`
	AskPx   string `json:"ask_px,omitempty"`
	AskSz   string `json:"ask_sz,omitempty"`
}

// StatusEvent is one control record.
type StatusEvent struct {
	Seq         uint64   `json:"seq"`
	Conn        uint32   `json:"conn"`
	Kind        string   `json:"kind"`
	WallNs      int64    `json:"wall_ns"`
	Loss        bool     `json:"loss"`
	Detail      string   `json:"detail,omitempty"`
	Instruments []string `json:"instruments,omitempty"`
}

type connTrack struct {
	state                                  string
	connectedNs                            int64
	connects, disconnects, reconnects      uint64
	stalls, connStalls, overloads, dropped uint64
	losses                                 uint64
	frames, bytes                          uint64
	lastFrameNs                            int64
	lastErr                                string
	rejected                               uint64
	lastReject                             string
	bucketEpoch                            [RateBuckets]int64
	bucketN                                [RateBuckets]uint32
}

type instTrack struct {
	stalls, gaps, hash, top, crossed, resubs, rejected uint64
	lastReject                                         string
}

type statusTracker struct {
	// itemInst maps a subscription item (what stall, gap and resubscribe
	// records name: "l2Book@BTC") to its instrument ("BTC").
	itemInst func(item string) (channel, instrument string, steady bool)

	mu        sync.Mutex
	conns     []*connTrack // by slot number
	insts     map[string]*instTrack
	allLosses uint64 // loss records of the session (conn 0) or of every connection
	events    [maxEvents]StatusEvent
	nEvents   int
}

func newStatusTracker(itemInst func(string) (string, string, bool)) *statusTracker {
	return &statusTracker{itemInst: itemInst, insts: map[string]*instTrack{}}
}

// named returns the instruments a control record names, once each: the
// record's own for integrity records, the items' instruments otherwise.
func (t *statusTracker) named(k datasets.Kind, names []string) []string {
	if len(names) == 0 {
		return nil
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		inst := n
		if k != datasets.KindIntegrity && t.itemInst != nil {
			if _, in, _ := t.itemInst(n); in != "" {
				inst = in
			}
		}
		if !slices.Contains(out, inst) {
			out = append(out, inst)
		}
	}
	return out
}

func (t *statusTracker) conn(id uint32) *connTrack {
	for int(id) >= len(t.conns) {
		t.conns = append(t.conns, nil)
	}
	c := t.conns[id]
	if c == nil {
		c = &connTrack{state: "connecting"}
		t.conns[id] = c
	}
	return c
}

func (t *statusTracker) inst(name string) *instTrack {
	it := t.insts[name]
	if it == nil {
		it = &instTrack{}
		t.insts[name] = it
	}
	return it
}

// record accounts for one record the sink accepted as seq. Writer
// goroutine only.
func (t *statusTracker) record(rec *datasets.Record, seq uint64) {
	if t == nil {
		return
	}
	if rec.Kind == datasets.KindFrame {
		t.mu.Lock()
		c := t.conn(rec.Conn)
		c.frames++
		c.bytes += uint64(len(rec.Payload))
		c.lastFrameNs = max(c.lastFrameNs, rec.WallNs)
		e := rec.WallNs / int64(RateBucket)
		i := int(e % RateBuckets)
		if c.bucketEpoch[i] != e {
			c.bucketEpoch[i], c.bucketN[i] = e, 0
		}
		c.bucketN[i]++
		t.mu.Unlock()
		return
	}
	if rec.Kind == datasets.KindSent || rec.Kind == datasets.KindRESTResponse || rec.Kind == datasets.KindClockSync {
		return
	}
	ctl, _ := datasets.DecodeControl(rec.Payload)
	insts := t.named(rec.Kind, ctl.Instruments)
	t.mu.Lock()
	defer t.mu.Unlock()
	all := rec.Conn == 0 || rec.Conn == datasets.ConnAll
	var c *connTrack
	if !all {
		c = t.conn(rec.Conn)
	}
	loss := rec.Kind.IsLoss()
	// A stall or gap naming instruments is theirs (an instrument stall, a
	// suspect subscription removed); any other loss is the connection's (or
	// the whole session's).
	named := len(insts) > 0 && (rec.Kind == datasets.KindStall || rec.Kind == datasets.KindGap)
	if loss {
		switch {
		case named:
			for _, in := range insts {
				t.inst(in).gaps++
			}
		case all:
			t.allLosses++
		default:
			c.losses++
		}
	}
	detail := eventDetail(rec.Kind, &ctl)
	switch rec.Kind {
	case datasets.KindConnect:
		if c != nil {
			c.state, c.connectedNs = "connected", rec.WallNs
			c.connects++
		}
	case datasets.KindDisconnect:
		if c != nil {
			c.state, c.connectedNs = "down", 0
			c.disconnects++
			c.lastErr = detail
		}
	case datasets.KindReconnect:
		if c != nil {
			c.state = "reconnecting"
			c.reconnects++
		}
	case datasets.KindCleanClose:
		if c != nil {
			c.state, c.connectedNs = "closed", 0
		}
	case datasets.KindStall:
		if c != nil {
			c.stalls++
		}
		if named {
			for _, in := range insts {
				t.inst(in).stalls++
			}
		} else if c != nil {
			c.connStalls++
		}
	case datasets.KindOverload:
		if c != nil {
			c.overloads++
			c.dropped += ctl.Dropped
		}
	case datasets.KindIntegrity:
		for _, in := range insts {
			it := t.inst(in)
			switch ctl.Reason {
			case datasets.CheckHashMismatch:
				it.hash += 1 + ctl.Dropped // Dropped: findings held back and not recorded one by one
			case datasets.CheckTopMismatch:
				it.top += 1 + ctl.Dropped
			case datasets.CheckCrossed:
				it.crossed += 1 + ctl.Dropped
			case datasets.CheckRejected:
				it.rejected += 1 + ctl.Dropped
				it.lastReject = ctl.Err
			}
		}
		if len(insts) == 0 && c != nil && ctl.Reason == datasets.CheckRejected {
			c.rejected += 1 + ctl.Dropped
			c.lastReject = ctl.Err
		}
	case datasets.KindResubscribe:
		for _, in := range insts {
			t.inst(in).resubs++
		}
	}
	if rec.Kind == datasets.KindSubscribed {
		return // routine, one per subscription: not worth an event line
	}
	ev := StatusEvent{Seq: seq, Conn: rec.Conn, Kind: rec.Kind.String(), WallNs: rec.WallNs, Loss: loss, Detail: detail}
	if len(ctl.Instruments) > 0 {
		ev.Instruments = ctl.Instruments[:min(len(ctl.Instruments), 5)]
	}
	t.events[t.nEvents%maxEvents] = ev
	t.nEvents++
}

// eventDetail is one line saying what a control record holds.
func eventDetail(k datasets.Kind, c *datasets.Control) string {
	var parts []string
	if c.Reason != "" {
		parts = append(parts, c.Reason)
	}
	if c.Code != 0 {
		parts = append(parts, "code "+itoa(int64(c.Code)))
	}
	if c.Dropped != 0 && k == datasets.KindOverload {
		parts = append(parts, itoa(int64(c.Dropped))+" frames dropped")
	}
	if c.Attempt != 0 {
		parts = append(parts, "attempt "+itoa(int64(c.Attempt)))
	}
	if c.Err != "" {
		parts = append(parts, c.Err)
	}
	if c.Text != "" {
		parts = append(parts, c.Text)
	}
	if c.FromNs != 0 && c.ToNs >= c.FromNs {
		parts = append(parts, "for "+time.Duration(c.ToNs-c.FromNs).Round(time.Millisecond).String())
	}
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += "; "
		}
		s += p
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func itoa(n int64) string {
	return string(book.AppendDecimal(nil, n, 0))
}

// LiveStatus returns the capture's state now: its connections, instruments
// with their live top of book, and its latest control records. It is what
// a status page shows; safe from any goroutine, before (empty connections),
// during and after Run.
func (r *Recorder) LiveStatus() *LiveStatus {
	now := time.Now()
	st := &LiveStatus{Venue: r.spec.Venue, Endpoint: r.endpoint, StartedNs: r.base.UnixNano(), NowNs: now.UnixNano(),
		UptimeNs: int64(now.Sub(r.base)), Stats: r.Stats(), Live: r.LiveStats(), RateBucketNs: int64(RateBucket)}
	r.mu.Lock()
	nSlots := len(r.slots)
	var planInsts [][]string
	if r.plan != nil {
		for _, c := range r.plan.Conns {
			planInsts = append(planInsts, c.Instruments)
		}
	}
	r.mu.Unlock()
	books := r.LiveBooks()

	t := r.track.snapshot() // the writer waits only for this copy
	perConn := map[uint32]int{}
	// Instruments: every live book, then every planned instrument without
	// one yet (on its planned slot).
	type key struct {
		inst string
		conn uint32
	}
	seen := map[key]bool{}
	add := func(inst string, conn uint32, b *LiveBook) {
		if seen[key{inst, conn}] {
			return
		}
		seen[key{inst, conn}] = true
		perConn[conn]++
		is := InstrumentStatus{Instrument: inst, Conn: conn}
		if it, ok := t.insts[inst]; ok {
			is.Stalls, is.Gaps, is.HashMismatches, is.TopMismatches, is.CrossedBooks, is.Resubscribes =
				it.stalls, it.gaps, it.hash, it.top, it.crossed, it.resubs
			is.Rejected, is.LastReject = it.rejected, it.lastReject
		}
		is.Gaps += t.allLosses
		if int(conn) < len(t.conns) && t.conns[conn] != nil {
			is.Stalls += t.conns[conn].connStalls
			is.Gaps += t.conns[conn].losses
		}
		if b != nil {
			is.HasBook, is.Valid, is.Crossed = true, b.Valid, b.Crossed
			is.UpdatedNs = b.UpdatedNs
			if b.UpdatedNs > 0 {
				is.AgeNs = max(st.NowNs-b.UpdatedNs, 0)
			}
			// The live decoder counts every check; the integrity records
			// (counted above) hold back repeated findings. The decoder's
			// counts are what LiveStats totals.
			q := b.Quality
			is.HashChecked, is.HashOK, is.HashUnverifiable = q.HashChecked, q.HashOK, q.HashUnverifiable
			is.HashMismatches = max(is.HashMismatches, q.HashMismatch)
			is.TopMismatches = max(is.TopMismatches, q.TopMismatch)
			is.CrossedBooks = max(is.CrossedBooks, q.CrossedBatch)
			if bid, ask, hasBid, hasAsk := b.Best(); true {
				if hasBid {
					is.BidPx, is.BidSz = book.FormatDecimal(bid.Price, b.Scale.PriceDecimals), book.FormatDecimal(bid.Size, b.Scale.SizeDecimals)
				}
				if hasAsk {
					is.AskPx, is.AskSz = book.FormatDecimal(ask.Price, b.Scale.PriceDecimals), book.FormatDecimal(ask.Size, b.Scale.SizeDecimals)
				}
			}
		}
		st.Instruments = append(st.Instruments, is)
	}
	booked := map[string]bool{}
	for i := range books {
		add(books[i].Instrument, books[i].Conn, &books[i])
		booked[books[i].Instrument] = true
	}
	for i, insts := range planInsts {
		for _, in := range insts {
			if !booked[in] {
				add(in, uint32(i+1), nil)
			}
		}
	}
	slices.SortFunc(st.Instruments, func(a, b InstrumentStatus) int {
		if a.Instrument != b.Instrument {
			if a.Instrument < b.Instrument {
				return -1
			}
			return 1
		}
		return int(a.Conn) - int(b.Conn)
	})

	nowEpoch := st.NowNs / int64(RateBucket)
	for id := 1; id <= max(nSlots, len(t.conns)-1); id++ {
		cs := ConnStatus{Conn: uint32(id), State: "connecting", Rate: make([]float64, RateBuckets), Instruments: perConn[uint32(id)]}
		if id < len(t.conns) && t.conns[id] != nil {
			c := t.conns[id]
			cs.State, cs.ConnectedNs = c.state, c.connectedNs
			if c.state == "connected" && c.connectedNs > 0 {
				cs.UptimeNs = max(st.NowNs-c.connectedNs, 0)
			}
			cs.Connects, cs.Disconnects, cs.Reconnects = c.connects, c.disconnects, c.reconnects
			cs.Stalls, cs.Overloads, cs.Dropped, cs.Losses = c.stalls, c.overloads, c.dropped, c.losses
			cs.Frames, cs.Bytes, cs.LastFrameNs, cs.LastError = c.frames, c.bytes, c.lastFrameNs, c.lastErr
			cs.Rejected, cs.LastReject = c.rejected, c.lastReject
			if c.lastFrameNs > 0 {
				cs.LastFrameAgeNs = max(st.NowNs-c.lastFrameNs, 0)
			}
			for j := range RateBuckets {
				e := nowEpoch - int64(RateBuckets-1-j)
				if i := int(e % RateBuckets); c.bucketEpoch[i] == e {
					span := RateBucket.Seconds()
					if j == RateBuckets-1 { // the current bucket, partial
						span = max(float64(st.NowNs-e*int64(RateBucket))/1e9, 1)
					}
					cs.Rate[j] = float64(c.bucketN[i]) / span
				}
			}
		}
		st.Conns = append(st.Conns, cs)
	}

	st.Events = t.events
	return st
}

// trackSnap is a copy of the tracker's state.
type trackSnap struct {
	conns     []*connTrack
	insts     map[string]instTrack
	allLosses uint64
	events    []StatusEvent // newest first
}

func (t *statusTracker) snapshot() trackSnap {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := trackSnap{conns: make([]*connTrack, len(t.conns)), insts: make(map[string]instTrack, len(t.insts)), allLosses: t.allLosses}
	for i, c := range t.conns {
		if c != nil {
			cp := *c
			s.conns[i] = &cp
		}
	}
	for k, v := range t.insts {
		s.insts[k] = *v
	}
	n := min(t.nEvents, maxEvents)
	for i := range n {
		ev := t.events[(t.nEvents-1-i)%maxEvents]
		ev.Instruments = slices.Clone(ev.Instruments)
		s.events = append(s.events, ev)
	}
	return s
}
