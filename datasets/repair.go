package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ConnAll in a record's Conn means the record concerns every connection of
// the dataset; Repair writes its gap records with it.
const ConnAll = ^uint32(0)

// Dropped is one damaged stretch Repair removed: the Damage (FromNs and
// ToNs bound the lost records' wall-clock receive times by the last good
// record before and the first good one after, or the damaged block's own
// range; RecordsKnown is false when the count could not be determined, a
// torn tail without a readable header).
type Dropped struct {
	Damage
	// Tail is true for a torn tail: the file was cut there and nothing put
	// in its place. Otherwise GapSeq is the seq of the KindGap record that
	// now stands for the loss (0 if the loss held no sequence numbers).
	Tail bool `json:"tail"`
}

// RepairReport says what Repair changed.
type RepairReport struct {
	Dir            string    `json:"dir"`
	Dropped        []Dropped `json:"dropped"`
	DroppedBytes   int64     `json:"dropped_bytes"`
	DroppedRecords uint64    `json:"dropped_records"`
	// RecordsExact is true when every Dropped has RecordsKnown; otherwise
	// DroppedRecords is a lower bound.
	RecordsExact   bool     `json:"records_exact"`
	IndexesWritten []string `json:"indexes_written,omitempty"`
	RemovedFiles   []string `json:"removed_files,omitempty"`
	// SetAside lists segments moved out of the way (renamed with a
	// ".duplicate" suffix, never deleted): copies of records already in
	// the dataset.
	SetAside []string `json:"set_aside,omitempty"`
	// StartNs and EndNs are the manifest's time range after repair;
	// ManifestFixed says whether it had to change. The range never shrinks:
	// where records are lost at either end, a gap record covers the rest.
	StartNs       int64 `json:"start_ns"`
	EndNs         int64 `json:"end_ns"`
	ManifestFixed bool  `json:"manifest_fixed"`
	// Recovered is true when the dataset's writer had died and Repair
	// closed it (Manifest.Recovered).
	Recovered bool `json:"recovered,omitempty"`
	// ManifestRebuilt is set when the manifest was missing or corrupt and
	// Repair wrote a new one from the segments: ManifestProblem says what
	// was wrong and Unrecovered names the fields the segments do not carry.
	ManifestRebuilt bool     `json:"manifest_rebuilt,omitempty"`
	ManifestProblem string   `json:"manifest_problem,omitempty"`
	Unrecovered     []string `json:"unrecovered,omitempty"`
}

// Changed reports whether Repair modified anything.
func (r *RepairReport) Changed() bool {
	return len(r.Dropped) > 0 || len(r.IndexesWritten) > 0 || len(r.RemovedFiles) > 0 || r.ManifestFixed ||
		len(r.SetAside) > 0 || r.ManifestRebuilt
}

type repairRegion struct {
	region
	lastMono            int64 // of a good block's last record
	firstKind, lastKind Kind
}

type repairSeg struct {
	segmentInfo
	dict    []byte // the segment's dictionary, if one copy was intact
	size    int64
	regs    []repairRegion
	damaged bool
}

// RepairOption configures Repair.
type RepairOption func(*repairOptions)

type repairOptions struct {
	sniff func(frames [][]byte) string
}

// WithVenueSniffer gives Repair a way to tell a dataset's venue from its
// frames, for a manifest it has to rebuild (this package knows no venue).
func WithVenueSniffer(f func(frames [][]byte) string) RepairOption {
	return func(o *repairOptions) { o.sniff = f }
}

// ErrUnrepairable means Repair found damage it must not guess at (segments
// swapped or overlapping): it changed nothing and names the files.
var ErrUnrepairable = errors.New("datasets: repair: cannot repair")

// Repair makes a damaged dataset readable again, and honest. Every damaged
// stretch is cut out of its segment and replaced by one KindGap record with
// Conn == ConnAll whose Control gives the lost time range and record count,
// so the loss stays explicit and sequence numbers stay strictly increasing;
// the same holds for a torn tail (cut at the last good block) and for
// records missing without damage (a segment file gone, a segment cut at a
// block boundary). What was lost is taken from every source there is: the
// block headers that still parse, the indexes (which list the blocks of a
// finished segment even after it lost them) and the manifest's range. The
// manifest's time range never shrinks; a dataset whose writer died is marked
// Recovered. A segment that only repeats records the dataset already has is
// set aside (renamed, not deleted); segments swapped or overlapping are
// refused (ErrUnrepairable). A missing or corrupt manifest is rebuilt from
// the segments, saying what could not be recovered. Missing or stale
// indexes are rewritten. Every file is replaced atomically. Running Repair
// on a sound dataset changes nothing. While a Writer has the dataset open,
// Repair refuses with ErrLocked.
func Repair(dir string, opts ...RepairOption) (*RepairReport, error) {
	if IsRemote(dir) {
		return nil, fmt.Errorf("datasets: %s %s: needs a local directory (object stores are read, and written by uploads of finished datasets)", "repair", dir)
	}
	var o repairOptions
	for _, opt := range opts {
		opt(&o)
	}
	rep := &RepairReport{Dir: dir, Dropped: []Dropped{}, RecordsExact: true}
	m, err := ReadManifest(dir)
	if err != nil {
		var ce *CorruptionError
		if !errors.As(err, &ce) && !errors.Is(err, ErrNotDataset) {
			return nil, fmt.Errorf("datasets: repair: %w", err)
		}
		if errors.Is(err, ErrNotDataset) {
			if segs, lerr := listSegments(dir); lerr != nil || len(segs) == 0 {
				return nil, fmt.Errorf("datasets: repair: %w", err)
			}
		}
		rep.ManifestRebuilt, rep.ManifestProblem = true, err.Error()
		m = salvageManifest(dir)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("datasets: repair: %w", err)
	}
	defer unlockDir(lock)
	infos, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	// Leftovers of an interrupted rewrite: the originals are intact.
	// (And the reserve file of a killed writer: it holds no data.)
	for _, pat := range []string{"*" + segmentExt + compactExt, "*" + segmentExt + ".repair", "*.tmp", ReserveName} {
		left, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, p := range left {
			if err := os.Remove(p); err == nil {
				rep.RemovedFiles = append(rep.RemovedFiles, p)
			}
		}
	}
	var sr segmentReader
	defer func() {
		sr.release()
	}()
	segs := make([]repairSeg, len(infos))
	var rec Record
	var rb rebuildInfo
	for i := range infos {
		s := &segs[i]
		s.segmentInfo = infos[i]
		s.size, err = walkSegment(s.path, &sr, func(reg *region, sr *segmentReader) error {
			rr := repairRegion{region: *reg}
			if reg.Good && reg.Dict {
				return nil // rewritten from s.dict
			}
			if reg.Good {
				first := true
				for sr.nextRecord(&rec) {
					if first {
						rr.firstKind, first = rec.Kind, false
					}
					rr.lastMono, rr.lastKind = rec.MonoNs, rec.Kind
					rb.see(&rec)
				}
			} else {
				s.damaged = true
			}
			s.regs = append(s.regs, rr)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("datasets: repair: %w", err)
		}
		s.dict = sr.dict
	}

	// What the indexes say the dataset held, even of blocks now gone.
	idxEnd := indexedEnds(dir, segs)

	// Segments that only repeat records already read are set aside;
	// records missing without damage get a zero-byte damaged region, so
	// that the code below puts a gap record in their place.
	segs, err = orderSegments(dir, segs, rep)
	if err != nil {
		return nil, err
	}
	// The end the dataset had: its indexes, the manifest's range.
	addTailRegion(segs, m, idxEnd)

	// Describe each damaged region from its good neighbours.
	type goodRef struct {
		seq        uint64
		wall, mono int64
		ok         bool
	}
	var prev goodRef
	var firstWall, lastWall int64
	var haveAny bool
	drops := make(map[[2]int]*Dropped)
	for si := range segs {
		for ri := range segs[si].regs {
			rg := &segs[si].regs[ri]
			if rg.Good {
				if !haveAny {
					firstWall, haveAny = rg.Hdr.FirstWall, true
				}
				prev = goodRef{seq: rg.Hdr.LastSeq, wall: rg.Hdr.LastWall, mono: rg.lastMono, ok: true}
				lastWall = rg.Hdr.LastWall
				continue
			}
			d := &Dropped{Damage: Damage{File: segs[si].path, Offset: rg.Off, Bytes: rg.End - rg.Off, Reason: rg.Err.Err.Error()}}
			next, nextOK := nextGood(segs, si, ri)
			d.FromNs = m.StartNs // lost at the start: from the recorded start
			if prev.ok {
				d.FromNs = prev.wall
			}
			lo := uint64(1)
			if prev.ok {
				lo = prev.seq + 1
			}
			switch {
			case nextOK:
				d.ToNs = next.FirstWall
				if next.FirstSeq > lo {
					d.FirstSeq, d.LastSeq = lo, next.FirstSeq-1
					d.Records = d.LastSeq - d.FirstSeq + 1
				}
				d.RecordsKnown = true
			default:
				d.Tail = si == len(segs)-1 && rg.End >= segs[si].size
				describeTail(d, segs[si].path, rg.Off, rg.End, lo, m, idxEnd)
			}
			drops[[2]int{si, ri}] = d
		}
	}

	// Rewrite each damaged segment; write indexes that are missing or stale.
	var enc blockEncoder
	for si := range segs {
		s := &segs[si]
		var entries []indexEntry
		size := s.size
		if s.damaged {
			entries, size, err = rewriteSegment(dir, s, drops, si, &enc, func(d *Dropped, seq uint64, wall, mono int64) {
				d.GapSeq = seq
				if !haveAny || wall < firstWall {
					firstWall, haveAny = wall, true
				}
				if wall > lastWall {
					lastWall = wall
				}
			}, prevFor(segs, si))
			if err != nil {
				return nil, err
			}
			for ri := range s.regs {
				if d := drops[[2]int{si, ri}]; d != nil {
					rep.Dropped = append(rep.Dropped, *d)
					rep.DroppedBytes += d.Bytes
					rep.DroppedRecords += d.Records
					rep.RecordsExact = rep.RecordsExact && d.RecordsKnown
				}
			}
			if len(entries) == 0 && si == len(segs)-1 {
				for _, p := range []string{s.path, filepath.Join(dir, indexName(s.num))} {
					if err := os.Remove(p); err == nil {
						rep.RemovedFiles = append(rep.RemovedFiles, p)
					}
				}
				continue
			}
		} else {
			for _, rg := range s.regs {
				var e indexEntry
				e.fromHeader(rg.Off, &rg.Hdr)
				entries = append(entries, e)
			}
			if idx, err := readIndex(dir, s.num, s.size); err == nil && sameEntries(idx, entries) {
				continue // an index that checks out but disagrees is rewritten too
			}
		}
		if err := writeIndex(dir, s.num, size, entries, true); err != nil {
			return nil, fmt.Errorf("datasets: repair: %w", err)
		}
		rep.IndexesWritten = append(rep.IndexesWritten, filepath.Join(dir, indexName(s.num)))
	}

	// The range is the records': it reaches past them only as far as a
	// gap record says records were lost (a loss at the start is covered
	// from the recorded start, one at the end to the old end). A killed
	// writer's manifest starts when the writer did, before its first
	// record: that start is not kept, or verify would find the manifest
	// claiming a time no record or loss covers. A range set by a Close or
	// an earlier repair never shrinks.
	old := m
	if haveAny {
		start, end := firstWall, lastWall
		for _, d := range rep.Dropped {
			if d.ToNs > end {
				end = d.ToNs
			}
			if d.FromNs != 0 && d.FromNs < start {
				start = d.FromNs
			}
		}
		if (m.Clean || m.Recovered) && m.StartNs != 0 && m.StartNs < start {
			start = m.StartNs // set by a Close or an earlier repair: never shrinks
		}
		if m.EndNs > end {
			end = m.EndNs
		}
		m.StartNs, m.EndNs = start, end
	}
	if !m.Clean && !m.Recovered {
		m.Recovered, rep.Recovered = true, true
	}
	if len(rep.Dropped) > 0 || len(rep.SetAside) > 0 {
		m.Repaired = true
	}
	if rep.ManifestRebuilt {
		rb.fill(&m, o.sniff, rep)
	}
	// A manifest without a checksum is rewritten with one (Verify reports it).
	if rep.ManifestRebuilt || !sameManifest(old, m) || old.unsummed {
		if err := writeManifest(dir, m); err != nil {
			return nil, fmt.Errorf("datasets: repair: %w", err)
		}
		rep.ManifestFixed = true
	}
	rep.StartNs, rep.EndNs = m.StartNs, m.EndNs
	return rep, nil
}

func sameManifest(a, b Manifest) bool {
	return a.StartNs == b.StartNs && a.EndNs == b.EndNs && a.Clean == b.Clean && a.Recovered == b.Recovered &&
		a.Repaired == b.Repaired
}

// orderSegments sets aside segments whose records all repeat earlier ones
// (a copied segment), refuses overlaps, and marks records missing between
// good blocks without damage (a segment file gone) with a zero-byte damaged
// region before the block that follows them.
func orderSegments(dir string, segs []repairSeg, rep *RepairReport) ([]repairSeg, error) {
	var out []repairSeg
	var maxSeq uint64
	var maxFile string
	lastGap, lastBad := false, false
	for si := range segs {
		s := segs[si]
		dup, any := true, false
		for _, rg := range s.regs {
			if rg.Good {
				any = true
				dup = dup && rg.Hdr.LastSeq <= maxSeq
			}
		}
		sh, herr := readSegmentHeaderAt(s.path)
		misnamed := herr == nil && sh.Number != s.num
		if misnamed && !(any && dup) {
			// Swapped or misnamed: which is right cannot be told without guessing.
			return nil, fmt.Errorf("%w: %w: %s's header says segment %d; rename each segment to the number its header gives, then repair again",
				ErrUnrepairable, ErrSegmentOrder, filepath.Base(s.path), sh.Number)
		}
		if any && dup {
			aside := s.path + ".duplicate"
			if err := os.Rename(s.path, aside); err != nil {
				return nil, fmt.Errorf("datasets: repair: %w", err)
			}
			os.Rename(filepath.Join(dir, indexName(s.num)), filepath.Join(dir, indexName(s.num))+".duplicate")
			rep.SetAside = append(rep.SetAside, aside)
			continue
		}
		var regs []repairRegion
		for _, rg := range s.regs {
			if !rg.Good {
				regs = append(regs, rg)
				lastGap, lastBad = false, true
				continue
			}
			if rg.Hdr.FirstSeq <= maxSeq {
				return nil, fmt.Errorf("%w: %w: %s:%d starts at seq %d, but %s already reached seq %d (overlapping segments)",
					ErrUnrepairable, ErrSegmentOrder, filepath.Base(s.path), rg.Off, rg.Hdr.FirstSeq, filepath.Base(maxFile), maxSeq)
			}
			explained := lastGap || lastBad || rg.firstKind == KindGap
			if rg.Hdr.FirstSeq != maxSeq+1 && !explained {
				what := fmt.Sprintf("%v: seq jumps from %d to %d", ErrMissingRecords, maxSeq, rg.Hdr.FirstSeq)
				prevNum := uint32(0)
				if si > 0 {
					prevNum = segs[si-1].num
				}
				if s.num > prevNum+1 {
					what += fmt.Sprintf(" (segments %s to %s are missing)", segmentName(prevNum+1), segmentName(s.num-1))
				}
				regs = append(regs, repairRegion{region: region{Off: rg.Off, End: rg.Off,
					Err: &CorruptionError{File: s.path, Offset: rg.Off, Err: errors.New(what)}}})
				s.damaged = true
			}
			regs = append(regs, rg)
			maxSeq, maxFile, lastGap, lastBad = rg.Hdr.LastSeq, s.path, rg.lastKind == KindGap, false
		}
		s.regs = regs
		out = append(out, s)
	}
	return out, nil
}

// indexEnd is the last record an index (stale or not) lists.
type indexEnd struct {
	seq  uint64
	wall int64
	ok   bool
}

// indexedEnds reads every index whose checksum holds, even one that no
// longer matches its segment, for the last record it lists: a finished
// segment's index still knows the blocks the segment lost.
func indexedEnds(dir string, segs []repairSeg) indexEnd {
	var end indexEnd
	names, _ := filepath.Glob(filepath.Join(dir, "*"+indexExt))
	for _, p := range names {
		base := strings.TrimSuffix(filepath.Base(p), indexExt)
		num, err := strconv.ParseUint(base, 10, 32)
		if err != nil || len(base) != nameDigits {
			continue
		}
		entries, err := readIndexAnySize(p, uint32(num))
		if err != nil || len(entries) == 0 {
			continue
		}
		e := entries[len(entries)-1]
		if e.LastSeq > end.seq {
			end = indexEnd{seq: e.LastSeq, wall: e.LastWall, ok: true}
		}
	}
	return end
}

// addTailRegion adds a zero-byte damaged region at the end of the last
// segment when records are missing after the last good one without any
// damaged bytes to show for it: an index lists later records, or the range
// of a closed dataset's manifest ends after the last record (and no loss
// record explains it).
func addTailRegion(segs []repairSeg, m Manifest, idx indexEnd) {
	if len(segs) == 0 {
		return
	}
	s := &segs[len(segs)-1]
	if n := len(s.regs); n > 0 && !s.regs[n-1].Good {
		return // a damaged tail is described from the same sources
	}
	var last *repairRegion
	for si := len(segs) - 1; si >= 0 && last == nil; si-- {
		for i := len(segs[si].regs) - 1; i >= 0; i-- {
			if segs[si].regs[i].Good {
				last = &segs[si].regs[i]
				break
			}
		}
	}
	if last == nil {
		return
	}
	var what string
	switch {
	case idx.ok && idx.seq > last.Hdr.LastSeq:
		what = fmt.Sprintf("%v: the indexes list records up to seq %d, the last one left is seq %d", ErrMissingRecords, idx.seq, last.Hdr.LastSeq)
	case (m.Clean || m.Recovered) && m.EndNs > last.Hdr.LastWall && last.lastKind != KindGap:
		what = fmt.Sprintf("%v: the manifest's range ends at %d, the last record left at %d", ErrMissingRecords, m.EndNs, last.Hdr.LastWall)
	default:
		return
	}
	s.regs = append(s.regs, repairRegion{region: region{Off: s.size, End: s.size,
		Err: &CorruptionError{File: s.path, Offset: s.size, Err: errors.New(what)}}})
	s.damaged = true
}

// describeTail says what a damaged run with nothing good after it lost,
// from every source: the block headers in it that still parse, the indexes
// and the manifest's range. lo is the first seq lost.
func describeTail(d *Dropped, path string, off, end int64, lo uint64, m Manifest, idx indexEnd) {
	n, _, last, toNs, exact := countTail(path, off, end)
	d.FirstSeq = lo
	d.ToNs = max(toNs, m.EndNs)
	switch {
	case idx.ok && idx.seq >= lo:
		// A finished segment's index lists every block it had.
		d.LastSeq, d.Records, d.RecordsKnown = idx.seq, idx.seq-lo+1, true
		d.ToNs = max(d.ToNs, idx.wall)
	case exact && n > 0 && last >= lo && (!m.Clean || toNs >= m.EndNs):
		// The damaged headers reach the end: of a crash (nothing was written
		// after the torn block) or of the range the writer closed.
		d.LastSeq, d.Records, d.RecordsKnown = last, last-lo+1, true
	case exact && n == 0 && end == off:
		d.Records, d.RecordsKnown = 0, !m.Clean && !m.Recovered
	default:
		d.Records, d.RecordsKnown = n, false
		if last >= lo {
			d.LastSeq = last
		}
	}
	if d.ToNs < d.FromNs {
		d.ToNs = d.FromNs
	}
}

// rebuildInfo gathers what a lost manifest can be rebuilt from.
type rebuildInfo struct {
	n                   int
	firstWall, firstMon int64
	url                 string
	frames              [][]byte
	assigned            bool
}

func (b *rebuildInfo) see(r *Record) {
	if b.n == 0 {
		b.firstWall, b.firstMon = r.WallNs, r.MonoNs
		b.assigned = r.Flags&FlagAssigned != 0
	}
	b.n++
	switch r.Kind {
	case KindConnect:
		if b.url == "" {
			if c, err := DecodeControl(r.Payload); err == nil {
				b.url = c.URL
			}
		}
	case KindFrame:
		if len(b.frames) < 64 {
			b.frames = append(b.frames, append([]byte(nil), r.Payload...))
		}
	}
}

// fill completes a rebuilt manifest with what the segments say, and lists
// what they cannot.
func (b *rebuildInfo) fill(m *Manifest, sniff func([][]byte) string, rep *RepairReport) {
	m.FormatVersion = FormatVersion
	if b.n > 0 {
		m.MonoBaseWallNs = b.firstWall - b.firstMon
		m.TimesAssigned = m.TimesAssigned || b.assigned
	}
	if m.Endpoint == "" {
		m.Endpoint = b.url
	}
	if m.Venue == "" && sniff != nil && len(b.frames) > 0 {
		m.Venue = sniff(b.frames)
	}
	for _, f := range []struct {
		name  string
		empty bool
	}{
		{"venue", m.Venue == ""}, {"endpoint", m.Endpoint == ""}, {"subscriptions", len(m.Subscriptions) == 0},
		{"instruments", len(m.Instruments) == 0}, {"tool_version", m.ToolVersion == ""}, {"host", m.Host == ""},
		{"clock_offset_ns", m.ClockOffsetNs == 0}, {"source", m.Source == ""}, {"notes", m.Notes == ""},
	} {
		if f.empty {
			rep.Unrecovered = append(rep.Unrecovered, f.name)
		}
	}
	if m.Notes == "" {
		m.Notes = "manifest rebuilt by repair from the segments; not recovered: " + strings.Join(rep.Unrecovered, ", ")
	}
}

// salvageManifest reads what it can of a corrupt manifest: the members that
// still decode (a bad checksum keeps them all, marked untrusted by the
// rebuild). A missing or unparsable one gives an empty manifest.
func salvageManifest(dir string) Manifest {
	var m Manifest
	b, err := readRegular(filepath.Join(dir, ManifestName), MaxManifestSize)
	if err == nil {
		_ = json.Unmarshal(b, &m) // partial on error: what decoded before it
	}
	// Clean and the range are recomputed; a damaged flag must not stand.
	m.Clean, m.Recovered, m.StartNs, m.EndNs = false, false, 0, 0
	return m
}

// nextGood returns the header of the first good block after region ri of
// segment si.
func nextGood(segs []repairSeg, si, ri int) (blockHeader, bool) {
	for ; si < len(segs); si, ri = si+1, -1 {
		for j := ri + 1; j < len(segs[si].regs); j++ {
			if segs[si].regs[j].Good {
				return segs[si].regs[j].Hdr, true
			}
		}
	}
	return blockHeader{}, false
}

type prevState struct {
	seq        uint64
	wall, mono int64
	ok         bool
}

// prevFor returns the last good record before segment si.
func prevFor(segs []repairSeg, si int) prevState {
	for i := si - 1; i >= 0; i-- {
		for j := len(segs[i].regs) - 1; j >= 0; j-- {
			if rg := segs[i].regs[j]; rg.Good {
				return prevState{seq: rg.Hdr.LastSeq, wall: rg.Hdr.LastWall, mono: rg.lastMono, ok: true}
			}
		}
	}
	return prevState{}
}

// countTail counts the records of a damaged run with no good block after
// it by following whatever block headers still parse.
func countTail(path string, off, end int64) (n, firstSeq, lastSeq uint64, toNs int64, exact bool) {
	f, err := openRegular(path)
	if err != nil {
		return 0, 0, 0, 0, false
	}
	defer f.Close()
	var hb [blockHeaderSize]byte
	for off < end {
		var h blockHeader
		if m, _ := f.ReadAt(hb[:], off); m != blockHeaderSize || h.unmarshal(hb[:]) != nil {
			return n, firstSeq, lastSeq, toNs, false
		}
		n += uint64(h.Count)
		if firstSeq == 0 {
			firstSeq = h.FirstSeq
		}
		lastSeq, toNs = h.LastSeq, h.LastWall
		off += blockHeaderSize + int64(h.CompLen)
	}
	return n, firstSeq, lastSeq, toNs, true
}

// blockEncoder seals single-record blocks for Repair.
type blockEncoder struct {
	b   blockBuilder
	out []byte
}

// rewriteSegment writes a new version of s without its damaged regions,
// putting a gap record in place of each non-tail one, and returns the new
// index entries.
func rewriteSegment(dir string, s *repairSeg, drops map[[2]int]*Dropped, si int, enc *blockEncoder,
	onGap func(d *Dropped, seq uint64, wall, mono int64), prev prevState) ([]indexEntry, int64, error) {
	src, err := openRegular(s.path)
	if err != nil {
		return nil, 0, fmt.Errorf("datasets: repair: %w", err)
	}
	defer src.Close()
	tmp := s.path + ".repair"
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("datasets: repair: %w", err)
	}
	fail := func(err error) ([]indexEntry, int64, error) {
		dst.Close()
		os.Remove(tmp)
		return nil, 0, fmt.Errorf("datasets: repair %s: %w", s.path, err)
	}
	var hb [segmentHeaderSize]byte
	sh := segmentHeader{Version: FormatVersion, Number: s.num}
	var dictBlock []byte
	if s.dict != nil {
		sh.DictCopies = maxDictCopies
		dictBlock = encodeDictBlock(nil, s.dict)
	}
	sh.marshal(&hb)
	if _, err := dst.Write(hb[:]); err != nil {
		return fail(err)
	}
	off := int64(segmentHeaderSize)
	for i := 0; i < int(sh.DictCopies); i++ {
		if _, err := dst.Write(dictBlock); err != nil {
			return fail(err)
		}
		off += int64(len(dictBlock))
	}
	var entries []indexEntry
	for ri, rg := range s.regs {
		if rg.Good {
			if _, err := io.Copy(dst, io.NewSectionReader(src, rg.Off, rg.End-rg.Off)); err != nil {
				return fail(err)
			}
			var e indexEntry
			e.fromHeader(off, &rg.Hdr)
			entries = append(entries, e)
			off += rg.End - rg.Off
			prev = prevState{seq: rg.Hdr.LastSeq, wall: rg.Hdr.LastWall, mono: rg.lastMono, ok: true}
			continue
		}
		d := drops[[2]int{si, ri}]
		if d == nil || d.FirstSeq == 0 || (d.RecordsKnown && d.Records == 0) {
			continue
		}
		wall, mono := d.ToNs, int64(0)
		if prev.ok {
			wall, mono = prev.wall, prev.mono
		}
		recs := fmt.Sprintf("%d records (seq %d..%d)", d.Records, d.FirstSeq, d.LastSeq)
		if !d.RecordsKnown {
			recs = fmt.Sprintf("at least %d records (from seq %d)", d.Records, d.FirstSeq)
		}
		c := Control{FromNs: d.FromNs, ToNs: d.ToNs, Dropped: d.Records,
			Text: fmt.Sprintf("repair: %s lost at %s:%d: %s", recs, filepath.Base(d.File), d.Offset, d.Reason)}
		r := Record{Kind: KindGap, Conn: ConnAll, WallNs: wall, MonoNs: mono, Payload: EncodeControl(c)}
		enc.b.add(&r, d.FirstSeq)
		var h blockHeader
		enc.out = enc.b.seal(nil, 0, enc.out, &h)
		if _, err := dst.Write(enc.out); err != nil {
			return fail(err)
		}
		var e indexEntry
		e.fromHeader(off, &h)
		entries = append(entries, e)
		off += int64(len(enc.out))
		onGap(d, d.FirstSeq, wall, mono)
		prev = prevState{seq: d.FirstSeq, wall: wall, mono: mono, ok: true}
	}
	if err := dst.Sync(); err != nil {
		return fail(err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return nil, 0, fmt.Errorf("datasets: repair %s: %w", s.path, err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		os.Remove(tmp)
		return nil, 0, fmt.Errorf("datasets: repair %s: %w", s.path, err)
	}
	if err := syncDir(dir); err != nil {
		return nil, 0, err
	}
	return entries, off, nil
}
