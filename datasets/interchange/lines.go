package interchange

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// lineReader splits a stream into lines without copying short ones: a line
// aliases the bufio buffer until the next call. Lines longer than the buffer
// are gathered in long, up to max bytes.
type lineReader struct {
	br   *bufio.Reader
	long []byte
	max  int
	line int64 // number of the line last returned, 1-based
}

// next returns the next line without its '\n', and without a '\r' before
// it: CRLF files (NDJSON allows them) give the same frames, and no frame of
// a line format can end in '\r' (exports refuse line breaks). A last line
// without a line break is returned too. It returns io.EOF at a clean end.
func (lr *lineReader) next() ([]byte, error) {
	b, err := lr.nextRaw()
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, err
}

func (lr *lineReader) nextRaw() ([]byte, error) {
	b, err := lr.br.ReadSlice('\n')
	if err == nil {
		lr.line++
		if len(b)-1 > lr.max {
			return nil, ErrLineSize
		}
		return b[:len(b)-1], nil
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], b...)
		for {
			if len(lr.long) > lr.max {
				lr.line++
				return nil, ErrLineSize
			}
			b, err = lr.br.ReadSlice('\n')
			lr.long = append(lr.long, b...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && err != io.EOF {
				return nil, err // the line is incomplete: the error is after the last whole line
			}
			lr.line++
			if err == nil {
				lr.long = lr.long[:len(lr.long)-1]
			}
			if len(lr.long) > lr.max {
				return nil, ErrLineSize
			}
			return lr.long, nil
		}
	}
	if err == io.EOF && len(b) > 0 {
		lr.line++
		if len(b) > lr.max {
			return nil, ErrLineSize
		}
		return b, nil
	}
	return nil, err
}

// Magic numbers of the compressed inputs we recognise.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// decompressor turns a raw input into its decompressed bytes, keeping one
// gzip reader and one zstd decoder for all files of an import.
type decompressor struct {
	raw *bufio.Reader
	gz  *gzip.Reader
	zd  *zstd.Decoder
}

// maxZstdWindow bounds the memory a hostile zstd frame can make us allocate;
// 128 MiB covers `zstd --long=27`, far beyond what default levels use.
const maxZstdWindow = 128 << 20

func (d *decompressor) open(r io.Reader) (io.Reader, string, error) {
	if d.raw == nil {
		d.raw = bufio.NewReaderSize(r, 64<<10)
	} else {
		d.raw.Reset(r)
	}
	head, err := d.raw.Peek(4)
	if err != nil && err != io.EOF {
		return nil, "", err
	}
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		if d.gz == nil {
			d.gz, err = gzip.NewReader(d.raw)
		} else {
			err = d.gz.Reset(d.raw)
		}
		if err != nil {
			return nil, "", fmt.Errorf("open gzip stream: %w", err)
		}
		return d.gz, "gzip", nil
	case bytes.HasPrefix(head, zstdMagic):
		if d.zd == nil {
			d.zd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxWindow(maxZstdWindow))
			if err != nil {
				return nil, "", fmt.Errorf("open zstd stream: %w", err)
			}
		}
		if err := d.zd.Reset(d.raw); err != nil {
			return nil, "", fmt.Errorf("open zstd stream: %w", err)
		}
		return d.zd, "zstd", nil
	}
	return d.raw, "plain", nil
}

func (d *decompressor) close() {
	if d.zd != nil {
		d.zd.Close()
		d.zd = nil
	}
}
