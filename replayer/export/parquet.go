package export

import (
	"io"
	"strings"

	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// parquetWriter writes each batch as one row group, so a row group is in
// memory only while it is encoded. Arrow v15's page writer asks its zstd
// codec for a fresh encoder (megabytes of window) on every page, whatever
// the level, which is why Snappy is the default. Dictionary encoding stays on for strings
// (a handful of venues and instruments) and is off for numbers, where it
// costs a hash per value for little gain on book levels that keep moving.
type parquetWriter struct {
	fw *pqarrow.FileWriter
	rb *recordBuilder
}

func newParquetWriter(w io.Writer, s *Sink) (*parquetWriter, error) {
	rb := newRecordBuilder(s)
	codec := compress.Codecs.Snappy // the default
	switch s.cfg.compression {
	case Zstd:
		codec = compress.Codecs.Zstd
	case Uncompressed:
		codec = compress.Codecs.Uncompressed
	}
	opts := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(int64(s.cfg.batchRows)),
		parquet.WithDictionaryDefault(false),
		// Statistics (min/max per row group) only where a reader filters:
		// timestamps, venue, instrument. On level columns they cost a pass
		// over every value for no query that uses them.
		parquet.WithStats(false),
		// A fixed writer name: file bytes must not depend on who built the binary.
		parquet.WithCreatedBy("tapedeck"),
		// V2 data pages. With V1, Arrow v15 reserves a 4-byte length prefix in
		// the definition-level buffer, and its buffer writer then reallocates
		// and copies the whole buffer on every RLE flush: quadratic in the
		// row group, and it is what real books hit (a level column's nulls
		// come and go as the book's depth moves). DuckDB, pyarrow, Polars and
		// Spark read V2 pages.
		parquet.WithDataPageVersion(parquet.DataPageV2),
	}
	for i := range s.b.cols {
		c := &s.b.cols[i]
		if c.kind == kString {
			opts = append(opts, parquet.WithDictionaryFor(c.name, true), parquet.WithStatsFor(c.name, true))
		}
		if strings.HasSuffix(c.name, "_ns") {
			opts = append(opts, parquet.WithStatsFor(c.name, true))
		}
	}
	fw, err := pqarrow.NewFileWriter(rb.schema, w, parquet.NewWriterProperties(opts...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	return &parquetWriter{fw: fw, rb: rb}, nil
}

func (p *parquetWriter) write(b *batch) error {
	rec := p.rb.build(b)
	defer rec.Release()
	return p.fw.Write(rec)
}

func (p *parquetWriter) close() error { return p.fw.Close() }
