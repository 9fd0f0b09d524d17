package columnar

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/tapedeck/tapedeck/book"
)

// Cell is one value of a table read back (ReadTyped): I is an Int64,
// Timestamp or Bool (1 true, 0 false) value or a Decimal's fixed-point
// integer at the column's scale, S a String's; Null marks a null (a
// Nullable column only).
type Cell struct {
	I    int64
	S    string
	Null bool
}

// Contents are a typed table read back whole, as NewTypedTable wrote it.
type Contents struct {
	Format Format
	// Schema has the table's name (MetaTable; "" in CSV), the columns the
	// caller's ColumnsFunc gave and the metadata but the writer's own keys
	// (MetaTable, MetaDatasets, MetaExact; none in CSV).
	Schema TypedSchema
	// Options are those the file was written with, as far as the file
	// shows them: Datasets (MetaDatasets), Compression (Parquet: the
	// column chunks' codec; Arrow: Zstd when the record batches are
	// compressed; 0 when the file has no rows or is CSV) and BatchRows
	// (the first batch's rows when the file has more than one batch, else
	// 0: a single batch does not tell the batch size).
	Options Options
	// Rows holds the rows in file order, one Cell per column.
	Rows [][]Cell

	maxRows int
}

// ColumnsFunc returns the columns a table with these column names (and,
// for Parquet and Arrow, this metadata) must have, or an error saying why
// it is not the table expected. ReadTyped then checks the file's types
// against them (Parquet, Arrow) or parses the text by them (CSV).
type ColumnsFunc func(names []string, md map[string]string) ([]Column, error)

// Set sets column col of the current row to c, by the column's type: a
// Cell read back by ReadTyped written again (S holds a FixedBytes or
// Binary column's bytes, I every other non-string value).
func (t *TypedTable) Set(col int, c Cell) {
	typ := ColumnType(0)
	if col >= 0 && col < len(t.schema.Columns) {
		typ = t.schema.Columns[col].Type
	}
	switch {
	case c.Null:
		t.Null(col)
	case typ == String:
		t.String(col, c.S)
	case typ == FixedBytes || typ == Binary:
		t.Bytes(col, []byte(c.S))
	case typ == Bool:
		t.Bool(col, c.I != 0)
	case typ == Timestamp:
		t.Time(col, c.I)
	case typ == Decimal:
		t.Decimal(col, c.I)
	case typ == Uint8:
		t.Uint8(col, uint8(c.I))
	case typ == Uint64:
		t.Uint64(col, uint64(c.I))
	default:
		t.Int64(col, c.I)
	}
}

// SniffFormat returns the format of a file that begins with head: Parquet
// (the PAR1 magic), Arrow IPC (ARROW1), else CSV.
func SniffFormat(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")):
		return Parquet
	case bytes.HasPrefix(head, []byte("ARROW1")):
		return Arrow
	}
	return CSV
}

// FormatOfName returns the format a file name's extension (.parquet,
// .arrow, .csv) names, and false for any other name.
func FormatOfName(name string) (Format, bool) {
	ext := filepath.Ext(name)
	if ext == "" || len(ext) == len(name) { // no extension, or a name that is one
		return 0, false
	}
	f, err := ParseFormat(ext[1:])
	return f, err == nil
}

// ReadTyped reads a table written by a TypedTable (Parquet, Arrow IPC or
// CSV, told by SniffFormat) from data, checking its columns against those
// cols returns. It reads Int64, Timestamp, Bool, String and Decimal
// columns (a Decimal must fit an int64 at its scale); a file that is not
// such a table, truncated or damaged is an error, never a panic. A table
// of more than maxRows rows is an error too: rows are allocated as they
// are decoded, never as a file claims, so memory is bounded by maxRows
// and the file's size. The returned Cells' strings are copies: data may be
// reused.
func ReadTyped(data []byte, cols ColumnsFunc, maxRows int) (*Contents, error) {
	f := SniffFormat(data)
	c := &Contents{Format: f, maxRows: maxRows}
	var err error
	func() {
		// A reader of the Arrow library meeting damage it does not check
		// is an error of the file, not a crash.
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("damaged file (%v)", p)
			}
		}()
		switch f {
		case Parquet:
			err = c.readParquet(data, cols)
		case Arrow:
			err = c.readArrow(data, cols)
		default:
			err = c.readCSV(data, cols)
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("columnar: read %s: %w", f, err)
	}
	return c, nil
}

// setSchema asks cols for the columns of names and md and keeps them, with
// the metadata split into the writer's keys and the caller's.
func (c *Contents) setSchema(names []string, md map[string]string, cols ColumnsFunc) error {
	want, err := cols(names, md)
	if err != nil {
		return err
	}
	if len(want) != len(names) {
		return fmt.Errorf("%d columns, want %d", len(names), len(want))
	}
	for i, w := range want {
		if w.Name != names[i] {
			return fmt.Errorf("column %d is %s, want %s", i+1, names[i], w.Name)
		}
		if w.Type != Int64 && w.Type != Timestamp && w.Type != Bool && w.Type != String && w.Type != Decimal {
			return fmt.Errorf("column %s: cannot read a %s column", w.Name, w.Type)
		}
	}
	c.Schema.Columns = want
	if md == nil {
		return nil
	}
	c.Schema.Name = md[MetaTable]
	if ds, ok := md[MetaDatasets]; ok {
		if err := json.Unmarshal([]byte(ds), &c.Options.Datasets); err != nil {
			return fmt.Errorf("metadata %s: %w", MetaDatasets, err)
		}
	}
	c.Schema.Metadata = map[string]string{}
	for k, v := range md {
		if k != MetaTable && k != MetaDatasets && k != MetaExact && k != "ARROW:schema" {
			c.Schema.Metadata[k] = v
		}
	}
	return nil
}

// addRows appends n empty rows and returns them.
func (c *Contents) addRows(n int) ([][]Cell, error) {
	if n < 0 || len(c.Rows)+n > c.maxRows {
		return nil, fmt.Errorf("more than %d rows", c.maxRows)
	}
	from := len(c.Rows)
	cells := make([]Cell, n*len(c.Schema.Columns))
	for i := range n {
		c.Rows = append(c.Rows, cells[i*len(c.Schema.Columns):(i+1)*len(c.Schema.Columns)])
	}
	return c.Rows[from:], nil
}

func (c *Contents) readCSV(data []byte, cols ColumnsFunc) error {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return errors.New("the last line has no line break (a truncated file?)")
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		return fmt.Errorf("no header: %w", err)
	}
	if err := c.setSchema(head, nil, cols); err != nil {
		return err
	}
	r.FieldsPerRecord = len(head)
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		row, err := c.addRows(1)
		if err != nil {
			return err
		}
		for i, col := range c.Schema.Columns {
			if err := parseCell(&row[0][i], col, rec[i]); err != nil {
				line, _ := r.FieldPos(i)
				return fmt.Errorf("line %d, column %s: %w", line, col.Name, err)
			}
		}
	}
}

// parseCell parses a CSV field as the typed table's CSV writer prints it.
func parseCell(cell *Cell, col Column, s string) error {
	if s == "" && col.Nullable && col.Type != Int64 && col.Type != Timestamp {
		cell.Null = true
		return nil
	}
	var err error
	switch col.Type {
	case String:
		cell.S = s
	case Bool:
		switch s {
		case "true":
			cell.I = 1
		case "false":
		default:
			err = fmt.Errorf("%q is not true or false", s)
		}
	case Decimal:
		neg := len(s) > 1 && s[0] == '-' // book.ParseDecimal reads prices and sizes: no sign
		if neg {
			s = s[1:]
		}
		cell.I, err = book.ParseDecimal([]byte(s), col.Scale)
		if neg {
			cell.I = -cell.I
		}
	default:
		cell.I, err = strconv.ParseInt(s, 10, 64)
	}
	return err
}

func (c *Contents) readParquet(data []byte, cols ColumnsFunc) error {
	rd, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer rd.Close()
	meta := rd.MetaData()
	sc := meta.Schema
	names := make([]string, sc.NumColumns())
	for i := range names {
		if sc.Column(i).MaxRepetitionLevel() != 0 {
			return fmt.Errorf("column %s is nested", sc.Column(i).Name())
		}
		names[i] = sc.Column(i).Name()
	}
	md := map[string]string{}
	kv := meta.KeyValueMetadata()
	for i, k := range kv.Keys() {
		md[k] = kv.Values()[i]
	}
	if err := c.setSchema(names, md, cols); err != nil {
		return err
	}
	for i, col := range c.Schema.Columns {
		if err := checkParquetColumn(sc.Column(i), col); err != nil {
			return fmt.Errorf("column %s: %w", col.Name, err)
		}
	}
	for g := range rd.NumRowGroups() {
		rg := rd.RowGroup(g)
		n := rg.NumRows()
		if g == 0 && rd.NumRowGroups() > 1 {
			c.Options.BatchRows = int(n)
		}
		if g == 0 && rg.NumColumns() > 0 {
			cc, err := rg.MetaData().ColumnChunk(0)
			if err != nil {
				return err
			}
			switch cc.Compression() {
			case compress.Codecs.Snappy:
				c.Options.Compression = Snappy
			case compress.Codecs.Zstd:
				c.Options.Compression = Zstd
			case compress.Codecs.Uncompressed:
				c.Options.Compression = Uncompressed
			default:
				return fmt.Errorf("codec %s is not one this package writes", cc.Compression())
			}
		}
		if n < 0 || n > int64(c.maxRows-len(c.Rows)) {
			return fmt.Errorf("row group %d: more than %d rows (it claims %d)", g, c.maxRows, n)
		}
		from := len(c.Rows)
		for i, col := range c.Schema.Columns {
			cr, err := rg.Column(i)
			if err != nil {
				return err
			}
			if err := c.readParquetColumn(cr, col, from, int(n), i); err != nil {
				return fmt.Errorf("row group %d, column %s: %w", g, col.Name, err)
			}
		}
	}
	return nil
}

// checkParquetColumn checks that pc is what the writer makes of col.
func checkParquetColumn(pc *schema.Column, col Column) error {
	if nullable := pc.MaxDefinitionLevel() > 0; nullable != col.Nullable {
		return fmt.Errorf("nullable %v, want %v", nullable, col.Nullable)
	}
	lt := pc.LogicalType()
	ok := false
	switch col.Type {
	case Int64:
		_, ts := lt.(schema.TimestampLogicalType)
		ok = pc.PhysicalType() == parquet.Types.Int64 && !ts
	case Timestamp:
		_, ok = lt.(schema.TimestampLogicalType)
		ok = ok && pc.PhysicalType() == parquet.Types.Int64
	case Bool:
		ok = pc.PhysicalType() == parquet.Types.Boolean
	case String:
		ok = pc.PhysicalType() == parquet.Types.ByteArray && lt.Equals(schema.StringLogicalType{})
	case Decimal:
		d, dec := lt.(schema.DecimalLogicalType)
		ok = pc.PhysicalType() == parquet.Types.FixedLenByteArray && pc.TypeLength() == 16 && dec && d.Scale() == int32(col.Scale)
	}
	if !ok {
		return fmt.Errorf("stored as %s (%s), not as a %s column", pc.PhysicalType(), lt, col.Type)
	}
	return nil
}

// readParquetColumn reads column i of the row group of n rows from row
// from. Column 0 adds the rows as its values come.
func (c *Contents) readParquetColumn(cr file.ColumnChunkReader, col Column, from, n, i int) error {
	const chunk = 1024
	def := make([]int16, chunk)
	var (
		i64 []int64
		bs  []bool
		ba  []parquet.ByteArray
		fl  []parquet.FixedLenByteArray
	)
	for r := 0; r < n; {
		want := int64(min(chunk, n-r))
		if i == 0 {
			if _, err := c.addRows(int(want)); err != nil {
				return err
			}
		}
		rows := c.Rows[from:]
		var total int64
		var nv int
		var err error
		switch cr := cr.(type) {
		case *file.Int64ColumnChunkReader:
			i64 = growTo(i64, chunk)
			total, nv, err = cr.ReadBatch(want, i64, def, nil)
		case *file.BooleanColumnChunkReader:
			bs = growTo(bs, chunk)
			total, nv, err = cr.ReadBatch(want, bs, def, nil)
		case *file.ByteArrayColumnChunkReader:
			ba = growTo(ba, chunk)
			total, nv, err = cr.ReadBatch(want, ba, def, nil)
		case *file.FixedLenByteArrayColumnChunkReader:
			fl = growTo(fl, chunk)
			total, nv, err = cr.ReadBatch(want, fl, def, nil)
		default:
			return fmt.Errorf("unexpected reader %T", cr)
		}
		if err != nil {
			return err
		}
		if total != want {
			return fmt.Errorf("%d values of %d", r+int(total), n)
		}
		v := 0
		for k := range int(total) {
			cell := &rows[r+k][i]
			if col.Nullable && def[k] == 0 {
				cell.Null = true
				continue
			}
			if v >= nv {
				return errors.New("fewer values than levels")
			}
			switch col.Type {
			case String:
				cell.S = string(ba[v])
			case Bool:
				if bs[v] {
					cell.I = 1
				}
			case Decimal:
				x, err := decimal64(fl[v])
				if err != nil {
					return err
				}
				cell.I = x
			default:
				cell.I = i64[v]
			}
			v++
		}
		r += int(total)
	}
	return nil
}

func growTo[T any](s []T, n int) []T {
	if len(s) < n {
		return make([]T, n)
	}
	return s
}

// decimal64 is the int64 a 16-byte big-endian decimal128 holds.
func decimal64(b []byte) (int64, error) {
	if len(b) != 16 {
		return 0, fmt.Errorf("a decimal of %d bytes", len(b))
	}
	hi, lo := int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:]))
	if hi != lo>>63 {
		return 0, errors.New("a decimal beyond int64")
	}
	return lo, nil
}

func (c *Contents) readArrow(data []byte, cols ColumnsFunc) error {
	// The Arrow library sizes what it allocates by the file's word: the
	// schema's vectors are checked against the footer's bytes first, the
	// blocks against data (a mapped reader), and what decompression
	// allocates is bounded.
	if err := checkIPCSchema(data); err != nil {
		return err
	}
	fr, err := ipc.NewMappedFileReader(data, ipc.WithAllocator(&boundedAllocator{left: maxDecoded}))
	if err != nil {
		return err
	}
	defer fr.Close()
	sc := fr.Schema()
	names := make([]string, sc.NumFields())
	for i, fd := range sc.Fields() {
		names[i] = fd.Name
	}
	md := map[string]string{}
	for i, k := range sc.Metadata().Keys() {
		md[k] = sc.Metadata().Values()[i]
	}
	if err := c.setSchema(names, md, cols); err != nil {
		return err
	}
	for i, col := range c.Schema.Columns {
		if err := checkArrowField(sc.Field(i), col); err != nil {
			return fmt.Errorf("column %s: %w", col.Name, err)
		}
	}
	if fr.NumRecords() > 0 {
		z, err := ipcCompressed(data)
		if err != nil {
			return err
		}
		if z {
			c.Options.Compression = Zstd
		}
	}
	for b := range fr.NumRecords() {
		if err := c.readRecord(fr, b); err != nil {
			return fmt.Errorf("record batch %d: %w", b, err)
		}
	}
	return nil
}

// readRecord reads record batch b of fr.
func (c *Contents) readRecord(fr *ipc.FileReader, b int) error {
	rec, err := fr.RecordBatch(b)
	if err != nil {
		return err
	}
	defer rec.Release()
	n := int(rec.NumRows())
	if b == 0 && fr.NumRecords() > 1 {
		c.Options.BatchRows = n
	}
	for i, col := range c.Schema.Columns {
		if a := rec.Column(i); a.Len() != n {
			return fmt.Errorf("column %s has %d values of %d", col.Name, a.Len(), n)
		} else if err := arrayHolds(a, n); err != nil {
			return fmt.Errorf("column %s: %w", col.Name, err)
		}
	}
	rows, err := c.addRows(n)
	if err != nil {
		return err
	}
	for i, col := range c.Schema.Columns {
		a := rec.Column(i)
		for r := range n {
			cell := &rows[r][i]
			if a.IsNull(r) {
				if !col.Nullable {
					return fmt.Errorf("a null in column %s", col.Name)
				}
				cell.Null = true
				continue
			}
			switch a := a.(type) {
			case *array.Int64:
				cell.I = a.Value(r)
			case *array.Timestamp:
				cell.I = int64(a.Value(r))
			case *array.Boolean:
				if a.Value(r) {
					cell.I = 1
				}
			case *array.String:
				cell.S = strings.Clone(a.Value(r)) // the record's buffers are data's
			case *array.Decimal128:
				v := a.Value(r)
				lo := int64(v.LowBits())
				if v.HighBits() != lo>>63 {
					return fmt.Errorf("column %s: a decimal beyond int64", col.Name)
				}
				cell.I = lo
			}
		}
	}
	return nil
}

// checkArrowField checks that fd is what the writer makes of col.
func checkArrowField(fd arrow.Field, col Column) error {
	ok := false
	switch t := fd.Type.(type) {
	case *arrow.Int64Type:
		ok = col.Type == Int64
	case *arrow.TimestampType:
		ok = col.Type == Timestamp && t.Unit == arrow.Nanosecond && t.TimeZone == ""
	case *arrow.BooleanType:
		ok = col.Type == Bool
	case *arrow.StringType:
		ok = col.Type == String
	case *arrow.Decimal128Type:
		ok = col.Type == Decimal && t.Scale == int32(col.Scale)
	}
	if !ok || fd.Nullable != col.Nullable {
		return fmt.Errorf("stored as %s (nullable %v), not as a %s column (nullable %v)", fd.Type, fd.Nullable, col.Type, col.Nullable)
	}
	return nil
}

// ipcCompressed reports whether the first record batch of the Arrow IPC
// file data has Zstd-compressed buffers. The Arrow library decompresses
// without saying so; the message's flatbuffer says it: Message.header
// (field 2) a RecordBatch (header_type, field 1, = 3) whose compression
// (field 3) is a BodyCompression whose codec (field 0) is ZSTD (1).
func ipcCompressed(data []byte) (bool, error) {
	pos := 8 // "ARROW1" and two bytes of padding
	for pos+8 <= len(data) {
		if binary.LittleEndian.Uint32(data[pos:]) != 0xFFFFFFFF {
			break
		}
		n := int(int32(binary.LittleEndian.Uint32(data[pos+4:])))
		if n <= 0 || n > len(data)-pos-8 {
			break
		}
		msg, ok := fbRoot(data[pos+8 : pos+8+n])
		if !ok {
			break
		}
		kind, _ := msg.u8(1)
		body, _ := msg.i64(3)
		if kind == 3 {
			rb, ok := msg.table(2)
			if !ok {
				break
			}
			bc, ok := rb.table(3)
			if !ok {
				return false, nil
			}
			if codec, _ := bc.u8(0); codec != 1 {
				return false, errors.New("record batches compressed with LZ4, which this package does not write")
			}
			return true, nil
		}
		if body < 0 || body > int64(len(data)) {
			break
		}
		pos += 8 + n + int(body)
	}
	return false, errors.New("no record batch message where the file's first should be")
}

// fbTable is a flatbuffer table: buf and the table's offset in it. Every
// read is bounds-checked (the flatbuffers library's are not).
type fbTable struct {
	buf []byte
	pos int
}

func fbRoot(buf []byte) (fbTable, bool) {
	if len(buf) < 4 {
		return fbTable{}, false
	}
	return fbTable{buf, int(binary.LittleEndian.Uint32(buf))}.valid()
}

func (t fbTable) valid() (fbTable, bool) {
	return t, t.pos >= 0 && t.pos+4 <= len(t.buf)
}

// field returns where field i's value is, and false when it is absent.
func (t fbTable) field(i int) (int, bool) {
	vt := t.pos - int(int32(binary.LittleEndian.Uint32(t.buf[t.pos:])))
	if vt < 0 || vt+4 > len(t.buf) {
		return 0, false
	}
	vlen := int(binary.LittleEndian.Uint16(t.buf[vt:]))
	if 4+2*i+2 > vlen || vt+4+2*i+2 > len(t.buf) {
		return 0, false
	}
	off := int(binary.LittleEndian.Uint16(t.buf[vt+4+2*i:]))
	if off == 0 {
		return 0, false
	}
	return t.pos + off, true
}

func (t fbTable) u8(i int) (uint8, bool) {
	p, ok := t.field(i)
	if !ok || p >= len(t.buf) {
		return 0, false
	}
	return t.buf[p], true
}

func (t fbTable) i64(i int) (int64, bool) {
	p, ok := t.field(i)
	if !ok || p+8 > len(t.buf) {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(t.buf[p:])), true
}

func (t fbTable) table(i int) (fbTable, bool) {
	p, ok := t.field(i)
	if !ok || p+4 > len(t.buf) {
		return fbTable{}, false
	}
	return fbTable{t.buf, p + int(binary.LittleEndian.Uint32(t.buf[p:]))}.valid()
}

// maxDecoded bounds the bytes the Arrow IPC reader allocates for one file
// (decompressed buffers; uncompressed ones are read in place).
const maxDecoded = 1 << 30

// boundedAllocator is a Go allocator that refuses (panics, which ReadTyped
// turns into an error) to hand out more than left bytes in all.
type boundedAllocator struct{ left int }

func (a *boundedAllocator) Allocate(size int) []byte {
	if size < 0 || size > a.left {
		panic(fmt.Sprintf("a buffer of %d bytes, more than the %d the file may decode to", size, maxDecoded))
	}
	a.left -= size
	return make([]byte, size)
}

func (a *boundedAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	return nb
}

func (a *boundedAllocator) Free([]byte) {}

// arrayHolds checks that the buffers of a (an array of a type checkArrowField
// allows) hold its n values, before any is read.
func arrayHolds(a arrow.Array, n int) error {
	d := a.Data()
	bufs := d.Buffers()
	size := func(i int) int {
		if i >= len(bufs) || bufs[i] == nil {
			return 0
		}
		return bufs[i].Len()
	}
	need := 0 // bytes of buffer 1
	switch a.(type) {
	case *array.Int64, *array.Timestamp:
		need = 8 * n
	case *array.Decimal128:
		need = 16 * n
	case *array.Boolean:
		need = (n + 7) / 8
	case *array.String:
		need = 4 * (n + 1) // the offsets; ValidateFull checks them against the values
	default:
		return fmt.Errorf("unexpected array %T", a)
	}
	switch {
	case d.Offset() != 0:
		return errors.New("an array at an offset")
	case d.NullN() > 0 && size(0) < (n+7)/8:
		return errors.New("a validity bitmap shorter than the values")
	case n > 0 && size(1) < need:
		return errors.New("a buffer shorter than its values")
	}
	if s, ok := a.(*array.String); ok {
		return s.ValidateFull()
	}
	return nil
}

// checkIPCSchema checks the vectors of the schema in an Arrow IPC file's
// footer (its fields, their children and metadata) against the footer's
// bytes: the Arrow library makes a slice of each vector's length before
// reading it.
func checkIPCSchema(data []byte) error {
	const tail = 10 // footer length (int32) and "ARROW1"
	if len(data) < 8+tail || string(data[len(data)-6:]) != "ARROW1" {
		return errors.New("not an Arrow IPC file (no ARROW1 at its end)")
	}
	n := int(int32(binary.LittleEndian.Uint32(data[len(data)-tail:])))
	if n <= 0 || n > len(data)-8-tail {
		return fmt.Errorf("a footer of %d bytes in a file of %d", n, len(data))
	}
	footer, ok := fbRoot(data[len(data)-tail-n : len(data)-tail])
	if !ok {
		return errors.New("a damaged footer")
	}
	sc, ok := footer.table(1) // Footer.schema
	if !ok {
		return errors.New("no schema in the footer")
	}
	if !sc.vectorOK(1, 4) || !sc.vectorOK(2, 4) || !sc.vectorOK(3, 8) { // fields, custom_metadata, features
		return errors.New("a damaged schema")
	}
	var field func(t fbTable, depth int) bool
	field = func(t fbTable, depth int) bool {
		if depth > 8 || !t.vectorOK(5, 4) || !t.vectorOK(6, 4) { // Field.children, Field.custom_metadata
			return false
		}
		for k := range t.vectorLen(5) {
			ch, ok := t.vectorTable(5, k)
			if !ok || !field(ch, depth+1) {
				return false
			}
		}
		return true
	}
	for k := range sc.vectorLen(1) {
		f, ok := sc.vectorTable(1, k)
		if !ok || !field(f, 0) {
			return fmt.Errorf("a damaged schema (field %d)", k)
		}
	}
	return nil
}

// vector returns where the elements of vector field i start and how many
// there are (0 when absent).
func (t fbTable) vector(i int) (start, n int, ok bool) {
	p, present := t.field(i)
	if !present {
		return 0, 0, true
	}
	if p+4 > len(t.buf) {
		return 0, 0, false
	}
	v := p + int(binary.LittleEndian.Uint32(t.buf[p:]))
	if v < 0 || v+4 > len(t.buf) {
		return 0, 0, false
	}
	return v + 4, int(binary.LittleEndian.Uint32(t.buf[v:])), true
}

// vectorOK reports whether vector field i's elements, of size bytes each,
// lie in the buffer.
func (t fbTable) vectorOK(i, size int) bool {
	start, n, ok := t.vector(i)
	return ok && n >= 0 && n <= (len(t.buf)-start)/size
}

func (t fbTable) vectorLen(i int) int {
	_, n, _ := t.vector(i)
	return n
}

// vectorTable returns element k of vector field i, a vector of tables.
func (t fbTable) vectorTable(i, k int) (fbTable, bool) {
	start, _, _ := t.vector(i)
	p := start + 4*k
	if p+4 > len(t.buf) {
		return fbTable{}, false
	}
	return fbTable{t.buf, p + int(binary.LittleEndian.Uint32(t.buf[p:]))}.valid()
}
