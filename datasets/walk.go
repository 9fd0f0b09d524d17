package datasets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// region is a stretch of a segment file as walkSegment found it: one good
// block, or a damaged run of bytes up to the next good block (or EOF).
type region struct {
	Off, End int64
	Good     bool
	Dict     bool        // a dictionary block (good) rather than records
	Hdr      blockHeader // the block's header; for damage, valid if HdrOK
	HdrOK    bool
	Err      *CorruptionError // for damage
}

// walkSegment reads every block of the segment at path, calling fn for each
// good block (with sr positioned on its records; nil for a dictionary block)
// and for each damaged region. After damage it resynchronises on the next
// block whose header and content checksums hold, so damage in one block
// costs only that block. A damaged segment header is a region [0, 32); the
// first intact dictionary copy serves the blocks after it. fn may stop the
// walk by returning an error, which walkSegment returns. sr.dict holds the
// segment's dictionary afterwards (nil if none was found).
func walkSegment(path string, sr *segmentReader, fn func(reg *region, sr *segmentReader) error) (size int64, err error) {
	return walkSegmentIn(NewLocalStore(filepath.Dir(path)), filepath.Base(path), sr, fn)
}

func walkSegmentIn(store Store, name string, sr *segmentReader, fn func(reg *region, sr *segmentReader) error) (size int64, err error) {
	path := store.Join(name)
	f, err := store.Open(name)
	if err != nil {
		return 0, fmt.Errorf("datasets: open segment: %w", err)
	}
	defer f.Close()
	size, err = f.Size()
	if err != nil {
		return 0, fmt.Errorf("datasets: stat segment: %w", err)
	}
	if p, ok := f.(ReadPlanner); ok {
		p.PlanReads([]Range{{0, size}})
	}
	if err := sr.setDict(nil); err != nil {
		return size, err
	}
	var sh segmentHeader
	var hb [segmentHeaderSize]byte
	n, _ := f.ReadAt(hb[:], 0)
	off := int64(segmentHeaderSize)
	herr := sh.unmarshal(hb[:n])
	if herr == nil && sh.DictCopies > 0 && size == off {
		// Cut right after the header: the promised dictionary is missing.
		ce := &CorruptionError{File: path, Offset: off, Err: fmt.Errorf("%w: dictionary copies missing", ErrTruncated)}
		if err := fn(&region{Off: off, End: off, Err: ce}, nil); err != nil {
			return size, err
		}
	}
	if herr != nil {
		if n < segmentHeaderSize {
			herr = fmt.Errorf("%w: %d of %d bytes", ErrTruncated, n, segmentHeaderSize)
		}
		if size < off {
			off = size
		}
		ce := &CorruptionError{File: path, Offset: 0, Err: fmt.Errorf("segment header: %w", herr)}
		if err := fn(&region{Off: 0, End: off, Err: ce}, nil); err != nil {
			return size, err
		}
	}
	for off < size {
		sr.reset(io.NewSectionReader(f, off, size-off), path, off, size)
		err := sr.readBlockContent()
		if err == nil {
			if sr.h.Type == blockTypeDict {
				if sr.dict == nil {
					err = sr.decodeContent(false)
					if err == nil {
						err = sr.setDict(append([]byte(nil), sr.raw...))
					}
				}
				if err == nil {
					if err := fn(&region{Off: off, End: sr.off, Good: true, Dict: true, Hdr: sr.h, HdrOK: true}, nil); err != nil {
						return size, err
					}
					off = sr.off
					continue
				}
			} else {
				err = sr.decodeContent(sr.h.Flags&blockFlagDict != 0)
				if err == nil {
					err = sr.parseColumns()
				}
				if err == nil {
					if err := fn(&region{Off: off, End: sr.off, Good: true, Hdr: sr.h, HdrOK: true}, sr); err != nil {
						return size, err
					}
					off = sr.off
					continue
				}
			}
		}
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			return size, err
		}
		reg := &region{Off: off, Err: ce}
		var buf [blockHeaderSize]byte
		if n, _ := f.ReadAt(buf[:], off); n == blockHeaderSize && reg.Hdr.unmarshal(buf[:]) == nil {
			reg.HdrOK = true
			reg.Dict = reg.Hdr.Type == blockTypeDict
		}
		reg.End = resync(f, off+1, size)
		if err := fn(reg, nil); err != nil {
			return size, err
		}
		off = reg.End
	}
	return size, nil
}

// resync returns the offset of the first block at or after from whose
// header and content checksums hold, or size if there is none.
func resync(f io.ReaderAt, from, size int64) int64 {
	const window = 1 << 16
	buf := make([]byte, window+blockHeaderSize)
	var comp []byte
	for pos := from; pos < size; pos += window {
		n, _ := f.ReadAt(buf, pos)
		b := buf[:n]
		for i := 0; i < len(b) && i < window; {
			j := bytes.Index(b[i:], blockMagic[:])
			if j < 0 {
				break
			}
			at := pos + int64(i+j)
			var hb [blockHeaderSize]byte
			var h blockHeader
			if m, _ := f.ReadAt(hb[:], at); m == blockHeaderSize && h.unmarshal(hb[:]) == nil &&
				at+blockHeaderSize+int64(h.CompLen) <= size {
				if cap(comp) < int(h.CompLen) {
					comp = make([]byte, h.CompLen)
				}
				comp = comp[:h.CompLen]
				if m, _ := f.ReadAt(comp, at+blockHeaderSize); m == len(comp) && crc32c(comp) == h.CompCRC {
					return at
				}
			}
			i += j + 1
		}
	}
	return size
}
