package datasets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeIndex writes the sidecar index of segment num, which is segSize bytes
// long, atomically.
func writeIndex(dir string, num uint32, segSize int64, entries []indexEntry, sync bool) error {
	b := make([]byte, indexHeaderSize+len(entries)*indexEntrySize)
	copy(b[0:4], indexMagic[:])
	binary.LittleEndian.PutUint16(b[4:6], FormatVersion)
	binary.LittleEndian.PutUint16(b[6:8], indexEntrySize)
	binary.LittleEndian.PutUint32(b[8:12], uint32(len(entries)))
	binary.LittleEndian.PutUint32(b[12:16], num)
	binary.LittleEndian.PutUint64(b[16:24], uint64(segSize))
	for i, e := range entries {
		p := b[indexHeaderSize+i*indexEntrySize:]
		binary.LittleEndian.PutUint64(p[0:8], uint64(e.Offset))
		binary.LittleEndian.PutUint32(p[8:12], e.CompLen)
		binary.LittleEndian.PutUint32(p[12:16], e.Count)
		binary.LittleEndian.PutUint64(p[16:24], e.FirstSeq)
		binary.LittleEndian.PutUint64(p[24:32], e.LastSeq)
		binary.LittleEndian.PutUint64(p[32:40], uint64(e.FirstWall))
		binary.LittleEndian.PutUint64(p[40:48], uint64(e.LastWall))
	}
	binary.LittleEndian.PutUint32(b[28:32], crc32c(b))
	if !sync {
		tmp := filepath.Join(dir, indexName(num)+".tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return fmt.Errorf("datasets: write index: %w", err)
		}
		return os.Rename(tmp, filepath.Join(dir, indexName(num)))
	}
	return writeFileAtomic(dir, indexName(num), b)
}

// errStaleIndex means an index does not describe its segment as it is now.
var errStaleIndex = errors.New("datasets: stale index")

// readIndex reads the index of segment num and checks it against the
// segment's current size. Any mismatch gives an error; callers rebuild.
func readIndex(dir string, num uint32, segSize int64) ([]indexEntry, error) {
	return readIndexIn(NewLocalStore(dir), num, segSize)
}

func readIndexIn(st Store, num uint32, segSize int64) ([]indexEntry, error) {
	b, err := readFileMax(st, indexName(num), maxIndexSize(segSize))
	if err != nil {
		return nil, err
	}
	return parseIndex(b, num, segSize)
}

// parseIndex checks and decodes an index file's bytes for segment num of
// segSize bytes.
func parseIndex(b []byte, num uint32, segSize int64) ([]indexEntry, error) {
	if len(b) < indexHeaderSize || [4]byte(b[0:4]) != indexMagic {
		return nil, errStaleIndex
	}
	n := binary.LittleEndian.Uint32(b[8:12])
	if binary.LittleEndian.Uint16(b[4:6]) != FormatVersion || binary.LittleEndian.Uint16(b[6:8]) != indexEntrySize ||
		uint64(len(b)) != indexHeaderSize+uint64(n)*indexEntrySize ||
		binary.LittleEndian.Uint32(b[12:16]) != num || int64(binary.LittleEndian.Uint64(b[16:24])) != segSize {
		return nil, errStaleIndex
	}
	sum := binary.LittleEndian.Uint32(b[28:32])
	binary.LittleEndian.PutUint32(b[28:32], 0)
	if crc32c(b) != sum {
		return nil, errStaleIndex
	}
	entries := make([]indexEntry, n)
	prevEnd := int64(-1)
	for i := range entries {
		p := b[indexHeaderSize+i*indexEntrySize:]
		e := indexEntry{
			Offset:    int64(binary.LittleEndian.Uint64(p[0:8])),
			CompLen:   binary.LittleEndian.Uint32(p[8:12]),
			Count:     binary.LittleEndian.Uint32(p[12:16]),
			FirstSeq:  binary.LittleEndian.Uint64(p[16:24]),
			LastSeq:   binary.LittleEndian.Uint64(p[24:32]),
			FirstWall: int64(binary.LittleEndian.Uint64(p[32:40])),
			LastWall:  int64(binary.LittleEndian.Uint64(p[40:48])),
		}
		// Record blocks must follow one another up to the end of the segment
		// (dictionary blocks come before the first); anything else is stale.
		if (prevEnd >= 0 && e.Offset != prevEnd) || e.Offset < segmentHeaderSize || e.CompLen > MaxBlockSize || e.end() > segSize {
			return nil, errStaleIndex
		}
		prevEnd = e.end()
		entries[i] = e
	}
	if prevEnd != segSize && !(n == 0 && segSize >= segmentHeaderSize) {
		return nil, errStaleIndex
	}
	return entries, nil
}

// maxIndexSize is the largest index a segment of segSize bytes can have:
// an entry per block, and every block is at least a header long.
func maxIndexSize(segSize int64) int64 {
	return indexHeaderSize + (max(segSize, 0)/blockHeaderSize+1)*indexEntrySize
}

// readIndexAnySize reads the index file at path of segment num checking
// its checksum and structure but not the segment's size: what a finished
// segment held, even after it lost blocks.
func readIndexAnySize(path string, num uint32) ([]indexEntry, error) {
	b, err := readRegular(path, maxWholeFile)
	if err != nil {
		return nil, err
	}
	if len(b) < indexHeaderSize {
		return nil, errStaleIndex
	}
	size := int64(binary.LittleEndian.Uint64(b[16:24]))
	return parseIndex(b, num, size)
}

// scanResult is what scanning a segment's block headers found.
type scanResult struct {
	entries []indexEntry
	size    int64 // file size
	// damage is the first structure that failed, nil if the segment is whole;
	// entries cover the bytes before damage.Offset.
	damage *CorruptionError
}

// scanSegment rebuilds a segment's index from its block headers, reading
// only the headers (contents are skipped, not checksummed).
func scanSegment(path string) (*scanResult, error) {
	return scanSegmentIn(NewLocalStore(filepath.Dir(path)), filepath.Base(path))
}

func scanSegmentIn(store Store, name string) (*scanResult, error) {
	path := store.Join(name)
	f, err := store.Open(name)
	if err != nil {
		return nil, fmt.Errorf("datasets: open segment: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("datasets: stat segment: %w", err)
	}
	res := &scanResult{size: size}
	var buf [blockHeaderSize]byte
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, segmentHeaderSize), buf[:segmentHeaderSize]); err != nil {
		res.damage = &CorruptionError{File: path, Offset: 0, Err: fmt.Errorf("segment header: %w", ErrShortHeader)}
		return res, nil
	}
	var sh segmentHeader
	if err := sh.unmarshal(buf[:segmentHeaderSize]); err != nil {
		res.damage = &CorruptionError{File: path, Offset: 0, Err: err}
		return res, nil
	}
	off := int64(segmentHeaderSize)
	for off < res.size {
		var h blockHeader
		if res.size-off < blockHeaderSize {
			res.damage = &CorruptionError{File: path, Offset: off, Err: fmt.Errorf("%w: %d bytes of block header", ErrTruncated, res.size-off)}
			return res, nil
		}
		if _, err := f.ReadAt(buf[:], off); err != nil {
			return nil, fmt.Errorf("datasets: read segment: %w", err)
		}
		if err := h.unmarshal(buf[:]); err != nil {
			res.damage = &CorruptionError{File: path, Offset: off, Err: err}
			return res, nil
		}
		var e indexEntry
		e.fromHeader(off, &h)
		if e.end() > res.size {
			res.damage = &CorruptionError{File: path, Offset: off, Err: fmt.Errorf("%w: block of %d bytes, %d on disk", ErrTruncated, e.CompLen, res.size-off-blockHeaderSize)}
			return res, nil
		}
		if h.Type == blockTypeRecords {
			res.entries = append(res.entries, e)
		}
		off = e.end()
	}
	return res, nil
}
