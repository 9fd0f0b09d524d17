package s3store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tapedeck/tapedeck/datasets"
)

// UploaderOptions configure NewUploader.
type UploaderOptions struct {
	// Delete removes each local segment and index once its upload is
	// verified, and the whole local dataset once the manifest's is.
	Delete bool
	// MinBackoff and MaxBackoff bound the wait before retrying a failed
	// upload (doubling from the first to the second; defaults 1 s, 1 min).
	MinBackoff, MaxBackoff time.Duration
	// OnFailure is called after every failed attempt (from the uploader's
	// goroutine), OnRecovered when a file that failed is finally verified.
	OnFailure   func(name string, attempt int, err error)
	OnRecovered func(name string, attempts int)
}

// UploadStats counts what an Uploader did.
type UploadStats struct {
	Files    uint64 // files uploaded and verified
	Bytes    uint64 // their bytes
	Failures uint64 // failed attempts
	Pending  int    // finished segments waiting for upload
	Deleted  uint64 // local files removed after verification
	// LastError is why the last failed attempt failed ("" if none has),
	// LastErrorAt when (Unix ns).
	LastError   string
	LastErrorAt int64
}

// Uploader sends the finished segments of a dataset being written to object
// storage in the background: each segment and its index as the writer
// finishes them (datasets.WithSegmentDone → SegmentDone), each verified,
// then the manifest, which is always the last object written. A failure is
// retried with backoff without holding anything up: the writer only
// enqueues a number. Finish sends what remains once the writer is closed.
type Uploader struct {
	dir string
	st  *Store
	o   UploaderOptions

	mu       sync.Mutex
	pending  map[uint32]bool
	finished bool
	wake     chan struct{}
	done     chan struct{}
	cancel   context.CancelFunc
	loopErr  error
	lastErr  string
	lastAt   int64

	files, bytes, failures, deleted atomic.Uint64
	npending                        atomic.Int64
}

// NewUploader returns an uploader of the dataset directory dir to loc
// (s3://bucket/prefix) and starts its goroutine.
func NewUploader(dir, loc string, o UploaderOptions) (*Uploader, error) {
	st, err := open(loc, 1)
	if err != nil {
		return nil, err
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(time.Minute, o.MinBackoff)
	}
	ctx, cancel := context.WithCancel(context.Background())
	u := &Uploader{dir: dir, st: st, o: o, pending: map[uint32]bool{}, wake: make(chan struct{}, 1),
		done: make(chan struct{}), cancel: cancel}
	go u.loop(ctx)
	return u, nil
}

// Location returns where the dataset goes.
func (u *Uploader) Location() string { return u.st.Location() }

// SegmentDone queues segment num for upload. It never blocks.
func (u *Uploader) SegmentDone(num uint32) {
	u.mu.Lock()
	if !u.pending[num] {
		u.pending[num] = true
		u.npending.Add(1)
	}
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// Stats returns the counts so far.
func (u *Uploader) Stats() UploadStats {
	u.mu.Lock()
	last, at := u.lastErr, u.lastAt
	u.mu.Unlock()
	return UploadStats{Files: u.files.Load(), Bytes: u.bytes.Load(), Failures: u.failures.Load(),
		Pending: int(u.npending.Load()), Deleted: u.deleted.Load(), LastError: last, LastErrorAt: at}
}

// failed counts a failed attempt and reports it.
func (u *Uploader) failed(name string, attempt int, err error) {
	u.mu.Lock()
	u.lastErr, u.lastAt = err.Error(), time.Now().UnixNano()
	u.mu.Unlock()
	u.failures.Add(1)
	if u.o.OnFailure != nil {
		u.o.OnFailure(name, attempt, err)
	}
}

// Register adds the uploader's metrics to reg:
// tapedeck_capture_upload_{files,bytes,failures}_total and
// tapedeck_capture_upload_pending_segments.
func (u *Uploader) Register(reg prometheus.Registerer) error {
	opts := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: "tapedeck", Subsystem: "capture", Name: name, Help: help}
	}
	return errors.Join(
		reg.Register(prometheus.NewCounterFunc(opts("upload_files_total", "Dataset files uploaded to object storage and verified."),
			func() float64 { return float64(u.files.Load()) })),
		reg.Register(prometheus.NewCounterFunc(opts("upload_bytes_total", "Bytes of the dataset files uploaded and verified."),
			func() float64 { return float64(u.bytes.Load()) })),
		reg.Register(prometheus.NewCounterFunc(opts("upload_failures_total", "Failed upload attempts (each is retried with backoff)."),
			func() float64 { return float64(u.failures.Load()) })),
		reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "tapedeck", Subsystem: "capture", Name: "upload_pending_segments",
			Help: "Finished segments not yet uploaded and verified."}, func() float64 { return float64(u.npending.Load()) })),
	)
}

func (u *Uploader) next() (uint32, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	first, ok := uint32(0), false
	for n := range u.pending {
		if !ok || n < first {
			first, ok = n, true
		}
	}
	return first, ok
}

func (u *Uploader) loop(ctx context.Context) {
	defer close(u.done)
	for {
		num, ok := u.next()
		if !ok {
			u.mu.Lock()
			fin := u.finished
			u.mu.Unlock()
			if fin {
				return
			}
			select {
			case <-u.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		seg := fmt.Sprintf("%08d.seg", num)
		idx := fmt.Sprintf("%08d.idx", num)
		names := []string{seg}
		if _, err := os.Stat(filepath.Join(u.dir, idx)); err == nil {
			names = append(names, idx)
		}
		// The manifest goes as it was when manifestDue judged it: the writer
		// may replace the file with its final one while the segment is on
		// its way, and that one must not pass the segments still pending.
		man, due := u.manifestDue(num)
		err := u.sendAll(ctx, names)
		if err == nil && due {
			err = u.send(ctx, datasets.ManifestName, man)
		}
		if err != nil {
			u.mu.Lock()
			u.loopErr = err
			u.mu.Unlock()
			return
		}
		if u.o.Delete {
			u.remove(seg, idx)
		}
		u.mu.Lock()
		delete(u.pending, num)
		u.mu.Unlock()
		u.npending.Add(-1)
	}
}

// manifestDue reports whether the manifest goes up after segment num: the
// writer's interim manifest (the dataset is being written) always does; the
// final one (closed, or repaired) only after the last pending segment, or
// a reader would find a finished dataset missing the segments still
// waiting (a store slower than the writer's last segments).
// It returns the manifest's bytes as judged (nil when they could not be
// read: send then reads the file and reports what is wrong with it).
func (u *Uploader) manifestDue(num uint32) ([]byte, bool) {
	m, b, err := datasets.ReadManifestFile(u.dir)
	if err != nil {
		return nil, true // a failure is send's to report
	}
	if !m.Clean && !m.Recovered {
		return b, true
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for n := range u.pending {
		if n != num {
			return nil, false
		}
	}
	return b, true
}

// sendAll uploads names in order, each retried until verified or ctx ends.
func (u *Uploader) sendAll(ctx context.Context, names []string) error {
	for _, name := range names {
		if err := u.send(ctx, name, nil); err != nil {
			return err
		}
	}
	return nil
}

// send uploads one file, or body under its name when body is not nil,
// retrying with backoff until it is verified or ctx ends.
func (u *Uploader) send(ctx context.Context, name string, body []byte) error {
	p := filepath.Join(u.dir, name)
	wait := u.o.MinBackoff
	for attempt := 1; ; attempt++ {
		size, err := int64(len(body)), error(nil)
		if body != nil {
			err = u.st.PutBytes(ctx, name, body)
		} else if fi, serr := os.Stat(p); serr != nil {
			err = serr
		} else {
			size = fi.Size()
			_, err = u.st.PutFile(ctx, name, p)
		}
		if err == nil {
			u.files.Add(1)
			u.bytes.Add(uint64(size))
			if attempt > 1 && u.o.OnRecovered != nil {
				u.o.OnRecovered(u.st.Join(name), attempt)
			}
			return nil
		}
		if errors.Is(err, os.ErrNotExist) && name != datasets.ManifestName {
			return nil // removed locally (a segment the writer dropped empty)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("s3: upload %s: %w (gave up: %v)", u.st.Join(name), err, ctx.Err())
		}
		u.failed(u.st.Join(name), attempt, err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("s3: upload %s: %w (gave up: %v)", u.st.Join(name), err, ctx.Err())
		}
		wait = min(2*wait, u.o.MaxBackoff)
	}
}

func (u *Uploader) remove(names ...string) {
	for _, n := range names {
		if os.Remove(filepath.Join(u.dir, n)) == nil {
			u.deleted.Add(1)
		}
	}
}

// Abort stops the uploader without sending what remains (nil-safe).
func (u *Uploader) Abort() {
	if u == nil {
		return
	}
	u.cancel()
	<-u.done
}

// Finish is called once the writer is closed: it waits for the queued
// segments, then sends every file of the dataset not yet there (verified by
// size and MD5) and the final manifest last, retrying until ctx ends. With
// Delete, the local dataset is removed once all of it is verified. The
// error names what could not be uploaded; the local copy of that is kept.
func (u *Uploader) Finish(ctx context.Context) error {
	u.mu.Lock()
	u.finished = true
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
	select {
	case <-u.done:
	case <-ctx.Done():
		u.cancel()
		<-u.done
	}
	u.cancel()
	u.mu.Lock()
	err := u.loopErr
	u.mu.Unlock()
	if err != nil {
		return err
	}
	return u.sweep(ctx)
}

// sweep uploads every dataset file in dir that loc lacks or holds
// differently, the manifest last, then deletes the local copy if asked.
func (u *Uploader) sweep(ctx context.Context) error {
	names, err := localFiles(u.dir)
	if err != nil {
		return err
	}
	var have map[string]minio.ObjectInfo
	for attempt := 1; ; attempt++ {
		list, err := u.st.Objects()
		if err == nil {
			have = objectMap(list)
			break
		}
		u.failed(u.st.Location(), attempt, err)
		select {
		case <-time.After(u.o.MinBackoff):
		case <-ctx.Done():
			return fmt.Errorf("s3: upload %s: %w", u.st.Location(), err)
		}
	}
	for _, name := range names {
		p := filepath.Join(u.dir, name)
		if o, ok := have[name]; ok && name != datasets.ManifestName && sameContent(p, o) {
			continue
		}
		if err := u.send(ctx, name, nil); err != nil {
			return err
		}
	}
	if u.o.Delete {
		u.remove(names...)
		// What a writer leaves beside the data: its lock and the disk
		// space it reserved for its last records (a killed writer's).
		os.Remove(filepath.Join(u.dir, ".lock"))
		os.Remove(filepath.Join(u.dir, datasets.ReserveName))
		os.Remove(u.dir) // only if nothing else is left
	}
	return nil
}

// localFiles lists the dataset files of dir, the manifest last.
func localFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && DatasetFile(e.Name()) && e.Name() != datasets.ManifestName {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	if _, err := os.Stat(filepath.Join(dir, datasets.ManifestName)); err != nil {
		return nil, fmt.Errorf("s3: upload %s: %w", dir, err)
	}
	return append(names, datasets.ManifestName), nil
}
