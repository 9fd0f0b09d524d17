package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// ReaderOption configures Open.
type ReaderOption func(*readerOptions)

type readerOptions struct {
	strict      bool
	allKinds    bool
	skipDamaged bool
	untilNs     int64 // read-ahead stops after the block reaching it; 0: none
	store       Store
	readAhead   int
}

// WithReadUntil tells the reader that nothing at or after wallNs will be
// read: a remote store's read-ahead stops after the block that reaches it,
// so a window costs about its own blocks. Next still goes on past it (with
// reads on demand).
func WithReadUntil(wallNs int64) ReaderOption { return func(o *readerOptions) { o.untilNs = wallNs } }

// WithStore makes Open read the dataset through st instead of opening the
// store of its location.
func WithStore(st Store) ReaderOption { return func(o *readerOptions) { o.store = st } }

// WithStrict makes a torn tail an error (*CorruptionError) even when the
// manifest says the writer did not close cleanly. By default the reader
// stops there cleanly and reports the skipped bytes through Truncated.
func WithStrict() ReaderOption { return func(o *readerOptions) { o.strict = true } }

// WithAllKinds makes the reader return records of kinds this build does not
// know instead of skipping them.
func WithAllKinds() ReaderOption { return func(o *readerOptions) { o.allKinds = true } }

// Truncation describes a torn tail a reader stopped at.
type Truncation struct {
	File   string // segment path
	Offset int64  // offset of the first byte not read
	Bytes  int64  // bytes from Offset to the end of File
	Err    error  // what was wrong there
}

// MarshalJSON encodes t as {"file","offset","bytes","error"}.
func (t *Truncation) MarshalJSON() ([]byte, error) {
	msg := ""
	if t.Err != nil {
		msg = t.Err.Error()
	}
	return json.Marshal(struct {
		File   string `json:"file"`
		Offset int64  `json:"offset"`
		Bytes  int64  `json:"bytes"`
		Err    string `json:"error"`
	}{t.File, t.Offset, t.Bytes, msg})
}

// knownKinds marks the kinds this build knows; the reader skips the others.
var knownKinds = func() (k [256]bool) {
	for kind := range kindNames {
		k[kind] = true
	}
	return k
}()

// String describes what was skipped: file, bytes, offset and why.
func (t *Truncation) String() string {
	return fmt.Sprintf("torn tail in %s: %d bytes from offset %d skipped (%v)", t.File, t.Bytes, t.Offset, t.Err)
}

type segmentInfo struct {
	num     uint32
	name    string // file name in the store
	path    string // st.Join(name), for messages
	size    int64
	entries []indexEntry // nil until loaded
	loaded  bool
	damage  *CorruptionError // from a header scan, if any
}

// Reader iterates over the records of a dataset in sequence order. It is not
// safe for concurrent use. It reads the segments that existed at Open, each
// as it is when the reader reaches it: a live writer's new segments are not
// seen. Damage stops it: Err returns a *CorruptionError
// (sticky), except at the torn tail of an unclean dataset's last segment,
// where it stops cleanly and Truncated says what was skipped.
type Reader struct {
	dir  string
	st   Store
	man  Manifest
	o    readerOptions
	segs []segmentInfo
	si   int // index into segs of the open segment
	f    File
	sr   segmentReader
	rec  Record

	seekNs  int64 // skip records with WallNs < seekNs in the current block
	seeking bool
	changed bool // openSegment found a segment rewritten since it was listed
	skipped uint64
	trunc   *Truncation
	err     error
	done    bool

	// Continuity from one block to the next (checkBlock).
	lastOK    bool   // the fields below describe the last block read
	fromStart bool   // nothing read yet since Open: the first seq is 1
	lastSeq   uint64 // of the last block's last record
	lastWall  int64
	lastGap   bool // that record is a gap record (a seq jump after it is explained)
	lastFile  string
	tailDone  bool // missingTail ran

	pend   *pendingDamage // damage waiting for the next good block
	damage []Damage
	gapBuf []byte

	// Read-ahead (WithReadAhead): the goroutine of the open segment, if
	// running, and the block slots it fills.
	ra     readAhead
	raOn   bool
	raPast bool // read-ahead reached WithReadUntil's time: reads on demand from there
	slots  []aheadBlock
}

// Open opens the dataset at location (a directory, or a URL of a
// registered scheme such as s3://bucket/prefix) for reading. It reads the
// manifest and lists the segments; blocks are read as Next advances.
func Open(location string, opts ...ReaderOption) (*Reader, error) {
	r := &Reader{dir: location, fromStart: true}
	for _, opt := range opts {
		opt(&r.o)
	}
	r.st = r.o.store
	if r.st == nil {
		var err error
		if r.st, err = OpenStore(location); err != nil {
			return nil, err
		}
	}
	m, err := readManifestIn(r.st)
	if err != nil {
		return nil, err
	}
	r.man = m
	if r.segs, err = listSegmentsIn(r.st); err != nil {
		return nil, err
	}
	r.si = -1
	return r, nil
}

// Fetched returns the bytes read from the dataset's files so far: for a
// remote store, the bytes fetched over the network.
func (r *Reader) Fetched() int64 { return r.st.Fetched() }

func listSegments(dir string) ([]segmentInfo, error) { return listSegmentsIn(NewLocalStore(dir)) }

func listSegmentsIn(st Store) ([]segmentInfo, error) {
	ents, err := st.List()
	if err != nil {
		return nil, fmt.Errorf("datasets: list segments of %s: %w", st.Location(), err)
	}
	var segs []segmentInfo
	for _, e := range ents {
		name := e.Name
		base, ok := strings.CutSuffix(name, segmentExt)
		if !ok || len(base) != nameDigits {
			continue
		}
		num, err := strconv.ParseUint(base, 10, 32)
		if err != nil {
			continue
		}
		segs = append(segs, segmentInfo{num: uint32(num), name: name, path: st.Join(name), size: e.Size})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].num < segs[j].num })
	return segs, nil
}

// Manifest returns the dataset's manifest as read by Open.
func (r *Reader) Manifest() Manifest { return r.man }

// Next advances to the next record, skipping kinds this build does not know
// (unless WithAllKinds). It returns false at the end or on error.
func (r *Reader) Next() bool {
	for !r.done && r.err == nil {
		if r.sr.nextRecord(&r.rec) {
			if r.seeking {
				if r.rec.WallNs < r.seekNs {
					continue
				}
				r.seeking = false
			}
			if !r.o.allKinds && !knownKinds[r.rec.Kind] {
				r.skipped++
				continue
			}
			return true
		}
		r.seeking = r.seeking && r.f != nil && len(r.sr.recs) == 0 // only the first block after Seek is filtered
		if r.f == nil {
			if !r.openSegment(r.si+1, 0) {
				return r.done && r.err == nil && (r.endDamage() || r.missingTail())
			}
			continue
		}
		err := r.nextBlock()
		if err == io.EOF {
			r.closeFile()
			continue
		}
		if err == nil {
			if r.checkBlock() {
				return true // a gap record standing for what was lost
			}
			continue
		}
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			r.err = err
			return false
		}
		if !r.damaged(ce) {
			return r.done && r.err == nil && r.endDamage()
		}
	}
	return false
}

// nextBlock decodes the next block of the open segment into r.sr: taken
// from read-ahead when it runs (starting it when it can), read here
// otherwise and where read-ahead stopped.
func (r *Reader) nextBlock() error {
	if !r.raOn && r.readAheadFrom() {
		r.startReadAhead()
	}
	if r.raOn {
		ok, err := r.nextAheadBlock()
		if !ok && err != nil {
			return fmt.Errorf("datasets: seek %s: %w", r.sr.file, err)
		}
		if ok {
			if err != nil {
				// Framing damage in an intact block: go on from where the
				// stream would be without read-ahead, just after it.
				r.stopReadAhead()
				if _, serr := r.f.Seek(r.sr.off, io.SeekStart); serr != nil {
					return fmt.Errorf("datasets: seek %s: %w", r.sr.file, serr)
				}
				r.sr.reset(r.f, r.sr.file, r.sr.off, r.sr.end)
			}
			return err
		}
	}
	return r.sr.nextBlock()
}

// openSegment opens segs[i] positioned at off (0 = after checking its header).
func (r *Reader) openSegment(i int, off int64) bool {
	r.closeFile()
	if i >= len(r.segs) {
		r.done = true
		return false
	}
	r.si = i
	s := &r.segs[i]
	f, err := r.st.Open(s.name)
	if err != nil {
		r.err = fmt.Errorf("datasets: open segment: %w", err)
		return false
	}
	r.f = f
	// A segment grows while it is written and shrinks when it is compacted:
	// read it as it is now. Offsets into a rewritten one are void.
	if size, err := f.Size(); err == nil && size != s.size {
		s.size = size
		if s.loaded {
			s.entries, s.damage, s.loaded = nil, nil, false
			if off > 0 {
				r.changed = true
				r.closeFile()
				return false
			}
		}
	}
	if p, ok := f.(ReadPlanner); ok {
		r.plan(p, i, off)
	}
	// The header and dictionary are read even when seeking into the middle.
	r.sr.reset(f, s.path, 0, s.size)
	sh, err := r.sr.readSegmentHeader()
	if err != nil {
		// The stream cannot step over a first dictionary copy whose header
		// is damaged; the file can: look for the other copy.
		dataOff, ok := recoverDict(f, s.size, sh, &r.sr)
		if !ok {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				r.err = err
				return false
			}
			r.sr.reset(f, s.path, 0, s.size)
			return r.damaged(ce)
		}
		if off < dataOff {
			off = dataOff
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			r.err = fmt.Errorf("datasets: seek %s: %w", s.path, err)
			return false
		}
		r.sr.reset(f, s.path, off, s.size)
		return true
	}
	if sh.Number != s.num {
		r.err = &CorruptionError{File: s.path, Err: fmt.Errorf("%w: segment header says segment %d, the file name %d",
			ErrSegmentOrder, sh.Number, s.num)}
		return false
	}
	if off > r.sr.off {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			r.err = fmt.Errorf("datasets: seek %s: %w", s.path, err)
			return false
		}
		r.sr.reset(f, s.path, off, s.size)
	}
	return true
}

func (r *Reader) tornTail(si int) bool {
	return !r.man.Clean && !r.man.Recovered && si == len(r.segs)-1
}

func (r *Reader) closeFile() {
	r.stopReadAhead()
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	r.sr.recs, r.sr.i = nil, 0
}

// Record returns the current record, borrowed until the next call to Next,
// SeekTime or Close; its Payload aliases the reader's buffer.
func (r *Reader) Record() *Record { return &r.rec }

// Err returns the error that stopped the reader; nil at a clean end,
// including a tolerated torn tail (see Truncated).
func (r *Reader) Err() error { return r.err }

// Truncated returns the torn tail the reader stopped at, or nil.
func (r *Reader) Truncated() *Truncation { return r.trunc }

// SkippedUnknown returns how many records of unknown kinds were skipped.
func (r *Reader) SkippedUnknown() uint64 { return r.skipped }

// SeekTime positions the reader so that Next returns the first record with
// WallNs >= wallNs. It finds the block through the segment indexes (rebuilt
// from block headers when missing or stale) and decompresses only that
// block. (It is not named Seek because io.Seeker's signature owns that name.)
// Wall time is assumed non-decreasing across blocks; seeking past the
// end makes Next return false.
func (r *Reader) SeekTime(wallNs int64) error {
	if r.err != nil {
		return r.err
	}
	// A segment rewritten since its index was read (compaction) moves its
	// blocks; openSegment notices and the search runs again.
	for attempt := 0; ; attempt++ {
		r.closeFile()
		r.done, r.trunc, r.seeking, r.changed, r.raPast = false, nil, false, false, false
		r.lastOK, r.fromStart, r.pend = false, false, nil
		i, off, found, err := r.locate(wallNs)
		if err != nil {
			r.err = err
			return err
		}
		if !found {
			r.si = len(r.segs)
			r.done = true
			return nil
		}
		if r.openSegment(i, off) {
			r.seekNs, r.seeking = wallNs, true
			return nil
		}
		if !r.changed || attempt == 2 {
			return r.err
		}
	}
}

// locate finds the segment and offset where a seek to wallNs starts
// reading; found is false past the end.
func (r *Reader) locate(wallNs int64) (seg int, off int64, found bool, err error) {
	for i := range r.segs {
		if err := r.loadIndex(i); err != nil {
			return 0, 0, false, err
		}
		s := &r.segs[i]
		j := sort.Search(len(s.entries), func(k int) bool { return s.entries[k].LastWall >= wallNs })
		if j < len(s.entries) {
			return i, s.entries[j].Offset, true, nil
		}
		if s.damage != nil {
			// Nothing is known past the damage; reading from there reports it.
			return i, s.damage.Offset, true, nil
		}
	}
	return 0, 0, false, nil
}

// loadIndex fills segs[i].entries from its index file or, when that is
// missing or stale, from a scan of its block headers.
func (r *Reader) loadIndex(i int) error {
	s := &r.segs[i]
	if s.loaded {
		return nil
	}
	if e, err := readIndexIn(r.st, s.num, s.size); err == nil {
		s.entries, s.loaded = e, true
		return nil
	}
	res, err := scanSegmentIn(r.st, s.name)
	if err != nil {
		return err
	}
	s.entries, s.damage, s.loaded = res.entries, res.damage, true
	return nil
}

// plan tells a reading-ahead file of segment i which bytes a read from off
// needs: the header and dictionaries, then the blocks from off up to the
// one that reaches the until bound (WithReadUntil), from the index.
func (r *Reader) plan(p ReadPlanner, i int, off int64) {
	s := &r.segs[i]
	if r.loadIndex(i) != nil || len(s.entries) == 0 {
		p.PlanReads([]Range{{0, s.size}})
		return
	}
	first := s.entries[0].Offset
	ranges := []Range{{0, first}}
	if off < first {
		off = first
	}
	end := s.size
	if s.damage != nil {
		end = s.size // what follows the damage is read to step over it
	}
	if u := r.o.untilNs; u != 0 {
		j := sort.Search(len(s.entries), func(k int) bool { return s.entries[k].LastWall >= u })
		if j < len(s.entries) && s.damage == nil {
			end = s.entries[j].end()
		}
	}
	if off < end {
		ranges = append(ranges, Range{off, end})
	}
	p.PlanReads(ranges)
}

// Close releases the reader's file and decoder.
func (r *Reader) Close() error {
	r.closeFile()
	r.done = true
	r.sr.release()
	r.releaseSlots()
	return nil
}

// recoverDict loads a segment's dictionary from its second copy when the
// first copy's header is damaged (so a stream cannot step over it), and
// returns the offset of the first block of records. The copies are
// identical, so the second starts one copy-length after the header; ok is
// false when that does not hold or no copy is intact.
func recoverDict(f io.ReaderAt, size int64, sh segmentHeader, sr *segmentReader) (dataOff int64, ok bool) {
	if sh.Version == 0 || sh.DictCopies < 2 {
		return 0, false
	}
	at := resync(f, segmentHeaderSize+1, size)
	if at >= size {
		return 0, false
	}
	sr.reset(io.NewSectionReader(f, at, size-at), sr.file, at, size)
	if sr.readBlockContent() != nil || sr.h.Type != blockTypeDict {
		return 0, false
	}
	copyLen := blockHeaderSize + int64(sr.h.CompLen)
	if at != segmentHeaderSize+copyLen || sr.decodeContent(false) != nil || sr.setDict(append([]byte(nil), sr.raw...)) != nil {
		return 0, false
	}
	return segmentHeaderSize + int64(sh.DictCopies)*copyLen, true
}
