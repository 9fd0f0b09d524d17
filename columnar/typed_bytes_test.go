package columnar

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The unsigned and binary column types, as a Nautilus catalog needs them.
var bytesTestSchema = TypedSchema{
	Name: "raw",
	Columns: []Column{
		{Name: "action", Type: Uint8},
		{Name: "ts", Type: Uint64},
		{Name: "price", Type: FixedBytes, Width: 16},
		{Name: "short", Type: FixedBytes, Width: 3, Nullable: true},
		{Name: "info", Type: Binary, Nullable: true},
	},
}

type bytesRow struct {
	action uint8
	ts     uint64
	price  [16]byte
	short  []byte // nil: null
	info   []byte // nil: null
}

func bytesRows(n int) []bytesRow {
	rows := make([]bytesRow, n)
	for i := range rows {
		r := bytesRow{action: uint8(250 + i), ts: 1<<63 + uint64(i)*7} // past int64: unsigned
		for j := range r.price {
			r.price[j] = byte(i*16 + j)
		}
		if i%2 == 0 {
			r.short = []byte{0, byte(i), 0xff}
		}
		if i%3 != 1 {
			r.info = []byte(`{"k":` + strings.Repeat("9", i) + `}`)
		}
		rows[i] = r
	}
	return rows
}

func writeBytes(t *testing.T, w *bytes.Buffer, f Format, rows []bytesRow, o Options) *TypedTable {
	t.Helper()
	tt, err := NewTypedTable(w, bytesTestSchema, f, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		tt.Uint8(0, r.action)
		tt.Uint64(1, r.ts)
		tt.Bytes(2, r.price[:])
		if r.short != nil {
			tt.Bytes(3, r.short)
		} else {
			tt.Null(3)
		}
		if r.info != nil {
			tt.Bytes(4, r.info)
		} else {
			tt.Null(4)
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

// The Parquet file is the one pqarrow writes for the same Arrow table
// (uint8 as INT32 UINT_8, uint64 as INT64 UINT_64, fixed_size_binary as
// FIXED_LEN_BYTE_ARRAY of its width, binary as BYTE_ARRAY), and its pages
// hold the values as Parquet's PLAIN encoding lays them out, byte for byte.
func TestTypedTableBinaryColumns(t *testing.T) {
	rows := bytesRows(7)
	for _, o := range []Options{{}, {Compression: Uncompressed, BatchRows: 3}} {
		var pq, arr bytes.Buffer
		tt := writeBytes(t, &pq, Parquet, rows, o)
		writeBytes(t, &arr, Arrow, rows, Options{Compression: Uncompressed, BatchRows: o.BatchRows})
		sameParquet(t, pq.Bytes(), viaPqarrow(t, tt.w, arr.Bytes()))
	}

	var pq bytes.Buffer
	writeBytes(t, &pq, Parquet, rows, Options{Compression: Uncompressed})
	r, err := file.NewParquetReader(bytes.NewReader(pq.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	sc := r.MetaData().Schema
	for i, want := range []struct {
		phys      parquet.Type
		length    int
		logical   string
		converted string
	}{
		{parquet.Types.Int32, 0, "Int(bitWidth=8, isSigned=false)", "UINT_8"},
		{parquet.Types.Int64, 0, "Int(bitWidth=64, isSigned=false)", "UINT_64"},
		{parquet.Types.FixedLenByteArray, 16, "None", "NONE"},
		{parquet.Types.FixedLenByteArray, 3, "None", "NONE"},
		{parquet.Types.ByteArray, 0, "None", "NONE"},
	} {
		c := sc.Column(i)
		if c.PhysicalType() != want.phys || c.TypeLength() != want.length || c.LogicalType().String() != want.logical ||
			c.ConvertedType().String() != want.converted {
			t.Errorf("column %s: %s(%d) %s %s, want %s(%d) %s %s", c.Name(), c.PhysicalType(), c.TypeLength(), c.LogicalType(),
				c.ConvertedType(), want.phys, want.length, want.logical, want.converted)
		}
	}
	r.Close()
	// PLAIN pages, uncompressed: the fixed-size values back to back, the
	// uint8 values as 4-byte little-endian INT32, the uint64 as 8 bytes.
	var fixed, u8, u64 []byte
	for _, row := range rows {
		fixed = append(fixed, row.price[:]...)
		u8 = binary.LittleEndian.AppendUint32(u8, uint32(row.action))
		u64 = binary.LittleEndian.AppendUint64(u64, row.ts)
	}
	for name, b := range map[string][]byte{"price": fixed, "action": u8, "ts": u64} {
		if !bytes.Contains(pq.Bytes(), b) {
			t.Errorf("the %s page does not hold the values as PLAIN lays them out", name)
		}
	}

	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(pq.Bytes()), parquet.NewReaderProperties(nil),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var types []string
	for _, f := range tbl.Schema().Fields() {
		types = append(types, f.Type.String())
	}
	if got := strings.Join(types, " "); got != "uint8 uint64 fixed_size_binary[16] fixed_size_binary[3] binary" {
		t.Errorf("Arrow types %s", got)
	}
	col := func(i int) any { return tbl.Column(i).Data().Chunk(0) }
	for i, row := range rows {
		sh, in := col(3).(*array.FixedSizeBinary), col(4).(*array.Binary)
		if col(0).(*array.Uint8).Value(i) != row.action || col(1).(*array.Uint64).Value(i) != row.ts ||
			!bytes.Equal(col(2).(*array.FixedSizeBinary).Value(i), row.price[:]) ||
			sh.IsNull(i) != (row.short == nil) || (row.short != nil && !bytes.Equal(sh.Value(i), row.short)) ||
			in.IsNull(i) != (row.info == nil) || (row.info != nil && !bytes.Equal(in.Value(i), row.info)) {
			t.Fatalf("row %d differs", i)
		}
	}
}

// CSV prints unsigned integers as such and bytes as lower-case hex.
func TestTypedTableBinaryCSV(t *testing.T) {
	var buf bytes.Buffer
	writeBytes(t, &buf, CSV, bytesRows(2), Options{})
	want := "action,ts,price,short,info\n" +
		"250,9223372036854775808,000102030405060708090a0b0c0d0e0f,0000ff,7b226b223a7d\n" +
		"251,9223372036854775815,101112131415161718191a1b1c1d1e1f,,\n"
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

// A width on another type, or none on FixedBytes, is refused; a value of
// the wrong width names the column and drops the row.
func TestTypedTableBinaryMisuse(t *testing.T) {
	for _, c := range []Column{{Name: "a", Type: FixedBytes}, {Name: "a", Type: Binary, Width: 4}, {Name: "a", Type: FixedBytes, Width: MaxFixedWidth + 1},
		{Name: "a", Type: Price}} {
		if _, err := NewTypedTable(&bytes.Buffer{}, TypedSchema{Name: "x", Columns: []Column{c}}, Parquet, Options{}); !errors.Is(err, ErrOption) {
			t.Errorf("%+v: %v, want ErrOption", c, err)
		}
	}
	var buf bytes.Buffer
	tt, err := NewTypedTable(&buf, bytesTestSchema, CSV, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tt.Uint8(0, 1)
	tt.Uint64(1, 2)
	tt.Bytes(2, make([]byte, 15))
	tt.Null(3)
	tt.Null(4)
	if err := tt.EndRow(); err == nil || !strings.Contains(err.Error(), "price is 16 bytes wide, set to 15") {
		t.Fatalf("EndRow: %v", err)
	}
	if tt.Rows() != 0 {
		t.Fatalf("%d rows", tt.Rows())
	}
}
