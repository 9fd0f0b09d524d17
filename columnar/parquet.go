package columnar

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// parquetWriter writes the Parquet file itself: each batch is one row group
// whose column chunks (pages and page headers, parquetpage.go) it encodes
// and compresses in memory, on up to len(scratch) goroutines, then copies to
// w in column order. Arrow's column chunk writers did this before; their
// per-value path (an index array handed over and validated, a memo table
// hashing every dictionary value again, a def-level encoder fed one batch at
// a time, pages copied twice) was most of a depth export's time. The file's
// metadata is still Arrow's: the footer and each chunk's ColumnMetaData are
// built and serialized by parquet/metadata from the properties parquetProps
// returns, the schema is the one pqarrow.ToParquet derives, and the Arrow
// schema is stored under "ARROW:schema" as pqarrow's WithStoreSchema does,
// so Arrow readers get the same types back (TestParquetReadsBack).
//
// Data pages are V2 (definition levels RLE, values compressed), a chunk's
// pages split at pageBytes of values. Dictionary encoding (RLE_DICTIONARY,
// a PLAIN dictionary page first) is used for strings (a handful of venues
// and instruments) and for the depth table's level prices and sizes, whose
// dictionaries are built from the fixed-point values (parquet_dict.go);
// a dictionary past the properties' dictionary page limit leaves the chunk
// PLAIN. Other columns are PLAIN. Statistics (min, max, null count) are
// kept for the columns parquetProps enables them for: times and strings.
//
// Arrow v15 (where the figures here were measured; arrow-go v18 pools its
// zstd encoders) asked its zstd codec for a fresh encoder (megabytes of
// window) on every page, whatever the level, which is why Snappy is the
// default.
type parquetWriter struct {
	w      positionWriter // offsets in the metadata are positions in the file
	props  *parquet.WriterProperties
	schema *schema.Schema
	fmb    *metadata.FileMetaDataBuilder
	codec  compress.Codec // nil: pages uncompressed
	level  int            // the codec's level
	page   int            // bytes of values a data page holds
	scale  struct{ price, size uint8 }
	exact  bool
	// units are the column ranges [from, to) one worker writes in a row:
	// the columns of one depth level (price, size, count) share their
	// definition levels, computed once. Every other column is a unit.
	units [][2]int
	// One scratch per worker (WithEncoders): scratch[0] is the caller's.
	scratch []*pqScratch
	// Per column: the chunk of the row group being written, its buffers
	// reused by the next row group.
	chunks []pqChunk
	// The batch being written: which columns are encoded (done) and the
	// next to copy out, under closeMu (see write).
	rgb       *metadata.RowGroupMetaDataBuilder
	rowGroups int
	rows      int // rows a batch holds at most
	closeMu   sync.Mutex
	done      []bool
	nextClose int
	errs      []error
}

// pqScratch is one worker's scratch.
type pqScratch struct {
	// Definition levels of the column being written; defCol is the level
	// column they were computed for (-1: none), defNulls their null count.
	defBuf   []uint8
	defCol   int
	defNulls int
	defGen   uint64 // counts the definition levels computed
	// Those levels encoded page by page (pageLevels), for pages of pgPer
	// rows of the levels of generation pgGen (0: none): page k's are
	// pgLv[pgOff[k]:pgOff[k+1]], pgNulls[k] of them 0.
	pgGen   uint64
	pgPer   int
	pgLv    []byte
	pgOff   []int
	pgNulls []int
	// Dictionary-encoded columns: the index of each non-null value and the
	// dictionary (fixed-point values, or strings).
	idx    []int32
	dict   fixedDict
	lastOf lastValues
	sIdx   map[string]int32
	sDic   []string
	// A page's encoded values and levels, and its compressed values.
	vals, lv, comp []byte
	// Statistics inputs.
	i64 []int64
	ba  []parquet.ByteArray
}

// pageBytes is the data page size. Arrow v15 builds each page in a buffer
// that grows by doubling, then allocates two more (Snappy's output, the
// framed page) to compress and frame it; with Arrow's default of 1 MiB that
// was a whole column chunk per page. On the depth benchmark 32 KiB pages
// (4096 prices) export a few percent faster than 1 MiB ones for files about
// 3% larger; 8 KiB pages were about 10% faster but 12% larger, as Snappy
// finds fewer matches in a smaller block. Zstd pages stay at 1 MiB: Arrow
// builds a new zstd encoder for every page, which outweighs the rest.
const (
	pageBytes     = 32 << 10
	zstdPageBytes = 1 << 20
)

// parquetProps are the writer properties of s's Parquet file.
func parquetProps(cw *Writer) *parquet.WriterProperties {
	codec, page := compress.Codecs.Snappy, pageBytes // the default
	switch cw.opts.Compression {
	case Zstd:
		codec, page = compress.Codecs.Zstd, zstdPageBytes
	case Uncompressed:
		codec = compress.Codecs.Uncompressed
	}
	opts := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(int64(cw.opts.BatchRows)),
		parquet.WithDictionaryDefault(false),
		// Statistics (min/max per row group) only where a reader filters:
		// timestamps, venue, instrument. On level columns they cost a pass
		// over every value for no query that uses them.
		parquet.WithStats(false),
		// A fixed writer name: file bytes must not depend on who built the binary.
		parquet.WithCreatedBy("tapedeck"),
		// V2 data pages. With V1, Arrow v15 reserves a 4-byte length prefix in
		// the definition-level buffer, and its buffer writer then reallocates
		// and copies the whole buffer on every RLE flush: quadratic in the
		// row group, and it is what real books hit (a level column's nulls
		// come and go as the book's depth moves). DuckDB, pyarrow, Polars and
		// Spark read V2 pages.
		parquet.WithDataPageVersion(parquet.DataPageV2),
		parquet.WithDataPageSize(int64(page)),
	}
	for i := range cw.b.cols {
		c := &cw.b.cols[i]
		if c.kind == String {
			opts = append(opts, parquet.WithDictionaryFor(c.name, true), parquet.WithStatsFor(c.name, true))
		}
		if c.kind == Timestamp {
			opts = append(opts, parquet.WithStatsFor(c.name, true))
		}
		if dictFixed(c, cw.lay.Exact) {
			opts = append(opts, parquet.WithDictionaryFor(c.name, true))
		}
	}
	return parquet.NewWriterProperties(opts...)
}

// pqShared is the schema of the Parquet files of many writers
// (Layout.Shared) that have the same Arrow schema: built once, read by each
// file's writer (about 100 kB a file for a 25-level depth table).
type pqShared struct {
	as    *arrow.Schema
	props *parquet.WriterProperties
	ps    *schema.Schema
	meta  metadata.KeyValueMetadata
}

func newParquetWriter(w io.Writer, cw *Writer) (*parquetWriter, error) {
	as := cw.schema()
	sh := cw.lay.Shared
	if sh == nil || sh.pq == nil || !sh.pq.as.Equal(as) || !slices.Equal(sh.pq.as.Metadata().Keys(), as.Metadata().Keys()) ||
		!slices.Equal(sh.pq.as.Metadata().Values(), as.Metadata().Values()) {
		props := parquetProps(cw)
		ps, err := parquetSchema(as, props)
		if err != nil {
			return nil, fmt.Errorf("parquet schema: %w", err)
		}
		md := as.Metadata()
		meta := make(metadata.KeyValueMetadata, 0, md.Len()+1)
		for i, k := range md.Keys() {
			meta.Append(k, md.Values()[i])
		}
		ser, err := serializeSchema(as)
		if err != nil {
			return nil, fmt.Errorf("parquet schema: %w", err)
		}
		meta.Append("ARROW:schema", base64.StdEncoding.EncodeToString(ser))
		pq := &pqShared{as: as, props: props, ps: ps, meta: meta}
		if sh == nil {
			return newParquetWriterOf(w, cw, pq)
		}
		sh.pq = pq
	}
	return newParquetWriterOf(w, cw, sh.pq)
}

func newParquetWriterOf(w io.Writer, cw *Writer, pq *pqShared) (*parquetWriter, error) {
	props, ps, meta := pq.props, pq.ps, pq.meta
	var err error

	n := len(cw.b.cols)
	rows := cw.opts.BatchRows
	p := &parquetWriter{
		w:      positionWriter{w: w},
		props:  props,
		schema: ps,
		fmb:    metadata.NewFileMetadataBuilder(ps, props, meta),
		page:   int(props.DataPageSize()),
		exact:  cw.lay.Exact,
		chunks: make([]pqChunk, n),
		done:   make([]bool, n), errs: make([]error, n),
	}
	if codec := props.Compression(); codec != compress.Codecs.Uncompressed {
		if p.codec, err = compress.GetCodec(codec); err != nil {
			return nil, err
		}
		p.level = props.CompressionLevel()
	}
	p.scale.price, p.scale.size = cw.lay.Scale.PriceDecimals, cw.lay.Scale.SizeDecimals
	for i := range cw.b.cols {
		c := &cw.b.cols[i]
		if l := len(p.units); l > 0 && c.levelOf >= 0 {
			if prev := &cw.b.cols[p.units[l-1][0]]; prev.levelOf == c.levelOf && prev.level == c.level {
				p.units[l-1][1] = i + 1
				continue
			}
		}
		p.units = append(p.units, [2]int{i, i + 1})
	}
	p.scratch = make([]*pqScratch, min(cw.encoders(), len(p.units)))
	p.rows = rows
	p.release()
	if _, err := p.w.Write(parquetMagic); err != nil {
		return nil, err
	}
	return p, nil
}

var parquetMagic = []byte("PAR1")

// release gives the workers fresh scratch, letting go of the pages and
// dictionaries the last batch grew (a Writer among many that spilled).
func (p *parquetWriter) release() {
	for w := range p.scratch {
		p.scratch[w] = &pqScratch{defBuf: make([]uint8, p.rows), defCol: -1, idx: make([]int32, 0, p.rows)}
	}
}

// parquetSchema is the Parquet schema pqarrow.ToParquet derives from as for
// the types a Writer writes. pqarrow itself is not used: it links Arrow Flight,
// and with it gRPC and protobuf, into every binary that exports.
func parquetSchema(as *arrow.Schema, props *parquet.WriterProperties) (*schema.Schema, error) {
	nodes := make(schema.FieldList, 0, as.NumFields())
	for _, f := range as.Fields() {
		rep := parquet.Repetitions.Required
		if f.Nullable {
			rep = parquet.Repetitions.Optional
		}
		var (
			lt     schema.LogicalType = schema.NoLogicalType{}
			pt     parquet.Type
			length = -1
		)
		switch t := f.Type.(type) {
		case *arrow.Int64Type:
			pt, lt = parquet.Types.Int64, schema.NewIntLogicalType(64, true)
		case *arrow.Int32Type:
			pt, lt = parquet.Types.Int32, schema.NewIntLogicalType(32, true)
		case *arrow.Uint8Type:
			pt, lt = parquet.Types.Int32, schema.NewIntLogicalType(8, false)
		case *arrow.Uint64Type:
			pt, lt = parquet.Types.Int64, schema.NewIntLogicalType(64, false)
		case *arrow.FixedSizeBinaryType:
			pt, length = parquet.Types.FixedLenByteArray, t.ByteWidth
		case *arrow.BinaryType:
			pt = parquet.Types.ByteArray
		case *arrow.BooleanType:
			pt = parquet.Types.Boolean
		case *arrow.StringType:
			pt, lt = parquet.Types.ByteArray, schema.StringLogicalType{}
		case *arrow.Float64Type:
			pt = parquet.Types.Double
		case *arrow.Decimal128Type:
			pt, lt, length = parquet.Types.FixedLenByteArray, schema.NewDecimalLogicalType(t.Precision, t.Scale), 16
		case *arrow.TimestampType:
			// TIMESTAMP(NANOS, isAdjustedToUTC when zoned), with the
			// converted type set as pqarrow does for old readers.
			pt, lt = parquet.Types.Int64, schema.NewTimestampLogicalTypeForce(t.TimeZone != "", schema.TimeUnitNanos)
		default:
			return nil, fmt.Errorf("column %s: no Parquet type for %s", f.Name, f.Type)
		}
		n, err := schema.NewPrimitiveNodeLogical(f.Name, rep, lt, pt, length, -1)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		nodes = append(nodes, n)
	}
	root, err := schema.NewGroupNode(props.RootName(), props.RootRepetition(), nodes, -1)
	if err != nil {
		return nil, err
	}
	return schema.NewSchema(root), nil
}

// serializeSchema is the Arrow IPC stream of as with no batches: what
// pqarrow stores under ARROW:schema (Arrow Flight's SerializeSchema).
func serializeSchema(as *arrow.Schema) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(as))
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// write writes b as one row group. Its columns are encoded and compressed
// in memory by up to len(p.scratch) goroutines, each taking the next unit of
// columns, and every column, once encoded, is copied to the file in column
// order by whichever worker finds it next in line. Nothing a column's bytes
// depend on is shared between workers, so the file is the same whatever the
// number of workers and however they interleave
// (TestParquetEncodersSameFile).
func (p *parquetWriter) write(b *Batch) error {
	if b.rows == 0 {
		return nil
	}
	p.rgb = p.fmb.AppendRowGroup()
	clear(p.done)
	clear(p.errs)
	p.nextClose = 0
	if len(p.scratch) == 1 {
		for u := range p.units {
			p.writeUnit(b, u, p.scratch[0])
		}
	} else {
		var next atomic.Int32
		var wg sync.WaitGroup
		work := func(sc *pqScratch) {
			for u := int(next.Add(1) - 1); u < len(p.units); u = int(next.Add(1) - 1) {
				p.writeUnit(b, u, sc)
			}
		}
		for _, sc := range p.scratch[1:] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work(sc)
			}()
		}
		work(p.scratch[0])
		wg.Wait()
	}
	for i, err := range p.errs {
		if err != nil {
			return fmt.Errorf("column %s: %w", b.cols[i].name, err)
		}
	}
	p.rgb.SetNumRows(b.rows)
	p.rowGroups++
	return p.rgb.Finish(0, int16(p.rowGroups-1))
}

// writeUnit encodes the columns of unit u, then copies out, in column order,
// every encoded column whose turn has come. After a column's error the
// columns behind it are encoded but not written.
func (p *parquetWriter) writeUnit(b *Batch, u int, sc *pqScratch) {
	sc.defCol = -1
	from, to := p.units[u][0], p.units[u][1]
	for i := from; i < to; i++ {
		p.errs[i] = p.encodeColumn(b, i, sc, &p.chunks[i])
	}
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	for i := from; i < to; i++ {
		p.done[i] = true
	}
	for p.nextClose < len(p.done) && p.done[p.nextClose] {
		i := p.nextClose
		p.nextClose++
		if p.errs[i] == nil && (i == 0 || p.errs[i-1] == nil) {
			p.errs[i] = p.copyOut(i, &p.chunks[i])
		} else if p.errs[i] == nil {
			p.errs[i] = p.errs[i-1]
		}
	}
}

// copyOut writes chunk c of column i to the file and its metadata to the
// row group's.
func (p *parquetWriter) copyOut(i int, c *pqChunk) error {
	ccb := p.rgb.NextColumnChunk()
	start := p.w.pos
	info := metadata.ChunkMetaInfo{
		NumValues:        c.values,
		IndexPageOffset:  -1,
		DataPageOffset:   start + int64(c.dictLen),
		CompressedSize:   int64(len(c.buf)),
		UncompressedSize: c.uncompressed,
	}
	es := metadata.EncodingStats{DataEncodingStats: map[parquet.Encoding]int32{c.enc: c.pages}}
	if c.dictLen > 0 {
		info.DictPageOffset = start
		es.DictEncodingStats = map[parquet.Encoding]int32{p.props.DictionaryPageEncoding(): 1}
	}
	if c.hasStats {
		ccb.SetStats(c.stats)
	}
	if err := ccb.Finish(info, c.dictLen > 0, false, es); err != nil {
		return err
	}
	if _, err := p.w.Write(c.buf); err != nil {
		return err
	}
	// The chunk's ColumnMetaData follows its pages, as Arrow writes it.
	_, err := ccb.WriteTo(&p.w)
	return err
}

// encodeColumn encodes column i of b into c.
func (p *parquetWriter) encodeColumn(b *Batch, i int, sc *pqScratch, c *pqChunk) error {
	col := &b.cols[i]
	n := b.rows
	c.reset()
	var def []uint8
	nulls := 0
	if col.nullable {
		def, nulls = sc.defLevels(b, i)
	}
	descr := p.schema.Column(i)
	stats := p.props.StatisticsEnabledFor(descr.Path())
	switch col.kind {
	case Int64, Timestamp, Uint64:
		v := col.i64[:n]
		p.pages(c, sc, n, p.page/8, def, parquet.Encodings.Plain, func(dst []byte, from, to, _, _ int) []byte {
			for r := from; r < to; r++ {
				if def == nil || def[r] != 0 {
					dst = binary.LittleEndian.AppendUint64(dst, uint64(v[r]))
				}
			}
			return dst
		})
		if stats {
			nn := v
			if nulls > 0 {
				nn = compact(sc.i64[:0], v, def)
				sc.i64 = nn
			}
			st := metadata.NewStatistics(descr, memory.DefaultAllocator).(*metadata.Int64Statistics)
			st.Update(nn, int64(nulls))
			return c.setStats(st, p.props, descr)
		}
	case Int32:
		v := col.i32[:n]
		p.pages(c, sc, n, p.page/4, def, parquet.Encodings.Plain, func(dst []byte, from, to, _, _ int) []byte {
			for r := from; r < to; r++ {
				if def == nil || def[r] != 0 {
					dst = binary.LittleEndian.AppendUint32(dst, uint32(v[r]))
				}
			}
			return dst
		})
	case Uint8:
		// INT32 physical: 4 little-endian bytes a value.
		v := col.i64[:n]
		p.pages(c, sc, n, p.page/4, def, parquet.Encodings.Plain, func(dst []byte, from, to, _, _ int) []byte {
			for r := from; r < to; r++ {
				if def == nil || def[r] != 0 {
					dst = binary.LittleEndian.AppendUint32(dst, uint32(uint8(v[r])))
				}
			}
			return dst
		})
	case FixedBytes, Binary:
		// PLAIN: FIXED_LEN_BYTE_ARRAY values back to back; BYTE_ARRAY a
		// 4-byte length before each (no dictionary: binary values are mostly
		// distinct).
		v, w := col.s[:n], col.width
		per := max(1, p.page/64)
		if w > 0 {
			per = max(1, p.page/w)
		}
		p.pages(c, sc, n, per, def, parquet.Encodings.Plain, func(dst []byte, from, to, _, _ int) []byte {
			for r := from; r < to; r++ {
				if def == nil || def[r] != 0 {
					if w == 0 {
						dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v[r])))
					}
					dst = append(dst, v[r]...)
				}
			}
			return dst
		})
	case Bool:
		v := col.b[:n]
		p.pages(c, sc, n, p.page, def, parquet.Encodings.Plain, func(dst []byte, from, to, _, _ int) []byte {
			var acc byte
			k := 0
			for r := from; r < to; r++ {
				if def == nil || def[r] != 0 {
					if v[r] {
						acc |= 1 << (k & 7)
					}
					if k++; k&7 == 0 {
						dst = append(dst, acc)
						acc = 0
					}
				}
			}
			if k&7 != 0 {
				dst = append(dst, acc)
			}
			return dst
		})
	case String:
		return p.encodeStrings(c, sc, col, n, def, nulls, descr, stats)
	case Price, Size, Decimal:
		dec := p.scale.size
		switch {
		case col.kind == Price:
			dec = p.scale.price
		case col.kind == Decimal:
			dec = col.decimals
		}
		v := col.i64[:n]
		if p.exact || col.kind == Decimal {
			// Parquet's decimal is a big-endian two's complement of 16 bytes
			// at precision 38, as pqarrow writes an Arrow decimal128.
			p.pages(c, sc, n, p.page/16, def, parquet.Encodings.Plain, func(dst []byte, from, to, _, _ int) []byte {
				for r := from; r < to; r++ {
					if def == nil || def[r] != 0 {
						dst = binary.BigEndian.AppendUint64(dst, uint64(v[r]>>63))
						dst = binary.BigEndian.AppendUint64(dst, uint64(v[r]))
					}
				}
				return dst
			})
			return nil
		}
		if dictFixed(col, p.exact) && p.encodeDictFixed(c, sc, v, def, b.bookRows(), dec, descr) {
			return nil
		}
		p.pages(c, sc, n, p.page/8, def, parquet.Encodings.Plain, func(dst []byte, from, to, _, _ int) []byte {
			// A level's value is mostly the one of the row before (a book
			// change moves one level), and a division per value is most of
			// the conversion: convert each run once (0 needs none: its
			// float is 0).
			last, lastF := int64(0), 0.0
			for r := from; r < to; r++ {
				if def != nil && def[r] == 0 {
					continue
				}
				if x := v[r]; x != last {
					last, lastF = x, FixedToFloat(x, dec)
				}
				dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(lastF))
			}
			return dst
		})
	}
	return nil
}

// encodeStrings writes a string column dictionary-encoded, or PLAIN when its
// dictionary would pass the dictionary page limit.
func (p *parquetWriter) encodeStrings(c *pqChunk, sc *pqScratch, col *column, n int, def []uint8, nulls int, descr *schema.Column, stats bool) error {
	v := col.s[:n]
	if sc.sIdx == nil {
		sc.sIdx = make(map[string]int32)
	}
	clear(sc.sIdx)
	dic, idx := sc.sDic[:0], sc.idx[:0]
	dictBytes, valBytes := 0, 0
	last, lastIdx := "", int32(-1)
	for r, s := range v {
		if def != nil && def[r] == 0 {
			continue
		}
		valBytes += 4 + len(s)
		if s != last || lastIdx < 0 {
			k, ok := sc.sIdx[s]
			if !ok {
				k = int32(len(dic))
				sc.sIdx[s] = k
				dic = append(dic, s)
				dictBytes += 4 + len(s)
			}
			last, lastIdx = s, k
		}
		idx = append(idx, lastIdx)
	}
	sc.sDic, sc.idx = dic, idx
	per := p.page
	if nv := n - nulls; nv > 0 {
		per = max(1, p.page/max(1, valBytes/nv))
	}
	if int64(dictBytes) < p.props.DictionaryPageSizeLimit() && p.dictPays(descr, dictBytes, valBytes, len(idx), len(dic)) {
		plain := sc.vals[:0]
		for _, s := range dic {
			plain = binary.LittleEndian.AppendUint32(plain, uint32(len(s)))
			plain = append(plain, s...)
		}
		sc.vals = plain
		p.dictPage(c, sc, len(dic), plain)
		p.dictPages(c, sc, n, per, def, idx, len(dic))
	} else {
		p.pages(c, sc, n, per, def, parquet.Encodings.Plain, func(dst []byte, from, to, _, _ int) []byte {
			for r := from; r < to; r++ {
				if def == nil || def[r] != 0 {
					dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v[r])))
					dst = append(dst, v[r]...)
				}
			}
			return dst
		})
	}
	if !stats {
		return nil
	}
	// Min and max are those of the distinct values.
	ba := sc.ba[:0]
	for _, s := range dic {
		ba = append(ba, parquet.ByteArray(s))
	}
	sc.ba = ba
	st := metadata.NewStatistics(descr, memory.DefaultAllocator).(*metadata.ByteArrayStatistics)
	st.Update(ba, int64(nulls))
	clear(ba) // the strings belong to the batch
	return c.setStats(st, p.props, descr)
}

// encodeDictFixed writes fixed-point column v (definition levels def, each
// row's book in books if not nil) as float64 through a dictionary built
// from the fixed-point values. It
// reports false, having written nothing, when the dictionary would pass the
// dictionary page limit.
func (p *parquetWriter) encodeDictFixed(c *pqChunk, sc *pqScratch, v []int64, def []uint8, books []int32, dec uint8, descr *schema.Column) bool {
	d := &sc.dict
	d.reset()
	idx := sc.idx[:0]
	if books != nil {
		// Rows of many books interleave, and a book's next row mostly
		// repeats its last one: look a value up only where it differs from
		// the value of the book's last row in this column.
		lb := &sc.lastOf
		lb.gen++
		if lb.gen == 0 {
			clear(lb.rows)
			lb.gen = 1
		}
		for r, x := range v {
			if def != nil && def[r] == 0 {
				continue
			}
			bk := int(books[r])
			if bk >= len(lb.rows) {
				lb.rows = append(lb.rows, make([]lastValue, bk+1-len(lb.rows))...)
			}
			l := &lb.rows[bk]
			if l.gen != lb.gen || l.val != x {
				*l = lastValue{val: x, idx: d.index(x), gen: lb.gen}
			}
			idx = append(idx, l.idx)
		}
	} else {
		last, lastIdx := int64(0), int32(-1)
		for r, x := range v {
			if def != nil && def[r] == 0 {
				continue
			}
			if x != last || lastIdx < 0 {
				last, lastIdx = x, d.index(x)
			}
			idx = append(idx, lastIdx)
		}
	}
	sc.idx = idx
	if int64(8*len(d.vals)) >= p.props.DictionaryPageSizeLimit() || !p.dictPays(descr, 8*len(d.vals), 8*len(idx), len(idx), len(d.vals)) {
		return false
	}
	// Two fixed-point values with one float64 (beyond 2^53) are two
	// entries of one value: a reader decodes either to it.
	plain := sc.vals[:0]
	for _, x := range d.vals {
		plain = binary.LittleEndian.AppendUint64(plain, math.Float64bits(FixedToFloat(x, dec)))
	}
	sc.vals = plain
	p.dictPage(c, sc, len(d.vals), plain)
	p.dictPages(c, sc, len(v), p.page/8, def, idx, len(d.vals))
	return true
}

// dictPays reports whether a dictionary of entries values (dictBytes PLAIN)
// and the indices of nn values beat the values' PLAIN bytes, where the
// properties ask (Arrow's dictionary cost fallback: columns written
// uncompressed); elsewhere a dictionary is always kept.
func (p *parquetWriter) dictPays(descr *schema.Column, dictBytes, plainBytes, nn, entries int) bool {
	if !p.props.DictionaryCostFallbackEnabledFor(descr.Path()) {
		return true
	}
	bw := max(1, bits.Len32(uint32(entries-1)))
	return dictBytes+2+(nn*bw+7)/8 < plainBytes
}

// defLevels returns the definition levels of nullable column i of b (1
// where a row has a value, 0 where it is null) and the number of nulls.
// The columns of one book level (price, size, count) share their levels,
// computed once: the slice is valid until the next call.
func (p *pqScratch) defLevels(b *Batch, i int) ([]uint8, int) {
	c := &b.cols[i]
	def := p.defBuf[:b.rows]
	if c.levelOf >= 0 {
		if p.defCol >= 0 && b.cols[p.defCol].levelOf == c.levelOf && b.cols[p.defCol].level == c.level {
			return def, p.defNulls
		}
		p.defCol = i
		p.defGen++
		lv, nulls := int32(c.level), 0
		for r, k := range b.levelCounts[c.levelOf][:len(def)] {
			if lv < k {
				def[r] = 1
			} else {
				def[r] = 0
				nulls++
			}
		}
		p.defNulls = nulls
		return def, nulls
	}
	p.defCol = -1
	p.defGen++
	nulls := 0
	for r, isNull := range c.null[:len(def)] {
		if isNull {
			def[r] = 0
			nulls++
		} else {
			def[r] = 1
		}
	}
	return def, nulls
}

// compact appends to dst the values of src whose definition level is not 0.
func compact[T any](dst, src []T, def []uint8) []T {
	for r, v := range src {
		if def[r] != 0 {
			dst = append(dst, v)
		}
	}
	return dst
}

// close writes the footer: the file's metadata, its length and the magic.
func (p *parquetWriter) close() error {
	fmd, err := p.fmb.Finish()
	if err != nil {
		return err
	}
	n, err := fmd.WriteTo(&p.w, nil)
	if err != nil {
		return err
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:], uint32(n))
	copy(tail[4:], parquetMagic)
	_, err = p.w.Write(tail[:])
	return err
}
