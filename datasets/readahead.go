package datasets

import "io"

// DefaultReadAhead is the number of blocks WithReadAhead(-1) keeps in
// flight: enough to ride out a slow read, few enough that a reader holds at
// most a few block buffers (DefaultBlockSize each, decoded) beyond its own.
const DefaultReadAhead = 3

// WithReadAhead makes the reader read, check and decompress the next n
// blocks of a segment on a second goroutine while the caller consumes the
// current one (n < 0: DefaultReadAhead; 0: none, the default). The
// framing of each block is checked and its record headers unpacked there
// too, so Next only copies one. Memory stays bounded: n block buffers (and
// their record arrays, at most about 1.5x a block's decoded size), reused block
// after block, no allocation per block in steady state. What the reader returns is the same record for
// record as without it, damage and its reports included: read-ahead stops
// at the first block that is not intact and the reader reads that one
// itself, as it would have (read-ahead then resumes after it). Close (or
// reading to the end) stops the goroutine.
func WithReadAhead(n int) ReaderOption {
	return func(o *readerOptions) {
		if n < 0 {
			n = DefaultReadAhead
		}
		o.readAhead = n
	}
}

// aheadBlock is one block read ahead: where it was and what it holds, or
// the reason read-ahead stopped there (err: io.EOF, damage, an I/O error,
// a block that is not records).
type aheadBlock struct {
	h          blockHeader
	blockOff   int64 // offset of its header
	next       int64 // offset just past it
	comp, raw  []byte
	rawBuf     []byte // owns raw's array when the block was compressed
	err        error
	notRecords bool
	// cols and colErr: the block's columns and the framing check of them
	// (parseColumns), done here so the consumer only takes them.
	cols    blockColumns
	colErr  error
	recsBuf []packedRecord // owns cols.recs' array
	// last: read-ahead stopped after this block, the stream just past it
	// (WithReadUntil: the block reaches the end of what will be read).
	last bool
}

// readAhead runs one segment's read-ahead goroutine: it reads blocks on
// from the segment file's position (the stream the reader would read;
// a remote file's own planned read-ahead feeds it), and hands them over in
// order through full; the consumer gives each back through
// free once its records are no longer borrowed. The slots are the reader's
// and outlive one readAhead.
type readAhead struct {
	full, free chan *aheadBlock
	stop, done chan struct{}
	cur        *aheadBlock // handed to the consumer, not yet given back
}

// startReadAhead starts reading ahead from s's position in the segment
// file. The file, s's decoder and its dictionary are lent to the goroutine
// until stopReadAhead: nothing else reads them meanwhile.
func (r *Reader) startReadAhead() bool {
	s := &r.sr
	if s.dec == nil {
		dec, err := newDecoder()
		if err != nil {
			return false
		}
		s.dec = dec
	}
	n := r.o.readAhead
	if len(r.slots) < n {
		r.slots = make([]aheadBlock, n)
	}
	ra := &r.ra
	ra.full = make(chan *aheadBlock, n)
	ra.free = make(chan *aheadBlock, n)
	ra.stop = make(chan struct{})
	ra.done = make(chan struct{})
	ra.cur = nil
	for i := range r.slots[:n] {
		ra.free <- &r.slots[i]
	}
	w := segmentReader{r: s.r, file: s.file, off: s.off, end: s.end, dec: s.dec, dict: s.dict}
	go ra.run(w, r.o.untilNs)
	r.raOn = true
	return true
}

func (ra *readAhead) run(w segmentReader, untilNs int64) {
	defer close(ra.done)
	for {
		var b *aheadBlock
		select {
		case b = <-ra.free:
		case <-ra.stop:
			return
		}
		// The sequential code, on the slot's buffers.
		w.comp, w.rawBuf, w.recsBuf = b.comp, b.rawBuf, b.recsBuf
		err := w.readBlockContent()
		b.notRecords = err == nil && w.h.Type != blockTypeRecords
		if err == nil && !b.notRecords {
			err = w.decodeContent(w.h.Flags&blockFlagDict != 0)
		}
		b.cols, b.colErr = blockColumns{}, nil
		if err == nil && !b.notRecords {
			b.colErr = w.parseColumns()
			b.cols = w.blockColumns
		}
		b.h, b.blockOff, b.next, b.err = w.h, w.blockOff, w.off, err
		b.comp, b.rawBuf, b.raw, b.recsBuf = w.comp, w.rawBuf, w.raw, w.recsBuf
		// Nothing past untilNs will be read: reading on would fetch blocks
		// (from a remote store) that nobody wants.
		b.last = err == nil && !b.notRecords && untilNs != 0 && w.h.LastWall >= untilNs
		ra.full <- b // never blocks: there are as many places as slots
		if err != nil || b.notRecords || b.last || b.colErr != nil {
			// (The consumer stops read-ahead at a framing error and reads
			// on itself from just past the block.)
			return
		}
	}
}

// nextAheadBlock takes the next block from read-ahead into r.sr, as
// nextBlock would have decoded it. ok is false when read-ahead ended at
// this block: it is stopped and the stream repositioned at the block, which
// the caller then reads itself.
func (r *Reader) nextAheadBlock() (ok bool, err error) {
	ra := &r.ra
	if ra.cur != nil {
		last := ra.cur.last
		ra.free <- ra.cur
		ra.cur = nil
		if last {
			// The goroutine ended after that block; the stream is just
			// past it, where the caller reads on.
			r.stopReadAhead()
			r.raPast = true
			return false, nil
		}
	}
	b := <-ra.full
	if b.err != nil || b.notRecords {
		at := b.blockOff
		r.stopReadAhead()
		if _, err := r.f.Seek(at, io.SeekStart); err != nil {
			return false, err
		}
		r.sr.reset(r.f, r.sr.file, at, r.sr.end)
		return false, nil
	}
	ra.cur = b
	s := &r.sr
	s.i, s.recs = 0, nil
	s.h, s.blockOff, s.off, s.raw = b.h, b.blockOff, b.next, b.raw
	if b.colErr != nil {
		return true, b.colErr
	}
	s.blockColumns = b.cols
	return true, nil
}

// stopReadAhead stops the goroutine and waits for it: the decoder is the
// reader's again and every slot idle.
func (r *Reader) stopReadAhead() {
	if !r.raOn {
		return
	}
	ra := &r.ra
	close(ra.stop)
	<-ra.done
	ra.cur = nil
	r.raOn = false
}

// releaseSlots returns the read-ahead buffers to the pools.
func (r *Reader) releaseSlots() {
	for i := range r.slots {
		b := &r.slots[i]
		putBuffer(&rawPool, b.rawBuf)
		putBuffer(&compPool, b.comp)
		putRecords(b.recsBuf)
		*b = aheadBlock{}
	}
}

// readAheadFrom says whether blocks can be read ahead from the stream's
// position: the stream is the segment file itself (not a recovery view).
func (r *Reader) readAheadFrom() bool {
	return r.o.readAhead > 0 && !r.raPast && r.f != nil && r.sr.r == io.Reader(r.f) && r.sr.end > r.sr.off
}
