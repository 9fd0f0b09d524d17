package recorder_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/loopback"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	loopback.Guard()
	goleak.VerifyTestMain(m)
}

// rec is a record read back from a dataset, with its own payload copy.
type rec struct {
	Kind    datasets.Kind
	Conn    uint32
	Seq     uint64
	WallNs  int64
	MonoNs  int64
	Payload []byte
}

func (r rec) control(t *testing.T) datasets.Control {
	t.Helper()
	c, err := datasets.DecodeControl(r.Payload)
	if err != nil {
		t.Fatalf("record %d (%s): %v", r.Seq, r.Kind, err)
	}
	return c
}

// capture is one recorder running against a fake exchange.
type capture struct {
	t      *testing.T
	dir    string
	rec    *recorder.Recorder
	w      *datasets.Writer
	cancel context.CancelFunc
	done   chan error
	sink   recorder.Sink
}

// fastOpts are what every loopback test uses: quick heartbeats, backoff and
// flushes, so faults resolve in milliseconds.
func fastOpts() []recorder.Option {
	return []recorder.Option{
		recorder.WithBackoff(5*time.Millisecond, 50*time.Millisecond),
		recorder.WithPingInterval(50 * time.Millisecond),
		recorder.WithFlushInterval(20 * time.Millisecond),
		recorder.WithSubscribePacing(1000, time.Millisecond, 1<<20),
		recorder.WithDialPacing(1000, time.Millisecond, 1<<20),
	}
}

func startCapture(t *testing.T, spec recorder.Spec, wrap func(*datasets.Writer) recorder.Sink, opts ...recorder.Option) *capture {
	t.Helper()
	r, err := recorder.New(spec, append(fastOpts(), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := r.Prepare(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := datasets.Create(dir, r.Manifest(), datasets.WithFlushInterval(20*time.Millisecond))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var sink recorder.Sink = w
	if wrap != nil {
		sink = wrap(w)
	}
	return launch(t, ctx, cancel, r, dir, w, sink)
}

// launch runs r into sink (w, or a wrapper of it) until cancel.
func launch(t *testing.T, ctx context.Context, cancel context.CancelFunc, r *recorder.Recorder, dir string, w *datasets.Writer, sink recorder.Sink) *capture {
	c := &capture{t: t, dir: dir, rec: r, w: w, cancel: cancel, done: make(chan error, 1), sink: sink}
	go func() { c.done <- r.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.done:
		default:
		}
	})
	return c
}

// stop shuts the recorder down gracefully, closes the dataset and reads it
// back.
func (c *capture) stop() []rec {
	c.t.Helper()
	c.cancel()
	if err := <-c.done; err != nil {
		c.t.Errorf("Run: %v", err)
	}
	c.done <- nil // for the cleanup
	if err := c.w.Close(); err != nil {
		c.t.Errorf("close dataset: %v", err)
	}
	return readAll(c.t, c.dir)
}

func readAll(t *testing.T, dir string) []rec {
	t.Helper()
	rd, err := datasets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []rec
	for rd.Next() {
		r := rd.Record()
		out = append(out, rec{Kind: r.Kind, Conn: r.Conn, Seq: r.Seq, WallNs: r.WallNs, MonoNs: r.MonoNs,
			Payload: bytes.Clone(r.Payload)})
	}
	if err := rd.Err(); err != nil {
		t.Fatalf("read dataset: %v", err)
	}
	return out
}

// waitFor polls cond until it holds; the deadline only guards against a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func sentTotal(s *fakeexchange.Server) int {
	n := 0
	for _, c := range s.Conns() {
		n += len(c.Sent())
	}
	return n
}

func ofKind(recs []rec, k datasets.Kind) []rec {
	var out []rec
	for _, r := range recs {
		if r.Kind == k {
			out = append(out, r)
		}
	}
	return out
}

// segments splits every connection slot's frames at its connect records:
// one segment per WebSocket connection, in receive order.
func segments(recs []rec) [][][]byte {
	cur := map[uint32]int{}
	var segs [][][]byte
	for _, r := range recs {
		switch r.Kind {
		case datasets.KindConnect:
			segs = append(segs, nil)
			cur[r.Conn] = len(segs) - 1
		case datasets.KindFrame:
			i, ok := cur[r.Conn]
			if !ok {
				segs = append(segs, nil)
				i = len(segs) - 1
				cur[r.Conn] = i
			}
			segs[i] = append(segs[i], r.Payload)
		}
	}
	return segs
}

func isPong(f []byte) bool {
	return string(f) == "PONG" || string(f) == `{"channel":"pong"}`
}

// checkByteIdentical asserts that every frame each server connection wrote
// is in the dataset, byte for byte and in order, on one connection segment,
// and that the dataset holds no frame the server did not send. A connection
// the client tore down itself (stall) may have left trailing pongs unread,
// and one it dropped for a frame over maxFrame bytes (recorded as a 1009
// disconnect) lost that frame and whatever followed it.
func checkByteIdentical(t *testing.T, s *fakeexchange.Server, recs []rec, maxFrame int) {
	t.Helper()
	segs := segments(recs)
	used := make([]bool, len(segs))
	for _, c := range s.Conns() {
		sent := c.Sent()
		if len(sent) == 0 {
			continue
		}
		found := false
		for i, seg := range segs {
			if used[i] || len(seg) == 0 || len(seg) > len(sent) {
				continue
			}
			ok := true
			for j := range seg {
				if !bytes.Equal(seg[j], sent[j]) {
					ok = false
					break
				}
			}
			for _, extra := range sent[len(seg):] {
				if maxFrame > 0 && len(extra) > maxFrame {
					break
				}
				if !isPong(extra) {
					ok = false
				}
			}
			if ok {
				used[i], found = true, true
				break
			}
		}
		if !found {
			for i, seg := range segs {
				for j := range min(len(seg), len(sent)) {
					if !bytes.Equal(seg[j], sent[j]) {
						t.Logf("segment %d frame %d:\n got %.200q\nsent %.200q", i, j, seg[j], sent[j])
						break
					}
				}
			}
			t.Errorf("server connection %d: its %d frames are not one connection segment of the dataset", c.ID, len(sent))
		}
	}
	for i, seg := range segs {
		if len(seg) > 0 && !used[i] {
			t.Errorf("dataset segment %d (%d frames) matches no server connection", i, len(seg))
		}
	}
}

// checkOrder asserts Seq strictly increases and MonoNs never decreases.
func checkOrder(t *testing.T, recs []rec) {
	t.Helper()
	for i := 1; i < len(recs); i++ {
		if recs[i].Seq <= recs[i-1].Seq {
			t.Fatalf("seq %d after %d", recs[i].Seq, recs[i-1].Seq)
		}
		if recs[i].MonoNs < recs[i-1].MonoNs {
			t.Fatalf("record %d: mono %d before %d", recs[i].Seq, recs[i].MonoNs, recs[i-1].MonoNs)
		}
	}
}

func describe(recs []rec) string {
	var b strings.Builder
	for _, r := range recs {
		if r.Kind == datasets.KindFrame {
			continue
		}
		p := r.Payload
		if len(p) > 160 {
			p = p[:160]
		}
		fmt.Fprintf(&b, "%d %s conn=%d %s\n", r.Seq, r.Kind, r.Conn, p)
	}
	return b.String()
}

func jsonHas(t *testing.T, frame []byte, key string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(frame, &m); err != nil {
		t.Fatalf("%s: %v", frame, err)
	}
	return m[key]
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}
