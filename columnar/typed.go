package columnar

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/tapedeck/tapedeck/book"
)

// ColumnType is the type of a column.
type ColumnType uint8

// The column types, as Parquet and Arrow store them and as CSV prints them.
// A typed table (NewTypedTable) has all but Int32, Price and Size.
const (
	// Int64: Arrow int64, Parquet INT64; CSV decimal digits.
	Int64 ColumnType = iota + 1
	// String: Arrow utf8, Parquet BYTE_ARRAY (STRING), dictionary encoded;
	// CSV quoted when it holds a comma, quote or line break (a column named
	// instrument always: ids that look like numbers stay text).
	String
	// Bool: Arrow bool, Parquet BOOLEAN; CSV true/false.
	Bool
	// Timestamp: int64 ns since the epoch, UTC, as every time column of the
	// replayed tables: Arrow timestamp[ns] and Parquet TIMESTAMP(NANOS,
	// isAdjustedToUTC=false), with no time zone on purpose: DuckDB has no
	// zoned ns type and reads TIMESTAMP(NANOS, UTC) as µs, while this form
	// DuckDB (TIMESTAMP_NS), Polars (Datetime(ns)) and pandas
	// (datetime64[ns]) all read to the ns. CSV the integer ns.
	Timestamp
	// Decimal: a fixed-point int64 at Column.Scale decimals, exactly: Arrow
	// decimal128(38, Scale), Parquet DECIMAL(38, Scale) in 16-byte
	// FIXED_LEN_BYTE_ARRAY (pqarrow's encoding); CSV the exact decimal text
	// (book.AppendDecimal: no trailing zeros, a leading '-' when negative).
	Decimal
	// Int32: Arrow int32, Parquet INT32; CSV decimal digits.
	Int32
	// Price and Size: a fixed-point int64 at the Layout's price or size
	// decimals: Arrow float64 (the nearest double of the exact decimal),
	// Parquet DOUBLE, or decimal128 with Layout.Exact; CSV the exact
	// decimal text.
	Price
	Size
	// Uint8: Arrow uint8, Parquet INT32 with the INT(8, unsigned) logical
	// type (converted type UINT_8); CSV decimal digits.
	Uint8
	// Uint64: Arrow uint64, Parquet INT64 with INT(64, unsigned) (UINT_64);
	// CSV decimal digits.
	Uint64
	// FixedBytes: Column.Width bytes a value: Arrow fixed_size_binary(Width),
	// Parquet FIXED_LEN_BYTE_ARRAY(Width) with no logical type, PLAIN (the
	// values back to back); CSV lower-case hex.
	FixedBytes
	// Binary: bytes of any length: Arrow binary, Parquet BYTE_ARRAY with no
	// logical type, PLAIN; CSV lower-case hex.
	Binary
)

var columnTypeNames = [...]string{Int64: "int64", String: "string", Bool: "bool", Timestamp: "timestamp", Decimal: "decimal",
	Int32: "int32", Price: "price", Size: "size", Uint8: "uint8", Uint64: "uint64", FixedBytes: "fixed_bytes", Binary: "binary"}

// MaxFixedWidth bounds Column.Width.
const MaxFixedWidth = 1 << 10

// String returns the type's name.
func (t ColumnType) String() string {
	if int(t) < len(columnTypeNames) && columnTypeNames[t] != "" {
		return columnTypeNames[t]
	}
	return fmt.Sprintf("column_type(%d)", uint8(t))
}

// Column is one column of a typed table.
type Column struct {
	Name string
	Type ColumnType
	// Scale is the number of decimals of a Decimal column, at most
	// book.MaxDecimals; it must be 0 for the other types.
	Scale uint8
	// Width is the bytes of each value of a FixedBytes column, 1 to
	// MaxFixedWidth; it must be 0 for the other types.
	Width int
	// Nullable columns may hold a null (TypedTable.Null): an empty CSV
	// field, but 0 in an Int64 or Timestamp column (no empty integer cells).
	Nullable bool
}

// TypedSchema describes a typed table: its name (stored as MetaTable in the
// Arrow and Parquet metadata), its columns in order, and further metadata
// (stored sorted by key; keys must not be MetaTable, MetaDatasets or
// MetaExact, which the writer sets).
type TypedSchema struct {
	Name     string
	Columns  []Column
	Metadata map[string]string
}

// TypedTable writes rows of caller-declared typed columns through the
// Writer, as the replayed tables are written: Parquet (one row group per
// batch, V2 pages, dictionary strings, statistics on strings and
// timestamps, Snappy by default), Arrow IPC and CSV (a header of the column
// names, then the values as the Type says). The output is deterministic:
// the same rows and options give byte-identical files.
//
// A row is written by setting every column once (Int64, String, Bool, Time,
// Decimal or Null, by the column's index in the schema) and then EndRow. A
// setter of the wrong type, a null in a column that is not Nullable, or a
// column left unset is an error returned by EndRow, naming the column; the
// row is not written. A write failure is a *WriteError, returned by that
// call and every later one. TypedTable is not safe for concurrent use; it
// never closes w.
type TypedTable struct {
	w      *Writer
	b      *Batch
	schema TypedSchema
	set    []bool // the columns set in the current row
	nset   int
	rowEr  error // the first misuse in the current row
}

// NewTypedTable returns a TypedTable writing schema sc in format f to w.
// It refuses (ErrOption) options out of range, Snappy for Arrow, an empty
// or duplicate column name, a type a typed table has not (Int32, Price,
// Size), a width off FixedBytes or none on it, and a scale on a non-decimal
// column or beyond book.MaxDecimals. The header (Parquet magic,
// CSV header line) is written here.
func NewTypedTable(w io.Writer, sc TypedSchema, f Format, o Options) (*TypedTable, error) {
	if sc.Name == "" {
		return nil, fmt.Errorf("%w: typed table with no name", ErrOption)
	}
	if len(sc.Columns) == 0 {
		return nil, fmt.Errorf("%w: typed table %s has no columns", ErrOption, sc.Name)
	}
	seen := make(map[string]bool, len(sc.Columns))
	var b Batch
	for i, c := range sc.Columns {
		switch {
		case c.Name == "":
			return nil, fmt.Errorf("%w: table %s: column %d has no name", ErrOption, sc.Name, i)
		case seen[c.Name]:
			return nil, fmt.Errorf("%w: table %s: two columns named %s", ErrOption, sc.Name, c.Name)
		case c.Type < Int64 || c.Type > Binary || (c.Type > Decimal && c.Type < Uint8):
			return nil, fmt.Errorf("%w: table %s: column %s: no type %s in a typed table", ErrOption, sc.Name, c.Name, c.Type)
		case (c.Type == FixedBytes) != (c.Width != 0):
			return nil, fmt.Errorf("%w: table %s: column %s: a width on a %s column (FixedBytes needs one)", ErrOption, sc.Name, c.Name, c.Type)
		case c.Width < 0 || c.Width > MaxFixedWidth:
			return nil, fmt.Errorf("%w: table %s: column %s: width %d not in 1..%d", ErrOption, sc.Name, c.Name, c.Width, MaxFixedWidth)
		case c.Type != Decimal && c.Scale != 0:
			return nil, fmt.Errorf("%w: table %s: column %s: a scale on a %s column", ErrOption, sc.Name, c.Name, c.Type)
		case c.Scale > book.MaxDecimals:
			return nil, fmt.Errorf("%w: table %s: column %s: scale %d beyond %d", ErrOption, sc.Name, c.Name, c.Scale, book.MaxDecimals)
		}
		seen[c.Name] = true
		col := b.Add(c.Name, c.Type, c.Nullable)
		b.SetScale(col, c.Scale)
		b.SetWidth(col, c.Width)
	}
	for k := range sc.Metadata {
		if k == MetaTable || k == MetaDatasets || k == MetaExact {
			return nil, fmt.Errorf("%w: table %s: metadata key %s is the writer's", ErrOption, sc.Name, k)
		}
	}
	sc.Columns = slices.Clone(sc.Columns)
	sc.Metadata = maps.Clone(sc.Metadata)
	cw, err := NewWriter(w, b, f, o, Layout{Table: sc.Name, Metadata: typedMetadata(sc, o.Datasets), Exact: true})
	if err != nil {
		return nil, err
	}
	return &TypedTable{w: cw, b: cw.Batch(), schema: sc, set: make([]bool, len(sc.Columns))}, nil
}

// typedMetadata is a typed table's schema metadata: its name, the source
// datasets, tapedeck.exact = true and the caller's keys, sorted.
func typedMetadata(sc TypedSchema, datasets []string) []KeyValue {
	md := map[string]string{MetaTable: sc.Name, MetaDatasets: DatasetsJSON(datasets), MetaExact: "true"}
	maps.Copy(md, sc.Metadata)
	kv := make([]KeyValue, 0, len(md))
	for _, k := range slices.Sorted(maps.Keys(md)) {
		kv = append(kv, KeyValue{k, md[k]})
	}
	return kv
}

// DatasetsJSON is the MetaDatasets value of the paths: a JSON array.
func DatasetsJSON(paths []string) string {
	ds, _ := json.Marshal(append([]string{}, paths...))
	return string(ds)
}

// Schema returns the table's schema as NewTypedTable was given it.
func (t *TypedTable) Schema() TypedSchema { return t.schema }

// Rows returns the number of rows ended so far (written or buffered).
func (t *TypedTable) Rows() uint64 { return t.w.Rows() }

func (t *TypedTable) mark(col int, typ ColumnType) bool {
	if t.rowEr != nil {
		return false
	}
	cols := t.schema.Columns
	if col < 0 || col >= len(cols) {
		t.rowEr = fmt.Errorf("columnar: table %s: no column %d", t.schema.Name, col)
		return false
	}
	c := &cols[col]
	switch {
	case typ != 0 && c.Type != typ:
		t.rowEr = fmt.Errorf("columnar: table %s: column %s is %s, set as %s", t.schema.Name, c.Name, c.Type, typ)
		return false
	case typ == 0 && !c.Nullable:
		t.rowEr = fmt.Errorf("columnar: table %s: column %s is not nullable", t.schema.Name, c.Name)
		return false
	case t.set[col]:
		t.rowEr = fmt.Errorf("columnar: table %s: column %s set twice in row %d", t.schema.Name, c.Name, t.w.Rows())
		return false
	}
	t.set[col] = true
	t.nset++
	return true
}

// Int64 sets column col (an Int64 column) of the current row.
func (t *TypedTable) Int64(col int, v int64) { t.set64(col, Int64, v) }

// Time sets column col (a Timestamp column) to ns since the epoch.
func (t *TypedTable) Time(col int, ns int64) { t.set64(col, Timestamp, ns) }

// Decimal sets column col (a Decimal column) to the fixed-point value v at
// the column's scale: v = 12345 at scale 4 is 1.2345.
func (t *TypedTable) Decimal(col int, v int64) { t.set64(col, Decimal, v) }

func (t *TypedTable) set64(col int, typ ColumnType, v int64) {
	if t.mark(col, typ) {
		t.b.Int64(col, v)
	}
}

// Uint8 sets column col (a Uint8 column) of the current row.
func (t *TypedTable) Uint8(col int, v uint8) { t.set64(col, Uint8, int64(v)) }

// Uint64 sets column col (a Uint64 column) of the current row.
func (t *TypedTable) Uint64(col int, v uint64) { t.set64(col, Uint64, int64(v)) }

// Bytes sets column col (a FixedBytes column, v exactly its Width long, or
// a Binary column) to a copy of v.
func (t *TypedTable) Bytes(col int, v []byte) {
	typ := Binary
	if col >= 0 && col < len(t.schema.Columns) && t.schema.Columns[col].Type == FixedBytes {
		typ = FixedBytes
		if w := t.schema.Columns[col].Width; len(v) != w && t.rowEr == nil {
			t.rowEr = fmt.Errorf("columnar: table %s: column %s is %d bytes wide, set to %d", t.schema.Name, t.schema.Columns[col].Name, w, len(v))
			return
		}
	}
	if t.mark(col, typ) {
		t.b.StringBytes(col, v)
	}
}

// String sets column col (a String column). The table keeps v until the
// row's batch is written: do not modify the bytes behind it.
func (t *TypedTable) String(col int, v string) {
	if t.mark(col, String) {
		t.b.String(col, v)
	}
}

// Bool sets column col (a Bool column).
func (t *TypedTable) Bool(col int, v bool) {
	if t.mark(col, Bool) {
		t.b.Bool(col, v)
	}
}

// Null sets column col (a Nullable column of any type) to null.
func (t *TypedTable) Null(col int) {
	if !t.mark(col, 0) {
		return
	}
	t.b.Null(col)
}

// EndRow ends the current row, writing a batch when it is full. The row is
// dropped, and an error naming the column returned, when a setter was
// misused or a column left unset.
func (t *TypedTable) EndRow() error {
	if t.w.closed {
		return ErrClosed
	}
	if err := t.w.Err(); err != nil {
		return err
	}
	err := t.rowEr
	if err == nil && t.nset != len(t.set) {
		for i, ok := range t.set {
			if !ok {
				err = fmt.Errorf("columnar: table %s: column %s not set in row %d", t.schema.Name, t.schema.Columns[i].Name, t.w.Rows())
				break
			}
		}
	}
	clear(t.set)
	t.nset, t.rowEr = 0, nil
	if err != nil {
		return err
	}
	return t.w.EndRow()
}

// Close writes the buffered rows and the file footer and returns the first
// error met; a row begun and not ended is dropped. It does not close the
// underlying writer. A table with no rows is a valid, empty file.
func (t *TypedTable) Close() error {
	return t.w.Close()
}
