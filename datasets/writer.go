package datasets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Writer appends records to a new dataset. All methods are safe for
// concurrent use. Records are gathered into a block in memory; a block is
// sealed (compressed, checksummed, written to the OS) when it reaches the
// block size, at every flush interval, on rotation, Flush and Close.
//
// When a write fails (disk full), the sealed block is kept in memory and
// retried at the next seal; the writer stays usable. Append and Flush return
// the failure; once the backlog passes WithMaxPending, Append refuses frames
// (records that report a loss are still taken, up to lossSlack more bytes).
// If the disk is still full at Close, the writer frees its reserve file (see
// WithReserve) and writes one KindGap record (Conn ConnAll) in place of the
// records it could not write, so the dataset itself says what is missing.
type Writer struct {
	mu  sync.Mutex
	dir string
	man Manifest
	// lock is the exclusive flock on LockName, held from Create to Close.
	lock *os.File
	o    writerOptions
	enc  *zstd.Encoder

	b   blockBuilder // the open block
	out []byte       // the last sealed block, header + content

	recent     []byte // the last dictSize payload bytes sealed: the next segment's dictionary source
	dictActive bool   // enc holds the current segment's dictionary
	segStart   []byte // segment header + dictionary copies, reused

	seq        uint64 // last assigned
	segStarted bool   // a record has been assigned to the current segment
	segFirstNs int64  // WallNs of that record
	segBytes   int64  // bytes the current segment will hold once the queue drains
	rotateNext bool   // the next sealed block starts a new segment

	queue        []pendingBlock // sealed blocks not yet written, oldest first
	queueBytes   int
	openFrames   uint32 // KindFrame records in the open block
	openDropped  uint64 // frames the open block's loss records report dropped
	reserve      SegmentFile
	unwritten    uint64 // records given up at Close
	lastClose    []byte // payload of the last record appended when it is a KindCleanClose
	lastCloseRec Record
	seg          SegmentFile
	segNum       uint32
	segOff       int64 // bytes of the segment known good on disk
	segDirty     bool  // bytes past segOff may hold a partial write
	segIndex     []indexEntry
	segRaw       int64 // decoded bytes of the blocks written to the current segment
	written      WriterStats
	firstWallOut int64 // WallNs of the first record written
	lastWallOut  int64

	bgErr  error
	closed bool
	stop   chan struct{}
	done   chan struct{}

	compactWG   sync.WaitGroup
	compactSem  chan struct{} // one rewrite at a time
	compacted   atomic.Uint32
	compactFail atomic.Uint32
}

type pendingBlock struct {
	buf      []byte // header + content
	hdr      blockHeader
	newSeg   bool
	dict     []byte // for a block starting a segment: its dictionary block, if any
	ownedBuf bool   // buf is a copy (w.out is reused otherwise)
	frames   uint32 // KindFrame records among hdr.Count
	dropped  uint64 // frames the block's loss records report dropped
}

// WriterStats counts what a Writer has written to disk.
type WriterStats struct {
	Records   uint64 // records written (not counting pending ones)
	Blocks    uint64
	Segments  uint32
	RawBytes  uint64 // decoded block content written
	DiskBytes uint64 // segment bytes written, headers included
	Pending   int    // records accepted but not yet written
	// Compacted counts finished segments rewritten into larger blocks;
	// CompactFailures those left as written because the rewrite failed
	// (no data is lost either way).
	Compacted       uint32
	CompactFailures uint32
	// Unwritten counts records accepted but given up at Close because the
	// disk still refused them (a KindGap record covers them when it could
	// be written; Close's error says whether it was).
	Unwritten uint64
}

// ErrUnwritten reports records accepted but never written: Close gave up on
// them because writes still failed.
var ErrUnwritten = errors.New("datasets: records not written")

// ReserveName is the file a Writer keeps DefaultReserve (WithReserve) bytes
// in from Create to Close, to be freed if the disk is full at Close so that
// the record of the loss and the manifest can still be written. A killed
// writer leaves it behind; it holds no data and may be deleted.
const ReserveName = ".reserve"

// lossSlack is how far past WithMaxPending the backlog may grow with records
// that report a loss (gaps, overloads, write errors, disconnects): they are
// what makes a loss visible, and are small.
const lossSlack = 1 << 20

// Create makes dir (which must not hold a dataset yet) and writes m as its
// manifest. m.FormatVersion may be 0 (the current version is used); StartNs
// and EndNs are set from the records on Close.
func Create(dir string, m Manifest, opts ...WriterOption) (*Writer, error) {
	if IsRemote(dir) {
		return nil, fmt.Errorf("datasets: %s %s: needs a local directory (object stores are read, and written by uploads of finished datasets)", "create", dir)
	}
	o := defaultWriterOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if m.FormatVersion == 0 {
		m.FormatVersion = FormatVersion
	}
	if m.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%w: cannot write version %d", ErrVersion, m.FormatVersion)
	}
	m.Clean = false
	m.EndNs = 0
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("datasets: create: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestName)); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrExists, dir)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "*"+segmentExt)); len(segs) > 0 {
		return nil, fmt.Errorf("%w: %s holds segments", ErrExists, dir)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, man: m, o: o, rotateNext: true, compactSem: make(chan struct{}, 1), lock: lock}
	if o.level > 0 {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevel(o.level)),
			zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true))
		if err != nil {
			unlockDir(lock)
			return nil, fmt.Errorf("datasets: create encoder: %w", err)
		}
		w.enc = enc
	}
	if err := writeManifest(dir, m); err != nil {
		unlockDir(lock)
		return nil, err
	}
	w.reserve = makeReserve(dir, o)
	if o.flushInterval > 0 {
		w.stop = make(chan struct{})
		w.done = make(chan struct{})
		go w.ticker()
	}
	return w, nil
}

// makeReserve writes the reserve file, or returns nil when it cannot (the
// writer then works without one: a full disk at Close may leave the loss
// unrecorded, which Close reports).
func makeReserve(dir string, o writerOptions) SegmentFile {
	if o.reserve <= 0 {
		return nil
	}
	path := filepath.Join(dir, ReserveName)
	os.Remove(path) // left by a killed writer of an earlier attempt
	f, err := o.openFile(path)
	if err != nil {
		return nil
	}
	zero := make([]byte, 64<<10)
	for left := o.reserve; left > 0; {
		n, err := f.Write(zero[:min(left, int64(len(zero)))])
		left -= int64(n)
		if err != nil {
			f.Close()
			os.Remove(path)
			return nil
		}
	}
	return f
}

// releaseReserve frees the reserve's space (truncate first: that is what
// frees it even where a remove would not, such as a file still open).
func (w *Writer) releaseReserve() {
	if w.reserve == nil {
		return
	}
	w.reserve.Truncate(0)
	w.reserve.Close()
	os.Remove(filepath.Join(w.dir, ReserveName))
	w.reserve = nil
}

func (w *Writer) ticker() {
	defer close(w.done)
	t := time.NewTicker(w.o.flushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if err := w.seal(); err != nil && w.bgErr == nil {
				w.bgErr = err
			}
			w.mu.Unlock()
		}
	}
}

// Append adds a copy of r to the dataset, assigning r's Seq (strictly
// increasing, from 1); r.Seq on input is ignored and r is not modified.
// WallNs and MonoNs are the caller's.
//
// seq != 0 means the record was accepted; err may still be non-nil then,
// reporting a failed write of earlier data (kept and retried). seq == 0 means
// the record was not accepted (ErrClosed, ErrPayloadSize, ErrPendingFull).
// Past the backlog bound, records of a loss kind (Kind.IsLoss) and
// KindCleanClose are still accepted, up to lossSlack bytes more.
func (w *Writer) Append(r *Record) (seq uint64, err error) {
	if len(r.Payload) > MaxPayloadSize {
		return 0, fmt.Errorf("%w: %d bytes", ErrPayloadSize, len(r.Payload))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	if w.queueBytes > w.o.maxPending {
		if err := w.drain(); err != nil {
			loss := r.Kind.IsLoss() || r.Kind == KindCleanClose
			if !loss || w.queueBytes > w.o.maxPending+lossSlack {
				return 0, fmt.Errorf("%w: %w", ErrPendingFull, err)
			}
		}
	}
	var errs []error
	if w.bgErr != nil {
		errs = append(errs, w.bgErr)
		w.bgErr = nil
	}
	// Rotate before a record past the segment's time span, or once the sealed
	// blocks fill it (a segment exceeds its size by at most one block).
	if w.segStarted && (r.WallNs-w.segFirstNs >= int64(w.o.segDuration) || w.segBytes >= w.o.segSize) {
		if err := w.seal(); err != nil {
			errs = append(errs, err)
		}
		w.rotateNext = true
		w.segStarted = false
		w.segBytes = 0 // the new segment's; its header and dictionary are added when its first block is sealed
	}
	if !w.segStarted {
		w.segStarted = true
		w.segFirstNs = r.WallNs
	}
	w.seq++
	seq = w.seq
	w.b.add(r, seq)
	switch {
	case r.Kind == KindFrame:
		w.openFrames++
	case r.Kind.IsLoss():
		w.openDropped += droppedOf(r.Payload)
	}
	// The last record, if a clean close, is kept (rare, small): should Close
	// have to give up the backlog, the dataset still ends with it.
	w.lastClose = w.lastClose[:0]
	if r.Kind == KindCleanClose {
		w.lastClose = append(w.lastClose, r.Payload...)
		w.lastCloseRec = Record{Kind: r.Kind, Flags: r.Flags, Conn: r.Conn, WallNs: r.WallNs, MonoNs: r.MonoNs}
	}
	if w.b.size() >= w.o.blockSize {
		if err := w.seal(); err != nil {
			errs = append(errs, err)
		}
	}
	return seq, errors.Join(errs...)
}

var droppedKey = []byte(`"dropped":`)

// droppedOf reads Control.Dropped from a control payload without decoding
// it (Append does not allocate); 0 when absent or not a number.
func droppedOf(p []byte) uint64 {
	i := bytes.Index(p, droppedKey)
	if i < 0 {
		return 0
	}
	var v uint64
	for _, c := range p[i+len(droppedKey):] {
		if c < '0' || c > '9' || v > (1<<63)/10 {
			break
		}
		v = v*10 + uint64(c-'0')
	}
	return v
}

// seal turns the open block into a pending block and writes what it can.
func (w *Writer) seal() error {
	if w.b.n > 0 {
		var dictBlock []byte
		if w.rotateNext && w.enc != nil {
			var err error
			if dictBlock, err = w.newSegmentDict(); err != nil {
				return err
			}
		}
		w.remember(w.b.payload)
		var h blockHeader
		var flags uint8
		if w.dictActive {
			flags = blockFlagDict
		}
		w.out = w.b.seal(w.enc, flags, w.out, &h)
		w.queue = append(w.queue, pendingBlock{buf: w.out, hdr: h, newSeg: w.rotateNext, dict: dictBlock,
			frames: w.openFrames, dropped: w.openDropped})
		w.openFrames, w.openDropped = 0, 0
		w.queueBytes += len(w.out) + maxDictCopies*len(dictBlock)
		w.segBytes += int64(len(w.out))
		if w.rotateNext {
			w.segBytes = segmentHeaderSize + int64(len(w.out)+maxDictCopies*len(dictBlock))
		}
		w.rotateNext = false
	}
	err := w.drain()
	// A block left in the queue must not alias w.out, which the next seal reuses.
	for i := range w.queue {
		if !w.queue[i].ownedBuf {
			w.queue[i].buf = append([]byte(nil), w.queue[i].buf...)
			w.queue[i].ownedBuf = true
		}
	}
	return err
}

// minDictSize is the least payload worth a dictionary.
const minDictSize = 1 << 10

// newSegmentDict gives the encoder the dictionary of the segment the open
// block starts: the last dictSize bytes of payload including that block's.
// It returns the dictionary block to store, nil for none.
func (w *Writer) newSegmentDict() ([]byte, error) {
	n := w.o.dictSize
	src := append(w.recent, w.b.payload...) // may grow w.recent's array; it is rebuilt below
	if len(src) > n {
		src = src[len(src)-n:]
	}
	if len(src) < minDictSize || n == 0 {
		if w.dictActive {
			if err := w.enc.ResetWithOptions(nil, zstd.WithEncoderDictDelete()); err != nil {
				return nil, fmt.Errorf("datasets: reset encoder: %w", err)
			}
			w.dictActive = false
		}
		return nil, nil
	}
	// The encoder keeps the dictionary; it gets its own copy.
	dict := append([]byte(nil), src...)
	if w.dictActive {
		if err := w.enc.ResetWithOptions(nil, zstd.WithEncoderDictDelete()); err != nil {
			return nil, fmt.Errorf("datasets: reset encoder: %w", err)
		}
	}
	block := encodeDictBlock(w.enc, dict)
	if err := w.enc.ResetWithOptions(nil, zstd.WithEncoderDictRaw(dictID, dict)); err != nil {
		return nil, fmt.Errorf("datasets: set dictionary: %w", err)
	}
	w.dictActive = true
	return block, nil
}

// remember keeps the last dictSize bytes of sealed payload.
func (w *Writer) remember(p []byte) {
	n := w.o.dictSize
	if n == 0 || w.enc == nil {
		return
	}
	if len(p) >= n {
		w.recent = append(w.recent[:0], p[len(p)-n:]...)
		return
	}
	if keep := n - len(p); len(w.recent) > keep {
		w.recent = append(w.recent[:0], w.recent[len(w.recent)-keep:]...)
	}
	w.recent = append(w.recent, p...)
}

// drain writes queued blocks in order, stopping at the first failure.
func (w *Writer) drain() error {
	i := 0
	var err error
	for ; i < len(w.queue); i++ {
		if err = w.writeBlock(&w.queue[i]); err != nil {
			break
		}
		w.queueBytes -= len(w.queue[i].buf) + maxDictCopies*len(w.queue[i].dict)
	}
	n := copy(w.queue, w.queue[i:])
	clear(w.queue[n:])
	w.queue = w.queue[:n]
	return err
}

func (w *Writer) writeBlock(b *pendingBlock) error {
	if b.newSeg && w.seg != nil {
		if err := w.closeSegment(); err != nil {
			return err
		}
	}
	b.newSeg = false
	if w.seg == nil {
		if err := w.openSegment(); err != nil {
			return err
		}
	}
	if w.segDirty {
		if err := w.seg.Truncate(w.segOff); err != nil {
			return fmt.Errorf("datasets: undo partial write of %s: %w", segmentName(w.segNum), err)
		}
		if _, err := w.seg.Seek(w.segOff, io.SeekStart); err != nil {
			return fmt.Errorf("datasets: undo partial write of %s: %w", segmentName(w.segNum), err)
		}
		w.segDirty = false
	}
	if w.segOff == 0 {
		var hb [segmentHeaderSize]byte
		sh := segmentHeader{Version: FormatVersion, Number: w.segNum}
		if b.dict != nil {
			sh.DictCopies = maxDictCopies
		}
		sh.marshal(&hb)
		w.segStart = append(w.segStart[:0], hb[:]...)
		for i := 0; i < int(sh.DictCopies); i++ {
			w.segStart = append(w.segStart, b.dict...)
		}
		if n, err := w.seg.Write(w.segStart); err != nil || n != len(w.segStart) {
			w.segDirty = true
			return fmt.Errorf("datasets: write %s header: %w", segmentName(w.segNum), orShort(err))
		}
		w.segOff = int64(len(w.segStart))
		w.written.DiskBytes += uint64(len(w.segStart))
	}
	n, err := w.seg.Write(b.buf)
	if err != nil || n != len(b.buf) {
		w.segDirty = true
		return fmt.Errorf("datasets: write block to %s: %w", segmentName(w.segNum), orShort(err))
	}
	if w.o.fsync == FsyncBlock {
		if err := w.seg.Sync(); err != nil {
			return fmt.Errorf("datasets: sync %s: %w", segmentName(w.segNum), err)
		}
	}
	var e indexEntry
	e.fromHeader(w.segOff, &b.hdr)
	w.segIndex = append(w.segIndex, e)
	w.segRaw += int64(b.hdr.RawLen)
	w.segOff += int64(len(b.buf))
	w.written.Records += uint64(b.hdr.Count)
	w.written.Blocks++
	w.written.RawBytes += uint64(b.hdr.RawLen)
	w.written.DiskBytes += uint64(len(b.buf))
	if w.firstWallOut == 0 && w.written.Records == uint64(b.hdr.Count) {
		w.firstWallOut = b.hdr.FirstWall
	}
	w.lastWallOut = b.hdr.LastWall
	return nil
}

func orShort(err error) error {
	if err == nil {
		return io.ErrShortWrite
	}
	return err
}

func (w *Writer) openSegment() error {
	num := w.segNum + 1
	f, err := w.o.openFile(filepath.Join(w.dir, segmentName(num)))
	if err != nil {
		return fmt.Errorf("datasets: create segment: %w", err)
	}
	if w.segIndex == nil {
		// An hour of one block a second: no regrowth on the hot path in practice.
		w.segIndex = make([]indexEntry, 0, 4096)
	}
	w.seg, w.segNum, w.segOff, w.segDirty, w.segIndex, w.segRaw = f, num, 0, false, w.segIndex[:0], 0
	w.written.Segments++
	return nil
}

// closeSegment finishes the current segment: fsync (per policy), index.
// The index is an optimisation rebuilt when missing, so failing to write it
// is not an error.
func (w *Writer) closeSegment() error {
	var err error
	if w.segDirty {
		if terr := w.seg.Truncate(w.segOff); terr != nil {
			return fmt.Errorf("datasets: undo partial write of %s: %w", segmentName(w.segNum), terr)
		}
		w.segDirty = false
	}
	if w.o.fsync != FsyncNever {
		if serr := w.seg.Sync(); serr != nil {
			err = fmt.Errorf("datasets: sync %s: %w", segmentName(w.segNum), serr)
		}
	}
	if cerr := w.seg.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("datasets: close %s: %w", segmentName(w.segNum), cerr)
	}
	if w.segOff > 0 {
		_ = writeIndex(w.dir, w.segNum, w.segOff, w.segIndex, w.o.fsync != FsyncNever)
		// Worth a rewrite when the blocks are small on average (sealed by the
		// ticker, not by size).
		if n := int64(len(w.segIndex)); w.o.compact && n > 1 && w.segRaw/n < int64(w.o.blockSize)/2 {
			w.compactWG.Add(1)
			if w.closed {
				w.compact(w.segNum)
			} else {
				go w.compact(w.segNum)
			}
		} else if w.o.segmentDone != nil {
			w.o.segmentDone(w.segNum)
		}
	} else {
		os.Remove(filepath.Join(w.dir, segmentName(w.segNum)))
		w.segNum--
		w.written.Segments--
	}
	w.seg = nil
	if w.o.fsync != FsyncNever {
		if serr := syncDir(w.dir); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// compact rewrites finished segment num (see WithCompaction).
func (w *Writer) compact(num uint32) {
	defer w.compactWG.Done()
	w.compactSem <- struct{}{}
	defer func() { <-w.compactSem }()
	replaced, err := compactSegment(w.dir, num, w.o.blockSize, w.o.openFile, w.o.fsync != FsyncNever)
	switch {
	case err != nil:
		w.compactFail.Add(1)
	case replaced:
		w.compacted.Add(1)
	}
	if w.o.segmentDone != nil {
		w.o.segmentDone(num)
	}
}

// Flush seals the open block and writes every pending block to the OS
// (and fsyncs it under FsyncBlock). It returns the first write failure.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	err := w.seal()
	if w.bgErr != nil {
		err = errors.Join(w.bgErr, err)
		w.bgErr = nil
	}
	return err
}

// Stats returns counts of what has been written so far.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.written
	s.Compacted, s.CompactFailures = w.compacted.Load(), w.compactFail.Load()
	s.Pending = int(w.b.n)
	for _, b := range w.queue {
		s.Pending += int(b.hdr.Count)
	}
	s.Unwritten = w.unwritten
	return s
}

// Manifest returns the manifest as it will be written on Close.
func (w *Writer) Manifest() Manifest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.finalManifest()
}

func (w *Writer) finalManifest() Manifest {
	m := w.man
	if w.written.Records > 0 {
		m.StartNs = w.firstWallOut
		m.EndNs = w.lastWallOut
	}
	return m
}

// Close seals and writes everything pending, finishes the last segment
// (compacting it, see WithCompaction, and waiting for compactions still
// running) and rewrites the manifest with the time range and Clean set.
//
// If pending data cannot be written (the disk is still full), Close gives it
// up and frees the reserve file: in its place
// it writes one KindGap record (Conn ConnAll, Dropped = the records given up
// plus the frames their own loss records reported, FromNs..ToNs their receive
// times), so the dataset says what it is missing and its range covers it.
// The error then wraps ErrUnwritten and says how many records were not
// written and whether the gap record was; Stats().Unwritten has the count.
// The manifest stays unclean only if the loss could not be recorded.
// Close is idempotent after the first call returns.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	recorded := true // every loss is in the dataset
	if err := w.seal(); err != nil {
		// (A failure the ticker saw is this one, or one since overcome.) The
		// reserve's space is for the record of the loss, not for more data.
		w.releaseReserve()
		var gerr error
		gerr, recorded = w.giveUp(err)
		errs = append(errs, gerr)
	}
	if w.seg != nil {
		if err := w.closeSegment(); err != nil {
			errs = append(errs, err)
			recorded = false
		}
	}
	w.releaseReserve()
	w.compactWG.Wait()
	if w.enc != nil {
		w.enc.Close()
	}
	m := w.finalManifest()
	m.Clean = recorded
	if err := writeManifest(w.dir, m); err != nil {
		errs = append(errs, err)
	}
	unlockDir(w.lock)
	return errors.Join(errs...)
}

// giveUp drops the blocks that could not be written (err says why) and
// writes one KindGap record in their place, uncompressed, in a block of its
// own after the last written one. It returns the error for Close, wrapping
// ErrUnwritten, and whether the gap record reached the disk.
func (w *Writer) giveUp(err error) (error, bool) {
	var recs, frames, dropped uint64
	first, last := w.queue[0].hdr, w.queue[len(w.queue)-1].hdr
	for _, b := range w.queue {
		recs += uint64(b.hdr.Count)
		frames += uint64(b.frames)
		dropped += b.dropped
	}
	clear(w.queue)
	w.queue, w.queueBytes = w.queue[:0], 0
	w.unwritten = recs
	text := fmt.Sprintf("%d records (%d frames, %d others) accepted but not written: the disk still refused them at close (seq %d..%d)",
		recs, frames, recs-frames, first.FirstSeq, last.LastSeq)
	if dropped > 0 {
		text += fmt.Sprintf("; their loss records reported %d more frames dropped", dropped)
	}
	// Dropped counts the frames missing: those not written and those the
	// unwritten loss records would have reported.
	c := Control{Dropped: frames + dropped, FromNs: first.FirstWall, ToNs: last.LastWall, Err: err.Error(), Text: text}
	w.seq++
	var b blockBuilder
	b.add(&Record{Kind: KindGap, Conn: ConnAll, WallNs: last.LastWall, MonoNs: w.b.lastMono, Payload: EncodeControl(c)}, w.seq)
	if len(w.lastClose) > 0 {
		// The clean close the writer's owner ended with still ends the
		// dataset, after the gap (its own seq is among those given up).
		cc := w.lastCloseRec
		cc.Payload = w.lastClose
		w.seq++
		b.add(&cc, w.seq)
	}
	pb := pendingBlock{ownedBuf: true}
	pb.buf = b.seal(nil, 0, nil, &pb.hdr)
	msg := fmt.Errorf("%w: %d records (%d frames, seq %d..%d) given up at close: %w", ErrUnwritten, recs, frames, first.FirstSeq, last.LastSeq, err)
	if werr := w.writeBlock(&pb); werr != nil {
		return fmt.Errorf("%w; the gap record covering them could not be written either: %w", msg, werr), false
	}
	return fmt.Errorf("%w; a gap record in the dataset covers them", msg), true
}
