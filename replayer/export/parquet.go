package export

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// parquetWriter writes each batch as one row group, so a row group is in
// memory only while it is encoded. It hands the batch's columns to Arrow's
// low-level column chunk writers (WriteBatch with definition levels) instead
// of building an arrow.Record for pqarrow: pqarrow turned every column into
// a validity bitmap and back into definition levels, and that round trip
// cost more than the Parquet encoding itself. The file is the one pqarrow
// writes for the same schema: its schema comes from pqarrow.ToParquet, and
// the Arrow schema is stored under "ARROW:schema" as pqarrow's
// WithStoreSchema does, so Arrow readers get the same types back.
//
// Arrow v15 (where the figures here were measured; arrow-go v18 pools its zstd
// encoders) asked its zstd codec for a fresh encoder (megabytes
// of window) on every page, whatever the level, which is why Snappy is the
// default. Dictionary encoding is on for strings (a handful of venues and
// instruments) and for the depth table's level prices and sizes, whose
// dictionaries the sink builds itself (parquet_dict.go); it is off for other
// numbers, where Arrow's encoder would cost a hash per value.
type parquetWriter struct {
	fw    *file.Writer
	scale struct{ price, size uint8 }
	exact bool
	// units are the column ranges [from, to) one worker writes in a row:
	// the columns of one depth level (price, size, count) share their
	// definition levels, computed once. Every other column is a unit.
	units [][2]int
	// One scratch per worker (WithEncoders): writers[0] is the caller's.
	scratch []*pqScratch
	// Per column, since statistics may keep a byte array's min and max
	// until the file is closed: its values and their backing bytes.
	ba   [][]parquet.ByteArray
	flba [][]parquet.FixedLenByteArray
	data [][]byte
	// The batch being written: which columns are encoded (done) and the
	// next to close, under closeMu (see write).
	closeMu   sync.Mutex
	done      []bool
	nextClose int
	errs      []error
}

// pqScratch is one worker's scratch.
type pqScratch struct {
	// Definition levels of the column being written; defCol is the level
	// column they were computed for (-1: none), defNulls their null count.
	defBuf   []int16
	defCol   int
	defNulls int
	// The non-null values of a column in the writer's physical type, reused
	// across columns and batches: WriteBatch copies numbers into its pages
	// before it returns.
	i64 []int64
	i32 []int32
	f64 []float64
	bl  []bool
	// Dictionary-encoded columns (parquet_dict.go): a row's index, the
	// dictionary, and the validity bitmap of the indices.
	idx   []int32
	dict  fixedDict
	valid []byte
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
func parquetProps(s *Sink) *parquet.WriterProperties {
	codec, page := compress.Codecs.Snappy, pageBytes // the default
	switch s.cfg.compression {
	case Zstd:
		codec, page = compress.Codecs.Zstd, zstdPageBytes
	case Uncompressed:
		codec = compress.Codecs.Uncompressed
	}
	opts := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(int64(s.cfg.batchRows)),
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
	for i := range s.b.cols {
		c := &s.b.cols[i]
		if c.kind == kString {
			opts = append(opts, parquet.WithDictionaryFor(c.name, true), parquet.WithStatsFor(c.name, true))
		}
		if c.kind == kTime {
			opts = append(opts, parquet.WithStatsFor(c.name, true))
		}
		if dictLevels(c, s.cfg.exact) {
			opts = append(opts, parquet.WithDictionaryFor(c.name, true))
		}
	}
	return parquet.NewWriterProperties(opts...)
}

func newParquetWriter(w io.Writer, s *Sink) (*parquetWriter, error) {
	props := parquetProps(s)
	as := s.schema()
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

	n := len(s.b.cols)
	rows := s.cfg.batchRows
	p := &parquetWriter{
		fw:    file.NewParquetWriter(w, ps.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta)),
		exact: s.cfg.exact,
		ba:    make([][]parquet.ByteArray, n), flba: make([][]parquet.FixedLenByteArray, n), data: make([][]byte, n),
		done: make([]bool, n), errs: make([]error, n),
	}
	p.scale.price, p.scale.size = s.cfg.scale.PriceDecimals, s.cfg.scale.SizeDecimals
	var need struct{ i64, i32, f64, bl, dict bool }
	for i := range s.b.cols {
		c := &s.b.cols[i]
		switch k := c.kind; {
		case (k == kInt64 || k == kTime) && c.nullable:
			need.i64 = true
		case k == kInt32 && c.nullable:
			need.i32 = true
		case k == kBool && c.nullable:
			need.bl = true
		case k == kString:
			p.ba[i] = make([]parquet.ByteArray, 0, rows)
		case (k == kPrice || k == kSize) && p.exact, k == kDecimal:
			p.flba[i] = make([]parquet.FixedLenByteArray, 0, rows)
			p.data[i] = make([]byte, 16*rows)
		case k == kPrice || k == kSize:
			need.f64 = true
		}
		need.dict = need.dict || dictLevels(c, p.exact)
		if l := len(p.units); l > 0 && c.levelOf >= 0 {
			if prev := &s.b.cols[p.units[l-1][0]]; prev.levelOf == c.levelOf && prev.level == c.level {
				p.units[l-1][1] = i + 1
				continue
			}
		}
		p.units = append(p.units, [2]int{i, i + 1})
	}
	p.scratch = make([]*pqScratch, min(s.encoders(), len(p.units)))
	for w := range p.scratch {
		sc := &pqScratch{defBuf: make([]int16, rows), defCol: -1}
		if need.i64 {
			sc.i64 = make([]int64, 0, rows)
		}
		if need.i32 {
			sc.i32 = make([]int32, 0, rows)
		}
		if need.f64 {
			sc.f64 = make([]float64, 0, rows)
		}
		if need.bl {
			sc.bl = make([]bool, 0, rows)
		}
		if need.dict {
			sc.idx = make([]int32, rows)
		}
		p.scratch[w] = sc
	}
	return p, nil
}

// parquetSchema is the Parquet schema pqarrow.ToParquet derives from as for
// the types a Sink writes. pqarrow itself is not used: it links Arrow Flight,
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
		case *arrow.BooleanType:
			pt = parquet.Types.Boolean
		case *arrow.StringType:
			pt, lt = parquet.Types.ByteArray, schema.StringLogicalType{}
		case *arrow.Float64Type:
			pt = parquet.Types.Double
		case *arrow.Decimal128Type:
			pt, lt, length = parquet.Types.FixedLenByteArray, schema.NewDecimalLogicalType(t.Precision, t.Scale), 16
		case *arrow.TimestampType:
			// TIMESTAMP(NANOS, isAdjustedToUTC), with the converted type set as
			// pqarrow does for old readers.
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
// in memory (a buffered row group) by up to len(p.scratch) goroutines, each
// taking the next unit of columns, and every column, once encoded, is closed
// (its last page compressed and its chunk copied to the file) in column order
// by whichever worker finds it next in line. Nothing a column's bytes depend
// on is shared between workers, so the file is the same whatever the number
// of workers and however they interleave (TestParquetEncodersSameFile).
func (p *parquetWriter) write(b *batch) error {
	rgw := p.fw.AppendBufferedRowGroup()
	clear(p.done)
	clear(p.errs)
	p.nextClose = 0
	if len(p.scratch) == 1 {
		for u := range p.units {
			p.writeUnit(rgw, b, u, p.scratch[0])
		}
	} else {
		var next atomic.Int32
		var wg sync.WaitGroup
		work := func(sc *pqScratch) {
			for u := int(next.Add(1) - 1); u < len(p.units); u = int(next.Add(1) - 1) {
				p.writeUnit(rgw, b, u, sc)
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
	return rgw.Close()
}

// writeUnit encodes the columns of unit u, then closes, in column order,
// every encoded column whose turn has come.
func (p *parquetWriter) writeUnit(rgw file.BufferedRowGroupWriter, b *batch, u int, sc *pqScratch) {
	sc.defCol = -1
	from, to := p.units[u][0], p.units[u][1]
	for i := from; i < to; i++ {
		cw, err := rgw.Column(i)
		if err == nil {
			err = p.writeColumn(cw, b, i, sc)
		}
		p.errs[i] = err
	}
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	for i := from; i < to; i++ {
		p.done[i] = true
	}
	for p.nextClose < len(p.done) && p.done[p.nextClose] {
		i := p.nextClose
		p.nextClose++
		if p.errs[i] != nil {
			continue
		}
		cw, err := rgw.Column(i)
		if err == nil {
			err = cw.Close()
		}
		p.errs[i] = err
	}
}

// writeColumn writes column i of b: its definition levels (nullable
// columns) and its non-null values, converted to the physical type.
func (p *parquetWriter) writeColumn(cw file.ColumnChunkWriter, b *batch, i int, sc *pqScratch) error {
	c := &b.cols[i]
	n := b.rows
	var def []int16
	nulls := 0
	if c.nullable {
		def, nulls = sc.defLevels(b, i)
	}
	var err error
	switch c.kind {
	case kInt64, kTime:
		v := c.i64[:n]
		if nulls > 0 {
			v = compact(sc.i64[:0], v, def)
		}
		_, err = cw.(*file.Int64ColumnChunkWriter).WriteBatch(v, def, nil)
	case kInt32:
		v := c.i32[:n]
		if nulls > 0 {
			v = compact(sc.i32[:0], v, def)
		}
		_, err = cw.(*file.Int32ColumnChunkWriter).WriteBatch(v, def, nil)
	case kBool:
		v := c.b[:n]
		if nulls > 0 {
			v = compact(sc.bl[:0], v, def)
		}
		_, err = cw.(*file.BooleanColumnChunkWriter).WriteBatch(v, def, nil)
	case kString:
		data := p.data[i][:0]
		for r, s := range c.s[:n] {
			if def == nil || def[r] != 0 {
				data = append(data, s...)
			}
		}
		p.data[i] = data
		v := p.ba[i][:0]
		off := 0
		for r, s := range c.s[:n] {
			if def == nil || def[r] != 0 {
				v = append(v, parquet.ByteArray(data[off:off+len(s):off+len(s)]))
				off += len(s)
			}
		}
		p.ba[i] = v
		_, err = cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(v, def, nil)
	case kPrice, kSize, kDecimal:
		dec := p.scale.size
		if c.kind == kPrice {
			dec = p.scale.price
		}
		if p.exact || c.kind == kDecimal {
			// Parquet's decimal is a big-endian two's complement of 16 bytes
			// at precision 38, as pqarrow writes an Arrow decimal128.
			v, data := p.flba[i][:0], p.data[i]
			for r, x := range c.i64[:n] {
				if nulls == 0 || def[r] != 0 {
					d := data[16*len(v) : 16*len(v)+16 : 16*len(v)+16]
					binary.BigEndian.PutUint64(d, uint64(x>>63))
					binary.BigEndian.PutUint64(d[8:], uint64(x))
					v = append(v, d)
				}
			}
			p.flba[i] = v
			_, err = cw.(*file.FixedLenByteArrayColumnChunkWriter).WriteBatch(v, def, nil)
		} else {
			if dictLevels(c, p.exact) {
				if ok, err := p.writeDictFloat(cw, b, i, def, nulls, dec, sc); ok || err != nil {
					return err
				}
			}
			v := sc.f64[:0]
			// A level's value is mostly the one of the row before (a book
			// change moves one level), and a division per value is most of
			// the conversion: convert each run once (0 needs none: its
			// float is 0).
			last, lastF := int64(0), 0.0
			for r, x := range c.i64[:n] {
				if nulls > 0 && def[r] == 0 {
					continue
				}
				if x != last {
					last, lastF = x, FixedToFloat(x, dec)
				}
				v = append(v, lastF)
			}
			sc.f64 = v
			_, err = cw.(*file.Float64ColumnChunkWriter).WriteBatch(v, def, nil)
		}
	}
	return err
}

// defLevels returns the definition levels of nullable column i of b (1
// where a row has a value, 0 where it is null) and the number of nulls.
// The columns of one book level (price, size, count) share their levels,
// computed once: the slice is valid until the next call.
func (p *pqScratch) defLevels(b *batch, i int) ([]int16, int) {
	c := &b.cols[i]
	def := p.defBuf[:b.rows]
	if c.levelOf >= 0 {
		if p.defCol >= 0 && b.cols[p.defCol].levelOf == c.levelOf && b.cols[p.defCol].level == c.level {
			return def, p.defNulls
		}
		p.defCol = i
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
func compact[T any](dst, src []T, def []int16) []T {
	for r, v := range src {
		if def[r] != 0 {
			dst = append(dst, v)
		}
	}
	return dst
}

func (p *parquetWriter) close() error { return p.fw.Close() }
