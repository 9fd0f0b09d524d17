package datasets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
)

// compactLevel is the zstd level finished segments are rewritten at: off
// the hot path, so the better (slower) level is affordable.
const compactLevel = zstd.SpeedBetterCompression

// compactExt names a segment's rewrite in progress; readers ignore it and
// Repair removes a leftover one.
const compactExt = ".compact"

var crcTable = crc64.MakeTable(crc64.ECMA)

// recordDigest folds every field of rec into a running CRC-64, to check that
// a rewrite kept each record exactly.
func recordDigest(d uint64, rec *Record) uint64 {
	var h [34]byte
	h[0], h[1] = byte(rec.Kind), rec.Flags
	binary.LittleEndian.PutUint32(h[2:6], rec.Conn)
	binary.LittleEndian.PutUint64(h[6:14], rec.Seq)
	binary.LittleEndian.PutUint64(h[14:22], uint64(rec.WallNs))
	binary.LittleEndian.PutUint64(h[22:30], uint64(rec.MonoNs))
	binary.LittleEndian.PutUint32(h[30:34], uint32(len(rec.Payload)))
	d = crc64.Update(d, crcTable, h[:])
	return crc64.Update(d, crcTable, rec.Payload)
}

// compactSegment rewrites finished segment num of dir with blocks of up to
// blockSize raw bytes compressed at compactLevel, keeping every record
// exactly, without the segment's dictionary. The writer seals a block every
// flush interval so that a crash loses little; once the segment is finished
// those small blocks only cost ratio, and one rewrite recovers it. The
// dictionary earns its keep on those small blocks only: in blocks of the
// block size it saves about 3% of the size (a 1.35 M-frame Polymarket
// recording: 137.4 against 141.6 MB) and doubles the cost of reading them,
// because klauspost/compress's assembly sequence decoder takes no dictionary
// (zstd/seqdec_asm.go, decodeSyncSimple): 0.82 against 0.41 CPU-s to
// decompress that recording. The new file is
// read back and its records compared (count and CRC-64 of every field)
// before it replaces the old one atomically; on any failure the old segment
// stays. It returns whether the segment was replaced.
func compactSegment(dir string, num uint32, blockSize int, open func(string) (SegmentFile, error), sync bool) (replaced bool, err error) {
	path := filepath.Join(dir, segmentName(num))
	tmp := path + compactExt
	os.Remove(tmp)
	defer func() {
		if !replaced {
			os.Remove(tmp)
		}
	}()
	src, err := openRegular(path)
	if err != nil {
		return false, fmt.Errorf("datasets: compact: %w", err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return false, fmt.Errorf("datasets: compact: %w", err)
	}
	var sr segmentReader
	defer sr.release()
	sr.reset(src, path, 0, st.Size())
	if _, err := sr.readSegmentHeader(); err != nil {
		return false, err
	}

	encOpts := []zstd.EOption{zstd.WithEncoderLevel(compactLevel), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true)}
	plain, err := zstd.NewWriter(nil, encOpts...)
	if err != nil {
		return false, fmt.Errorf("datasets: compact: %w", err)
	}
	defer plain.Close()
	dst, err := open(tmp)
	if err != nil {
		return false, fmt.Errorf("datasets: compact: %w", err)
	}
	defer func() {
		if dst != nil {
			dst.Close()
		}
	}()
	var hb [segmentHeaderSize]byte
	segmentHeader{Version: FormatVersion, Number: num}.marshal(&hb)
	out := append([]byte(nil), hb[:]...)
	if err := writeAll(dst, out); err != nil {
		return false, err
	}
	off := int64(len(out))
	var (
		b       blockBuilder
		rec     Record
		entries []indexEntry
		digest  uint64
		count   int
		blocks  int
	)
	flush := func() error {
		var h blockHeader
		out = b.seal(plain, 0, out, &h)
		if err := writeAll(dst, out); err != nil {
			return err
		}
		var e indexEntry
		e.fromHeader(off, &h)
		entries = append(entries, e)
		off += int64(len(out))
		return nil
	}
	for {
		err := sr.nextBlock()
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, err
		}
		blocks++
		for sr.nextRecord(&rec) {
			if b.n > 0 && b.size()+recordColumnsSize+len(rec.Payload) > blockSize {
				if err := flush(); err != nil {
					return false, err
				}
			}
			b.add(&rec, rec.Seq)
			digest = recordDigest(digest, &rec)
			count++
		}
	}
	if b.n > 0 {
		if err := flush(); err != nil {
			return false, err
		}
	}
	if blocks <= len(entries) {
		return false, nil // nothing to gain: as many blocks as before
	}
	if sync {
		if err := dst.Sync(); err != nil {
			return false, fmt.Errorf("datasets: compact: sync: %w", err)
		}
	}
	err = dst.Close()
	dst = nil
	if err != nil {
		return false, fmt.Errorf("datasets: compact: %w", err)
	}

	// Read the rewrite back before it replaces anything.
	chk, err := os.Open(tmp)
	if err != nil {
		return false, fmt.Errorf("datasets: compact: %w", err)
	}
	defer chk.Close()
	var cr segmentReader
	defer cr.release()
	cr.reset(chk, tmp, 0, off)
	if _, err := cr.readSegmentHeader(); err != nil {
		return false, fmt.Errorf("datasets: compact: check: %w", err)
	}
	var d2 uint64
	n2 := 0
	for {
		err := cr.nextBlock()
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, fmt.Errorf("datasets: compact: check: %w", err)
		}
		for cr.nextRecord(&rec) {
			d2 = recordDigest(d2, &rec)
			n2++
		}
	}
	if n2 != count || d2 != digest {
		return false, errors.New("datasets: compact: rewrite does not match the segment")
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("datasets: compact: %w", err)
	}
	replaced = true
	// The old index no longer describes the file; a failure to write the new
	// one only costs a header scan later.
	_ = writeIndex(dir, num, off, entries, sync)
	if sync {
		if err := syncDir(dir); err != nil {
			return true, err
		}
	}
	return true, nil
}

func writeAll(f SegmentFile, b []byte) error {
	n, err := f.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("datasets: compact: write: %w", err)
	}
	return nil
}
