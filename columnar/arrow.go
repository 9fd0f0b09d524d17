package columnar

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/tapedeck/tapedeck/book"
)

// timestampNs is the type of every time column: nanoseconds since the epoch
// (UTC) without a time zone, Parquet TIMESTAMP(NANOS, isAdjustedToUTC=false):
// see Timestamp.
var timestampNs = &arrow.TimestampType{Unit: arrow.Nanosecond}

// DecimalPrecision is the precision of the decimal128 columns: Decimal,
// and Price and Size with Layout.Exact.
const DecimalPrecision = 38

// schema is the Arrow schema of the Writer's columns and metadata.
func (cw *Writer) schema() *arrow.Schema {
	fields := make([]arrow.Field, len(cw.b.cols))
	for i := range cw.b.cols {
		c := &cw.b.cols[i]
		fields[i] = arrow.Field{Name: c.name, Type: cw.arrowType(c), Nullable: c.nullable}
	}
	keys := make([]string, len(cw.lay.Metadata))
	vals := make([]string, len(cw.lay.Metadata))
	for i, kv := range cw.lay.Metadata {
		keys[i], vals[i] = kv.Key, kv.Value
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md)
}

func (cw *Writer) arrowType(c *column) arrow.DataType {
	switch c.kind {
	case Decimal:
		return &arrow.Decimal128Type{Precision: DecimalPrecision, Scale: int32(c.decimals)}
	case Int64:
		return arrow.PrimitiveTypes.Int64
	case Timestamp:
		return timestampNs
	case Int32:
		return arrow.PrimitiveTypes.Int32
	case Bool:
		return arrow.FixedWidthTypes.Boolean
	case String:
		return arrow.BinaryTypes.String
	case Uint8:
		return arrow.PrimitiveTypes.Uint8
	case Uint64:
		return arrow.PrimitiveTypes.Uint64
	case FixedBytes:
		return &arrow.FixedSizeBinaryType{ByteWidth: c.width}
	case Binary:
		return arrow.BinaryTypes.Binary
	case Price:
		if cw.lay.Exact {
			return &arrow.Decimal128Type{Precision: DecimalPrecision, Scale: int32(cw.lay.Scale.PriceDecimals)}
		}
		return arrow.PrimitiveTypes.Float64
	default: // Size
		if cw.lay.Exact {
			return &arrow.Decimal128Type{Precision: DecimalPrecision, Scale: int32(cw.lay.Scale.SizeDecimals)}
		}
		return arrow.PrimitiveTypes.Float64
	}
}

// recordBuilder turns a batch into an arrow.Record without copying integer
// columns: the record's buffers alias the batch (and the builder's scratch)
// and are valid until the batch is reset, which happens only after the
// format writer has consumed the record.
type recordBuilder struct {
	schema *arrow.Schema
	scale  book.Scale
	exact  bool
	// Per column scratch, reused across batches.
	valid [][]byte
	f64   [][]float64
	dec   [][]decimal128.Num
	bits  [][]byte
	offs  [][]int32
	data  [][]byte
}

func newRecordBuilder(cw *Writer) *recordBuilder {
	n := len(cw.b.cols)
	rb := &recordBuilder{schema: cw.schema(), scale: cw.lay.Scale, exact: cw.lay.Exact,
		valid: make([][]byte, n), f64: make([][]float64, n), dec: make([][]decimal128.Num, n),
		bits: make([][]byte, n), offs: make([][]int32, n), data: make([][]byte, n)}
	rows := cw.opts.BatchRows
	for i := range cw.b.cols {
		switch k := cw.b.cols[i].kind; {
		case (k == Price || k == Size) && rb.exact, k == Decimal:
			rb.dec[i] = make([]decimal128.Num, 0, rows)
		case k == Price || k == Size:
			rb.f64[i] = make([]float64, 0, rows)
		case k == String || k == Binary:
			rb.offs[i] = make([]int32, 0, rows+1)
		}
	}
	return rb
}

func (rb *recordBuilder) build(b *Batch) arrow.Record {
	n := b.rows
	cols := make([]arrow.Array, len(b.cols))
	for i := range b.cols {
		c := &b.cols[i]
		var validity *memory.Buffer
		nulls := 0
		if c.nullable {
			nulls = rb.validity(b, i, n)
			if nulls > 0 {
				validity = memory.NewBufferBytes(rb.valid[i])
			}
		}
		dt := rb.schema.Field(i).Type
		var bufs []*memory.Buffer
		switch c.kind {
		case Int64, Timestamp, Uint64:
			// A Uint64 column holds the bits in i64: the same bytes.
			bufs = []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(c.i64[:n]))}
		case Uint8:
			data := resizeBytes(rb.data[i], n)
			for r, v := range c.i64[:n] {
				data[r] = uint8(v)
			}
			rb.data[i] = data
			bufs = []*memory.Buffer{validity, memory.NewBufferBytes(data)}
		case FixedBytes:
			// A null is width zero bytes, as Arrow lays out fixed-size binary.
			data := resizeBytes(rb.data[i], n*c.width)
			for r, v := range c.s[:n] {
				copy(data[r*c.width:], v)
			}
			rb.data[i] = data
			bufs = []*memory.Buffer{validity, memory.NewBufferBytes(data)}
		case Int32:
			bufs = []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.i32[:n]))}
		case Bool:
			rb.bits[i] = resizeBytes(rb.bits[i], int(bitutil.BytesForBits(int64(n))))
			bb := rb.bits[i]
			for r, v := range c.b[:n] {
				if v {
					bitutil.SetBit(bb, r)
				} else {
					bitutil.ClearBit(bb, r)
				}
			}
			bufs = []*memory.Buffer{validity, memory.NewBufferBytes(bb)}
		case String, Binary:
			offs := rb.offs[i][:0]
			data := rb.data[i][:0]
			offs = append(offs, 0)
			for _, v := range c.s[:n] {
				data = append(data, v...)
				offs = append(offs, int32(len(data)))
			}
			rb.offs[i], rb.data[i] = offs, data
			bufs = []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs)),
				memory.NewBufferBytes(data)}
		case Price, Size, Decimal:
			dec := rb.scale.SizeDecimals
			if c.kind == Price {
				dec = rb.scale.PriceDecimals
			}
			if rb.exact || c.kind == Decimal {
				d := rb.dec[i][:0]
				for _, v := range c.i64[:n] {
					d = append(d, decimal128.FromI64(v))
				}
				rb.dec[i] = d
				bufs = []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Decimal128Traits.CastToBytes(d))}
			} else {
				f := rb.f64[i][:0]
				for _, v := range c.i64[:n] {
					f = append(f, FixedToFloat(v, dec))
				}
				rb.f64[i] = f
				bufs = []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Float64Traits.CastToBytes(f))}
			}
		}
		data := array.NewData(dt, n, bufs, nil, nulls, 0)
		cols[i] = array.MakeFromData(data)
		data.Release()
	}
	rec := array.NewRecord(rb.schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// validity fills rb.valid[i] with column i's validity bitmap and returns its
// null count; the bitmap is only used when that is not zero.
func (rb *recordBuilder) validity(b *Batch, i, n int) int {
	c := &b.cols[i]
	nulls := 0
	if c.levelOf >= 0 {
		cnt := b.levelCounts[c.levelOf][:n]
		lv := int32(c.level)
		for _, k := range cnt {
			if lv >= k {
				nulls++
			}
		}
		if nulls == 0 {
			return 0
		}
		rb.valid[i] = resizeBytes(rb.valid[i], int(bitutil.BytesForBits(int64(n))))
		vb := rb.valid[i]
		for r, k := range cnt {
			if lv < k {
				bitutil.SetBit(vb, r)
			}
		}
		return nulls
	}
	for _, isNull := range c.null[:n] {
		if isNull {
			nulls++
		}
	}
	if nulls == 0 {
		return 0
	}
	rb.valid[i] = resizeBytes(rb.valid[i], int(bitutil.BytesForBits(int64(n))))
	vb := rb.valid[i]
	for r, isNull := range c.null[:n] {
		if !isNull {
			bitutil.SetBit(vb, r)
		}
	}
	return nulls
}

func resizeBytes(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	b = b[:n]
	clear(b)
	return b
}

var pow10f [book.MaxDecimals + 1]float64

func init() {
	for i := range pow10f {
		pow10f[i] = float64(book.Pow10(uint8(i)))
	}
}

// FixedToFloat returns the float64 nearest to v/10^decimals, the exact
// decimal a fixed-point value stands for. Below 2^53 both operands are exact
// doubles and IEEE division rounds the exact quotient once, so one division
// is the correctly rounded result; larger values go through the decimal text.
func FixedToFloat(v int64, decimals uint8) float64 {
	if v > -(1<<53) && v < 1<<53 {
		return float64(v) / pow10f[decimals]
	}
	var buf [32]byte
	f, err := strconv.ParseFloat(string(book.AppendDecimal(buf[:0], v, decimals)), 64)
	if err != nil { // AppendDecimal writes plain decimals only
		return math.NaN()
	}
	return f
}
