package columnar

import (
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// ipcWriter writes an Arrow IPC file, one record batch per batch.
type ipcWriter struct {
	fw *ipc.FileWriter
	rb *recordBuilder
}

func newIPCWriter(w io.Writer, cw *Writer) (*ipcWriter, error) {
	rb := newRecordBuilder(cw)
	opts := []ipc.Option{ipc.WithSchema(rb.schema)}
	if cw.opts.Compression == Zstd {
		opts = append(opts, ipc.WithZstd())
	}
	fw, err := ipc.NewFileWriter(&positionWriter{w: w}, opts...)
	if err != nil {
		return nil, err
	}
	return &ipcWriter{fw: fw, rb: rb}, nil
}

func (p *ipcWriter) write(b *Batch) error {
	rec := p.rb.build(b)
	defer rec.Release()
	return p.fw.Write(rec)
}

func (p *ipcWriter) close() error { return p.fw.Close() }

// positionWriter lets the IPC file writer, which only asks where it is
// (Seek(0, io.SeekCurrent)) to record block offsets, write to any io.Writer
// such as a pipe or a gzip stream.
type positionWriter struct {
	w   io.Writer
	pos int64
}

func (p *positionWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.pos += int64(n)
	return n, err
}

var errSeek = errors.New("columnar: output is not seekable")

func (p *positionWriter) Seek(offset int64, whence int) (int64, error) {
	if offset == 0 && whence == io.SeekCurrent {
		return p.pos, nil
	}
	return 0, errSeek
}
