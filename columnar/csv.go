package columnar

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/book"
)

// CSVHow is how a CSVField prints its column.
type CSVHow uint8

// How a CSV field prints. A null prints as an empty field.
const (
	CSVString  CSVHow = iota // quoted only when it holds a comma, quote or line break
	CSVMicros                // ns → µs (floor); a null takes the Alt column
	CSVInt                   // decimal digits; a null prints as the column's null integer (Batch.SetNullInt)
	CSVPrice                 // exact decimal text at the price decimals, always with a decimal point
	CSVSize                  // exact decimal text at the size decimals
	CSVBool                  // true or false
	CSVEmpty                 // always empty (a column of a layout that cannot be filled)
	CSVConst                 // always Text
	CSVQuoted                // a string always quoted: ids that look like numbers stay text
	CSVDecimal               // exact decimal text at the column's own decimals
	CSVUint                  // the bits of an int64 column as an unsigned decimal (Uint8, Uint64)
	CSVHex                   // bytes as lower-case hex (FixedBytes, Binary)
)

// CSVField is one CSV column of a Layout: its header and how to print
// column Col of the batch.
type CSVField struct {
	Header string
	Col    int
	How    CSVHow
	Alt    int // CSVMicros: the column to print when Col is null; -1 for none
	Text   string
}

// ownFields is the FormatCSV layout: every column of the table, in order,
// under its own name.
func ownFields(b *Batch) []CSVField {
	f := make([]CSVField, len(b.cols))
	for i := range b.cols {
		c := &b.cols[i]
		how := CSVInt
		switch c.kind {
		case String:
			how = CSVString
			if c.name == "instrument" || c.name == "instruments" || c.name == "paired_instrument" {
				how = CSVQuoted
			}
		case Price:
			how = CSVPrice
		case Size:
			how = CSVSize
		case Decimal:
			how = CSVDecimal
		case Bool:
			how = CSVBool
		case Uint8, Uint64:
			how = CSVUint
		case FixedBytes, Binary:
			how = CSVHex
		}
		f[i] = CSVField{Header: c.name, Col: i, How: how, Alt: -1}
	}
	return f
}

type csvWriter struct {
	w      *bufio.Writer
	fields []CSVField
	scale  book.Scale
	line   []byte
}

func newCSVWriter(w io.Writer, cw *Writer) (*csvWriter, error) {
	fields := cw.lay.CSV
	if fields == nil {
		fields = ownFields(&cw.b)
	}
	size := 256 << 10
	if cw.lay.Shared != nil {
		size = 4 << 10 // one of many files: the file's own buffer does the rest
	}
	c := &csvWriter{w: bufio.NewWriterSize(w, size), fields: fields, scale: cw.lay.Scale}
	for i, f := range c.fields {
		if i > 0 {
			c.line = append(c.line, ',')
		}
		c.line = append(c.line, f.Header...)
	}
	c.line = append(c.line, '\n')
	_, err := c.w.Write(c.line)
	return c, err
}

func (c *csvWriter) write(b *Batch) error {
	for r := 0; r < b.rows; r++ {
		line := c.line[:0]
		for i, f := range c.fields {
			if i > 0 {
				line = append(line, ',')
			}
			line = c.appendField(line, b, f, r)
		}
		line = append(line, '\n')
		c.line = line
		if _, err := c.w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

func (c *csvWriter) appendField(dst []byte, b *Batch, f CSVField, r int) []byte {
	switch f.How {
	case CSVEmpty:
		return dst
	case CSVConst:
		return append(dst, f.Text...)
	}
	col := f.Col
	if b.isNull(col, r) {
		if f.How == CSVInt {
			// No empty integer cells: pandas reads a column with one as
			// float64, and a ns time then inexactly.
			return strconv.AppendInt(dst, b.cols[col].nullInt, 10)
		}
		if f.Alt < 0 || b.isNull(f.Alt, r) {
			return dst
		}
		col = f.Alt
	}
	cl := &b.cols[col]
	switch f.How {
	case CSVString:
		return appendCSVString(dst, cl.s[r])
	case CSVQuoted:
		return appendQuoted(dst, cl.s[r])
	case CSVMicros:
		return strconv.AppendInt(dst, floorDiv(cl.i64[r], 1000), 10)
	case CSVInt:
		if cl.kind == Int32 {
			return strconv.AppendInt(dst, int64(cl.i32[r]), 10)
		}
		return strconv.AppendInt(dst, cl.i64[r], 10)
	case CSVPrice:
		return appendDecimal(dst, cl.i64[r], c.scale.PriceDecimals)
	case CSVSize:
		return appendDecimal(dst, cl.i64[r], c.scale.SizeDecimals)
	case CSVBool:
		return strconv.AppendBool(dst, cl.b[r])
	case CSVDecimal:
		return appendDecimal(dst, cl.i64[r], cl.decimals)
	case CSVUint:
		return strconv.AppendUint(dst, uint64(cl.i64[r]), 10)
	case CSVHex:
		return hex.AppendEncode(dst, []byte(cl.s[r]))
	}
	return dst
}

// appendDecimal appends the exact decimal text of v at dec decimals, with a
// decimal point even for a whole number ("106217.0"): readers that guess a
// column's type from its first rows (Polars, DuckDB, pandas) then read a
// price or size column as floating point, not as integers that a later
// "35.032" breaks.
func appendDecimal(dst []byte, v int64, dec uint8) []byte {
	start := len(dst)
	dst = book.AppendDecimal(dst, v, dec)
	if bytes.IndexByte(dst[start:], '.') < 0 {
		dst = append(dst, ".0"...)
	}
	return dst
}

func appendCSVString(dst []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(dst, s...)
	}
	return appendQuoted(dst, s)
}

func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}

func (c *csvWriter) close() error { return c.w.Flush() }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
