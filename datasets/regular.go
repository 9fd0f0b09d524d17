package datasets

import (
	"fmt"
	"io"
	"os"
)

// MaxManifestSize bounds the manifest read whole: a manifest of a venue's
// every market (tens of thousands of instrument ids) is a few MB.
const MaxManifestSize = 64 << 20

// maxWholeFile bounds any other file a Store reads whole (ReadFile).
const maxWholeFile = 256 << 20

// openRegular opens path for reading only if it is a regular file: a FIFO
// would block the open (and every read) forever, a device such as
// /dev/zero never ends. The check is made before the open (a FIFO's open
// blocks) and again on what was opened.
func openRegular(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%v)", ErrNotRegular, fi.Mode().Type())}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%v)", ErrNotRegular, fi.Mode().Type())}
		}
		return nil, err
	}
	return f, nil
}

// readRegular reads the regular file at path whole, refusing one of more
// than max bytes (ErrTooLarge) before reading it; a file growing while read
// is cut at max+1 bytes and refused too.
func readRegular(path string, max int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, fi.Size(), max)}
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
	}
	return b, err
}

// boundedReader is a Store that reads a whole file under a bound the format
// implies (the local store); ReadFile's own bound applies elsewhere.
type boundedReader interface {
	readFileMax(name string, max int64) ([]byte, error)
}

// readFileMax reads name from st whole, at most max bytes where st can
// bound the read.
func readFileMax(st Store, name string, max int64) ([]byte, error) {
	if b, ok := st.(boundedReader); ok {
		return b.readFileMax(name, max)
	}
	return st.ReadFile(name)
}
