package export

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestParquetMatchesPqarrow is two paths to one table: the Sink's Parquet
// writer (its own pages from the batch) and pqarrow writing the same rows,
// read back from the Sink's Arrow IPC export, with the same properties.
// sameParquet compares the two files: every cell as Arrow's reader reads
// it, and the metadata (schema, logical types, key-value metadata, row
// groups, codecs, statistics, dictionary pages).
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
						sameParquet(t, pq.Bytes(), viaPqarrow(t, ps, arr.Bytes()))
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
				sameParquet(t, pq.Bytes(), viaPqarrow(t, ps, arr.Bytes()))
			})
		}
	}
}

// sameParquet fails t unless Parquet files got and want hold the same
// table: the same schema and key-value metadata, the same row groups of the
// same rows, each column chunk with the same codec, statistics (min, max,
// null count) and dictionary page or none, and every cell equal as pqarrow
// reads it back (values, nulls and Arrow types). The pages themselves may
// differ (page boundaries, RLE runs).
func sameParquet(t *testing.T, got, want []byte) {
	t.Helper()
	open := func(b []byte) *file.Reader {
		r, err := file.NewParquetReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	g, w := open(got), open(want)
	defer g.Close()
	defer w.Close()
	gm, wm := g.MetaData(), w.MetaData()
	if !gm.Schema.Equals(wm.Schema) || gm.Schema.String() != wm.Schema.String() {
		t.Fatalf("schema\n%s\nwant\n%s", gm.Schema, wm.Schema)
	}
	if gk, wk := gm.KeyValueMetadata(), wm.KeyValueMetadata(); !slices.Equal(gk.Keys(), wk.Keys()) || !slices.Equal(gk.Values(), wk.Values()) {
		t.Fatalf("key-value metadata %v, want %v", gm.KeyValueMetadata(), wm.KeyValueMetadata())
	}
	if gm.GetCreatedBy() != wm.GetCreatedBy() || gm.Version() != wm.Version() || gm.NumRows != wm.NumRows {
		t.Fatalf("created by %q version %v rows %d, want %q %v %d", gm.GetCreatedBy(), gm.Version(), gm.NumRows, wm.GetCreatedBy(), wm.Version(), wm.NumRows)
	}
	if gm.NumRowGroups() != wm.NumRowGroups() {
		t.Fatalf("%d row groups, want %d", gm.NumRowGroups(), wm.NumRowGroups())
	}
	for i := 0; i < gm.NumRowGroups(); i++ {
		grg, wrg := gm.RowGroup(i), wm.RowGroup(i)
		if grg.NumRows() != wrg.NumRows() || grg.NumColumns() != wrg.NumColumns() {
			t.Fatalf("row group %d: %d rows %d columns, want %d %d", i, grg.NumRows(), grg.NumColumns(), wrg.NumRows(), wrg.NumColumns())
		}
		for c := 0; c < grg.NumColumns(); c++ {
			gc, err := grg.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			wc, err := wrg.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			name := gm.Schema.Column(c).Name()
			if gc.Compression() != wc.Compression() || gc.NumValues() != wc.NumValues() || gc.HasDictionaryPage() != wc.HasDictionaryPage() {
				t.Fatalf("row group %d column %s: codec %v values %d dictionary %v, want %v %d %v", i, name,
					gc.Compression(), gc.NumValues(), gc.HasDictionaryPage(), wc.Compression(), wc.NumValues(), wc.HasDictionaryPage())
			}
			if !slices.Equal(gc.Encodings(), wc.Encodings()) {
				t.Fatalf("row group %d column %s: encodings %v, want %v", i, name, gc.Encodings(), wc.Encodings())
			}
			gs, err := gc.StatsSet()
			if err != nil {
				t.Fatal(err)
			}
			ws, err := wc.StatsSet()
			if err != nil {
				t.Fatal(err)
			}
			if gs != ws {
				t.Fatalf("row group %d column %s: statistics %v, want %v", i, name, gs, ws)
			}
			if gs {
				gst, err := gc.Statistics()
				if err != nil {
					t.Fatal(err)
				}
				wst, err := wc.Statistics()
				if err != nil {
					t.Fatal(err)
				}
				if gst.NullCount() != wst.NullCount() || gst.HasMinMax() != wst.HasMinMax() ||
					!bytes.Equal(gst.EncodeMin(), wst.EncodeMin()) || !bytes.Equal(gst.EncodeMax(), wst.EncodeMax()) {
					t.Fatalf("row group %d column %s: statistics %v, want %v", i, name, gst, wst)
				}
			}
		}
	}
	read := func(b []byte) arrow.Table {
		tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(b), parquet.NewReaderProperties(nil),
			pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	gt, wt := read(got), read(want)
	defer gt.Release()
	defer wt.Release()
	if !gt.Schema().Equal(wt.Schema()) || !gt.Schema().Metadata().Equal(wt.Schema().Metadata()) {
		t.Fatalf("arrow schema %v, want %v", gt.Schema(), wt.Schema())
	}
	if gt.NumRows() != wt.NumRows() || wt.NumRows() != wm.NumRows {
		t.Fatalf("%d rows read, want %d", gt.NumRows(), wt.NumRows())
	}
	for c := 0; c < int(gt.NumCols()); c++ {
		ga, wa := gt.Column(c).Data(), wt.Column(c).Data()
		if !array.ChunkedEqual(ga, wa) {
			for r := 0; r < int(gt.NumRows()); r++ {
				gv, wv := chunkedAt(ga, r), chunkedAt(wa, r)
				if gv != wv {
					t.Fatalf("column %s row %d: %s, want %s", gt.Schema().Field(c).Name, r, gv, wv)
				}
			}
			t.Fatalf("column %s differs", gt.Schema().Field(c).Name)
		}
	}
}

// chunkedAt is row r of c as text.
func chunkedAt(c *arrow.Chunked, r int) string {
	for _, a := range c.Chunks() {
		if r < a.Len() {
			return a.ValueStr(r)
		}
		r -= a.Len()
	}
	return "(none)"
}

// viaPqarrow writes the record batches of an Arrow IPC file with pqarrow and
// the Parquet properties of s, one row group per batch. The columns the sink
// dictionary-encodes itself (dictFixed) are handed to pqarrow as Arrow
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
			if !dictFixed(&s.b.cols[c], s.cfg.exact) {
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
