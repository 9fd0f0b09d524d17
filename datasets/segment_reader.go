package datasets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// segmentReader decodes the blocks of one segment from a stream. It owns its
// buffers and reuses them block after block; records it fills alias them.
type segmentReader struct {
	r    io.Reader
	file string
	off  int64 // offset in file of the next unread byte
	end  int64 // size of file, -1 if unknown
	dec  *zstd.Decoder

	hdrBuf    [blockHeaderSize]byte // fixed array: a slice would escape per block
	h         blockHeader
	blockOff  int64
	refetched int64 // 1 + the offset of the block last read again (Refetcher)
	comp, raw []byte
	rawBuf    []byte // owns raw's array at full capacity (raw's is capped per block)

	dict []byte // the segment's dictionary, nil if none

	blockColumns
	recsBuf []packedRecord // owns the array parseColumns fills (recs may be read-ahead's)
	i       int
}

// blockColumns is a checked block's records (parseColumns): each record's
// header values, absolute, and the payload section its payloads alias.
type blockColumns struct {
	recs []packedRecord
	pay  []byte
}

// packedRecord is one record's header, read from the block's columns into
// one place: a record is then one load from one array, not a delta from
// each of seven columns.
type packedRecord struct {
	seq         uint64
	wall, mono  int64
	off, len    uint32 // of its payload in the payload section
	conn        uint32
	kind, flags uint8
}

// Decoders and block buffers outlive readers: a replay opening many
// datasets (or Inspect walking a catalog) reuses them instead of allocating
// megabytes per Open. Pooled decoders hold no dictionary.
var (
	decoderPool sync.Pool // *zstd.Decoder
	compPool    sync.Pool // *[]byte, stored block contents
	rawPool     sync.Pool // *[]byte, decoded block contents
	recsPool    sync.Pool // *[]packedRecord, a block's records
)

// getRecords returns a record array of capacity at least n from the pool.
func getRecords(n int) []packedRecord {
	if p, ok := recsPool.Get().(*[]packedRecord); ok && cap(*p) >= n {
		return (*p)[:cap(*p)]
	}
	// Headroom, as for block buffers: the next block holds a few more.
	return make([]packedRecord, n+n/4+64)
}

func putRecords(r []packedRecord) {
	if cap(r) > 0 {
		recsPool.Put(&r)
	}
}

func newDecoder() (*zstd.Decoder, error) {
	if d, ok := decoderPool.Get().(*zstd.Decoder); ok {
		return d, nil
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxBlockSize),
		zstd.WithDecodeAllCapLimit(true), zstd.IgnoreChecksum(true))
	if err != nil {
		return nil, fmt.Errorf("datasets: create decoder: %w", err)
	}
	return d, nil
}

// getBuffer returns an empty buffer of capacity at least n from pool.
func getBuffer(pool *sync.Pool, n int) []byte {
	if p, ok := pool.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	// Blocks vary in size by a few bytes; headroom stops regrowth at each.
	return make([]byte, 0, (n+n/4+64<<10)&^(64<<10-1))
}

func putBuffer(pool *sync.Pool, b []byte) {
	if cap(b) > 0 && cap(b) <= MaxBlockSize+decodeSlack {
		pool.Put(&b)
	}
}

// release returns s's decoder and buffers to the pools; s stays usable.
func (s *segmentReader) release() {
	if s.dec != nil {
		if s.dict == nil || s.dec.ResetWithOptions(nil, zstd.WithDecoderDictDelete(dictID)) == nil {
			decoderPool.Put(s.dec)
		} else {
			s.dec.Close()
		}
		s.dec, s.dict = nil, nil
	}
	putBuffer(&rawPool, s.rawBuf)
	putBuffer(&compPool, s.comp)
	s.raw, s.rawBuf, s.comp = nil, nil, nil
	putRecords(s.recsBuf)
	s.blockColumns, s.recsBuf = blockColumns{}, nil
	s.i, s.recs = 0, nil
}

// reset points s at r, whose next byte is at offset off of file and whose
// last is before end (-1: unknown). A known end lets a damaged length be
// caught before anything is allocated for it.
func (s *segmentReader) reset(r io.Reader, file string, off, end int64) {
	s.r, s.file, s.off, s.end = r, file, off, end
	s.i, s.recs = 0, nil
	s.refetched = 0
}

// refetch reads the current block again when s reads a Refetcher (a file
// fetched over a network), once per block: a block that fails its checksum
// may have been damaged on the way, which is not damage of the dataset.
// It reports whether the stream is back at the block's start.
func (s *segmentReader) refetch() bool {
	rf, ok := s.r.(Refetcher)
	sk, ok2 := s.r.(io.Seeker)
	if !ok || !ok2 || s.refetched == s.blockOff+1 {
		return false
	}
	s.refetched = s.blockOff + 1
	rf.Refetch(s.blockOff, max(s.off, s.blockOff+blockHeaderSize))
	if _, err := sk.Seek(s.blockOff, io.SeekStart); err != nil {
		return false
	}
	s.off = s.blockOff
	return true
}

func (s *segmentReader) corrupt(off int64, format string, a ...any) error {
	return &CorruptionError{File: s.file, Offset: off, Err: fmt.Errorf(format, a...)}
}

// readSegmentHeader reads and checks the file header and the dictionary
// blocks after it, and loads the segment's dictionary; s must be at offset 0.
// One intact dictionary copy is enough.
func (s *segmentReader) readSegmentHeader() (segmentHeader, error) {
	var h segmentHeader
	b := s.hdrBuf[:segmentHeaderSize]
	n, err := io.ReadFull(s.r, b)
	s.off += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return h, s.corrupt(0, "segment header: %w (%d of %d bytes)", ErrTruncated, n, segmentHeaderSize)
		}
		return h, fmt.Errorf("datasets: read %s: %w", s.file, err)
	}
	if err := h.unmarshal(b); err != nil {
		return h, s.corrupt(0, "segment header: %w", err)
	}
	if err := s.setDict(nil); err != nil {
		return h, err
	}
	// The copies are identical, so once one is read the others are skipped
	// by length; Verify checks them.
	var firstErr error
	copyLen := int64(0)
	for i := 0; i < int(h.DictCopies); i++ {
		if s.dict != nil {
			n, err := io.CopyN(io.Discard, s.r, copyLen)
			s.off += n
			if err != nil {
				if errors.Is(err, io.EOF) {
					return h, s.corrupt(s.off, "%w: dictionary copy %d of %d cut short", ErrTruncated, i+1, h.DictCopies)
				}
				return h, fmt.Errorf("datasets: read %s at %d: %w", s.file, s.off, err)
			}
			continue
		}
		err := s.readBlockContent()
		if err == io.EOF {
			return h, s.corrupt(s.blockOff, "%w: dictionary copy %d of %d missing", ErrTruncated, i+1, h.DictCopies)
		}
		if err == nil && s.h.Type != blockTypeDict {
			return h, s.corrupt(s.blockOff, "%w: block type %d where dictionary copy %d belongs", ErrBadHeader, s.h.Type, i+1)
		}
		if s.h.CompLen == 0 || errors.Is(err, ErrTruncated) {
			return h, err // a damaged header (length unknown), or the end of the input
		}
		copyLen = blockHeaderSize + int64(s.h.CompLen)
		if err == nil {
			err = s.decodeContent(false)
		}
		if err == nil {
			err = s.setDict(append([]byte(nil), s.raw...))
		}
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				return h, err
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if h.DictCopies > 0 && s.dict == nil {
		return h, firstErr
	}
	return h, nil
}

// setDict makes d the dictionary for the blocks that follow (nil: none).
func (s *segmentReader) setDict(d []byte) error {
	if d == nil && s.dict == nil {
		return nil
	}
	if s.dec == nil {
		var err error
		if s.dec, err = newDecoder(); err != nil {
			return err
		}
	}
	opts := []zstd.DOption{zstd.WithDecoderDictDelete(dictID)}
	if d != nil {
		opts = append(opts, zstd.WithDecoderDictRaw(dictID, d))
	}
	if err := s.dec.ResetWithOptions(nil, opts...); err != nil {
		return fmt.Errorf("datasets: set dictionary: %w", err)
	}
	s.dict = d
	return nil
}

// nextBlock reads, checks and decodes the next block of records. It returns
// io.EOF at a clean end (no byte of a further block), *CorruptionError for
// damage, or a wrapped I/O error of the underlying reader.
func (s *segmentReader) nextBlock() error {
	s.i, s.recs = 0, nil
	if err := s.readBlockContent(); err != nil {
		return err
	}
	if s.h.Type != blockTypeRecords {
		return s.corrupt(s.blockOff, "%w: block type %d among records", ErrBadHeader, s.h.Type)
	}
	if err := s.decodeContent(s.h.Flags&blockFlagDict != 0); err != nil {
		return err
	}
	return s.parseColumns()
}

// readBlockContent reads the next block's header and stored content and
// checks the content checksum.
func (s *segmentReader) readBlockContent() error {
	s.blockOff = s.off
	s.h = blockHeader{}
	n, err := io.ReadFull(s.r, s.hdrBuf[:])
	s.off += int64(n)
	if err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return s.corrupt(s.blockOff, "%w: %d of %d header bytes", ErrTruncated, n, blockHeaderSize)
		}
		return fmt.Errorf("datasets: read %s at %d: %w", s.file, s.off, err)
	}
	h := &s.h
	if err := h.unmarshal(s.hdrBuf[:]); err != nil {
		*h = blockHeader{}
		if s.refetch() {
			return s.readBlockContent()
		}
		return s.corrupt(s.blockOff, "block header: %w", err)
	}
	if s.end >= 0 && int64(h.CompLen) > s.end-s.off {
		return s.corrupt(s.blockOff, "%w: %d content bytes, %d left in the file", ErrTruncated, h.CompLen, s.end-s.off)
	}
	if cap(s.comp) < int(h.CompLen) {
		putBuffer(&compPool, s.comp)
		s.comp = getBuffer(&compPool, int(h.CompLen))
	}
	s.comp = s.comp[:h.CompLen]
	n, err = io.ReadFull(s.r, s.comp)
	s.off += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return s.corrupt(s.blockOff, "%w: %d of %d content bytes", ErrTruncated, n, h.CompLen)
		}
		return fmt.Errorf("datasets: read %s at %d: %w", s.file, s.off, err)
	}
	if crc32c(s.comp) != h.CompCRC {
		if s.refetch() {
			return s.readBlockContent()
		}
		return s.corrupt(s.blockOff, "block content: %w", ErrChecksum)
	}
	return nil
}

// decodeContent decompresses s.comp into s.raw and checks its length and
// checksum. withDict says the block was compressed with the dictionary.
func (s *segmentReader) decodeContent(withDict bool) error {
	h := &s.h
	if withDict && s.dict == nil {
		return s.corrupt(s.blockOff, "%w: block needs the segment dictionary, which is missing", ErrBadHeader)
	}
	var err error
	switch h.Codec {
	case codecRaw:
		s.raw = s.comp
	case codecZstd:
		if s.dec == nil {
			if s.dec, err = newDecoder(); err != nil {
				return err
			}
		}
		// Slack past RawLen lets zstd's assembly use its fast over-copying
		// loops; the output is still checked against RawLen below.
		want := int(h.RawLen) + decodeSlack
		if cap(s.rawBuf) < want {
			putBuffer(&rawPool, s.rawBuf)
			s.rawBuf = getBuffer(&rawPool, want)
		}
		s.raw, err = s.dec.DecodeAll(s.comp, s.rawBuf[:0:want])
		if err != nil {
			return s.corrupt(s.blockOff, "block content: zstd: %w", err)
		}
	}
	if len(s.raw) != int(h.RawLen) {
		return s.corrupt(s.blockOff, "%w: decoded %d bytes, header says %d", ErrFraming, len(s.raw), h.RawLen)
	}
	if crc32c(s.raw) != h.RawCRC {
		return s.corrupt(s.blockOff, "decoded content: %w", ErrChecksum)
	}
	return nil
}

// decodeSlack is zstd's largest block (128 KiB) plus its over-copy margin.
const decodeSlack = 128<<10 + 64

// parseColumns reads the decoded content's columns into records and checks
// framing: lengths add up to the payload section, sequence numbers increase
// and the first/last values match the header.
func (s *segmentReader) parseColumns() error {
	s.blockColumns, s.i = blockColumns{}, 0 // nothing of the last block, whatever the outcome
	n := int(s.h.Count)
	b := s.raw
	cSeq, b := b[:8*n], b[8*n:]
	cWall, b := b[:8*n], b[8*n:]
	cMono, b := b[:8*n], b[8*n:]
	cLen, b := b[:4*n], b[4*n:]
	cConn, b := b[:4*n], b[4*n:]
	cKind, b := b[:n], b[n:]
	cFlags, pay := b[:n], b[n:]
	if cap(s.recsBuf) < n {
		putRecords(s.recsBuf)
		s.recsBuf = getRecords(n)
	}
	recs := s.recsBuf[:n]
	var total uint64
	seq, wall, mono := s.h.FirstSeq, s.h.FirstWall, int64(0)
	for i := range recs {
		l := binary.LittleEndian.Uint32(cLen[4*i:])
		d := binary.LittleEndian.Uint64(cSeq[8*i:])
		if (i == 0) != (d == 0) {
			return s.corrupt(s.blockOff, "%w: record %d has seq delta %d", ErrFraming, i, d)
		}
		seq += d
		wall += int64(binary.LittleEndian.Uint64(cWall[8*i:]))
		mono += int64(binary.LittleEndian.Uint64(cMono[8*i:]))
		// An offset past 4 GiB is wrong and caught below: the payload
		// section is at most MaxBlockSize.
		recs[i] = packedRecord{seq: seq, wall: wall, mono: mono, off: uint32(total), len: l,
			conn: binary.LittleEndian.Uint32(cConn[4*i:]), kind: cKind[i], flags: cFlags[i]}
		total += uint64(l)
	}
	if total != uint64(len(pay)) {
		return s.corrupt(s.blockOff, "%w: record lengths add up to %d, payload section holds %d", ErrFraming, total, len(pay))
	}
	if seq != s.h.LastSeq || wall != s.h.LastWall {
		return s.corrupt(s.blockOff, "%w: last record seq %d wall %d, header says %d and %d", ErrFraming, seq, wall, s.h.LastSeq, s.h.LastWall)
	}
	s.blockColumns = blockColumns{recs: recs, pay: pay}
	s.i = 0
	return nil
}

// nextRecord fills rec with the next record of the current block; false when
// the block is exhausted. rec.Payload aliases s's buffer.
func (s *segmentReader) nextRecord(rec *Record) bool {
	if s.i >= len(s.recs) {
		return false
	}
	p := &s.recs[s.i]
	s.i++
	rec.Kind, rec.Flags, rec.Conn = Kind(p.kind), p.flags, p.conn
	rec.Seq, rec.WallNs, rec.MonoNs = p.seq, p.wall, p.mono
	end := uint64(p.off) + uint64(p.len)
	rec.Payload = s.pay[p.off:end:end]
	return true
}
