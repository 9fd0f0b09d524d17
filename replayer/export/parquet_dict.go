package export

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// Dictionary-encoded book levels.
//
// A depth row repeats most of the row before it: a book change moves one
// level, or shifts the levels below it by one. Written PLAIN, each of the
// hundred level columns is 8 bytes a row that Snappy then has to find again
// (most of a depth export's time went to Snappy); dictionary-encoded
// (RLE_DICTIONARY, as pyarrow writes by default), a column chunk is a short
// dictionary and run-length indices, a file about half the size for a
// fraction of the compression work. Arrow's dictionary encoder would hash
// every value; the sink knows the runs and the fixed-point values, so it
// builds the dictionary (in order of first appearance, as Arrow's encoder
// does) and the indices itself, looking a value up only where it differs
// from the row before, and hands both to the column writer
// (PutDictionary, WriteDictIndices): the pages are those pqarrow writes for
// an Arrow dictionary array of the same values (TestParquetMatchesPqarrow).

// dictLevels reports whether column c is written dictionary-encoded: the
// float64 prices and sizes of the depth table's levels.
func dictLevels(c *column, exact bool) bool {
	return c.levelOf >= 0 && (c.kind == kPrice || c.kind == kSize) && !exact
}

// dictEncoder is what the sink needs of the column writer's dictionary
// encoder (an internal type of Arrow's).
type dictEncoder interface {
	PutDictionary(values arrow.Array) error
	NumEntries() int
}

// fixedDict maps the fixed-point values of one column chunk to their
// dictionary indices: open addressing over a power-of-two table whose slots
// are marked with the chunk's generation, so starting a chunk clears
// nothing.
type fixedDict struct {
	slots []dictSlot
	shift uint // 64 - log2(len(slots))
	gen   uint32
	vals  []int64 // by index: the chunk's distinct values in order of first appearance
}

type dictSlot struct {
	key int64
	gen uint32
	idx int32
}

func (d *fixedDict) reset() {
	d.vals = d.vals[:0]
	d.gen++
	if d.gen == 0 { // wrapped: old marks could match again
		clear(d.slots)
		d.gen = 1
	}
	if d.slots == nil {
		d.slots, d.shift = make([]dictSlot, 1024), 64-10
	}
}

// index returns x's index, adding x to the dictionary if it is new.
func (d *fixedDict) index(x int64) int32 {
	mask := len(d.slots) - 1
	for h := int(uint64(x) * 0x9E3779B97F4A7C15 >> d.shift); ; h = (h + 1) & mask {
		s := &d.slots[h]
		if s.gen != d.gen {
			idx := int32(len(d.vals))
			*s = dictSlot{key: x, gen: d.gen, idx: idx}
			d.vals = append(d.vals, x)
			if 2*len(d.vals) > len(d.slots) {
				d.grow()
			}
			return idx
		}
		if s.key == x {
			return s.idx
		}
	}
}

func (d *fixedDict) grow() {
	d.slots = make([]dictSlot, 2*len(d.slots))
	d.shift--
	d.gen = 1
	mask := len(d.slots) - 1
	for i, x := range d.vals {
		h := int(uint64(x) * 0x9E3779B97F4A7C15 >> d.shift)
		for d.slots[h].gen == d.gen {
			h = (h + 1) & mask
		}
		d.slots[h] = dictSlot{key: x, gen: d.gen, idx: int32(i)}
	}
}

// writeDictFloat writes float64 level column i of b (definition levels
// def, nulls of them 0) through its dictionary encoder. It reports false,
// having written nothing, when the column writer is not dictionary-encoding
// or the dictionary would pass the writer's dictionary page limit: the
// caller then writes the values PLAIN.
func (p *parquetWriter) writeDictFloat(cw file.ColumnChunkWriter, b *batch, i int, def []int16, nulls int, dec uint8, sc *pqScratch) (bool, error) {
	enc, ok := cw.CurrentEncoder().(dictEncoder)
	if !ok || enc.NumEntries() != 0 {
		return false, nil
	}
	c := &b.cols[i]
	n := b.rows
	idx := sc.idx[:n]
	d := &sc.dict
	d.reset()
	last, lastIdx := int64(0), int32(-1)
	for r, x := range c.i64[:n] {
		if nulls > 0 && def[r] == 0 {
			idx[r] = 0
			continue
		}
		if x != last || lastIdx < 0 {
			last, lastIdx = x, d.index(x)
		}
		idx[r] = lastIdx
	}
	if int64(8*len(d.vals)) >= cw.Properties().DictionaryPageSizeLimit() {
		cw.FallbackToPlain()
		return false, nil
	}
	fv := sc.f64[:0]
	for _, x := range d.vals {
		fv = append(fv, FixedToFloat(x, dec))
	}
	sc.f64 = fv
	dict := array.NewData(arrow.PrimitiveTypes.Float64, len(fv),
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Float64Traits.CastToBytes(fv))}, nil, 0, 0)
	defer dict.Release()
	da := array.MakeFromData(dict)
	defer da.Release()
	if err := enc.PutDictionary(da); err != nil {
		return true, err
	}
	if enc.NumEntries() != len(fv) {
		// Two fixed-point values with one float64 (beyond 2^53): Arrow's
		// memo table merged them, so the indices would be off.
		cw.FallbackToPlain()
		return false, nil
	}
	var validity *memory.Buffer
	if nulls > 0 {
		vb := resizeBytes(sc.valid, int(bitutil.BytesForBits(int64(n))))
		sc.valid = vb
		clear(vb)
		for r, l := range def[:n] {
			if l != 0 {
				bitutil.SetBit(vb, r)
			}
		}
		validity = memory.NewBufferBytes(vb)
	}
	ix := array.NewData(arrow.PrimitiveTypes.Int32, n,
		[]*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(idx))}, nil, nulls, 0)
	defer ix.Release()
	ia := array.MakeFromData(ix)
	defer ia.Release()
	return true, cw.WriteDictIndices(ia, def, nil)
}
