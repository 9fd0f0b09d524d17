package datasets

import (
	"encoding/binary"

	"github.com/klauspost/compress/zstd"
)

// blockBuilder gathers records into the columns of one block (FORMAT.md
// "Block content"). Its buffers are reused block after block.
type blockBuilder struct {
	colSeq, colWall, colMono, colLen, colConn, colKind, colFlags, payload []byte
	raw                                                                   []byte
	n                                                                     uint32
	firstSeq, lastSeq                                                     uint64
	firstWall, lastWall, lastMono                                         int64
}

// size is the raw content size the block would have if sealed now.
func (b *blockBuilder) size() int { return len(b.payload) + int(b.n)*recordColumnsSize }

// add appends r with sequence number seq (> the previous one).
func (b *blockBuilder) add(r *Record, seq uint64) {
	pSeq, pWall, pMono := b.lastSeq, b.lastWall, b.lastMono
	if b.n == 0 {
		b.firstSeq, b.firstWall = seq, r.WallNs
		pSeq, pWall, pMono = seq, r.WallNs, 0
	}
	b.colSeq = binary.LittleEndian.AppendUint64(b.colSeq, seq-pSeq)
	b.colWall = binary.LittleEndian.AppendUint64(b.colWall, uint64(r.WallNs-pWall))
	b.colMono = binary.LittleEndian.AppendUint64(b.colMono, uint64(r.MonoNs-pMono))
	b.colLen = binary.LittleEndian.AppendUint32(b.colLen, uint32(len(r.Payload)))
	b.colConn = binary.LittleEndian.AppendUint32(b.colConn, r.Conn)
	b.colKind = append(b.colKind, byte(r.Kind))
	b.colFlags = append(b.colFlags, r.Flags)
	b.payload = append(b.payload, r.Payload...)
	b.lastSeq, b.lastWall, b.lastMono = seq, r.WallNs, r.MonoNs
	b.n++
}

// seal encodes the block (compressed with enc, or raw when enc is nil) into
// dst[:0] as header + content, fills h, resets b and returns the bytes.
// flags are the block header flags (blockFlagDict when enc holds the
// segment dictionary).
func (b *blockBuilder) seal(enc *zstd.Encoder, flags uint8, dst []byte, h *blockHeader) []byte {
	b.raw = append(b.raw[:0], b.colSeq...)
	b.raw = append(b.raw, b.colWall...)
	b.raw = append(b.raw, b.colMono...)
	b.raw = append(b.raw, b.colLen...)
	b.raw = append(b.raw, b.colConn...)
	b.raw = append(b.raw, b.colKind...)
	b.raw = append(b.raw, b.colFlags...)
	b.raw = append(b.raw, b.payload...)
	*h = blockHeader{Codec: codecRaw, Flags: flags, RawLen: uint32(len(b.raw)), Count: b.n, RawCRC: crc32c(b.raw),
		FirstSeq: b.firstSeq, LastSeq: b.lastSeq, FirstWall: b.firstWall, LastWall: b.lastWall}
	out := dst[:0]
	if cap(out) < blockHeaderSize {
		out = make([]byte, 0, blockHeaderSize+len(b.raw))
	}
	out = out[:blockHeaderSize]
	if enc != nil {
		h.Codec = codecZstd
		out = enc.EncodeAll(b.raw, out)
	} else {
		out = append(out, b.raw...)
	}
	content := out[blockHeaderSize:]
	h.CompLen = uint32(len(content))
	h.CompCRC = crc32c(content)
	h.marshal((*[blockHeaderSize]byte)(out))
	b.colSeq, b.colWall, b.colMono = b.colSeq[:0], b.colWall[:0], b.colMono[:0]
	b.colLen, b.colConn, b.colKind, b.colFlags = b.colLen[:0], b.colConn[:0], b.colKind[:0], b.colFlags[:0]
	b.payload = b.payload[:0]
	b.n = 0
	return out
}

// encodeDictBlock returns a dictionary block (header + content) holding
// dict, compressed with enc (which must hold no dictionary) or raw if nil.
func encodeDictBlock(enc *zstd.Encoder, dict []byte) []byte {
	h := blockHeader{Type: blockTypeDict, Codec: codecRaw, RawLen: uint32(len(dict)), RawCRC: crc32c(dict)}
	out := make([]byte, blockHeaderSize, blockHeaderSize+len(dict))
	if enc != nil {
		h.Codec = codecZstd
		out = enc.EncodeAll(dict, out)
	} else {
		out = append(out, dict...)
	}
	content := out[blockHeaderSize:]
	h.CompLen = uint32(len(content))
	h.CompCRC = crc32c(content)
	h.marshal((*[blockHeaderSize]byte)(out))
	return out
}
