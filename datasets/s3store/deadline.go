package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// TimeoutError is a request that made no progress for Config.Timeout: no
// connection, no answer, or a body (sent or received) that stopped moving.
// It is transient: the request is retried (a bounded number of times).
// Its message leaves the URL to the error that wraps it.
type TimeoutError struct {
	Method string
	URL    string // without the query
	Phase  string // "waiting for the answer", "reading the body", "sending the body"
	Bytes  int64  // body bytes moved before it stalled
	After  time.Duration
}

func (e *TimeoutError) Error() string {
	if e.Phase == phaseWait {
		return fmt.Sprintf("no answer in %v", e.After)
	}
	return fmt.Sprintf("stalled %s after %d bytes (nothing for %v)", e.Phase, e.Bytes, e.After)
}

// Timeout reports true (net.Error's convention).
func (e *TimeoutError) Timeout() bool { return true }

const (
	phaseSend = "sending the body"
	phaseWait = "waiting for the answer"
	phaseRead = "reading the body"
)

// watchdog is an http.RoundTripper that cancels a request once it has made
// no progress for timeout: each byte of the request body the transport
// takes, the answer's headers, each byte of the answer's body read count as
// progress. A long transfer that keeps moving is never cut; a silent
// server, a stalled body (a proxy or NAT that stops forwarding) are.
type watchdog struct {
	base    http.RoundTripper
	timeout time.Duration
}

func (w *watchdog) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	u := *req.URL
	u.RawQuery = ""
	d := &dog{timeout: w.timeout, cancel: cancel, start: time.Now(), method: req.Method, url: u.String()}
	d.phase.Store(phaseWait)
	r := req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		d.phase.Store(phaseSend)
		r.Body = &sentBody{rc: req.Body, d: d}
		if req.GetBody != nil {
			get := req.GetBody
			r.GetBody = func() (io.ReadCloser, error) {
				b, err := get()
				if err != nil {
					return nil, err
				}
				return &sentBody{rc: b, d: d}, nil
			}
		}
	}
	d.kick(0)
	// Made stopped, then armed, so that fire never sees d.timer unset.
	d.timer = time.AfterFunc(time.Hour, d.fire)
	d.timer.Reset(w.timeout)
	resp, err := w.base.RoundTrip(r)
	if err != nil {
		d.timer.Stop()
		if e := d.err.Load(); e != nil {
			err = e
		}
		cancel(nil)
		return nil, err
	}
	d.bytes.Store(0)
	d.phase.Store(phaseRead)
	d.kick(0)
	resp.Body = &watchedBody{rc: resp.Body, d: d}
	return resp, nil
}

// dog watches one request. Progress stores the time; the timer, when it
// fires, re-arms itself for the rest of the window unless the request has
// been idle for the whole timeout.
type dog struct {
	timeout time.Duration
	cancel  context.CancelCauseFunc
	start   time.Time
	method  string
	url     string
	timer   *time.Timer
	last    atomic.Int64 // ns since start of the last progress
	bytes   atomic.Int64
	phase   atomic.Value // string
	err     atomic.Pointer[TimeoutError]
}

func (d *dog) kick(n int) {
	d.last.Store(int64(time.Since(d.start)))
	d.bytes.Add(int64(n))
}

func (d *dog) fire() {
	idle := time.Since(d.start) - time.Duration(d.last.Load())
	if idle < d.timeout {
		d.timer.Reset(d.timeout - idle)
		return
	}
	e := &TimeoutError{Method: d.method, URL: d.url, Phase: d.phase.Load().(string), Bytes: d.bytes.Load(), After: d.timeout}
	d.err.Store(e)
	d.cancel(e)
}

// sentBody counts the request body's bytes as progress.
type sentBody struct {
	rc io.ReadCloser
	d  *dog
}

func (b *sentBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.d.kick(n)
	if err == io.EOF {
		b.d.bytes.Store(0)
		b.d.phase.Store(phaseWait)
	}
	return n, err
}

func (b *sentBody) Close() error { return b.rc.Close() }

// watchedBody counts the answer's bytes as progress and reports a stall as
// the TimeoutError it is.
type watchedBody struct {
	rc io.ReadCloser
	d  *dog
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.d.kick(n)
	if err == io.EOF {
		b.d.timer.Stop()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		if e := b.d.err.Load(); e != nil {
			err = e
		}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.d.timer.Stop()
	err := b.rc.Close()
	b.d.cancel(nil)
	return err
}
