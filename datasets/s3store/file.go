package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"
	"github.com/tapedeck/tapedeck/datasets"
)

var (
	errEOF   = io.EOF
	errShort = io.ErrUnexpectedEOF
)

// file is an object read through ranged GETs. Read serves the reader's plan
// (datasets.ReadPlanner) from pieces fetched ahead, at most ReadAhead bytes
// beyond what was consumed; a read outside the plan fetches one chunk on
// demand. The object's ETag pins every GET: an object replaced while it is
// read is an error, not a mix of two versions.
type file struct {
	s      *Store
	name   string
	key    string
	size   int64
	etag   string
	ctx    context.Context
	cancel context.CancelFunc

	pos   int64
	plan  []datasets.Range // pieces not started yet, in order, each ≤ ChunkSize
	queue []*piece         // started, in order
	ahead int64            // bytes of the queue
}

type piece struct {
	off, end int64
	done     chan struct{}
	data     []byte
	err      error
}

func (f *file) Size() (int64, error) { return f.size, nil }

func (f *file) Close() error {
	f.cancel()
	f.queue, f.plan, f.ahead = nil, nil, 0
	return nil
}

func (f *file) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += f.pos
	case io.SeekEnd:
		off += f.size
	default:
		return 0, fmt.Errorf("s3: seek %s: bad whence %d", f.s.Join(f.name), whence)
	}
	if off < 0 {
		return 0, fmt.Errorf("s3: seek %s: negative offset", f.s.Join(f.name))
	}
	f.pos = off
	return off, nil
}

// PlanReads replaces the plan with ranges, split into chunks.
func (f *file) PlanReads(ranges []datasets.Range) {
	f.plan = f.plan[:0]
	for _, r := range ranges {
		r.End = min(r.End, f.size)
		for off := r.Off; off < r.End; off += f.s.cfg.ChunkSize {
			f.plan = append(f.plan, datasets.Range{Off: off, End: min(off+f.s.cfg.ChunkSize, r.End)})
		}
	}
	f.queue, f.ahead = nil, 0
	f.fill()
}

// fill starts the next planned pieces while the read-ahead allows (always
// one when nothing is in flight).
func (f *file) fill() {
	for len(f.plan) > 0 {
		next := f.plan[0]
		if len(f.queue) > 0 && f.ahead+(next.End-next.Off) > f.s.cfg.ReadAhead {
			return
		}
		f.plan = f.plan[1:]
		f.start(next.Off, next.End)
	}
}

func (f *file) start(off, end int64) *piece {
	p := &piece{off: off, end: end, done: make(chan struct{})}
	f.queue = append(f.queue, p)
	f.ahead += end - off
	go func() {
		p.data, p.err = f.fetch(off, end)
		close(p.done)
	}()
	return p
}

// current returns the piece holding f.pos, starting one on demand.
func (f *file) current() *piece {
	for len(f.queue) > 0 && (f.queue[0].end <= f.pos || f.queue[0].off > f.pos) {
		if f.queue[0].off > f.pos {
			// A jump back or into a hole: nothing queued is next.
			f.queue, f.ahead = nil, 0
			break
		}
		f.ahead -= f.queue[0].end - f.queue[0].off
		f.queue[0].release()
		f.queue = f.queue[1:]
	}
	if len(f.queue) > 0 {
		f.fill()
		return f.queue[0]
	}
	for len(f.plan) > 0 && f.plan[0].End <= f.pos {
		f.plan = f.plan[1:]
	}
	if len(f.plan) > 0 && f.plan[0].Off <= f.pos {
		f.plan[0].Off = f.pos
	} else {
		end := min(f.pos+f.s.cfg.ChunkSize, f.size)
		if len(f.plan) > 0 {
			end = min(end, f.plan[0].Off)
		}
		f.plan = append([]datasets.Range{{Off: f.pos, End: end}}, f.plan...)
	}
	f.fill()
	return f.queue[0]
}

func (f *file) Read(b []byte) (int, error) {
	if f.pos >= f.size {
		return 0, io.EOF
	}
	if len(b) == 0 {
		return 0, nil
	}
	p := f.current()
	<-p.done
	if p.err != nil {
		f.queue, f.ahead = nil, 0
		return 0, p.err
	}
	n := copy(b, p.data[f.pos-p.off:])
	f.pos += int64(n)
	return n, nil
}

// ReadAt serves b from a fetched piece when one holds it, else with one GET.
func (f *file) ReadAt(b []byte, off int64) (int, error) {
	if off >= f.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(b)), f.size)
	for _, p := range f.queue {
		if p.off <= off && end <= p.end {
			<-p.done
			if p.err == nil {
				n := copy(b, p.data[off-p.off:end-p.off])
				if n < len(b) {
					return n, io.EOF
				}
				return n, nil
			}
		}
	}
	data, err := f.fetch(off, end)
	if err != nil {
		return 0, err
	}
	n := copy(b, data)
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// Refetch drops every piece fetched ahead and the cached ranges that hold
// bytes of [off, end), so that the next read fetches them again
// (datasets.Refetcher).
func (f *file) Refetch(off, end int64) {
	f.queue, f.ahead = nil, 0 // pieces in flight finish into their own buffers
	dir := f.s.cfg.CacheDir
	if dir == "" {
		return
	}
	tag := strings.Trim(f.etag, `"`)
	obj := filepath.Join(dir, f.s.bucket, filepath.FromSlash(f.key)+"@"+tag)
	ents, _ := os.ReadDir(obj)
	for _, e := range ents {
		var a, b int64
		if _, err := fmt.Sscanf(e.Name(), "%d-%d", &a, &b); err == nil && a < end && off < b {
			os.Remove(filepath.Join(obj, e.Name()))
		}
	}
}

// fetch returns bytes [off, end) of the object, from the cache or a GET;
// a GET whose body stalls or is cut short is tried again (Config.Attempts
// tries in all).
func (f *file) fetch(off, end int64) ([]byte, error) {
	cache := ""
	if dir := f.s.cfg.CacheDir; dir != "" {
		tag := strings.Trim(f.etag, `"`)
		cache = filepath.Join(dir, f.s.bucket, filepath.FromSlash(f.key)+"@"+tag, fmt.Sprintf("%d-%d", off, end))
		if b, err := os.ReadFile(cache); err == nil && int64(len(b)) == end-off {
			return b, nil
		}
	}
	var b []byte
	err := f.s.retry(f.ctx, func() (err error) {
		b, err = f.get(off, end)
		return err
	})
	if err != nil {
		return nil, err
	}
	if cache != "" {
		writeCache(cache, b)
	}
	return b, nil
}

// get is one ranged GET of bytes [off, end), pinned to the ETag.
func (f *file) get(off, end int64) ([]byte, error) {
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, end-1); err != nil {
		return nil, err
	}
	if f.etag != "" {
		_ = opts.SetMatchETag(f.etag)
	}
	obj, err := f.s.cl.GetObject(f.ctx, f.s.bucket, f.key, opts)
	if err != nil {
		return nil, f.s.wrap("read", f.name, err)
	}
	defer obj.Close()
	b := getChunk(end - off)
	n, err := readFull(obj, b)
	f.s.fetched.Add(int64(n))
	if err != nil {
		putChunk(b)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			// Not wrapped: a cut response is not a short file (a reader
			// would take it for a torn tail).
			return nil, &cutError{msg: fmt.Sprintf("s3: read %s bytes %d-%d: the response ended after %d bytes (%v)", f.s.Join(f.name), off, end, n, err)}
		}
		er := minio.ToErrorResponse(err)
		if er.Code == "PreconditionFailed" {
			return nil, fmt.Errorf("s3: read %s: the object changed while it was read (ETag %s)", f.s.Join(f.name), f.etag)
		}
		return nil, f.s.wrap("read", f.name, fmt.Errorf("bytes %d-%d: %w", off, end, err))
	}
	return b, nil
}

// Chunk buffers are reused from piece to piece: a replay from the store
// would otherwise allocate its whole size again in chunks.
var chunkPool sync.Pool // *[]byte

func getChunk(n int64) []byte {
	if p, ok := chunkPool.Get().(*[]byte); ok && int64(cap(*p)) >= n {
		return (*p)[:n]
	}
	return make([]byte, n, max(n, defaultChunk))
}

func putChunk(b []byte) {
	if cap(b) >= defaultChunk && cap(b) <= 4*defaultChunk {
		chunkPool.Put(&b)
	}
}

// release gives p's buffer back once its fetch is over (a piece dropped in
// flight keeps it: the fetch still writes into it).
func (p *piece) release() {
	select {
	case <-p.done:
		if p.err == nil && p.data != nil {
			putChunk(p.data)
			p.data = nil
		}
	default:
	}
}

var cacheMu sync.Mutex

// writeCache stores b at path atomically; a failure only costs a refetch.
func writeCache(path string, b []byte) {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".part*")
	if err != nil {
		return
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return
	}
	if tmp.Close() != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
	}
}
