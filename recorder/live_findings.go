package recorder

import (
	"fmt"
	"slices"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed/engine"
	"github.com/tapedeck/tapedeck/venue"
)

// What the live engine finds is recorded, every time: each finding (a
// confirmed hash mismatch, a top-of-book mismatch, a book crossed after its
// batch, a frame the decoder rejected) is counted on
// tapedeck_capture_integrity_total{check} and is either a KindIntegrity
// record of its own or counted in the Dropped of one. Records of one
// (instrument, check) are spaced by the heal backoff so that a permanently
// bad instrument cannot flood the recording; the findings in between are
// held, and written (as one record standing for all of them) with the next
// finding the spacing lets through, at the first sweep the spacing allows
// when none comes, and in any case before the capture's clean shutdown
// closes the recording (settle). What cannot be written because the
// recording has ended is counted on
// tapedeck_capture_integrity_unrecorded_total{check,reason} and logged. So
// at any time integrity_total = Σ(1 + Dropped) over the integrity records +
// LiveStats.IntegrityHeld + integrity_unrecorded_total, per check.

// liveSweepEvery is how often the engine looks for held findings whose
// spacing has passed.
const liveSweepEvery = time.Second

// maxRejectNames bounds the instruments one rejected-frame record names: a
// Polymarket frame may touch every book of its connection.
const maxRejectNames = 16

// maxErrText bounds a decoder error kept in a record.
const maxErrText = 300

// heldFindings are the findings of one key not recorded yet.
type heldFindings struct {
	n        uint64
	from, to int64 // receive times of the first and the last
	seq      uint64
	conn     uint32
	check    string
	insts    []string // the first one's
	err      string   // the last one's decoder error (rejected frames)
}

// finding accounts one integrity finding of inst on c (live_heal.go's
// checks) and asks for a heal when it is recorded.
func (l *liveEngine) finding(c *liveConn, rec *datasets.Record, inst, check string, describe func() string) {
	if text, ok := l.note(c.ID, rec, healKey{what: check, inst: inst}, check, nil, inst, "", describe); ok {
		l.heal.request(c.ID, inst, check, text)
	}
}

// note counts one finding of check caused by rec on connection slot conn
// and records it unless its key's spacing holds it back (then it is held,
// and said by the next record of the key). insts are the instruments it
// names (nil: inst alone, or none when inst is empty); errText is a
// rejected frame's decoder error. It reports whether a record was queued,
// and its text.
func (l *liveEngine) note(conn uint32, rec *datasets.Record, key healKey, check string, insts []string, inst, errText string, describe func() string) (string, bool) {
	l.r.lm.integrity.WithLabelValues(check).Inc()
	if _, ok := l.recordGate.allow(key); !ok {
		f := l.held[key]
		if f.n == 0 {
			f.from, f.conn, f.check = rec.WallNs, conn, check
			f.insts = namesOf(insts, inst)
		}
		f.n++
		f.to, f.seq, f.err = rec.WallNs, rec.Seq, errText
		l.held[key] = f
		l.stats.held.Add(1)
		return "", false
	}
	f := l.held[key]
	if f.n > 0 {
		delete(l.held, key)
		l.stats.held.Add(-int64(f.n))
	}
	text := describe()
	from := rec.WallNs
	if f.n > 0 {
		from = f.from
		text += fmt.Sprintf("; %d more such findings since the previous record were not recorded one by one", f.n)
	}
	return text, l.writeFinding(conn, check, namesOf(insts, inst), f.n, from, rec.WallNs, errText, text)
}

// namesOf is insts, copied, or inst alone.
func namesOf(insts []string, inst string) []string {
	if insts != nil {
		return slices.Clone(insts)
	}
	if inst == "" {
		return nil
	}
	return []string{inst}
}

// writeFinding logs and records 1+dropped findings of check; what the
// recording cannot take any more is counted as unrecorded.
func (l *liveEngine) writeFinding(conn uint32, check string, insts []string, dropped uint64, from, to int64, errText, text string) bool {
	l.r.log.Warn("live integrity", "conn", conn, "instruments", insts, "check", check, "findings", 1+dropped, "err", errText, "text", text)
	ok := l.record(conn, datasets.KindIntegrity, datasets.Control{Instruments: insts, Reason: check,
		Dropped: dropped, FromNs: from, ToNs: to, Err: errText, Text: text})
	if !ok {
		l.unrecorded(check, 1+dropped, "recording_ended")
	}
	return ok
}

// unrecorded counts n findings of check no record holds.
func (l *liveEngine) unrecorded(check string, n uint64, reason string) {
	l.stats.unrecorded.Add(n)
	l.r.lm.unrecorded.WithLabelValues(check, reason).Add(float64(n))
	l.r.log.Warn("live integrity findings not recorded", "check", check, "findings", n, "reason", reason)
}

// sweep writes the held findings whose spacing has passed, or (all) every
// one of them; those of connection slot conn only, unless conn is 0.
func (l *liveEngine) sweep(now time.Time, all bool, conn uint32) {
	if conn == 0 {
		l.lastSweep = now
	}
	if len(l.held) == 0 {
		return
	}
	keys := make([]healKey, 0, len(l.held))
	for k, f := range l.held {
		if conn == 0 || f.conn == conn {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b healKey) int { // a stable order of records
		if c := cmpStr(a.what, b.what); c != 0 {
			return c
		}
		if c := cmpStr(a.inst, b.inst); c != 0 {
			return c
		}
		return int(a.conn) - int(b.conn)
	})
	for _, k := range keys {
		if !all {
			if _, ok := l.recordGate.allow(k); !ok {
				continue
			}
		}
		f := l.held[k]
		delete(l.held, k)
		l.stats.held.Add(-int64(f.n))
		text := fmt.Sprintf("%d %s findings since the previous record, held back by the spacing of integrity records (the last at record %d)",
			f.n, f.check, f.seq)
		l.writeFinding(f.conn, f.check, f.insts, f.n-1, f.from, f.to, f.err, text)
	}
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dropHeld counts what is still held as unrecorded: the recording ended.
func (l *liveEngine) dropHeld() {
	for k, f := range l.held {
		delete(l.held, k)
		l.stats.held.Add(-int64(f.n))
		l.unrecorded(f.check, f.n, "recording_ended")
	}
}

// rejected is the core's DecodeError hook: a frame the live decoder
// rejected (wholly or some of its messages) is a finding of the
// instruments it carries — those whose books it invalidated, else those the
// venue's Scan finds in it — or of its connection when none can be told.
// REST bodies a decoder does not take are only counted (a session's
// listing bodies are no books).
func (l *liveEngine) rejected(c *engine.Conn, rec *datasets.Record, err error) {
	if rec.Kind != datasets.KindFrame {
		return
	}
	names, more, invalidated := l.rejBuf[:0], 0, 0
	for i := range c.Frame.Events {
		ev := &c.Frame.Events[i]
		if ev.Type != venue.EventReject || ev.Instrument == "" || slices.Contains(names, ev.Instrument) {
			continue
		}
		if ev.Book != nil {
			invalidated++
		}
		if len(names) < maxRejectNames {
			names = append(names, ev.Instrument)
		} else {
			more++
		}
	}
	if len(names) == 0 {
		l.r.p.Scan(rec.Payload, func(_, inst []byte) {
			if len(inst) == 0 || len(names) >= maxRejectNames {
				return
			}
			for _, n := range names {
				if n == string(inst) {
					return
				}
			}
			names = append(names, string(inst))
		})
	}
	l.rejBuf = names
	key := healKey{what: datasets.CheckRejected, conn: c.ID}
	if len(names) == 1 && more == 0 {
		key.inst = names[0]
	}
	errText := err.Error()
	if len(errText) > maxErrText {
		errText = errText[:maxErrText] + "…"
	}
	describe := func() string {
		s := fmt.Sprintf("the live decoder rejected record %d: nothing of it was applied (the frame is in the recording)", rec.Seq)
		if invalidated > 0 {
			s += fmt.Sprintf("; %d books invalid until their next snapshot", invalidated)
		}
		if more > 0 {
			s += fmt.Sprintf("; it names %d more instruments", more)
		}
		return s
	}
	insts := names
	if len(insts) == 0 {
		insts = []string{} // none: not the single-instrument form
	}
	if _, ok := l.note(c.ID, rec, key, datasets.CheckRejected, insts, "", errText, describe); !ok || invalidated == 0 {
		return
	}
	for i := range c.Frame.Events {
		if ev := &c.Frame.Events[i]; ev.Type == venue.EventReject && ev.Book != nil && slices.Contains(names, ev.Instrument) {
			l.heal.request(c.ID, ev.Instrument, datasets.CheckRejected, errText)
		}
	}
}
