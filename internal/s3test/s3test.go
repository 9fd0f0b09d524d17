// Package s3test starts a real S3-protocol server (gofakes3, in memory) on
// 127.0.0.1 for tests, talked to through the real client over HTTP.
//
// The server checks the access key of every signed request (a request
// signed with another key gets S3's 403 InvalidAccessKeyId) and can be told
// to fail or cut short the responses for chosen keys, the faults a real
// store or network produces.
package s3test

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/tapedeck/tapedeck/datasets/s3store"
)

// AccessKey and SecretKey are the credentials the server accepts.
const (
	AccessKey = "tapedeck-test"
	SecretKey = "tapedeck-test-secret"
)

// Server is a running S3-compatible server.
type Server struct {
	URL     string // http://127.0.0.1:PORT
	Backend *s3mem.Backend

	mu      sync.Mutex
	faults  map[string]Fault // by "bucket/key" substring
	Gets    atomic.Int64     // GET requests of objects
	GetSize atomic.Int64     // bytes those responses carried
	Puts    atomic.Int64
}

// Fault is what the server does to requests for a key.
type Fault struct {
	Method string // "" any
	Status int    // answer with this status (an S3 XML error) instead
	CutAt  int64  // >0: send only this many body bytes, then drop the connection
	Times  int    // how many requests to hit (0: every one)
}

// Start runs a server until the test ends, creates buckets, points the
// process's S3 configuration at it (s3store.Configure) and sets the
// standard credential variables for the test.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	be := s3mem.New()
	for _, b := range buckets {
		if err := be.CreateBucket(b); err != nil {
			t.Fatal(err)
		}
	}
	fake := gofakes3.New(be)
	s := &Server{Backend: be, faults: map[string]Fault{}}
	h := fake.Server()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth := r.Header.Get("Authorization"); auth != "" && !strings.Contains(auth, "Credential="+AccessKey+"/") {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message><Resource>%s</Resource></Error>`, r.URL.Path)
			return
		}
		if f, ok := s.fault(r); ok {
			if f.Status != 0 {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(f.Status)
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected</Message><Resource>%s</Resource></Error>`, codeFor(f.Status), r.URL.Path)
				return
			}
			if f.CutAt > 0 {
				h.ServeHTTP(&cutWriter{ResponseWriter: w, left: f.CutAt}, r)
				panic(http.ErrAbortHandler)
			}
		}
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "" && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
			s.Gets.Add(1)
			cw := &countWriter{ResponseWriter: w}
			h.ServeHTTP(cw, r)
			s.GetSize.Add(cw.n)
			return
		}
		if r.Method == http.MethodPut {
			s.Puts.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", s.URL)
	s3store.Configure(s3store.Config{Endpoint: s.URL})
	t.Cleanup(func() { s3store.Configure(s3store.Config{}) })
	return s
}

// SetFault makes requests whose path contains match get f (a zero Fault
// clears it).
func (s *Server) SetFault(match string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == (Fault{}) {
		delete(s.faults, match)
		return
	}
	s.faults[match] = f
}

func (s *Server) fault(r *http.Request) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for m, f := range s.faults {
		if !strings.Contains(r.URL.Path, m) || (f.Method != "" && f.Method != r.Method) {
			continue
		}
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				delete(s.faults, m)
			} else {
				s.faults[m] = f
			}
		}
		return f, true
	}
	return Fault{}, false
}

func codeFor(status int) string {
	switch status {
	case http.StatusForbidden:
		return "AccessDenied"
	case http.StatusNotFound:
		return "NoSuchKey"
	case http.StatusServiceUnavailable:
		return "SlowDown"
	}
	return "InternalError"
}

type countWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

type cutWriter struct {
	http.ResponseWriter
	left int64
}

func (w *cutWriter) Write(b []byte) (int, error) {
	if w.left <= 0 {
		return 0, http.ErrAbortHandler
	}
	if int64(len(b)) > w.left {
		b = b[:w.left]
	}
	n, err := w.ResponseWriter.Write(b)
	w.left -= int64(n)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}
