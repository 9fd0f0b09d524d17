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
	comp, raw []byte
	rawBuf    []byte // owns raw's array at full capacity (raw's is capped per block)

	dict []byte // the segment's dictionary, nil if none

	blockColumns
	i, n       int
	payOff     int
	seq        uint64
	wall, mono int64
}

// blockColumns are a decoded block's columns, sliced from its content by
// parseColumns.
type blockColumns struct {
	cSeq, cWall, cMono, cLen, cConn, cKind, cFlags, pay []byte
}

// Decoders and block buffers outlive readers: a replay opening many
// datasets (or Inspect walking a catalog) reuses them instead of allocating
// megabytes per Open. Pooled decoders hold no dictionary.
var (
	decoderPool sync.Pool // *zstd.Decoder
	compPool    sync.Pool // *[]byte, stored block contents
	rawPool     sync.Pool // *[]byte, decoded block contents
)

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
	s.blockColumns = blockColumns{}
	s.i, s.n = 0, 0
}

// reset points s at r, whose next byte is at offset off of file and whose
// last is before end (-1: unknown). A known end lets a damaged length be
// caught before anything is allocated for it.
func (s *segmentReader) reset(r io.Reader, file string, off, end int64) {
	s.r, s.file, s.off, s.end = r, file, off, end
	s.i, s.n = 0, 0
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
	s.i, s.n = 0, 0
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

// parseColumns slices the decoded content into columns and checks framing:
// lengths add up to the payload section, sequence numbers increase and the
// first/last values match the header.
func (s *segmentReader) parseColumns() error {
	n := int(s.h.Count)
	b := s.raw
	s.cSeq, b = b[:8*n], b[8*n:]
	s.cWall, b = b[:8*n], b[8*n:]
	s.cMono, b = b[:8*n], b[8*n:]
	s.cLen, b = b[:4*n], b[4*n:]
	s.cConn, b = b[:4*n], b[4*n:]
	s.cKind, b = b[:n], b[n:]
	s.cFlags, s.pay = b[:n], b[n:]
	var total uint64
	seq, wall := s.h.FirstSeq, s.h.FirstWall
	for i := 0; i < n; i++ {
		total += uint64(binary.LittleEndian.Uint32(s.cLen[4*i:]))
		d := binary.LittleEndian.Uint64(s.cSeq[8*i:])
		if (i == 0) != (d == 0) {
			return s.corrupt(s.blockOff, "%w: record %d has seq delta %d", ErrFraming, i, d)
		}
		seq += d
		wall += int64(binary.LittleEndian.Uint64(s.cWall[8*i:]))
	}
	if total != uint64(len(s.pay)) {
		return s.corrupt(s.blockOff, "%w: record lengths add up to %d, payload section holds %d", ErrFraming, total, len(s.pay))
	}
	if seq != s.h.LastSeq || wall != s.h.LastWall {
		return s.corrupt(s.blockOff, "%w: last record seq %d wall %d, header says %d and %d", ErrFraming, seq, wall, s.h.LastSeq, s.h.LastWall)
	}
	s.startColumns()
	return nil
}

// startColumns positions s before the first record of the block whose
// columns (checked by parseColumns) s holds.
func (s *segmentReader) startColumns() {
	s.i, s.n, s.payOff = 0, int(s.h.Count), 0
	s.seq, s.wall, s.mono = s.h.FirstSeq, s.h.FirstWall, 0
}

// nextRecord fills rec with the next record of the current block; false when
// the block is exhausted. rec.Payload aliases s's buffer.
func (s *segmentReader) nextRecord(rec *Record) bool {
	if s.i >= s.n {
		return false
	}
	i := s.i
	s.seq += binary.LittleEndian.Uint64(s.cSeq[8*i:])
	s.wall += int64(binary.LittleEndian.Uint64(s.cWall[8*i:]))
	s.mono += int64(binary.LittleEndian.Uint64(s.cMono[8*i:]))
	l := int(binary.LittleEndian.Uint32(s.cLen[4*i:]))
	rec.Kind = Kind(s.cKind[i])
	rec.Flags = s.cFlags[i]
	rec.Conn = binary.LittleEndian.Uint32(s.cConn[4*i:])
	rec.Seq, rec.WallNs, rec.MonoNs = s.seq, s.wall, s.mono
	rec.Payload = s.pay[s.payOff : s.payOff+l : s.payOff+l]
	s.payOff += l
	s.i++
	return true
}
