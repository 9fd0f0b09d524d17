package recorder_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// gatedSink blocks Append while the gate is closed: a writer that cannot
// keep up.
type gatedSink struct {
	*datasets.Writer
	mu   sync.RWMutex
	open chan struct{}
}

func (g *gatedSink) Append(r *datasets.Record) (uint64, error) {
	g.mu.RLock()
	ch := g.open
	g.mu.RUnlock()
	<-ch
	return g.Writer.Append(r)
}

func (g *gatedSink) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if open {
		select {
		case <-g.open:
		default:
			close(g.open)
		}
	} else {
		g.open = make(chan struct{})
	}
}

func TestOverloadIsRecorded(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	var g *gatedSink
	c := startCapture(t, pmSpec(s, fakeexchange.PolymarketStreamAsset), func(w *datasets.Writer) recorder.Sink {
		g = &gatedSink{Writer: w, open: make(chan struct{})}
		close(g.open)
		return g
	}, recorder.WithQueue(16, 1<<20))
	waitFor(t, "data", func() bool { return sentTotal(s) > 20 })
	g.set(false)
	before := sentTotal(s)
	waitFor(t, "frames while the writer is stuck", func() bool { return sentTotal(s) > before+200 })
	g.set(true)
	waitFor(t, "more data", func() bool { return sentTotal(s) > before+300 })
	recs := c.stop()

	var dropped uint64
	over := ofKind(recs, datasets.KindOverload)
	for _, o := range over {
		cc := o.control(t)
		if cc.Dropped == 0 || cc.FromNs == 0 || cc.ToNs < cc.FromNs {
			t.Errorf("overload record %+v", cc)
		}
		dropped += cc.Dropped
	}
	if len(over) == 0 {
		t.Fatal("no overload record")
	}
	frames := uint64(len(ofKind(recs, datasets.KindFrame)))
	if got, want := frames+dropped, uint64(sentTotal(s)); got != want {
		t.Errorf("%d frames recorded + %d reported dropped = %d, server sent %d", frames, dropped, got, want)
	}
	if st := c.rec.Stats(); st.Dropped != dropped {
		t.Errorf("stats say %d dropped, records say %d", st.Dropped, dropped)
	}
	// The overload record sits where the loss happened: after the last frame
	// received before the first drop, before the first frame after the last.
	for _, o := range over {
		cc := o.control(t)
		for _, r := range recs {
			if r.Kind == datasets.KindFrame && r.Conn == o.Conn {
				if r.Seq > o.Seq && r.WallNs < cc.ToNs {
					t.Errorf("frame seq %d received at %d, before the drops it follows ended (%d)", r.Seq, r.WallNs, cc.ToNs)
				}
				if r.Seq < o.Seq && r.WallNs > cc.FromNs {
					t.Errorf("frame seq %d received at %d, after the drops it precedes began (%d)", r.Seq, r.WallNs, cc.FromNs)
				}
			}
		}
	}
}

// faultyFile fails every write with ENOSPC while broken is set.
type faultyFile struct {
	*os.File
	broken *atomic.Bool
}

func (f faultyFile) Write(p []byte) (int, error) {
	if f.broken.Load() {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func (f faultyFile) Sync() error {
	if f.broken.Load() {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Sync()
}

func TestWriteErrorIsRecordedAndRetried(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	var broken atomic.Bool
	r, err := recorder.New(pmSpec(s, fakeexchange.PolymarketStreamAsset), fastOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := datasets.Create(dir, r.Manifest(), datasets.WithFlushInterval(20*time.Millisecond),
		datasets.WithSegmentFile(func(path string) (datasets.SegmentFile, error) {
			f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
			if err != nil {
				return nil, err
			}
			return faultyFile{f, &broken}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	c := &capture{t: t, dir: dir, rec: r, w: w, done: make(chan error, 1)}
	ctx, cancel := contextWithCancel()
	c.cancel = cancel
	go func() { c.done <- r.Run(ctx, w) }()

	waitFor(t, "data", func() bool { return r.Stats().Records > 20 })
	broken.Store(true)
	waitFor(t, "write errors", func() bool { return r.Stats().WriteErrors >= 3 })
	n := sentTotal(s)
	waitFor(t, "frames during the outage", func() bool { return sentTotal(s) > n+100 })
	broken.Store(false)
	waitFor(t, "recovery", func() bool { return sentTotal(s) > n+200 })
	recs := c.stop()
	checkByteIdentical(t, s, recs, 0)
	we := ofKind(recs, datasets.KindWriteError)
	if len(we) == 0 {
		t.Fatalf("no write_error record:\n%s", describe(recs))
	}
	cc := we[0].control(t)
	if !strings.Contains(cc.Err, "no space left") || cc.ToNs < cc.FromNs || cc.FromNs == 0 {
		t.Errorf("write_error record %+v", cc)
	}
	if st := r.Stats(); st.WriteErrors == 0 || st.Lost != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestSinkClosedUnderRunEndsIt(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	c := startCapture(t, pmSpec(s, fakeexchange.PolymarketStreamAsset), nil)
	waitFor(t, "data", func() bool { return c.rec.Stats().Records > 20 })
	c.w.Close()
	err := <-c.done
	c.done <- nil
	if !errors.Is(err, datasets.ErrClosed) {
		t.Fatalf("Run: %v, want ErrClosed", err)
	}
	if len(s.Live()) != 0 {
		waitFor(t, "connections closed", func() bool { return len(s.Live()) == 0 })
	}
}
