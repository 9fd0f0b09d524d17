package export

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestParquetMatchesPqarrow is two paths to one file: the Sink's Parquet
// writer (column chunk writers fed from the batch) and pqarrow writing the
// same rows, read back from the Sink's Arrow IPC export, with the same
// properties. They must agree byte for byte: schema, logical types, decimal
// encoding, definition levels, pages, statistics and metadata.
func TestParquetMatchesPqarrow(t *testing.T) {
	for _, ds := range testDatasets {
		paths := ds.paths(t)
		for tbl := TableDepth; tbl <= TableInstruments; tbl++ {
			for _, exact := range []bool{false, true} {
				for _, rows := range []int{0, 7} { // one row group, several
					t.Run(fmt.Sprintf("%s/%s/exact=%v/rows=%d", ds.name, tbl, exact, rows), func(t *testing.T) {
						opts := []Option{WithDatasets(paths...)}
						if exact {
							opts = append(opts, WithExact())
						}
						if rows > 0 {
							opts = append(opts, WithBatchRows(rows))
						}
						var pq, arr bytes.Buffer
						ps := sinkTo(t, &pq, tbl, FormatParquet, opts...)
						as := sinkTo(t, &arr, tbl, FormatArrow, opts...)
						replay(t, paths, ps, as)
						if err := ps.Close(); err != nil {
							t.Fatal(err)
						}
						if err := as.Close(); err != nil {
							t.Fatal(err)
						}
						if ps.Rows() == 0 {
							t.Fatal("no rows: the case tests nothing")
						}
						want := viaPqarrow(t, ps, arr.Bytes())
						if !bytes.Equal(pq.Bytes(), want) {
							t.Fatalf("sink wrote %d bytes, pqarrow %d, and they differ", pq.Len(), len(want))
						}
					})
				}
			}
		}
	}
}

// TestParquetMatchesPqarrowLarge is the same comparison on row groups of
// several pages per column: books of 40, 25 and 3 levels (some level
// columns null in part), interleaved as instruments are in a recording.
func TestParquetMatchesPqarrowLarge(t *testing.T) {
	for _, exact := range []bool{false, true} {
		for _, cmp := range []Compression{0, Zstd} {
			t.Run(fmt.Sprintf("exact=%v/zstd=%v", exact, cmp == Zstd), func(t *testing.T) {
				opts := []Option{WithBatchRows(20000)}
				if exact {
					opts = append(opts, WithExact())
				}
				if cmp != 0 {
					opts = append(opts, WithCompression(cmp))
				}
				var pq, arr bytes.Buffer
				ps := sinkTo(t, &pq, TableDepth, FormatParquet, opts...)
				as := sinkTo(t, &arr, TableDepth, FormatArrow, opts...)
				books := []*synthBook{newSynthBook("a", 40), newSynthBook("b", 25), newSynthBook("c", 3)}
				for i := 0; i < 45000; i++ {
					e := books[i%3].next(i / 3)
					if err := ps.OnEvent(e); err != nil {
						t.Fatal(err)
					}
					if err := as.OnEvent(e); err != nil {
						t.Fatal(err)
					}
				}
				if err := ps.Close(); err != nil {
					t.Fatal(err)
				}
				if err := as.Close(); err != nil {
					t.Fatal(err)
				}
				want := viaPqarrow(t, ps, arr.Bytes())
				if !bytes.Equal(pq.Bytes(), want) {
					t.Fatalf("sink wrote %d bytes, pqarrow %d, and they differ", pq.Len(), len(want))
				}
			})
		}
	}
}

// viaPqarrow writes the record batches of an Arrow IPC file with pqarrow and
// the Parquet properties of s, one row group per batch. The columns the sink
// dictionary-encodes itself (dictLevels) are handed to pqarrow as Arrow
// dictionary arrays, dictionary in order of first appearance, which pqarrow
// writes through the same column writer calls (PutDictionary,
// WriteDictIndices).
func viaPqarrow(t *testing.T, s *Sink, ipcFile []byte) []byte {
	t.Helper()
	r, err := ipc.NewFileReader(bytes.NewReader(ipcFile), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	fw, err := pqarrow.NewFileWriter(r.Schema(), &out, parquetProps(s),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		fw.NewRowGroup()
		for c, col := range rec.Columns() {
			if !dictLevels(&s.b.cols[c], s.cfg.exact) {
				if err := fw.WriteColumnData(col); err != nil {
					t.Fatal(err)
				}
				continue
			}
			da := toDictionary(t, col.(*array.Float64))
			if err := fw.WriteColumnData(da); err != nil {
				t.Fatal(err)
			}
			da.Release()
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// toDictionary is a as a dictionary array (int32 indices), its dictionary
// in order of first appearance.
func toDictionary(t *testing.T, a *array.Float64) arrow.Array {
	t.Helper()
	var dict []float64
	at := map[float64]int32{}
	idx := make([]int32, a.Len())
	valid := make([]bool, a.Len())
	for r := range idx {
		if a.IsNull(r) {
			continue
		}
		v := a.Value(r)
		k, ok := at[v]
		if !ok {
			k = int32(len(dict))
			at[v] = k
			dict = append(dict, v)
		}
		idx[r], valid[r] = k, true
	}
	ib := array.NewInt32Builder(memory.DefaultAllocator)
	defer ib.Release()
	ib.AppendValues(idx, valid)
	indices := ib.NewArray()
	defer indices.Release()
	fb := array.NewFloat64Builder(memory.DefaultAllocator)
	defer fb.Release()
	fb.AppendValues(dict, nil)
	values := fb.NewArray()
	defer values.Release()
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.PrimitiveTypes.Float64}, indices, values)
}
