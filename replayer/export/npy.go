package export

import (
	"archive/zip"
	"bufio"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// The NumPy .npy layout (format version 1.0) of hftbacktest's event arrays:
// the magic "\x93NUMPY", the version bytes 1 and 0, the header length as a
// little-endian uint16, then the header, a Python dict literal padded with
// spaces and ended by '\n' so that the data starts at a multiple of 64 bytes
// (NumPy's ARRAY_ALIGN, which hftbacktest's Rust reader requires), then the
// rows, C order, little-endian.
const (
	npyMagic = "\x93NUMPY\x01\x00"
	npyAlign = 64
)

// hbtDescr is hftbacktest's event_dtype (py-hftbacktest/hftbacktest/types.py,
// the Rust Event struct): eight 8-byte fields, 64 bytes a row with no padding,
// so the aligned and the packed dtype have the same descr.
const hbtDescr = "[('ev', '<u8'), ('exch_ts', '<i8'), ('local_ts', '<i8'), ('px', '<f8'), ('qty', '<f8'), ('order_id', '<u8'), ('ival', '<i8'), ('fval', '<f8')]"

// hbtRowBytes is the size of one event row.
const hbtRowBytes = 64

// npyHeader returns the .npy preamble of a one-dimensional array of n rows
// of dtype descr, as NumPy writes it (keys sorted, a trailing ", ").
func npyHeader(descr string, n int) []byte {
	h := "{'descr': " + descr + ", 'fortran_order': False, 'shape': (" + strconv.Itoa(n) + ",), }"
	total := len(npyMagic) + 2 + len(h) + 1
	if pad := (npyAlign - total%npyAlign) % npyAlign; pad > 0 {
		h += strings.Repeat(" ", pad)
	}
	h += "\n"
	b := make([]byte, 0, len(npyMagic)+2+len(h))
	b = append(b, npyMagic...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	return append(b, h...)
}

// writeHbtNpz writes rows as an .npz archive holding one array, data.npy
// (what np.savez_compressed(path, data=rows) writes and hftbacktest loads
// by the name "data"), deflated. The archive carries no time stamps: the
// bytes depend on the rows only.
func writeHbtNpz(w io.Writer, rows []hbtEvent) error {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.DefaultCompression)
	})
	f, err := zw.CreateHeader(&zip.FileHeader{Name: "data.npy", Method: zip.Deflate})
	if err != nil {
		return fmt.Errorf("npz: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if _, err := bw.Write(npyHeader(hbtDescr, len(rows))); err != nil {
		return fmt.Errorf("npz: %w", err)
	}
	var buf [hbtRowBytes]byte
	for i := range rows {
		r := &rows[i]
		binary.LittleEndian.PutUint64(buf[0:], r.ev)
		binary.LittleEndian.PutUint64(buf[8:], uint64(r.exchNs))
		binary.LittleEndian.PutUint64(buf[16:], uint64(r.localNs))
		binary.LittleEndian.PutUint64(buf[24:], math.Float64bits(r.px))
		binary.LittleEndian.PutUint64(buf[32:], math.Float64bits(r.qty))
		// order_id, ival and fval: zero (L2 data).
		if _, err := bw.Write(buf[:]); err != nil {
			return fmt.Errorf("npz: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("npz: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("npz: %w", err)
	}
	return nil
}
