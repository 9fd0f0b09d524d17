package columnar

import (
	"slices"
	"unsafe"

	"github.com/tapedeck/tapedeck/book"
)

type column struct {
	name     string
	kind     ColumnType
	nullable bool
	decimals uint8 // Decimal: the column's scale
	width    int   // FixedBytes: bytes per value

	// Exactly one of these holds the values, with room for a full batch;
	// rows [0, batch.rows) are filled.
	i64  []int64
	i32  []int32
	b    []bool
	s    []string
	null []bool // when nullable and levelOf < 0: true where the value is null

	// A depth level column is null where its side has no such level: instead
	// of a flag per column it reads levelCounts[levelOf] (levels present on
	// the side in that row), so a wide row costs one count per side, not a
	// hundred null flags. levelOf is -1 for every other column.
	levelOf int
	level   int
	nullInt int64 // what CSV prints for a null integer (SetNullInt)
}

// A Batch holds the rows of one table column by column in plain Go slices,
// so a row costs a few stores and a flush hands the slices to Arrow without
// copying (see arrow.go). Fixed-point values stay int64 until the flush,
// where they become float64 or decimal128 in one pass, and CSV prints them
// exactly.
//
// Columns are declared (Add, AddLevel) before the Batch goes to NewWriter;
// then every column gets exactly one value or null per row (by its index,
// as Add returned it) before Writer.EndRow. Indexing preallocated slices
// keeps a row to a store per value: a wide depth row is a hundred of them.
type Batch struct {
	cols        []column
	rows        int
	capRows     int // rows the columns have room for (grow)
	levelCounts [][]int32
	// books, when the table has level columns, numbers each row's book
	// (0, 1, … in order of first appearance in the export): the Parquet
	// writer looks a level's value up again only where it differs from the
	// one of that book's last row (parquet_dict.go).
	books []int32
	// arena holds the bytes of strings copied in by strBytes (trade ids)
	// for the batch's life, so a row costs no allocation.
	arena []byte
}

// bytesKind reports whether a column of type t holds its values in s.
func bytesKind(t ColumnType) bool { return t == String || t == FixedBytes || t == Binary }

// wideKind reports whether a column of type t holds its values in i64 (a
// Uint8 or Uint64 its bits).
func wideKind(t ColumnType) bool {
	switch t {
	case Int64, Timestamp, Price, Size, Decimal, Uint8, Uint64:
		return true
	}
	return false
}

// Add declares a column of type t and returns its index.
func (b *Batch) Add(name string, t ColumnType, nullable bool) int {
	b.cols = append(b.cols, column{name: name, kind: t, nullable: nullable, levelOf: -1})
	return len(b.cols) - 1
}

// AddLevelCount declares a per-row count of the levels present on one side
// of a book and returns its index for AddLevel and SetLevelCount.
func (b *Batch) AddLevelCount() int {
	b.levelCounts = append(b.levelCounts, nil)
	return len(b.levelCounts) - 1
}

// AddLevel declares a column for level `level` of the side counted by
// count: null in a row where the side has no more than level levels
// (SetLevelCount), so a wide row costs one count per side, not a null flag
// per column. Its values are set by SetSides.
func (b *Batch) AddLevel(name string, t ColumnType, count, level int) int {
	b.cols = append(b.cols, column{name: name, kind: t, nullable: true, levelOf: count, level: level})
	return len(b.cols) - 1
}

// SetScale sets the decimals of a Decimal column (Add declares 0).
func (b *Batch) SetScale(col int, decimals uint8) { b.cols[col].decimals = decimals }

// SetNullInt sets what CSV prints for a null in an integer or time column
// (default 0): CSV has no empty integer cells, which pandas would read as
// float64 (and a ns time inexactly). Parquet and Arrow hold the null.
func (b *Batch) SetNullInt(col int, v int64) { b.cols[col].nullInt = v }

// SetWidth sets the bytes of each value of FixedBytes column col.
func (b *Batch) SetWidth(col int, width int) { b.cols[col].width = width }

// Columns returns the number of columns declared.
func (b *Batch) Columns() int { return len(b.cols) }

// SetLevelCount sets the number of levels present on a side in this row.
func (b *Batch) SetLevelCount(count int, n int32) { b.levelCounts[count][b.rows] = n }

// bookRows returns the book numbers of the batch's rows, nil if it has none.
func (b *Batch) bookRows() []int32 {
	if b.books == nil {
		return nil
	}
	return b.books[:b.rows]
}

// SetBook sets the row's book number, 0, 1, … in order of first
// appearance: the Parquet writer looks a level's value up again only where
// it differs from the one of that book's last row. Only for a Batch with
// level columns.
func (b *Batch) SetBook(id int32) { b.books[b.rows] = id }

// grow gives every column room for n rows once: a batch never reallocates.
// The 64-bit columns share one allocation (the 32-bit ones another), each
// column starting one cache line after the end of the one before: a depth
// row stores into a hundred columns at the same row index, and columns that
// each began on a page boundary (as separate large allocations do) put all
// those stores in one L1 cache set, evicting each other on every row. This
// alone made the depth export a third faster.
func (b *Batch) grow(n int) {
	wide, narrow := 0, 0
	for i := range b.cols {
		switch k := b.cols[i].kind; {
		case wideKind(k):
			wide++
		case k == Int32:
			narrow++
		}
	}
	const pad = 64 // bytes: one cache line
	arena := make([]int64, wide*(n+pad/8))
	arena32 := make([]int32, narrow*(n+pad/4))
	for i := range b.cols {
		c := &b.cols[i]
		switch k := c.kind; {
		case wideKind(k):
			c.i64 = arena[:n:n]
			arena = arena[n+pad/8:]
		case k == Int32:
			c.i32 = arena32[:n:n]
			arena32 = arena32[n+pad/4:]
		case k == Bool:
			c.b = make([]bool, n)
		case bytesKind(k):
			c.s = make([]string, n)
		}
		if c.nullable && c.levelOf < 0 {
			c.null = make([]bool, n)
		}
	}
	for i := range b.levelCounts {
		b.levelCounts[i] = make([]int32, n)
	}
	if len(b.levelCounts) > 0 {
		b.books = make([]int32, n)
	}
	b.capRows = n
}

// free lets go of the values, keeping the columns' descriptions.
func (b *Batch) free() {
	for i := range b.cols {
		c := &b.cols[i]
		c.i64, c.i32, c.b, c.s, c.null = nil, nil, nil, nil, nil
	}
	for i := range b.levelCounts {
		b.levelCounts[i] = nil
	}
	b.books, b.arena, b.rows, b.capRows = nil, nil, 0, 0
}

// regrow gives the batch room for n rows (n > b.rows), keeping its rows: a
// Writer among many (Layout.Shared) starts small and doubles up to its
// batch size, so that an instrument with few rows holds little memory.
func (b *Batch) regrow(n int) {
	old := *b
	old.cols = slices.Clone(b.cols)
	old.levelCounts = slices.Clone(b.levelCounts)
	b.grow(n)
	r := b.rows
	for i := range b.cols {
		c, o := &b.cols[i], &old.cols[i]
		copy(c.i64, o.i64[:min(r, len(o.i64))])
		copy(c.i32, o.i32[:min(r, len(o.i32))])
		copy(c.b, o.b[:min(r, len(o.b))])
		copy(c.s, o.s[:min(r, len(o.s))])
		copy(c.null, o.null[:min(r, len(o.null))])
	}
	for i := range b.levelCounts {
		copy(b.levelCounts[i], old.levelCounts[i][:r])
	}
	copy(b.books, old.books[:min(r, len(old.books))])
}

// emptyLike returns an empty batch with b's columns and room for n rows.
func (b *Batch) emptyLike(n int) Batch {
	nb := Batch{cols: make([]column, len(b.cols)), levelCounts: make([][]int32, len(b.levelCounts))}
	for i := range b.cols {
		c := b.cols[i] // the column's description; grow gives it its own values
		c.i64, c.i32, c.b, c.s, c.null = nil, nil, nil, nil, nil
		nb.cols[i] = c
	}
	nb.grow(n)
	return nb
}

// rowBytes estimates the memory of one row, to size batches.
func (b *Batch) rowBytes() int {
	n := 0
	for i := range b.cols {
		switch k := b.cols[i].kind; {
		case wideKind(k):
			n += 8 + 8 // the value and its float64/decimal form at flush
		case k == Int32:
			n += 4
		case k == Bool:
			n++
		case bytesKind(k):
			n += 16 + 16 + b.cols[i].width // the string header and its copy at flush
		}
		if b.cols[i].nullable && b.cols[i].levelOf < 0 {
			n++
		}
	}
	if len(b.levelCounts) > 0 {
		n += 4 // books
	}
	return n + 4*len(b.levelCounts)
}

func (b *Batch) reset() {
	// Strings would keep their backing memory alive; values are overwritten.
	for i := range b.cols {
		if bytesKind(b.cols[i].kind) {
			clear(b.cols[i].s[:b.rows])
		}
	}
	b.rows = 0
	b.arena = b.arena[:0] // the format writers copied what they needed
}

// Int64 sets an Int64, Timestamp (ns since the epoch), Price, Size or
// Decimal (fixed-point) column of the row; a Uint8 or Uint64 column to
// uint8(v) or uint64(v).
func (b *Batch) Int64(col int, v int64) {
	c := &b.cols[col]
	c.i64[b.rows] = v
	if c.null != nil {
		c.null[b.rows] = false
	}
}

// Int32 sets an Int32 column of the row.
func (b *Batch) Int32(col int, v int32) {
	c := &b.cols[col]
	c.i32[b.rows] = v
	if c.null != nil {
		c.null[b.rows] = false
	}
}

// Bool sets a Bool column of the row.
func (b *Batch) Bool(col int, v bool) {
	c := &b.cols[col]
	c.b[b.rows] = v
	if c.null != nil {
		c.null[b.rows] = false
	}
}

// String sets a String column of the row. The batch keeps v until it is
// written: do not modify the bytes behind it.
func (b *Batch) String(col int, v string) {
	c := &b.cols[col]
	c.s[b.rows] = v
	if c.null != nil {
		c.null[b.rows] = false
	}
}

// StringBytes sets a String, FixedBytes or Binary column to a copy of v, kept in the batch's
// arena until it is written, so that a row costs no allocation. A full
// arena is replaced, not grown: strings already set keep pointing into the
// old one.
func (b *Batch) StringBytes(col int, v []byte) {
	if cap(b.arena)-len(b.arena) < len(v) {
		b.arena = make([]byte, 0, max(64<<10, 2*len(v)))
	}
	start := len(b.arena)
	b.arena = append(b.arena, v...)
	b.String(col, unsafe.String(&b.arena[start], len(v)))
}

// Null sets a nullable column of the row to null (a level column is null
// through its side's count instead).
func (b *Batch) Null(col int) {
	c := &b.cols[col]
	switch k := c.kind; {
	case bytesKind(k):
		c.s[b.rows] = ""
	case k == Bool:
		c.b[b.rows] = false
	case k == Int32:
		c.i32[b.rows] = 0
	default:
		c.i64[b.rows] = 0
	}
	c.null[b.rows] = true
}

// SetSides sets the level columns of a book's row from column col on, laid
// out as AddLevel declared them: for each level i < levels, bids[i] then
// asks[i], each as its price and size (and count when counts) columns. A
// missing level is null through its side's count; its slots are zeroed so
// that no value of an earlier batch reaches an Arrow buffer.
func (b *Batch) SetSides(col, levels int, counts bool, bids, asks []book.Level) {
	// The hundred level stores of a row, from locals: through b, each
	// store would reload the batch's columns and row for fear of aliasing.
	cols, r := b.cols, b.rows
	for i := 0; i < levels; i++ {
		col = side(cols, r, col, counts, bids, i)
		col = side(cols, r, col, counts, asks, i)
	}
}

// side sets level i of one side in row r at column c of cols and returns
// the next column.
func side(cols []column, r, c int, counts bool, lv []book.Level, i int) int {
	var l book.Level
	if i < len(lv) {
		l = lv[i]
	}
	cols[c].i64[r] = l.Price
	cols[c+1].i64[r] = l.Size
	if counts {
		cols[c+2].i32[r] = l.Count
		return c + 3
	}
	return c + 2
}

func (b *Batch) isNull(col, row int) bool {
	c := &b.cols[col]
	if c.levelOf >= 0 {
		return int32(c.level) >= b.levelCounts[c.levelOf][row]
	}
	return c.nullable && c.null[row]
}
