package datasets

import (
	"errors"
	"fmt"
	"path/filepath"
)

// Problem is one thing Verify found wrong, located by file and byte offset
// (the block's offset for a record-level problem).
type Problem struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Seq    uint64 `json:"seq,omitempty"` // the record concerned, 0 if none
	What   string `json:"problem"`
}

// String formats the problem as FILE:OFFSET[: seq N]: what.
func (p Problem) String() string {
	if p.Seq != 0 {
		return fmt.Sprintf("%s:%d: seq %d: %s", p.File, p.Offset, p.Seq, p.What)
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Offset, p.What)
}

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Dir      string    `json:"dir"`
	Segments int       `json:"segments"`
	Blocks   uint64    `json:"blocks"`
	Records  uint64    `json:"records"`
	Problems []Problem `json:"problems"` // damage and inconsistencies; empty when OK
	// Warnings do not make the dataset invalid: a missing or stale index
	// (rebuilt on read), records of kinds this build does not know.
	Warnings []Problem `json:"warnings,omitempty"`
}

// OK reports whether Verify found no problem.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// Verify reads every block of the dataset in dir and checks: segment and
// block headers, both checksums of every block, record framing, sequence
// numbers strictly increasing across the dataset, monotonic receive times
// never going backwards, segment numbering, indexes and the manifest's time
// range. It reads past damage to report everything. The error is non-nil
// only when the dataset cannot be examined (no manifest, I/O failure).
func Verify(dir string) (*VerifyReport, error) {
	st, err := OpenStore(dir)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{Dir: dir, Problems: []Problem{}}
	mpath := st.Join(ManifestName)
	m, err := readManifestIn(st)
	if err != nil {
		var ce *CorruptionError
		if !errors.As(err, &ce) && !errors.Is(err, ErrVersion) {
			return nil, err
		}
		rep.Problems = append(rep.Problems, Problem{File: mpath, What: err.Error()})
	} else if m.unsummed {
		// Every writer since the checksum exists writes one: it was removed
		// (an edit), or the manifest predates it. Either way nothing says
		// its range and flags are the writer's. A warning, not a problem:
		// datasets of before the checksum stay valid (testdata/v1).
		rep.Warnings = append(rep.Warnings, Problem{File: mpath, What: "manifest: no checksum member, its fields cannot be checked (removed by an edit, or written before manifests had one); \"replay repair\" rewrites it with one"})
	}
	segs, err := listSegmentsIn(st)
	if err != nil {
		return nil, err
	}
	rep.Segments = len(segs)
	var (
		sr                 segmentReader
		rec                Record
		lastSeq            uint64
		lastMono           int64
		haveRec            bool
		firstWall, endWall int64
		gapFrom, gapTo     int64 // the range gap records cover
	)
	defer func() {
		sr.release()
	}()
	explained := false // the last record was a gap record, or damage came after it: a seq jump is accounted for
	prevNum := uint32(0)
	for _, s := range segs {
		if want := prevNum + 1; s.num != want {
			// Whether records are missing is what the seq check says; a
			// repaired dataset keeps its numbers with a gap record.
			rep.Warnings = append(rep.Warnings, Problem{File: s.path, What: fmt.Sprintf("segment number %d, expected %d (a segment file is missing)", s.num, want)})
		}
		prevNum = s.num
		if sh, err := readSegmentHeaderIn(st, s.name); err == nil && sh.Number != s.num {
			rep.Problems = append(rep.Problems, Problem{File: s.path, What: fmt.Sprintf("segment header says segment %d", sh.Number)})
		}
		var entries []indexEntry
		damaged := false
		size, err := walkSegmentIn(st, s.name, &sr, func(reg *region, sr *segmentReader) error {
			if !reg.Good {
				damaged = true
				explained = true
				what := reg.Err.Err.Error()
				if reg.HdrOK {
					what += fmt.Sprintf(" (block of %d records, seq %d..%d, lost)", reg.Hdr.Count, reg.Hdr.FirstSeq, reg.Hdr.LastSeq)
				}
				what += fmt.Sprintf("; %d bytes unreadable", reg.End-reg.Off)
				rep.Problems = append(rep.Problems, Problem{File: s.path, Offset: reg.Off, What: what})
				return nil
			}
			if reg.Dict {
				return nil
			}
			var e indexEntry
			e.fromHeader(reg.Off, &reg.Hdr)
			entries = append(entries, e)
			rep.Blocks++
			for sr.nextRecord(&rec) {
				rep.Records++
				if !haveRec && rec.Seq != 1 && !explained && rec.Kind != KindGap {
					rep.Problems = append(rep.Problems, Problem{File: s.path, Offset: reg.Off, Seq: rec.Seq,
						What: fmt.Sprintf("%v: the first record is seq %d, not 1, with no gap record", ErrMissingRecords, rec.Seq)})
				}
				if haveRec && rec.Seq > lastSeq+1 && !explained && rec.Kind != KindGap {
					rep.Problems = append(rep.Problems, Problem{File: s.path, Offset: reg.Off, Seq: rec.Seq,
						What: fmt.Sprintf("%v: seq jumps from %d to %d with no gap record", ErrMissingRecords, lastSeq, rec.Seq)})
				}
				explained = rec.Kind == KindGap
				if haveRec && rec.Seq <= lastSeq {
					rep.Problems = append(rep.Problems, Problem{File: s.path, Offset: reg.Off, Seq: rec.Seq,
						What: fmt.Sprintf("%v: after seq %d", ErrSeqOrder, lastSeq)})
				}
				if haveRec && rec.MonoNs < lastMono {
					rep.Problems = append(rep.Problems, Problem{File: s.path, Offset: reg.Off, Seq: rec.Seq,
						What: fmt.Sprintf("%v: mono %d ns after %d ns", ErrTimeBackwards, rec.MonoNs, lastMono)})
				}
				if !knownKinds[rec.Kind] {
					rep.Warnings = append(rep.Warnings, Problem{File: s.path, Offset: reg.Off, Seq: rec.Seq, What: "unknown record kind " + rec.Kind.String()})
				}
				if !haveRec {
					firstWall = rec.WallNs
				}
				if rec.Kind == KindGap {
					if c, err := DecodeControl(rec.Payload); err == nil {
						if c.FromNs != 0 && (gapFrom == 0 || c.FromNs < gapFrom) {
							gapFrom = c.FromNs
						}
						gapTo = max(gapTo, c.ToNs)
					}
				}
				haveRec, lastSeq, lastMono, endWall = true, rec.Seq, rec.MonoNs, rec.WallNs
			}
			return nil
		})
		if err != nil {
			// A segment that cannot be read (permissions, I/O error) is a
			// problem of the dataset like damage: its records are unreadable.
			rep.Problems = append(rep.Problems, Problem{File: s.path, What: fmt.Sprintf("segment unreadable: %v", err)})
			continue
		}
		if idx, err := readIndexIn(st, s.num, size); err != nil {
			rep.Warnings = append(rep.Warnings, Problem{File: st.Join(indexName(s.num)), What: "index missing or stale (rebuilt on read; repair rewrites it)"})
		} else if !damaged && !sameEntries(idx, entries) {
			rep.Problems = append(rep.Problems, Problem{File: st.Join(indexName(s.num)), What: "index disagrees with the block headers"})
		}
	}
	if haveRec && (m.Clean || m.Recovered) && len(rep.Problems) == 0 {
		// The range is the records', widened only as far as gap records
		// say records were lost.
		lo, hi := firstWall, max(endWall, gapTo)
		if gapFrom != 0 {
			lo = min(lo, gapFrom)
		}
		if m.StartNs < lo || m.StartNs > firstWall || m.EndNs < endWall || m.EndNs > hi {
			what := fmt.Sprintf("manifest time range %d..%d, records span %d..%d", m.StartNs, m.EndNs, firstWall, endWall)
			if m.EndNs > hi {
				what = fmt.Sprintf("%v: %s (what came after the last record is missing: a segment file removed?)", ErrMissingRecords, what)
			}
			rep.Problems = append(rep.Problems, Problem{File: mpath, What: what})
		}
	}
	return rep, nil
}

func sameEntries(a, b []indexEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// readSegmentHeaderAt parses the header of the segment file at path.
func readSegmentHeaderAt(path string) (segmentHeader, error) {
	return readSegmentHeaderIn(NewLocalStore(filepath.Dir(path)), filepath.Base(path))
}

// readSegmentHeaderIn parses the header of segment file name of st.
func readSegmentHeaderIn(st Store, name string) (segmentHeader, error) {
	var sh segmentHeader
	f, err := st.Open(name)
	if err != nil {
		return sh, err
	}
	defer f.Close()
	var b [segmentHeaderSize]byte
	n, _ := f.ReadAt(b[:], 0)
	return sh, sh.unmarshal(b[:n])
}
