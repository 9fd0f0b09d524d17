package columnar

import (
	"encoding/binary"
	"math/bits"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Parquet pages, as the format specifies them
// (https://github.com/apache/parquet-format, Encodings.md and
// parquet.thrift): V2 data pages, PLAIN dictionary pages, the RLE /
// bit-packing hybrid for definition levels and dictionary indices, and the
// page headers in Thrift's compact protocol.

// pqChunk is one column chunk being built: its pages, headers included.
type pqChunk struct {
	buf          []byte
	dictLen      int   // bytes of the dictionary page at buf's start (0: none)
	values       int64 // levels: rows, nulls included
	uncompressed int64 // page headers and uncompressed page bodies
	pages        int32 // data pages
	enc          parquet.Encoding
	stats        metadata.EncodedStatistics
	hasStats     bool
}

func (c *pqChunk) reset() {
	*c = pqChunk{buf: c.buf[:0], enc: parquet.Encodings.Plain}
}

// setStats keeps st's encoding as the chunk's statistics, as Arrow's column
// writer does on close.
func (c *pqChunk) setStats(st metadata.TypedStatistics, props *parquet.WriterProperties, descr *schema.Column) error {
	enc, err := st.Encode()
	if err != nil {
		return err
	}
	enc.ApplyStatSizeLimits(int(props.MaxStatsSizeFor(descr.Path())))
	enc.Signed = descr.SortOrder() == schema.SortSIGNED
	if c.values > 0 && enc.IsSet() {
		c.stats, c.hasStats = enc, true
	}
	return nil
}

// pages appends rows [0, n) as data pages of at most per rows (at least
// one), with definition levels def (nil: a required column) and values
// encoded by values(dst, from, to, vfrom, nn): those of rows [from, to), nn
// of them non-null, the first being non-null value vfrom.
func (p *parquetWriter) pages(c *pqChunk, sc *pqScratch, n, per int, def []uint8, enc parquet.Encoding, values func(dst []byte, from, to, vfrom, nn int) []byte) {
	per = max(1, per)
	c.enc = enc
	if def != nil {
		sc.pageLevels(def, n, per)
	}
	vfrom := 0
	for pg, from := 0, 0; from < n; pg, from = pg+1, from+per {
		to := min(n, from+per)
		nulls := 0
		var lv []byte
		if def != nil {
			nulls = sc.pgNulls[pg]
			lv = sc.pgLv[sc.pgOff[pg]:sc.pgOff[pg+1]]
		}
		nn := to - from - nulls
		sc.vals = values(sc.vals[:0], from, to, vfrom, nn)
		p.dataPage(c, sc, to-from, nulls, lv, sc.vals)
		vfrom += nn
	}
}

// pageLevels encodes def's levels page by page (pages of per rows), unless
// they are those of the definition levels last encoded at the same page
// size: a depth level's price, size and count columns share them.
func (sc *pqScratch) pageLevels(def []uint8, n, per int) {
	if sc.pgGen == sc.defGen && sc.pgPer == per && sc.pgGen != 0 {
		return
	}
	sc.pgGen, sc.pgPer = sc.defGen, per
	sc.pgLv, sc.pgOff, sc.pgNulls = sc.pgLv[:0], append(sc.pgOff[:0], 0), sc.pgNulls[:0]
	for from := 0; from < n; from += per {
		to := min(n, from+per)
		nulls := 0
		for _, d := range def[from:to] {
			nulls += int(1 - d)
		}
		sc.pgLv = rleAppend(sc.pgLv, def[from:to], 1)
		sc.pgOff = append(sc.pgOff, len(sc.pgLv))
		sc.pgNulls = append(sc.pgNulls, nulls)
	}
	if sc.defCol < 0 {
		sc.pgGen = 0 // levels of a column of their own: not shared
	}
}

// dictPages appends rows [0, n) as RLE_DICTIONARY data pages: idx holds the
// dictionary index of each non-null value, entries the dictionary's size.
func (p *parquetWriter) dictPages(c *pqChunk, sc *pqScratch, n, per int, def []uint8, idx []int32, entries int) {
	bw := max(1, bits.Len32(uint32(entries-1)))
	p.pages(c, sc, n, per, def, p.props.DictionaryIndexEncoding(), func(dst []byte, _, _, vfrom, nn int) []byte {
		dst = append(dst, byte(bw))
		return rleAppend(dst, idx[vfrom:vfrom+nn], bw)
	})
}

// compress returns src compressed with the writer's codec (src itself when
// pages are uncompressed), in sc's buffer.
func (p *parquetWriter) compress(sc *pqScratch, src []byte) []byte {
	if p.codec == nil {
		return src
	}
	bound := int(p.codec.CompressBound(int64(len(src))))
	if cap(sc.comp) < bound {
		sc.comp = make([]byte, bound)
	}
	out := p.codec.EncodeLevel(sc.comp[:bound], src, p.level)
	if cap(out) > cap(sc.comp) {
		sc.comp = out
	}
	return out
}

// dataPage appends a V2 data page of rows rows, nulls of them null: the
// definition levels lv (uncompressed, as V2 keeps them) and the values.
func (p *parquetWriter) dataPage(c *pqChunk, sc *pqScratch, rows, nulls int, lv, vals []byte) {
	body := p.compress(sc, vals)
	h := len(c.buf)
	c.buf = pageHeaderV2(c.buf, len(lv)+len(vals), len(lv)+len(body), rows, nulls, c.enc, len(lv), p.codec != nil)
	hdr := len(c.buf) - h
	c.buf = append(c.buf, lv...)
	c.buf = append(c.buf, body...)
	c.uncompressed += int64(hdr + len(lv) + len(vals))
	c.values += int64(rows)
	c.pages++
}

// dictPage appends the dictionary page (entries PLAIN values): the first
// page of the chunk.
func (p *parquetWriter) dictPage(c *pqChunk, sc *pqScratch, entries int, plain []byte) {
	body := p.compress(sc, plain)
	c.buf = dictPageHeader(c.buf, len(plain), len(body), entries, p.props.DictionaryPageEncoding())
	hdr := len(c.buf)
	c.buf = append(c.buf, body...)
	c.dictLen = len(c.buf)
	c.uncompressed += int64(hdr + len(plain))
}

// Thrift compact protocol: a field is a byte of (id delta << 4 | type),
// an i32 a zigzag varint, a struct ends with a 0 byte.
const (
	thBoolTrue  = 1
	thBoolFalse = 2
	thI32       = 5
	thStruct    = 12
)

func thField(dst []byte, delta, typ byte) []byte { return append(dst, delta<<4|typ) }

func thI32v(dst []byte, v int32) []byte {
	return binary.AppendUvarint(dst, uint64(uint32(v<<1)^uint32(v>>31)))
}

// Page types of parquet.thrift.
const (
	pageDict int32 = 2 // DICTIONARY_PAGE
	pageData int32 = 3 // DATA_PAGE_V2
)

// pageHeaderStart appends a PageHeader's fields 1 to 3.
func pageHeaderStart(dst []byte, typ int32, uncompressed, compressed int) []byte {
	dst = thI32v(thField(dst, 1, thI32), typ)                 // 1: type
	dst = thI32v(thField(dst, 1, thI32), int32(uncompressed)) // 2: uncompressed_page_size
	return thI32v(thField(dst, 1, thI32), int32(compressed))  // 3: compressed_page_size
}

// pageHeaderV2 appends a PageHeader for a DATA_PAGE_V2.
func pageHeaderV2(dst []byte, uncompressed, compressed, rows, nulls int, enc parquet.Encoding, defLen int, isCompressed bool) []byte {
	dst = pageHeaderStart(dst, pageData, uncompressed, compressed)
	dst = thField(dst, 5, thStruct)                     // 8: data_page_header_v2
	dst = thI32v(thField(dst, 1, thI32), int32(rows))   //   1: num_values
	dst = thI32v(thField(dst, 1, thI32), int32(nulls))  //   2: num_nulls
	dst = thI32v(thField(dst, 1, thI32), int32(rows))   //   3: num_rows
	dst = thI32v(thField(dst, 1, thI32), int32(enc))    //   4: encoding
	dst = thI32v(thField(dst, 1, thI32), int32(defLen)) //   5: definition_levels_byte_length
	dst = thI32v(thField(dst, 1, thI32), 0)             //   6: repetition_levels_byte_length
	if isCompressed {                                   //   7: is_compressed
		dst = thField(dst, 1, thBoolTrue)
	} else {
		dst = thField(dst, 1, thBoolFalse)
	}
	return append(dst, 0, 0) // end of data_page_header_v2, of PageHeader
}

// dictPageHeader appends a PageHeader for a DICTIONARY_PAGE.
func dictPageHeader(dst []byte, uncompressed, compressed, entries int, enc parquet.Encoding) []byte {
	dst = pageHeaderStart(dst, pageDict, uncompressed, compressed)
	dst = thField(dst, 4, thStruct)                      // 7: dictionary_page_header
	dst = thI32v(thField(dst, 1, thI32), int32(entries)) //   1: num_values
	dst = thI32v(thField(dst, 1, thI32), int32(enc))     //   2: encoding
	dst = thField(dst, 1, thBoolFalse)                   //   3: is_sorted
	return append(dst, 0, 0)
}

// rleAppend appends v in the RLE / bit-packing hybrid at bit width bw (no
// length prefix): a run of 8 or more equal values is an RLE run, the rest
// bit-packed in groups of 8 (the last group padded with zeros). A bit-packed
// stretch before a run is completed to a multiple of 8 with the run's first
// values.
func rleAppend[T int32 | uint8](dst []byte, v []T, bw int) []byte {
	n := len(v)
	lit := 0 // first value not yet written
	for i := 0; i < n; {
		x := v[i]
		j := i + 1
		for j < n && v[j] == x {
			j++
		}
		if j-i >= 8 {
			if pad := (i - lit) & 7; pad != 0 {
				i += 8 - pad
			}
			if j-i >= 8 {
				dst = bitPack(dst, v[lit:i], bw)
				dst = binary.AppendUvarint(dst, uint64(j-i)<<1)
				for b := 0; b < bw; b += 8 {
					dst = append(dst, byte(uint32(x)>>b))
				}
				lit = j
			}
		}
		i = j
	}
	return bitPack(dst, v[lit:], bw)
}

// bitPack appends v as one bit-packed run: its header, then the values
// packed LSB first in groups of 8, the last group padded with zeros.
func bitPack[T int32 | uint8](dst []byte, v []T, bw int) []byte {
	if len(v) == 0 {
		return dst
	}
	groups := (len(v) + 7) / 8
	dst = binary.AppendUvarint(dst, uint64(groups)<<1|1)
	// Values are gathered in acc and written 32 bits at a time (bw ≤ 32,
	// so acc never holds more than 63 bits).
	var acc uint64
	nb := 0
	for _, x := range v {
		acc |= uint64(uint32(x)) << nb
		if nb += bw; nb >= 32 {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(acc))
			acc >>= 32
			nb -= 32
		}
	}
	// Padding: the zero values that complete the last group end on a byte
	// boundary.
	nb += (groups*8 - len(v)) * bw
	for ; nb > 0; nb -= 8 {
		dst = append(dst, byte(acc))
		acc >>= 8
	}
	return dst
}
