package recorder

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// Status describes a recorded dataset, finished or still being written: how
// much it holds, how fast frames came, how late they were, and every loss.
type Status struct {
	Dir     string `json:"dir"`
	Venue   string `json:"venue"`
	Clean   bool   `json:"clean"`       // the manifest says the writer closed cleanly
	Stopped bool   `json:"clean_close"` // a KindCleanClose record ends the recording
	// Truncated describes a torn tail the reader stopped at (a killed or
	// still-running writer), "" if none.
	Truncated string `json:"truncated,omitempty"`

	Records uint64 `json:"records"`
	Frames  uint64 `json:"frames"`
	Bytes   uint64 `json:"frame_bytes"`
	FirstNs int64  `json:"first_ns"`
	LastNs  int64  `json:"last_ns"`
	// FramesPerSec is over the whole recording, RecentFramesPerSec over its
	// last minute.
	FramesPerSec       float64 `json:"frames_per_sec"`
	RecentFramesPerSec float64 `json:"recent_frames_per_sec"`
	// Lag is receive time minus the venue's timestamp, over frames that
	// carry one.
	Lag LagStats `json:"receive_lag"`

	Conns       int    `json:"conns"` // connection slots that carried frames or connects
	Connects    uint64 `json:"connects"`
	Disconnects uint64 `json:"disconnects"`
	Reconnects  uint64 `json:"reconnects"`
	Stalls      uint64 `json:"stalls"`
	Overloads   uint64 `json:"overloads"`
	Dropped     uint64 `json:"dropped_frames"`
	WriteErrors uint64 `json:"write_errors"`
	// Gaps are the intervals a connection's data is known to be missing or
	// untrustworthy: down between a disconnect and the next connect, a
	// stall, an overload, a write failure.
	Gaps      []Gap         `json:"gaps,omitempty"`
	GapsTotal time.Duration `json:"gaps_total_ns"`
}

// Gap is one interval of known loss on one connection slot.
type Gap struct {
	Conn   uint32 `json:"conn"`
	Kind   string `json:"kind"` // disconnect, stall, overload, write_error, gap
	FromNs int64  `json:"from_ns"`
	ToNs   int64  `json:"to_ns"`
	Detail string `json:"detail,omitempty"`
}

// ReadStatus reads the dataset in dir from start to end. A dataset still
// being written is read up to its last sealed block.
func ReadStatus(dir string) (*Status, error) {
	rd, err := datasets.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("recorder: status: %w", err)
	}
	defer rd.Close()
	m := rd.Manifest()
	st := &Status{Dir: dir, Venue: m.Venue, Clean: m.Clean}
	var p venue.ClientProtocol
	if d, err := registry.Lookup(m.Venue); err == nil {
		p = d.Client()
	}
	var lag lagHist
	conns := map[uint32]bool{}
	down := map[uint32]*Gap{} // open disconnect gaps per slot
	var recent []int64        // wall ns of frames, trimmed to the last minute
	noop := func(_, _ []byte) {}
	for rd.Next() {
		r := rd.Record()
		st.Records++
		if st.FirstNs == 0 {
			st.FirstNs = r.WallNs
		}
		st.LastNs = max(st.LastNs, r.WallNs)
		if r.Kind == datasets.KindFrame || r.Kind == datasets.KindConnect {
			conns[r.Conn] = true // the recorder's own records use slot 0; imports may carry frames there
		}
		var c datasets.Control
		if r.Kind != datasets.KindFrame && r.Kind != datasets.KindSent && r.Kind != datasets.KindRESTResponse {
			c, _ = datasets.DecodeControl(r.Payload)
		}
		switch r.Kind {
		case datasets.KindFrame:
			st.Frames++
			st.Bytes += uint64(len(r.Payload))
			recent = append(recent, r.WallNs)
			if len(recent) > 1<<16 {
				recent = trimRecent(recent, r.WallNs)
			}
			if p != nil {
				if _, exNs := p.Scan(r.Payload, noop); exNs > 0 {
					lag.add(time.Duration(r.WallNs - exNs))
				}
			}
		case datasets.KindConnect:
			st.Connects++
			if g := down[r.Conn]; g != nil {
				g.ToNs = r.WallNs
				st.Gaps = append(st.Gaps, *g)
				delete(down, r.Conn)
			}
		case datasets.KindDisconnect:
			st.Disconnects++
			if c.Reason != "shutdown" {
				down[r.Conn] = &Gap{Conn: r.Conn, Kind: "disconnect", FromNs: r.WallNs,
					Detail: strings.TrimSpace(fmt.Sprintf("code %d %s %s", c.Code, c.Reason, c.Err))}
			}
		case datasets.KindReconnect:
			st.Reconnects++
		case datasets.KindStall:
			st.Stalls++
			st.Gaps = append(st.Gaps, Gap{Conn: r.Conn, Kind: "stall", FromNs: c.FromNs, ToNs: c.ToNs, Detail: c.Text})
		case datasets.KindOverload:
			st.Overloads++
			st.Dropped += c.Dropped
			st.Gaps = append(st.Gaps, Gap{Conn: r.Conn, Kind: "overload", FromNs: c.FromNs, ToNs: c.ToNs,
				Detail: fmt.Sprintf("%d frames dropped", c.Dropped)})
		case datasets.KindWriteError:
			st.WriteErrors++
			st.Gaps = append(st.Gaps, Gap{Conn: r.Conn, Kind: "write_error", FromNs: c.FromNs, ToNs: c.ToNs, Detail: c.Err})
		case datasets.KindGap:
			st.Gaps = append(st.Gaps, Gap{Conn: r.Conn, Kind: "gap", FromNs: c.FromNs, ToNs: c.ToNs, Detail: c.Text})
		case datasets.KindCleanClose:
			st.Stopped = st.Stopped || r.Conn == 0 // a connection's own clean close does not end the recording
		}
	}
	if err := rd.Err(); err != nil {
		return st, fmt.Errorf("recorder: status: %w", err)
	}
	for _, g := range down { // still down at the end
		g.ToNs = st.LastNs
		st.Gaps = append(st.Gaps, *g)
	}
	if t := rd.Truncated(); t != nil {
		st.Truncated = t.String()
	}
	st.Conns = len(conns)
	for _, g := range st.Gaps {
		st.GapsTotal += time.Duration(max(g.ToNs-g.FromNs, 0))
	}
	if span := st.LastNs - st.FirstNs; span > 0 {
		st.FramesPerSec = float64(st.Frames) / (float64(span) / 1e9)
	}
	recent = trimRecent(recent, st.LastNs)
	if len(recent) > 1 {
		span := max(float64(recent[len(recent)-1]-recent[0]), float64(time.Second))
		st.RecentFramesPerSec = float64(len(recent)) / (span / 1e9)
	}
	st.Lag = lag.stats()
	return st, nil
}

func trimRecent(ts []int64, last int64) []int64 {
	i := 0
	for i < len(ts) && ts[i] < last-int64(time.Minute) {
		i++
	}
	return append(ts[:0], ts[i:]...)
}

// WriteText writes the status for people.
func (s *Status) WriteText(w io.Writer) error {
	var b strings.Builder
	state := "running or killed (no clean close yet)"
	if s.Stopped {
		state = "stopped cleanly"
	}
	if s.Clean {
		state += ", sealed"
	}
	fmt.Fprintf(&b, "dataset     %s\nvenue       %s\nstate       %s\n", s.Dir, s.Venue, state)
	if s.Truncated != "" {
		fmt.Fprintf(&b, "torn tail   %s\n", s.Truncated)
	}
	if s.FirstNs != 0 {
		fmt.Fprintf(&b, "span        %s .. %s (%v)\n", time.Unix(0, s.FirstNs).UTC().Format(time.RFC3339Nano),
			time.Unix(0, s.LastNs).UTC().Format(time.RFC3339Nano), time.Duration(s.LastNs-s.FirstNs).Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "records     %d (%d frames, %d frame bytes)\n", s.Records, s.Frames, s.Bytes)
	fmt.Fprintf(&b, "frames/s    %.1f overall, %.1f in the last minute\n", s.FramesPerSec, s.RecentFramesPerSec)
	if s.Lag.Count > 0 {
		fmt.Fprintf(&b, "recv lag    p50 %v  p99 %v  max %v  (%d frames with a venue timestamp)\n",
			s.Lag.P50.Round(time.Microsecond), s.Lag.P99.Round(time.Microsecond), s.Lag.Max.Round(time.Microsecond), s.Lag.Count)
	}
	fmt.Fprintf(&b, "connections %d slots, %d connects, %d disconnects, %d reconnect attempts\n", s.Conns, s.Connects, s.Disconnects, s.Reconnects)
	fmt.Fprintf(&b, "losses      %d stalls, %d overloads (%d frames dropped), %d write-error episodes\n", s.Stalls, s.Overloads, s.Dropped, s.WriteErrors)
	fmt.Fprintf(&b, "gaps        %d, %v in total\n", len(s.Gaps), s.GapsTotal.Round(time.Millisecond))
	for _, g := range s.Gaps {
		fmt.Fprintf(&b, "  conn %d %-11s %s +%v  %s\n", g.Conn, g.Kind, time.Unix(0, g.FromNs).UTC().Format(time.RFC3339Nano),
			time.Duration(g.ToNs-g.FromNs).Round(time.Millisecond), g.Detail)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the status as one indented JSON document.
func (s *Status) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}
