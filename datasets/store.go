package datasets

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Store is where a dataset's files are: a local directory (the default) or
// a prefix of an object store. Readers (Open, ReadManifest, Verify, Inspect,
// Catalog) go through it; Writer and Repair need a local directory.
//
// A location with a registered scheme ("s3://bucket/prefix", registered by
// package datasets/s3) opens that scheme's Store; any other location is a
// local directory.
type Store interface {
	// Location is the dataset's address as given (a directory, a URL).
	Location() string
	// Join names a file of the dataset in messages (dir/name, url/name).
	Join(name string) string
	// ReadFile returns a whole file; an error wrapping fs.ErrNotExist when
	// it does not exist.
	ReadFile(name string) ([]byte, error)
	// List returns the dataset's files (not directories nor what they
	// hold), sorted by name.
	List() ([]FileInfo, error)
	// Open opens a file for reading.
	Open(name string) (File, error)
	// Fetched returns the bytes read from the store's files so far (for a
	// remote store, the bytes fetched over the network).
	Fetched() int64
}

// FileInfo is one file of a Store.
type FileInfo struct {
	Name    string
	Size    int64
	Regular bool // not a symbolic link or device (a local store lists those too)
}

// File is an open file of a Store.
type File interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	io.Closer
	// Size returns the file's size now (a local segment grows while written).
	Size() (int64, error)
}

// ReadPlanner is implemented by a File that reads ahead (a remote one). A
// reader tells it the byte ranges it will read next, in order; the file
// fetches them ahead of Read, bounded in bytes, and fetches nothing outside
// them unless asked to. A new plan replaces the old one.
type ReadPlanner interface {
	PlanReads(ranges []Range)
}

// Refetcher is implemented by a File whose bytes cross a network (a remote
// one). A reader that finds a block failing its checksum calls Refetch
// with the block's byte range, then reads it once more: the file drops what
// it holds of those bytes (read-ahead, cache) so they are fetched again. A
// byte flipped in flight is then not taken for damage of the dataset; a
// block damaged where it is stored fails again and is damage.
type Refetcher interface {
	Refetch(off, end int64)
}

// Range is the byte range [Off, End) of a file.
type Range struct{ Off, End int64 }

// Walker is implemented by a Store that can list the datasets under it
// (Catalog): the locations of every prefix holding a manifest, in order.
type Walker interface {
	Datasets() ([]string, error)
}

// StoreOpener opens the Store of a location of its scheme.
type StoreOpener func(location string) (Store, error)

var (
	schemesMu sync.RWMutex
	schemes   = map[string]StoreOpener{}
)

// RegisterScheme makes locations starting with scheme + "://" open through
// open. Registering a scheme twice panics.
func RegisterScheme(scheme string, open StoreOpener) {
	schemesMu.Lock()
	defer schemesMu.Unlock()
	if _, dup := schemes[scheme]; dup {
		panic("datasets: scheme registered twice: " + scheme)
	}
	schemes[scheme] = open
}

// Scheme returns the URL scheme of location ("s3" for "s3://b/p"), "" for
// a local path.
func Scheme(location string) string {
	i := strings.Index(location, "://")
	if i <= 0 {
		return ""
	}
	for _, c := range location[:i] {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return ""
		}
	}
	return location[:i]
}

// IsRemote reports whether location names an object-store prefix rather
// than a local directory.
func IsRemote(location string) bool { return Scheme(location) != "" }

// OpenStore returns the Store of location: a local directory unless it has
// a URL scheme, which must be registered.
func OpenStore(location string) (Store, error) {
	sc := Scheme(location)
	if sc == "" {
		return NewLocalStore(location), nil
	}
	schemesMu.RLock()
	open := schemes[sc]
	schemesMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("datasets: %s: no storage for %s:// in this build", location, sc)
	}
	return open(location)
}

// NewLocalStore returns the Store of the local directory dir.
func NewLocalStore(dir string) Store { return &localStore{dir: dir} }

type localStore struct {
	dir  string
	read atomic.Int64
}

func (s *localStore) Location() string        { return s.dir }
func (s *localStore) Join(name string) string { return filepath.Join(s.dir, name) }
func (s *localStore) Fetched() int64          { return s.read.Load() }

// ReadFile reads a regular file of at most 256 MiB whole.
func (s *localStore) ReadFile(name string) ([]byte, error) { return s.readFileMax(name, maxWholeFile) }

func (s *localStore) readFileMax(name string, max int64) ([]byte, error) {
	b, err := readRegular(filepath.Join(s.dir, name), max)
	s.read.Add(int64(len(b)))
	return b, err
}

func (s *localStore) List() ([]FileInfo, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since listed (a rename by a writer)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, FileInfo{Name: e.Name(), Size: info.Size(), Regular: info.Mode().IsRegular()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *localStore) Open(name string) (File, error) {
	f, err := openRegular(filepath.Join(s.dir, name))
	if err != nil {
		return nil, err
	}
	return &localFile{File: f, read: &s.read}, nil
}

// localFile counts what is read through it; everything else is *os.File.
type localFile struct {
	*os.File
	read *atomic.Int64
}

func (f *localFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.read.Add(int64(n))
	return n, err
}

func (f *localFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.read.Add(int64(n))
	return n, err
}

func (f *localFile) Size() (int64, error) {
	st, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
