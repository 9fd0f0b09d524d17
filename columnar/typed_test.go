package columnar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var typedTestSchema = TypedSchema{
	Name: "fills",
	Columns: []Column{
		{Name: "seq", Type: Int64},
		{Name: "instrument", Type: String},
		{Name: "maker", Type: Bool},
		{Name: "local_ts_ns", Type: Timestamp},
		{Name: "exchange_ts_ns", Type: Timestamp, Nullable: true},
		{Name: "price", Type: Decimal, Scale: 4},
		{Name: "fee", Type: Decimal, Scale: 10, Nullable: true},
		{Name: "tag", Type: String, Nullable: true},
	},
	Metadata: map[string]string{"tapedeck.strategy": "mm"},
}

// typedRow is one row of typedTestSchema; a nil pointer is a null.
type typedRow struct {
	seq   int64
	inst  string
	maker bool
	local int64
	exch  *int64
	price int64
	fee   *int64
	tag   *string
}

func ptr[T any](v T) *T { return &v }

func typedRows(n int) []typedRow {
	rows := make([]typedRow, n)
	for i := range rows {
		r := typedRow{seq: int64(i + 1), inst: fmt.Sprintf("%d7106", 52114319501245915+int64(i%3)), maker: i%2 == 0,
			local: 1_700_000_000_123_456_789 + int64(i)*1e6, price: int64(5000 + i)}
		if i%3 != 0 {
			r.exch = ptr(r.local - 42)
		}
		switch i % 4 {
		case 0:
			r.fee = ptr(int64(-12345678901)) // a rebate: -1.2345678901
		case 1:
			r.fee = ptr(int64(i) * 1_000_000_007)
		}
		if i%5 == 1 {
			r.tag = ptr(`quo"te, comma`)
		}
		rows[i] = r
	}
	return rows
}

func writeTyped(t testing.TB, w *bytes.Buffer, f Format, rows []typedRow, o Options) *TypedTable {
	t.Helper()
	tt, err := NewTypedTable(w, typedTestSchema, f, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		tt.Int64(0, r.seq)
		tt.String(1, r.inst)
		tt.Bool(2, r.maker)
		tt.Time(3, r.local)
		if r.exch != nil {
			tt.Time(4, *r.exch)
		} else {
			tt.Null(4)
		}
		tt.Decimal(5, r.price)
		if r.fee != nil {
			tt.Decimal(6, *r.fee)
		} else {
			tt.Null(6)
		}
		if r.tag != nil {
			tt.String(7, *r.tag)
		} else {
			tt.Null(7)
		}
		if err := tt.EndRow(); err != nil {
			t.Fatal(err)
		}
	}
	if err := tt.Close(); err != nil {
		t.Fatal(err)
	}
	return tt
}

// A typed table read back with pqarrow has the documented types and the
// values written, to the last decimal, nulls where they were set, across
// several row groups.
func TestTypedTableParquetRoundTrip(t *testing.T) {
	rows := typedRows(23)
	var buf bytes.Buffer
	writeTyped(t, &buf, Parquet, rows, Options{BatchRows: 5, Datasets: []string{"a/b"}})
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(buf.Bytes()), parquet.NewReaderProperties(nil),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != int64(len(rows)) {
		t.Fatalf("%d rows, want %d", tbl.NumRows(), len(rows))
	}
	wantTypes := []string{"int64", "utf8", "bool", "timestamp[ns]", "timestamp[ns]",
		"decimal(38, 4)", "decimal(38, 10)", "utf8"}
	for i, f := range tbl.Schema().Fields() {
		c := typedTestSchema.Columns[i]
		if f.Name != c.Name || f.Type.String() != wantTypes[i] || f.Nullable != c.Nullable {
			t.Errorf("column %d: %s %s nullable=%v, want %s %s nullable=%v", i, f.Name, f.Type, f.Nullable, c.Name, wantTypes[i], c.Nullable)
		}
	}
	pr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	md := pr.MetaData().KeyValueMetadata()
	for k, v := range map[string]string{MetaTable: "fills", MetaDatasets: `["a/b"]`, MetaExact: "true", "tapedeck.strategy": "mm"} {
		if got := md.FindValue(k); got == nil || *got != v {
			t.Errorf("metadata %s = %v, want %q", k, got, v)
		}
	}
	if n := pr.NumRowGroups(); n != 5 {
		t.Fatalf("%d row groups for 23 rows of 5, want 5", n)
	}
	// Read every column row by row across its chunks (row groups).
	at := func(col, row int) (arrow.Array, int) {
		for _, ch := range tbl.Column(col).Data().Chunks() {
			if row < ch.Len() {
				return ch, row
			}
			row -= ch.Len()
		}
		t.Fatalf("row %d beyond column %d", row, col)
		return nil, 0
	}
	dec := func(a arrow.Array, i int) int64 {
		v := a.(*array.Decimal128).Value(i)
		if v.HighBits() != 0 && v.HighBits() != -1 {
			t.Fatalf("decimal %v beyond int64", v)
		}
		return int64(v.LowBits())
	}
	for r, w := range rows {
		a, i := at(0, r)
		if got := a.(*array.Int64).Value(i); got != w.seq {
			t.Fatalf("row %d seq %d, want %d", r, got, w.seq)
		}
		if a, i = at(1, r); a.(*array.String).Value(i) != w.inst {
			t.Fatalf("row %d instrument %q", r, a.(*array.String).Value(i))
		}
		if a, i = at(2, r); a.(*array.Boolean).Value(i) != w.maker {
			t.Fatalf("row %d maker", r)
		}
		if a, i = at(3, r); int64(a.(*array.Timestamp).Value(i)) != w.local {
			t.Fatalf("row %d local %d", r, a.(*array.Timestamp).Value(i))
		}
		if a, i = at(4, r); a.IsNull(i) != (w.exch == nil) || (w.exch != nil && int64(a.(*array.Timestamp).Value(i)) != *w.exch) {
			t.Fatalf("row %d exchange ts null=%v", r, a.IsNull(i))
		}
		if a, i = at(5, r); dec(a, i) != w.price {
			t.Fatalf("row %d price %d, want %d", r, dec(a, i), w.price)
		}
		if a, i = at(6, r); a.IsNull(i) != (w.fee == nil) || (w.fee != nil && dec(a, i) != *w.fee) {
			t.Fatalf("row %d fee null=%v", r, a.IsNull(i))
		}
		if a, i = at(7, r); a.IsNull(i) != (w.tag == nil) || (w.tag != nil && a.(*array.String).Value(i) != *w.tag) {
			t.Fatalf("row %d tag null=%v", r, a.IsNull(i))
		}
	}
}

// A typed table's Parquet file holds the table pqarrow writes for its Arrow
// IPC form with the same properties (sameParquet: every cell and the
// metadata), and it is deterministic: the same code path and conventions as
// the replayed tables.
func TestTypedTableParquetMatchesPqarrow(t *testing.T) {
	for _, opts := range []Options{{}, {BatchRows: 4}, {Compression: Zstd}, {Compression: Uncompressed, BatchRows: 1}} {
		rows := typedRows(17)
		var pq, pq2, arr bytes.Buffer
		tt := writeTyped(t, &pq, Parquet, rows, opts)
		writeTyped(t, &pq2, Parquet, rows, opts)
		ipcOpts := opts
		if opts.Compression == Zstd {
			ipcOpts.Compression = Uncompressed
		}
		writeTyped(t, &arr, Arrow, rows, ipcOpts)
		if !bytes.Equal(pq.Bytes(), pq2.Bytes()) {
			t.Fatal("two writes of the same rows differ")
		}
		sameParquet(t, pq.Bytes(), viaPqarrow(t, tt.w, arr.Bytes()))
	}
}

// The Arrow IPC form holds the same values.
func TestTypedTableArrow(t *testing.T) {
	rows := typedRows(9)
	var buf bytes.Buffer
	writeTyped(t, &buf, Arrow, rows, Options{BatchRows: 4})
	r, err := ipc.NewFileReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < int(rec.NumRows()); j++ {
			w := rows[n]
			fee := rec.Column(6)
			if rec.Column(0).(*array.Int64).Value(j) != w.seq || fee.IsNull(j) != (w.fee == nil) ||
				(w.fee != nil && int64(fee.(*array.Decimal128).Value(j).LowBits()) != *w.fee) {
				t.Fatalf("row %d differs", n)
			}
			n++
		}
	}
	if n != len(rows) {
		t.Fatalf("%d rows, want %d", n, len(rows))
	}
}

// CSV: a header of the column names, then each value as its type says:
// integers, exact decimals (negative too), ns, true/false, empty for null,
// instrument ids always quoted, other strings quoted when they must be.
func TestTypedTableCSV(t *testing.T) {
	rows := typedRows(6)
	var buf bytes.Buffer
	writeTyped(t, &buf, CSV, rows, Options{BatchRows: 4})
	want := `seq,instrument,maker,local_ts_ns,exchange_ts_ns,price,fee,tag
1,"521143195012459157106",true,1700000000123456789,0,0.5,-1.2345678901,
2,"521143195012459167106",false,1700000000124456789,1700000000124456747,0.5001,0.1000000007,"quo""te, comma"
3,"521143195012459177106",true,1700000000125456789,1700000000125456747,0.5002,,
4,"521143195012459157106",false,1700000000126456789,0,0.5003,,
5,"521143195012459167106",true,1700000000127456789,1700000000127456747,0.5004,-1.2345678901,
6,"521143195012459177106",false,1700000000128456789,1700000000128456747,0.5005,0.5000000035,
`
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

// Misuse names the column and drops the row; the table goes on.
func TestTypedTableMisuse(t *testing.T) {
	var buf bytes.Buffer
	sc := TypedSchema{Name: "t", Columns: []Column{{Name: "a", Type: Int64}, {Name: "b", Type: String, Nullable: true}}}
	tt, err := NewTypedTable(&buf, sc, CSV, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		row  func()
		want string
	}{
		{func() { tt.Int64(0, 1) }, "column b not set"},
		{func() { tt.String(0, "x"); tt.Null(1) }, "column a is int64, set as string"},
		{func() { tt.Null(0); tt.Null(1) }, "column a is not nullable"},
		{func() { tt.Int64(0, 1); tt.Int64(0, 2); tt.Null(1) }, "column a set twice"},
		{func() { tt.Int64(2, 1) }, "no column 2"},
	} {
		c.row()
		if err := tt.EndRow(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err %v, want %q", err, c.want)
		}
	}
	tt.Int64(0, 7)
	tt.String(1, "ok")
	if err := tt.EndRow(); err != nil {
		t.Fatal(err)
	}
	if err := tt.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "a,b\n7,ok\n" || tt.Rows() != 1 {
		t.Fatalf("%q, %d rows", buf.String(), tt.Rows())
	}
	if err := tt.EndRow(); !errors.Is(err, ErrClosed) {
		t.Fatalf("EndRow after Close: %v", err)
	}
}

func TestTypedTableBadSchemaAndOptions(t *testing.T) {
	good := []Column{{Name: "a", Type: Int64}}
	for _, c := range []struct {
		sc   TypedSchema
		f    Format
		opts Options
	}{
		{TypedSchema{Name: "", Columns: good}, CSV, Options{}},
		{TypedSchema{Name: "t"}, CSV, Options{}},
		{TypedSchema{Name: "t", Columns: []Column{{Name: "", Type: Int64}}}, CSV, Options{}},
		{TypedSchema{Name: "t", Columns: []Column{{Name: "a", Type: Int64}, {Name: "a", Type: Bool}}}, CSV, Options{}},
		{TypedSchema{Name: "t", Columns: []Column{{Name: "a", Type: 42}}}, CSV, Options{}},
		{TypedSchema{Name: "t", Columns: []Column{{Name: "a", Type: Int64, Scale: 2}}}, CSV, Options{}},
		{TypedSchema{Name: "t", Columns: []Column{{Name: "a", Type: Decimal, Scale: 40}}}, CSV, Options{}},
		{TypedSchema{Name: "t", Columns: good, Metadata: map[string]string{MetaTable: "x"}}, CSV, Options{}},
		{TypedSchema{Name: "t", Columns: []Column{{Name: "a", Type: Price}}}, CSV, Options{}},
		{TypedSchema{Name: "t", Columns: good}, 9, Options{}},
		{TypedSchema{Name: "t", Columns: good}, Arrow, Options{Compression: Snappy}},
		{TypedSchema{Name: "t", Columns: good}, Parquet, Options{BatchRows: -1}},
		{TypedSchema{Name: "t", Columns: good}, Parquet, Options{Encoders: MaxEncoders + 1}},
	} {
		if _, err := NewTypedTable(&bytes.Buffer{}, c.sc, c.f, c.opts); !errors.Is(err, ErrOption) {
			t.Errorf("%+v %s: err %v, want ErrOption", c.sc, c.f, err)
		}
	}
}

// A failing writer gives a *WriteError naming the table, on that call and
// every later one.
func TestTypedTableWriteError(t *testing.T) {
	for _, f := range []Format{Parquet, Arrow, CSV} {
		for _, at := range []int{0, 50, 2000} {
			t.Run(fmt.Sprintf("%s/%d", f, at), func(t *testing.T) {
				var first error
				tt, err := NewTypedTable(&failWriter{n: at}, typedTestSchema, f, Options{BatchRows: 3})
				if err != nil {
					first = err
				} else {
					for _, r := range typedRows(200) {
						tt.Int64(0, r.seq)
						tt.String(1, r.inst)
						tt.Bool(2, r.maker)
						tt.Time(3, r.local)
						tt.Null(4)
						tt.Decimal(5, r.price)
						tt.Null(6)
						tt.Null(7)
						if first = tt.EndRow(); first != nil {
							break
						}
					}
					if first == nil {
						first = tt.Close()
					}
				}
				var we *WriteError
				if !errors.As(first, &we) || !errors.Is(first, errDiskFull) || !strings.Contains(first.Error(), "write fills "+f.String()) {
					t.Fatalf("err %v, want a *WriteError naming fills and wrapping the disk error", first)
				}
				if tt != nil {
					if err := tt.Close(); !errors.As(err, &we) && !errors.Is(err, ErrClosed) {
						t.Fatalf("after failure: %v", err)
					}
				}
			})
		}
	}
}

// failWriter accepts n bytes, then fails every write with errDiskFull.
type failWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) <= w.n {
		w.n -= len(p)
		return len(p), nil
	}
	k := w.n
	w.n = 0
	return k, errDiskFull
}
