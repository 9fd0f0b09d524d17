package export

import (
	"bufio"
	"encoding/hex"
	"io"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/book"
)

type csvHow uint8

const (
	csvString csvHow = iota // quoted only when it holds a comma, quote or newline
	csvMicros               // ns → µs (floor); a null takes the alt column
	csvInt
	csvPrice // exact decimal text at the price decimals
	csvSize
	csvBool
	csvEmpty   // always empty (a Tardis column we cannot fill)
	csvConst   // always text
	csvQuoted  // a string always quoted: ids that look like numbers stay text
	csvDecimal // exact decimal text at the column's own decimals
	csvUint    // the i64's bits as an unsigned decimal
	csvHex     // bytes as lower-case hex
)

// csvField is one CSV column: its header and how to print batch column col.
type csvField struct {
	header string
	col    int
	how    csvHow
	alt    int // csvMicros: the column to use when col is null; -1 for none
	text   string
}

// ownFields is the FormatCSV layout: every column of the table, in order,
// under its own name.
func ownFields(b *batch) []csvField {
	f := make([]csvField, len(b.cols))
	for i := range b.cols {
		c := &b.cols[i]
		how := csvInt
		switch c.kind {
		case kString:
			how = csvString
			if c.name == "instrument" || c.name == "instruments" || c.name == "paired_instrument" {
				how = csvQuoted
			}
		case kPrice:
			how = csvPrice
		case kSize:
			how = csvSize
		case kDecimal:
			how = csvDecimal
		case kBool:
			how = csvBool
		case kUint64:
			how = csvUint
		case kFixed, kBinary:
			how = csvHex
		}
		f[i] = csvField{header: c.name, col: i, how: how, alt: -1}
	}
	return f
}

type csvWriter struct {
	w      *bufio.Writer
	fields []csvField
	scale  book.Scale
	line   []byte
}

func newCSVWriter(w io.Writer, s *Sink) (*csvWriter, error) {
	var fields []csvField
	if s.format == FormatTardis {
		fields = s.impl.csvFields(s.cfg.quality)
		for i := range fields {
			switch fields[i].header {
			case "exchange":
				if s.cfg.tardisExchange != "" {
					fields[i] = csvField{header: "exchange", how: csvConst, text: s.cfg.tardisExchange, alt: -1}
				}
			case "symbol":
				fields[i].how = csvQuoted
			}
		}
	} else {
		fields = ownFields(&s.b)
	}
	size := 256 << 10
	if s.cfg.many {
		size = 4 << 10 // one of many files: the file's own buffer does the rest
	}
	c := &csvWriter{w: bufio.NewWriterSize(w, size), fields: fields, scale: s.cfg.scale}
	for i, f := range c.fields {
		if i > 0 {
			c.line = append(c.line, ',')
		}
		c.line = append(c.line, f.header...)
	}
	c.line = append(c.line, '\n')
	_, err := c.w.Write(c.line)
	return c, err
}

func (c *csvWriter) write(b *batch) error {
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

func (c *csvWriter) appendField(dst []byte, b *batch, f csvField, r int) []byte {
	switch f.how {
	case csvEmpty:
		return dst
	case csvConst:
		return append(dst, f.text...)
	}
	col := f.col
	if b.isNull(col, r) {
		if f.alt < 0 || b.isNull(f.alt, r) {
			return dst
		}
		col = f.alt
	}
	cl := &b.cols[col]
	switch f.how {
	case csvString:
		return appendCSVString(dst, cl.s[r])
	case csvQuoted:
		return appendQuoted(dst, cl.s[r])
	case csvMicros:
		return strconv.AppendInt(dst, floorDiv(cl.i64[r], 1000), 10)
	case csvInt:
		if cl.kind == kInt32 {
			return strconv.AppendInt(dst, int64(cl.i32[r]), 10)
		}
		return strconv.AppendInt(dst, cl.i64[r], 10)
	case csvPrice:
		return book.AppendDecimal(dst, cl.i64[r], c.scale.PriceDecimals)
	case csvSize:
		return book.AppendDecimal(dst, cl.i64[r], c.scale.SizeDecimals)
	case csvBool:
		return strconv.AppendBool(dst, cl.b[r])
	case csvDecimal:
		return book.AppendDecimal(dst, cl.i64[r], cl.decimals)
	case csvUint:
		return strconv.AppendUint(dst, uint64(cl.i64[r]), 10)
	case csvHex:
		return hex.AppendEncode(dst, []byte(cl.s[r]))
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
