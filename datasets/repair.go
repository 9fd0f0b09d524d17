package datasets

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	RecordsExact   bool      `json:"records_exact"` // every Dropped has RecordsKnown
	IndexesWritten []string  `json:"indexes_written,omitempty"`
	RemovedFiles   []string  `json:"removed_files,omitempty"`
	// StartNs and EndNs are the manifest's time range after repair;
	// ManifestFixed says whether it had to change.
	StartNs       int64 `json:"start_ns"`
	EndNs         int64 `json:"end_ns"`
	ManifestFixed bool  `json:"manifest_fixed"`
}

// Changed reports whether Repair modified anything.
func (r *RepairReport) Changed() bool {
	return len(r.Dropped) > 0 || len(r.IndexesWritten) > 0 || len(r.RemovedFiles) > 0 || r.ManifestFixed
}

type repairRegion struct {
	region
	lastMono int64 // of a good block's last record
}

type repairSeg struct {
	segmentInfo
	dict    []byte // the segment's dictionary, if one copy was intact
	size    int64
	regs    []repairRegion
	damaged bool
}

// Repair makes a damaged dataset readable again. A torn tail of the last
// segment is cut off at the last good block. Damage elsewhere (a bad block,
// a bad segment header) is cut out and replaced by one KindGap record with
// Conn == ConnAll whose Control gives the lost time range and record count,
// so the loss stays explicit and sequence numbers stay strictly increasing.
// Missing or stale indexes are rewritten and the manifest's StartNs/EndNs
// set from the records. Every file is replaced atomically. Running Repair on
// a sound dataset changes nothing. While a Writer has the dataset open,
// Repair refuses with ErrLocked.
func Repair(dir string) (*RepairReport, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("datasets: repair: %w", err)
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
	rep := &RepairReport{Dir: dir, Dropped: []Dropped{}, RecordsExact: true}
	// Leftovers of an interrupted rewrite: the originals are intact.
	for _, pat := range []string{"*" + segmentExt + compactExt, "*" + segmentExt + ".repair", "*.tmp"} {
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
	for i := range infos {
		s := &segs[i]
		s.segmentInfo = infos[i]
		s.size, err = walkSegment(s.path, &sr, func(reg *region, sr *segmentReader) error {
			rr := repairRegion{region: *reg}
			if reg.Good && reg.Dict {
				return nil // rewritten from s.dict
			}
			if reg.Good {
				for sr.nextRecord(&rec) {
					rr.lastMono = rec.MonoNs
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
			if prev.ok {
				d.FromNs = prev.wall
			}
			switch {
			case nextOK:
				d.ToNs = next.FirstWall
				lo := uint64(1)
				if prev.ok {
					lo = prev.seq + 1
				}
				if next.FirstSeq > lo {
					d.FirstSeq, d.LastSeq = lo, next.FirstSeq-1
					d.Records = d.LastSeq - d.FirstSeq + 1
				}
				d.RecordsKnown = true
			default:
				d.Tail = si == len(segs)-1
				d.Records, d.FirstSeq, d.LastSeq, d.ToNs, d.RecordsKnown = countTail(segs[si].path, rg.Off, rg.End)
			}
			drops[[2]int{si, ri}] = d
		}
	}

	// Rewrite each damaged segment; write indexes that are missing or stale.
	var enc blockEncoder
	prev = goodRef{}
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
			if _, err := readIndex(dir, s.num, s.size); err == nil {
				continue
			}
		}
		if err := writeIndex(dir, s.num, size, entries, true); err != nil {
			return nil, fmt.Errorf("datasets: repair: %w", err)
		}
		rep.IndexesWritten = append(rep.IndexesWritten, filepath.Join(dir, indexName(s.num)))
	}

	if haveAny && (m.StartNs != firstWall || m.EndNs != lastWall) {
		m.StartNs, m.EndNs = firstWall, lastWall
		if err := writeManifest(dir, m); err != nil {
			return nil, fmt.Errorf("datasets: repair: %w", err)
		}
		rep.ManifestFixed = true
	}
	rep.StartNs, rep.EndNs = m.StartNs, m.EndNs
	return rep, nil
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
	f, err := os.Open(path)
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
	src, err := os.Open(s.path)
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
		if d == nil || d.Tail || d.Records == 0 || d.FirstSeq == 0 {
			continue
		}
		wall, mono := d.ToNs, int64(0)
		if prev.ok {
			wall, mono = prev.wall, prev.mono
		}
		c := Control{FromNs: d.FromNs, ToNs: d.ToNs, Dropped: d.Records,
			Text: fmt.Sprintf("repair: %d records (seq %d..%d) lost to damage at %s:%d: %s", d.Records, d.FirstSeq, d.LastSeq, filepath.Base(d.File), d.Offset, d.Reason)}
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
