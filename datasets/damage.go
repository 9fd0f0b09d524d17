package datasets

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// ErrMissingRecords means sequence numbers jump without a loss record
// explaining it: records (a block, a segment) are missing from the dataset.
var ErrMissingRecords = errors.New("datasets: records missing")

// ErrSegmentOrder means segments are duplicated, swapped or misnamed: a
// segment header names another number than its file, or sequence numbers
// go backwards from one segment (or block) to the next.
var ErrSegmentOrder = errors.New("datasets: segments out of order")

// Damage is one stretch of a dataset the reader could not read and stepped
// over (WithSkipDamaged), or a run of missing sequence numbers. In its place
// the reader returns one KindGap record with Conn == ConnAll (when the
// stretch held sequence numbers), so the books of every connection are
// invalid until their next snapshot.
type Damage struct {
	File   string `json:"file"`   // where the damage starts
	Offset int64  `json:"offset"` // of the first damaged structure in File
	Bytes  int64  `json:"bytes"`  // bytes skipped (0 for records missing without damage)
	// Records lost; exact when RecordsKnown, else a lower bound (from the
	// damaged block headers that still parse).
	Records      uint64 `json:"records"`
	RecordsKnown bool   `json:"records_known"`
	FirstSeq     uint64 `json:"first_seq,omitempty"` // seq range lost, 0 if unknown
	LastSeq      uint64 `json:"last_seq,omitempty"`
	// FromNs and ToNs are the wall times of the last good record before and
	// the first after (the manifest's end when nothing good follows), 0 if
	// unknown.
	FromNs int64  `json:"from_ns,omitempty"`
	ToNs   int64  `json:"to_ns,omitempty"`
	Reason string `json:"reason"`
	// GapSeq is the seq of the gap record that stands for it (0: none).
	GapSeq uint64 `json:"gap_seq,omitempty"`
}

// String describes the damage in one line.
func (d *Damage) String() string {
	recs := fmt.Sprintf("%d records", d.Records)
	if !d.RecordsKnown {
		recs = "at least " + recs
	}
	if d.FirstSeq != 0 {
		recs += fmt.Sprintf(" (seq %d..%d)", d.FirstSeq, d.LastSeq)
	}
	return fmt.Sprintf("%s:%d: %s, %d bytes skipped, wall %d..%d: %s", d.File, d.Offset, recs, d.Bytes, d.FromNs, d.ToNs, d.Reason)
}

// DamageTotals sums damage: records (exact when every entry is), bytes and
// the wall time range covered.
func DamageTotals(ds []Damage) (records uint64, exact bool, bytes int64, fromNs, toNs int64) {
	exact = true
	for _, d := range ds {
		records += d.Records
		exact = exact && d.RecordsKnown
		bytes += d.Bytes
		if d.FromNs != 0 && (fromNs == 0 || d.FromNs < fromNs) {
			fromNs = d.FromNs
		}
		toNs = max(toNs, d.ToNs)
	}
	return records, exact, bytes, fromNs, toNs
}

// WithSkipDamaged makes the reader step over damage instead of stopping:
// it resynchronises on the next intact block, records a Damage (see
// Damaged) and returns a KindGap record (Conn == ConnAll) in place of what
// was lost, then goes on. The same holds for sequence numbers that jump
// without a loss record (a missing segment). Without it the reader stops
// at the first damage with a *CorruptionError. Either way a torn tail
// (damage with nothing good after it in the last segment of a dataset whose
// writer did not close it) is a clean stop reported by Truncated, and
// duplicated or swapped segments are an error (ErrSegmentOrder).
func WithSkipDamaged() ReaderOption { return func(o *readerOptions) { o.skipDamaged = true } }

// Damaged returns the damage the reader stepped over so far (WithSkipDamaged).
func (r *Reader) Damaged() []Damage { return r.damage }

// pending is damage waiting for the next good block, which bounds it.
type pendingDamage struct {
	d       Damage
	hdrRecs uint64 // records in the damaged block headers that parse
	hdrLast int64  // their last wall time
	seg     int    // segment index where it started
}

// damaged handles damage ce at the reader's position. It returns true when
// reading goes on (the stream positioned after the damage, or the file
// closed so that the next segment opens).
func (r *Reader) damaged(ce *CorruptionError) bool {
	s := &r.segs[r.si]
	if s.size == 0 && r.tornTail(r.si) {
		// A segment the writer has created but not yet written to.
		r.done = true
		r.closeFile()
		return false
	}
	at := s.size
	if r.f != nil {
		at = resync(r.f, ce.Offset+1, s.size)
	}
	// Nothing good after it in the last segment of a dataset whose writer
	// did not close it: the torn tail of a crash.
	if at >= s.size && r.tornTail(r.si) && !r.o.strict && (r.pend == nil || r.pend.seg == r.si) {
		r.trunc = &Truncation{File: ce.File, Offset: ce.Offset, Bytes: s.size - ce.Offset, Err: ce.Err}
		if r.pend != nil {
			r.trunc.Offset, r.trunc.Bytes = r.pend.d.Offset, s.size-r.pend.d.Offset
		}
		r.pend = nil
		r.done = true
		r.closeFile()
		return false
	}
	if !r.o.skipDamaged {
		r.err = ce
		return false
	}
	if r.pend == nil {
		r.pend = &pendingDamage{seg: r.si, d: Damage{File: ce.File, Offset: ce.Offset, Reason: ce.Err.Error()}}
	}
	if r.f != nil {
		if h, ok := peekBlockHeader(r.f, ce.Offset, s.size); ok && h.Type == blockTypeRecords {
			r.pend.hdrRecs += uint64(h.Count)
			r.pend.hdrLast = max(r.pend.hdrLast, h.LastWall)
		}
	}
	r.pend.d.Bytes += at - ce.Offset
	if at >= s.size {
		r.closeFile()
		return true
	}
	return r.resume(at)
}

// resume positions the stream at the intact block at off, loading the
// segment dictionary from it (and stepping over it) if it is one.
func (r *Reader) resume(off int64) bool {
	s := &r.segs[r.si]
	for {
		if _, err := r.f.Seek(off, io.SeekStart); err != nil {
			r.err = fmt.Errorf("datasets: seek %s: %w", s.path, err)
			return false
		}
		r.sr.reset(r.f, s.path, off, s.size)
		h, ok := peekBlockHeader(r.f, off, s.size)
		if !ok || h.Type != blockTypeDict {
			return true
		}
		if r.sr.dict == nil && r.sr.readBlockContent() == nil && r.sr.decodeContent(false) == nil {
			if err := r.sr.setDict(append([]byte(nil), r.sr.raw...)); err != nil {
				r.err = err
				return false
			}
		}
		off += blockHeaderSize + int64(h.CompLen)
	}
}

func peekBlockHeader(f io.ReaderAt, off, size int64) (blockHeader, bool) {
	var h blockHeader
	var b [blockHeaderSize]byte
	if off+blockHeaderSize > size {
		return h, false
	}
	if n, _ := f.ReadAt(b[:], off); n != blockHeaderSize || h.unmarshal(b[:]) != nil {
		return h, false
	}
	return h, true
}

// checkBlock checks the block just decoded against the one before it:
// sequence numbers must continue (a jump is allowed next to a gap record,
// which explains it: Repair writes it at the first lost seq, a writer that
// could not write records at the next seq after them), and damage waiting
// for a good block is closed here. It returns true when it filled r.rec with a gap record to return
// before the block's records.
func (r *Reader) checkBlock() bool {
	h := &r.sr.h
	s := &r.segs[r.si]
	prevMono := r.rec.MonoNs
	if r.lastOK && h.FirstSeq <= r.lastSeq {
		r.err = &CorruptionError{File: s.path, Offset: r.sr.blockOff, Err: fmt.Errorf(
			"%w: block starts at seq %d after seq %d in %s (a duplicated or misplaced segment)",
			ErrSegmentOrder, h.FirstSeq, r.lastSeq, filepath.Base(r.lastFile))}
		return false
	}
	known := r.lastOK || r.fromStart
	expect := r.lastSeq + 1
	if !r.lastOK {
		expect = 1
	}
	var d *Damage
	switch {
	case r.pend != nil:
		p := r.pend
		r.pend = nil
		d = &p.d
		if known {
			d.FirstSeq, d.LastSeq = expect, h.FirstSeq-1
			d.Records, d.RecordsKnown = h.FirstSeq-expect, true
		} else {
			d.Records = p.hdrRecs
		}
		d.ToNs = h.FirstWall
	case known && h.FirstSeq != expect && !r.lastGap && Kind(r.sr.recs[0].kind) != KindGap:
		d = &Damage{File: s.path, Offset: r.sr.blockOff, Records: h.FirstSeq - expect, RecordsKnown: true,
			FirstSeq: expect, LastSeq: h.FirstSeq - 1, ToNs: h.FirstWall,
			Reason: fmt.Sprintf("%v: seq jumps from %d to %d%s", ErrMissingRecords, expect-1, h.FirstSeq, r.missingSegments())}
		if !r.o.skipDamaged {
			r.err = &CorruptionError{File: s.path, Offset: r.sr.blockOff, Err: fmt.Errorf(
				"%w: seq jumps from %d to %d%s", ErrMissingRecords, expect-1, h.FirstSeq, r.missingSegments())}
			return false
		}
	}
	lastWall, lastOK := r.lastWall, r.lastOK
	r.lastOK, r.fromStart = true, false
	r.lastSeq, r.lastWall, r.lastFile = h.LastSeq, h.LastWall, s.path
	r.lastGap = len(r.sr.recs) > 0 && Kind(r.sr.recs[len(r.sr.recs)-1].kind) == KindGap
	if d == nil {
		return false
	}
	if lastOK {
		d.FromNs = lastWall
	}
	gapSeq := d.FirstSeq
	if gapSeq == 0 && h.FirstSeq > 1 && !lastOK {
		gapSeq = h.FirstSeq - 1
	}
	wall, mono := d.FromNs, prevMono
	if !lastOK {
		wall, mono = h.FirstWall, 0
	}
	return r.emitGap(d, gapSeq, wall, mono)
}

// missingSegments names the segment files missing before the open one.
func (r *Reader) missingSegments() string {
	prev := uint32(0)
	if r.si > 0 {
		prev = r.segs[r.si-1].num
	}
	cur := r.segs[r.si].num
	switch {
	case cur == prev+1:
		return ""
	case cur == prev+2:
		return fmt.Sprintf(" (segment %s is missing)", segmentName(prev+1))
	}
	return fmt.Sprintf(" (segments %s to %s are missing)", segmentName(prev+1), segmentName(cur-1))
}

// endDamage closes damage still pending at the end of the dataset: nothing
// good follows it, so its extent comes from the damaged headers and the
// manifest's end. It returns true when it filled r.rec with a gap record.
func (r *Reader) endDamage() bool {
	p := r.pend
	if p == nil {
		return false
	}
	r.pend = nil
	d := &p.d
	d.Records = p.hdrRecs
	d.ToNs = max(r.man.EndNs, p.hdrLast)
	seq := uint64(1)
	wall, mono := d.ToNs, int64(0)
	if r.lastOK {
		d.FromNs = r.lastWall
		seq, wall, mono = r.lastSeq+1, r.lastWall, r.rec.MonoNs
	}
	if d.Records > 0 {
		d.FirstSeq = seq
	}
	if d.ToNs < d.FromNs {
		d.ToNs = d.FromNs
	}
	return r.emitGap(d, seq, wall, mono)
}

// missingTail checks, once, that the dataset did not end early: a dataset
// its writer closed (or Repair recovered) ends at the manifest's EndNs, the
// last record's time, so a last record before it that is no loss record
// means records after it are missing (a last segment deleted, lost in a
// copy). Like damage, that stops the reader with a *CorruptionError
// wrapping ErrMissingRecords, or with WithSkipDamaged is a Damage and a gap
// record (of an unknown number of records) up to EndNs. It returns true when
// it filled r.rec with that gap record. Only a read that started at the
// beginning checks (after SeekTime the reader cannot tell).
func (r *Reader) missingTail() bool {
	if r.tailDone || !(r.man.Clean || r.man.Recovered) || r.man.EndNs == 0 || !(r.lastOK || r.fromStart) {
		return false
	}
	r.tailDone = true
	if r.lastOK && (r.lastGap || r.lastWall >= r.man.EndNs) {
		return false
	}
	file, num := r.st.Join(segmentName(1)), uint32(1)
	if len(r.segs) > 0 {
		last := r.segs[len(r.segs)-1]
		file, num = last.path, last.num+1
	}
	what := fmt.Errorf("%w: the manifest's range ends at %d, the last record is at %d (segment %s or later is missing)",
		ErrMissingRecords, r.man.EndNs, r.lastWall, segmentName(num))
	if !r.lastOK {
		what = fmt.Errorf("%w: the manifest's range ends at %d and no record is left (segment %s or later is missing)",
			ErrMissingRecords, r.man.EndNs, segmentName(num))
	}
	if !r.o.skipDamaged {
		r.err = &CorruptionError{File: file, Err: what}
		return false
	}
	d := &Damage{File: file, FromNs: r.lastWall, ToNs: r.man.EndNs, Reason: what.Error()}
	seq, wall, mono := uint64(1), r.man.EndNs, int64(0)
	if r.lastOK {
		seq, wall, mono = r.lastSeq+1, r.lastWall, r.rec.MonoNs
		d.FirstSeq = seq
	}
	return r.emitGap(d, seq, wall, mono)
}

// emitGap records d and, when seq != 0, fills r.rec with the gap record
// standing for it.
func (r *Reader) emitGap(d *Damage, seq uint64, wall, mono int64) bool {
	if seq == 0 || (d.RecordsKnown && d.Records == 0) {
		r.damage = append(r.damage, *d)
		return false
	}
	d.GapSeq = seq
	r.damage = append(r.damage, *d)
	recs := fmt.Sprintf("%d records", d.Records)
	if !d.RecordsKnown {
		recs = "at least " + recs
	}
	c := Control{FromNs: d.FromNs, ToNs: d.ToNs, Dropped: d.Records,
		Text: fmt.Sprintf("read: %s lost at %s:%d (%d bytes skipped): %s", recs, filepath.Base(d.File), d.Offset, d.Bytes, d.Reason)}
	r.gapBuf = EncodeControl(c)
	r.rec = Record{Kind: KindGap, Conn: ConnAll, Seq: seq, WallNs: wall, MonoNs: mono, Payload: r.gapBuf}
	return true
}
