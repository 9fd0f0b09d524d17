package columnar

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
	"github.com/tapedeck/tapedeck/book"
)

// testTable is a table written twice, as Parquet and as Arrow IPC, by
// Writers over the same columns and rows.
type testTable struct {
	pq, arr bytes.Buffer
	pw, aw  *Writer
	pb, ab  *Batch
}

func newTestTable(t *testing.T, b Batch, o Options, l Layout) *testTable {
	t.Helper()
	tt := &testTable{}
	var err error
	b2 := Batch{cols: slices.Clone(b.cols), levelCounts: slices.Clone(b.levelCounts)}
	if tt.pw, err = NewWriter(&tt.pq, b, Parquet, o, l); err != nil {
		t.Fatal(err)
	}
	if tt.aw, err = NewWriter(&tt.arr, b2, Arrow, o, l); err != nil {
		t.Fatal(err)
	}
	tt.pb, tt.ab = tt.pw.Batch(), tt.aw.Batch()
	return tt
}

// row sets a row in both batches with set and ends it.
func (tt *testTable) row(t *testing.T, set func(b *Batch)) {
	t.Helper()
	set(tt.pb)
	set(tt.ab)
	if err := tt.pw.EndRow(); err != nil {
		t.Fatal(err)
	}
	if err := tt.aw.EndRow(); err != nil {
		t.Fatal(err)
	}
}

func (tt *testTable) close(t *testing.T) {
	t.Helper()
	if err := tt.pw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tt.aw.Close(); err != nil {
		t.Fatal(err)
	}
}

var testScale = book.Scale{PriceDecimals: 4, SizeDecimals: 6}

// TestParquetMatchesPqarrow is two paths to one table: the Writer's Parquet
// (its own pages from the batch) and pqarrow writing the same rows, read
// back from the Writer's Arrow IPC form, with the same properties.
// sameParquet compares the two files: every cell as Arrow's reader reads
// it, and the metadata (schema, logical types, key-value metadata, row
// groups, codecs, statistics, dictionary pages). The table has a column of
// every type, each nullable one null in some rows.
func TestParquetMatchesPqarrow(t *testing.T) {
	for _, exact := range []bool{false, true} {
		for _, rows := range []int{0, 7} { // one row group, several
			t.Run(fmt.Sprintf("exact=%v/rows=%d", exact, rows), func(t *testing.T) {
				var b Batch
				types := []ColumnType{Int64, String, Bool, Timestamp, Decimal, Int32, Price, Size}
				for _, typ := range types {
					b.Add(typ.String(), typ, false)
					b.Add(typ.String()+"_or_null", typ, true)
				}
				b.SetScale(8, 3)
				b.SetScale(9, 3)
				b.Add("instrument", String, false)
				tt := newTestTable(t, b, Options{BatchRows: rows, Datasets: []string{"a/b"}}, Layout{Table: "all",
					Metadata: []KeyValue{{MetaTable, "all"}, {"k", "v"}}, Scale: testScale, Exact: exact})
				for r := range 40 {
					tt.row(t, func(b *Batch) {
						for i, typ := range types {
							for _, c := range []int{2 * i, 2*i + 1} {
								if c%2 == 1 && r%3 == 0 {
									b.Null(c)
									continue
								}
								v := int64(r*7919%1000 - 300)
								switch typ {
								case String:
									b.String(c, fmt.Sprintf("s%d", r%5))
								case Bool:
									b.Bool(c, r%2 == 0)
								case Int32:
									b.Int32(c, int32(v))
								case Timestamp:
									b.Int64(c, 1_700_000_000_000_000_000+int64(r)*1_000_003)
								default:
									b.Int64(c, v)
								}
							}
						}
						b.StringBytes(len(types)*2, []byte(fmt.Sprintf("%077d", r%3)))
					})
				}
				tt.close(t)
				sameParquet(t, tt.pq.Bytes(), viaPqarrow(t, tt.pw, tt.arr.Bytes()))
			})
		}
	}
}

// TestParquetMatchesPqarrowLarge is the same comparison on row groups of
// several pages per column: depth rows of books of 40, 25 and 3 levels
// (some level columns null in part), interleaved as instruments are in a
// recording, each level change a row.
func TestParquetMatchesPqarrowLarge(t *testing.T) {
	for _, exact := range []bool{false, true} {
		for _, cmp := range []Compression{0, Zstd} {
			t.Run(fmt.Sprintf("exact=%v/zstd=%v", exact, cmp == Zstd), func(t *testing.T) {
				const levels = 25
				var b Batch
				cExch := b.Add("exchange_ts_ns", Timestamp, true)
				cLocal := b.Add("local_ts_ns", Timestamp, false)
				cInst := b.Add("instrument", String, false)
				nb, na := b.AddLevelCount(), b.AddLevelCount()
				c0 := b.Columns()
				for i := range levels {
					n := fmt.Sprint(i)
					b.AddLevel("bid_price_"+n, Price, nb, i)
					b.AddLevel("bid_size_"+n, Size, nb, i)
					b.AddLevel("bid_count_"+n, Int32, nb, i)
					b.AddLevel("ask_price_"+n, Price, na, i)
					b.AddLevel("ask_size_"+n, Size, na, i)
					b.AddLevel("ask_count_"+n, Int32, na, i)
				}
				cValid := b.Add("book_valid", Bool, false)
				tt := newTestTable(t, b, Options{BatchRows: 20000, Compression: cmp}, Layout{Table: "depth",
					Metadata: []KeyValue{{MetaTable, "depth"}}, Scale: testScale, Exact: exact})
				books := []*book.Book{synthBook(40), synthBook(25), synthBook(3)}
				var bids, asks []book.Level
				for i := range 45000 {
					k, j := i%3, i/3
					bk := books[k]
					side := book.Side(j & 1)
					off := int64((j >> 1) % 20)
					price := int64(4800) - off*10
					if side == book.Ask {
						price = 5200 + off*10
					}
					size := int64(1_000_000 + (j%97)*250_000)
					if j%11 == 0 {
						size = 0
					}
					_ = bk.Set(side, price, size, int32(j%4))
					bids, asks = bk.Top(book.Bid, bids[:0], levels), bk.Top(book.Ask, asks[:0], levels)
					tt.row(t, func(b *Batch) {
						if i%5 == 0 {
							b.Null(cExch)
						} else {
							b.Int64(cExch, 1_700_000_000_000_000_000+int64(i)*1_000_000-5_000_000)
						}
						b.Int64(cLocal, 1_700_000_000_000_000_000+int64(i)*1_000_000)
						b.String(cInst, []string{"a", "b", "c"}[k])
						b.SetBook(int32(k))
						b.SetLevelCount(nb, int32(len(bids)))
						b.SetLevelCount(na, int32(len(asks)))
						b.SetSides(c0, levels, true, bids, asks)
						b.Bool(cValid, true)
					})
				}
				tt.close(t)
				sameParquet(t, tt.pq.Bytes(), viaPqarrow(t, tt.pw, tt.arr.Bytes()))
			})
		}
	}
}

// synthBook is a book of the given levels a side.
func synthBook(levels int) *book.Book {
	bk := book.New(testScale)
	bids := make([]book.Level, levels)
	asks := make([]book.Level, levels)
	for i := range bids {
		bids[i] = book.Level{Price: int64(4800 - i*10), Size: int64(100_250_000 + i*1_000_000), Count: 1}
		asks[i] = book.Level{Price: int64(5200 + i*10), Size: int64(90_500_000 + i*1_000_000), Count: 2}
	}
	if err := bk.Replace(bids, asks); err != nil {
		panic(err)
	}
	return bk
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
func viaPqarrow(t *testing.T, cw *Writer, ipcFile []byte) []byte {
	t.Helper()
	r, err := ipc.NewFileReader(bytes.NewReader(ipcFile), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	fw, err := pqarrow.NewFileWriter(r.Schema(), &out, parquetProps(cw),
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
			if !dictFixed(&cw.b.cols[c], cw.lay.Exact) {
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
