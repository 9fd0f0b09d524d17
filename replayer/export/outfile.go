package export

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/tapedeck/tapedeck/datasets/interchange"
)

// outFile is one output of an export: a temporary file beside its path (or
// stdout), buffered, compressed as the job says, renamed into place by
// commit. One of many (a split or partitioned export) has a small buffer
// and is closed while idle when more than maxOpenFiles are open, then
// reopened to append: the bytes are the same.
type outFile struct {
	path   string
	name   string   // the temporary file; "" for stdout, or once committed or aborted
	tmp    *os.File // open temporary file; nil for stdout or while closed
	files  *openFiles
	used   uint64 // openFiles.clock at the last write
	bw     *bufio.Writer
	closer io.Closer // the compressor, nil when none
	w      io.Writer
	err    error // closing it while idle failed
}

// maxOpenFiles bounds the files of a split or partitioned export open at
// once.
const maxOpenFiles = 128

// openFiles are the temporary files of a split or partitioned export open
// at once, at most maxOpenFiles.
type openFiles struct {
	open  []*outFile
	clock uint64
}

// use opens f if it is closed and makes it the most recently used, closing
// the least recently used file when too many are open.
func (o *openFiles) use(f *outFile) error {
	o.clock++
	f.used = o.clock
	if f.tmp != nil {
		return nil
	}
	if len(o.open) >= maxOpenFiles {
		lru := 0
		for i, g := range o.open {
			if g.used < o.open[lru].used {
				lru = i
			}
		}
		g := o.open[lru]
		if err := g.tmp.Close(); err != nil && g.err == nil {
			g.err = err
		}
		g.tmp = nil
		o.drop(g)
	}
	tmp, err := os.OpenFile(f.name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	f.tmp = tmp
	o.open = append(o.open, f)
	return nil
}

// drop forgets f (closed, committed or aborted).
func (o *openFiles) drop(f *outFile) {
	for i, g := range o.open {
		if g == f {
			o.open[i] = o.open[len(o.open)-1]
			o.open = o.open[:len(o.open)-1]
			return
		}
	}
}

// Write writes to the temporary file, reopening it if it was closed.
func (f *outFile) Write(p []byte) (int, error) {
	if f.tmp == nil {
		if f.name == "" {
			return 0, os.ErrClosed
		}
		if err := f.files.use(f); err != nil {
			return 0, err
		}
	} else if f.files != nil {
		f.files.clock++
		f.used = f.files.clock
	}
	return f.tmp.Write(p)
}

// createOut creates the output at path; many says it is one of many files
// (split, partitioned).
func (j *Job) createOut(path string, many bool) (*outFile, error) {
	f := &outFile{path: path}
	var w io.Writer = j.Stdout
	size := 1 << 20 // Parquet and IPC write many small pieces
	if path != "-" {
		tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
		if err != nil {
			// The temporary file is ours; the path to name is the user's.
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("export: create %s: %w", path, err)
		}
		f.name, f.tmp, w = tmp.Name(), tmp, tmp
		if many {
			if j.files == nil {
				j.files = &openFiles{}
			}
			f.files, f.tmp, w = j.files, nil, f
			tmp.Close()
			size = 4 << 10
		}
	} else if w == nil {
		w = io.Discard
	}
	f.bw = bufio.NewWriterSize(w, size)
	f.w = f.bw
	if j.Table == "raw" {
		return f, nil // interchange compresses raw exports itself
	}
	switch j.Compress {
	case interchange.Gzip:
		// Header fields stay zero (no name, no mtime): the bytes depend on the data only.
		gz := gzip.NewWriter(f.bw)
		f.w, f.closer = gz, gz
	case interchange.Zstd:
		zw, err := zstd.NewWriter(f.bw, zstd.WithEncoderConcurrency(1))
		if err != nil {
			f.abort()
			return nil, fmt.Errorf("export: zstd: %w", err)
		}
		f.w, f.closer = zw, zw
	}
	return f, nil
}

// commit finishes the stream and renames the file into place.
func (f *outFile) commit() error {
	if f.closer != nil {
		if err := f.closer.Close(); err != nil {
			return fmt.Errorf("export: compress %s: %w", f.path, err)
		}
	}
	if err := f.bw.Flush(); err != nil {
		return fmt.Errorf("export: write %s: %w", f.path, err)
	}
	if f.name == "" {
		return nil
	}
	if f.err != nil {
		return fmt.Errorf("export: write %s: %w", f.path, f.err)
	}
	if f.tmp != nil {
		if f.files != nil {
			f.files.drop(f)
		}
		err := f.tmp.Close()
		f.tmp = nil
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	// CreateTemp makes the file private; an export is an ordinary file.
	if err := os.Chmod(f.name, 0o644); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(f.name, f.path); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	f.name = ""
	return nil
}

// abort removes the temporary file, if any is left.
func (f *outFile) abort() {
	if f.tmp != nil {
		if f.files != nil {
			f.files.drop(f)
		}
		f.tmp.Close()
		f.tmp = nil
	}
	if f.name != "" {
		os.Remove(f.name)
		f.name = ""
	}
}
