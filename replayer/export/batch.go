package export

import (
	"slices"
	"unsafe"
)

// A batch holds the rows of one table column by column in plain Go slices, so
// a row costs a few appends and a flush hands the slices to Arrow without
// copying (see arrow.go). Fixed-point values stay int64 until the flush, where
// they become float64 or decimal128 in one pass, and CSV prints them exactly.

type colKind uint8

const (
	kInt64 colKind = iota // int64: sequence numbers, counts, durations (ns)
	kPrice                // fixed-point int64 at the price decimals
	kSize                 // fixed-point int64 at the size decimals
	kInt32                // int32: order counts, connection slots, codes
	kBool
	kString
	kTime    // int64 ns since the epoch: Arrow timestamp[ns, UTC], Parquet TIMESTAMP(NANOS, UTC)
	kDecimal // fixed-point int64 at the column's own decimals, always decimal128 (typed tables)
	kUint8   // held in i64: Arrow uint8, Parquet INT32 with INT(8, unsigned) (typed tables)
	kUint64  // held in i64 (the bits): Arrow uint64, Parquet INT64 with INT(64, unsigned) (typed tables)
	kFixed   // held in s, width bytes each: Arrow fixed_size_binary, Parquet FIXED_LEN_BYTE_ARRAY (typed tables)
	kBinary  // held in s: Arrow binary, Parquet BYTE_ARRAY with no logical type (typed tables)
)

// bytesKind reports whether a column of kind k holds its values in s.
func bytesKind(k colKind) bool { return k == kString || k == kFixed || k == kBinary }

// wideKind reports whether a column of kind k holds its values in i64.
func wideKind(k colKind) bool {
	switch k {
	case kInt64, kTime, kPrice, kSize, kDecimal, kUint8, kUint64:
		return true
	}
	return false
}

type column struct {
	name     string
	kind     colKind
	nullable bool
	decimals uint8 // kDecimal: the column's scale
	width    int   // kFixed: bytes per value

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
}

type batch struct {
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

func (b *batch) add(name string, kind colKind, nullable bool) int {
	b.cols = append(b.cols, column{name: name, kind: kind, nullable: nullable, levelOf: -1})
	return len(b.cols) - 1
}

// addLevelCount adds a per-row count of levels present on one side and
// returns its index for addLevel and setLevelCount.
func (b *batch) addLevelCount() int {
	b.levelCounts = append(b.levelCounts, nil)
	return len(b.levelCounts) - 1
}

// addLevel adds a column for level `level` of the side counted by count.
func (b *batch) addLevel(name string, kind colKind, count, level int) int {
	b.cols = append(b.cols, column{name: name, kind: kind, nullable: true, levelOf: count, level: level})
	return len(b.cols) - 1
}

func (b *batch) setLevelCount(count int, n int32) { b.levelCounts[count][b.rows] = n }

// bookRows returns the book numbers of the batch's rows, nil if it has none.
func (b *batch) bookRows() []int32 {
	if b.books == nil {
		return nil
	}
	return b.books[:b.rows]
}

// setBook sets the row's book number (see books).
func (b *batch) setBook(id int32) { b.books[b.rows] = id }

// grow gives every column room for n rows once: a batch never reallocates.
// The 64-bit columns share one allocation (the 32-bit ones another), each
// column starting one cache line after the end of the one before: a depth
// row stores into a hundred columns at the same row index, and columns that
// each began on a page boundary (as separate large allocations do) put all
// those stores in one L1 cache set, evicting each other on every row. This
// alone made the depth export a third faster.
func (b *batch) grow(n int) {
	wide, narrow := 0, 0
	for i := range b.cols {
		switch k := b.cols[i].kind; {
		case wideKind(k):
			wide++
		case k == kInt32:
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
		case k == kInt32:
			c.i32 = arena32[:n:n]
			arena32 = arena32[n+pad/4:]
		case k == kBool:
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
func (b *batch) free() {
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
// Sink among many (Split, Partitioned) starts small and doubles up to its
// batch size, so that an instrument with few rows holds little memory.
func (b *batch) regrow(n int) {
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
func (b *batch) emptyLike(n int) batch {
	nb := batch{cols: make([]column, len(b.cols)), levelCounts: make([][]int32, len(b.levelCounts))}
	for i := range b.cols {
		c := b.cols[i] // the column's description; grow gives it its own values
		c.i64, c.i32, c.b, c.s, c.null = nil, nil, nil, nil, nil
		nb.cols[i] = c
	}
	nb.grow(n)
	return nb
}

// rowBytes estimates the memory of one row, to size batches.
func (b *batch) rowBytes() int {
	n := 0
	for i := range b.cols {
		switch k := b.cols[i].kind; {
		case wideKind(k):
			n += 8 + 8 // the value and its float64/decimal form at flush
		case k == kInt32:
			n += 4
		case k == kBool:
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

func (b *batch) reset() {
	// Strings would keep their backing memory alive; values are overwritten.
	for i := range b.cols {
		if bytesKind(b.cols[i].kind) {
			clear(b.cols[i].s[:b.rows])
		}
	}
	b.rows = 0
	b.arena = b.arena[:0] // the format writers copied what they needed
}

// Setters write row b.rows of a column; every column gets exactly one value
// (or null) per row before endRow. Indexing preallocated slices keeps a row
// to a store per value: a wide depth row is a hundred of them.

func (b *batch) i64(col int, v int64) {
	c := &b.cols[col]
	c.i64[b.rows] = v
	if c.null != nil {
		c.null[b.rows] = false
	}
}

// A level column is set directly (depthTable.side); its nullness is the
// side's count.

func (b *batch) i64Null(col int) {
	c := &b.cols[col]
	c.i64[b.rows] = 0
	c.null[b.rows] = true
}

func (b *batch) i32(col int, v int32) {
	c := &b.cols[col]
	c.i32[b.rows] = v
	if c.null != nil {
		c.null[b.rows] = false
	}
}

func (b *batch) i32Null(col int) {
	c := &b.cols[col]
	c.i32[b.rows] = 0
	c.null[b.rows] = true
}

func (b *batch) bool(col int, v bool) {
	c := &b.cols[col]
	c.b[b.rows] = v
	if c.null != nil {
		c.null[b.rows] = false
	}
}

func (b *batch) boolNull(col int) {
	c := &b.cols[col]
	c.b[b.rows] = false
	c.null[b.rows] = true
}

func (b *batch) str(col int, v string) {
	c := &b.cols[col]
	c.s[b.rows] = v
	if c.null != nil {
		c.null[b.rows] = false
	}
}

// strBytes sets a string column to a copy of v, kept in the batch's arena
// until reset. A full arena is replaced, not grown: strings already set
// keep pointing into the old one.
func (b *batch) strBytes(col int, v []byte) {
	if cap(b.arena)-len(b.arena) < len(v) {
		b.arena = make([]byte, 0, max(64<<10, 2*len(v)))
	}
	start := len(b.arena)
	b.arena = append(b.arena, v...)
	b.str(col, unsafe.String(&b.arena[start], len(v)))
}

func (b *batch) strNull(col int) {
	c := &b.cols[col]
	c.s[b.rows] = ""
	c.null[b.rows] = true
}

func (b *batch) isNull(col, row int) bool {
	c := &b.cols[col]
	if c.levelOf >= 0 {
		return int32(c.level) >= b.levelCounts[c.levelOf][row]
	}
	return c.nullable && c.null[row]
}
