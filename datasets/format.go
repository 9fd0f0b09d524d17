package datasets

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// FormatVersion is the version of the on-disk layout this package writes,
// stored in every segment header and in Manifest.FormatVersion. It is not the
// module version; readers accept every version up to it.
const FormatVersion = 1

// Layout constants; FORMAT.md documents each and a test checks the two agree.
const (
	segmentHeaderSize = 32 // bytes of the segment file header
	blockHeaderSize   = 64 // bytes of the fixed block header
	indexHeaderSize   = 32 // bytes of the index file header
	indexEntrySize    = 48 // bytes per index entry

	// recordColumnsSize is the bytes of per-record header columns in a block:
	// seq delta u64, wall delta i64, mono delta i64, length u32, conn u32,
	// kind u8, flags u8.
	recordColumnsSize = 8 + 8 + 8 + 4 + 4 + 1 + 1

	codecRaw  = 0 // block content stored uncompressed
	codecZstd = 1 // block content is one zstd frame

	blockTypeRecords = 0 // a block of records
	blockTypeDict    = 1 // a segment's zstd dictionary (raw content)

	blockFlagDict = 1 << 0 // content was compressed with the segment's dictionary

	// dictID is the zstd dictionary ID written into dictionary-compressed
	// frames; each segment has at most one dictionary.
	dictID = 0x54440001
	// maxDictCopies is how many identical dictionary blocks may follow a
	// segment header; the writer writes two so one damaged byte cannot take
	// the whole segment with it.
	maxDictCopies = 2

	// segmentExt and indexExt name files as eight-digit segment numbers.
	segmentExt = ".seg"
	indexExt   = ".idx"
	nameDigits = 8
)

// Magic numbers at the start of each structure.
var (
	segmentMagic = [4]byte{'T', 'D', 'S', 'G'}
	blockMagic   = [4]byte{'T', 'D', 'B', 'K'}
	indexMagic   = [4]byte{'T', 'D', 'I', 'X'}
)

// Limits that bound hostile input before anything is allocated.
const (
	// MaxPayloadSize is the largest payload a record may hold (32 MiB).
	MaxPayloadSize = 32 << 20
	// MaxBlockSize is the largest raw or compressed block content (64 MiB);
	// a header claiming more is corrupt.
	MaxBlockSize = 64 << 20
	// MaxDictSize is the largest segment dictionary (1 MiB).
	MaxDictSize = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// segmentName returns the file name of segment n ("00000001.seg").
func segmentName(n uint32) string { return fmt.Sprintf("%0*d%s", nameDigits, n, segmentExt) }

// indexName returns the file name of the index of segment n ("00000001.idx").
func indexName(n uint32) string { return fmt.Sprintf("%0*d%s", nameDigits, n, indexExt) }

// segmentHeader is the first segmentHeaderSize bytes of a segment file.
type segmentHeader struct {
	Version    uint16
	Number     uint32
	DictCopies uint8 // identical dictionary blocks following the header (0..2)
}

func (h segmentHeader) marshal(b *[segmentHeaderSize]byte) {
	*b = [segmentHeaderSize]byte{}
	copy(b[0:4], segmentMagic[:])
	binary.LittleEndian.PutUint16(b[4:6], h.Version)
	binary.LittleEndian.PutUint16(b[6:8], segmentHeaderSize)
	binary.LittleEndian.PutUint32(b[8:12], h.Number)
	b[12] = h.DictCopies
	binary.LittleEndian.PutUint32(b[28:32], crc32c(b[0:28]))
}

func (h *segmentHeader) unmarshal(b []byte) error {
	if len(b) < segmentHeaderSize {
		return ErrShortHeader
	}
	if [4]byte(b[0:4]) != segmentMagic {
		return ErrBadMagic
	}
	if crc32c(b[0:28]) != binary.LittleEndian.Uint32(b[28:32]) {
		return ErrChecksum
	}
	h.Version = binary.LittleEndian.Uint16(b[4:6])
	if h.Version == 0 || h.Version > FormatVersion {
		return fmt.Errorf("%w: %d (this build reads up to %d)", ErrVersion, h.Version, FormatVersion)
	}
	if n := binary.LittleEndian.Uint16(b[6:8]); n != segmentHeaderSize {
		return fmt.Errorf("%w: segment header length %d", ErrBadHeader, n)
	}
	h.Number = binary.LittleEndian.Uint32(b[8:12])
	h.DictCopies = b[12]
	if h.DictCopies > maxDictCopies {
		return fmt.Errorf("%w: %d dictionary copies", ErrBadHeader, h.DictCopies)
	}
	return nil
}

// blockHeader is the fixed header in front of every block.
type blockHeader struct {
	Codec     uint8
	Flags     uint8
	Type      uint8
	CompLen   uint32 // bytes of stored (compressed) content after the header
	RawLen    uint32 // bytes of decoded content
	Count     uint32 // records in the block
	CompCRC   uint32 // CRC32C of the stored content
	RawCRC    uint32 // CRC32C of the decoded content
	FirstSeq  uint64
	LastSeq   uint64
	FirstWall int64
	LastWall  int64
}

func (h *blockHeader) marshal(b *[blockHeaderSize]byte) {
	copy(b[0:4], blockMagic[:])
	b[4] = h.Codec
	b[5] = h.Flags
	b[6] = h.Type
	b[7] = 0
	binary.LittleEndian.PutUint32(b[8:12], h.CompLen)
	binary.LittleEndian.PutUint32(b[12:16], h.RawLen)
	binary.LittleEndian.PutUint32(b[16:20], h.Count)
	binary.LittleEndian.PutUint32(b[20:24], h.CompCRC)
	binary.LittleEndian.PutUint32(b[24:28], h.RawCRC)
	binary.LittleEndian.PutUint64(b[32:40], h.FirstSeq)
	binary.LittleEndian.PutUint64(b[40:48], h.LastSeq)
	binary.LittleEndian.PutUint64(b[48:56], uint64(h.FirstWall))
	binary.LittleEndian.PutUint64(b[56:64], uint64(h.LastWall))
	binary.LittleEndian.PutUint32(b[28:32], blockHeaderCRC(b[:]))
}

var zero4 [4]byte

// blockHeaderCRC is the CRC32C of a block header with its CRC field (bytes
// 28–31) taken as zero; computed in pieces so no copy escapes to the heap.
func blockHeaderCRC(b []byte) uint32 {
	c := crc32.Update(0, castagnoli, b[0:28])
	c = crc32.Update(c, castagnoli, zero4[:])
	return crc32.Update(c, castagnoli, b[32:blockHeaderSize])
}

// unmarshal parses and validates a block header. It checks everything that
// can be checked without the content, so a damaged length never drives an
// allocation or a skip.
func (h *blockHeader) unmarshal(b []byte) error {
	if len(b) < blockHeaderSize {
		return ErrShortHeader
	}
	if [4]byte(b[0:4]) != blockMagic {
		return ErrBadMagic
	}
	if blockHeaderCRC(b) != binary.LittleEndian.Uint32(b[28:32]) {
		return ErrChecksum
	}
	h.Codec = b[4]
	h.Flags = b[5]
	h.Type = b[6]
	h.CompLen = binary.LittleEndian.Uint32(b[8:12])
	h.RawLen = binary.LittleEndian.Uint32(b[12:16])
	h.Count = binary.LittleEndian.Uint32(b[16:20])
	h.CompCRC = binary.LittleEndian.Uint32(b[20:24])
	h.RawCRC = binary.LittleEndian.Uint32(b[24:28])
	h.FirstSeq = binary.LittleEndian.Uint64(b[32:40])
	h.LastSeq = binary.LittleEndian.Uint64(b[40:48])
	h.FirstWall = int64(binary.LittleEndian.Uint64(b[48:56]))
	h.LastWall = int64(binary.LittleEndian.Uint64(b[56:64]))
	switch {
	case h.Type == blockTypeDict:
		if h.Count != 0 || h.RawLen == 0 || h.RawLen > MaxDictSize || h.Flags != 0 || h.FirstSeq != 0 || h.LastSeq != 0 ||
			(h.Codec != codecRaw && h.Codec != codecZstd) || (h.Codec == codecRaw && h.CompLen != h.RawLen) {
			return fmt.Errorf("%w: dictionary block", ErrBadHeader)
		}
		return nil
	case h.Type != blockTypeRecords:
		return fmt.Errorf("%w: unknown block type %d", ErrBadHeader, h.Type)
	case h.Flags&^blockFlagDict != 0:
		return fmt.Errorf("%w: unknown block flags %#x", ErrBadHeader, h.Flags)
	case h.Codec != codecRaw && h.Codec != codecZstd:
		return fmt.Errorf("%w: unknown codec %d", ErrBadHeader, h.Codec)
	case h.CompLen > MaxBlockSize || h.RawLen > MaxBlockSize:
		return fmt.Errorf("%w: block length %d/%d over %d", ErrBadHeader, h.CompLen, h.RawLen, MaxBlockSize)
	case h.Codec == codecRaw && h.CompLen != h.RawLen:
		return fmt.Errorf("%w: raw block with lengths %d/%d", ErrBadHeader, h.CompLen, h.RawLen)
	case h.Count == 0 || uint64(h.Count)*recordColumnsSize > uint64(h.RawLen):
		return fmt.Errorf("%w: %d records in %d bytes", ErrBadHeader, h.Count, h.RawLen)
	case h.LastSeq < h.FirstSeq || h.LastSeq-h.FirstSeq < uint64(h.Count-1):
		return fmt.Errorf("%w: seq %d..%d for %d records", ErrBadHeader, h.FirstSeq, h.LastSeq, h.Count)
	}
	return nil
}

// indexEntry locates one block of a segment.
type indexEntry struct {
	Offset    int64 // of the block header within the segment file
	CompLen   uint32
	Count     uint32
	FirstSeq  uint64
	LastSeq   uint64
	FirstWall int64
	LastWall  int64
}

func (e *indexEntry) fromHeader(off int64, h *blockHeader) {
	*e = indexEntry{Offset: off, CompLen: h.CompLen, Count: h.Count, FirstSeq: h.FirstSeq,
		LastSeq: h.LastSeq, FirstWall: h.FirstWall, LastWall: h.LastWall}
}

// end is the offset just past the block.
func (e *indexEntry) end() int64 { return e.Offset + blockHeaderSize + int64(e.CompLen) }
