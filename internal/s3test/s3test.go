// Package s3test starts a real S3 server for tests: a MinIO server on
// 127.0.0.1 (its own process and data directory per test), reached through
// a fault-injecting proxy that the test controls.
//
// MinIO checks every signature (SigV4, streaming payloads, Content-MD5),
// honours If-Match, answers region lookups (it runs in region Region, which
// the client is not told, so every client looks it up) and pages listings
// at 1,000 keys. The proxy forwards requests byte for byte (the Host header
// is kept, so signatures hold) and, for the requests a Fault matches,
// answers with an error, never answers, stalls a body after its headers,
// cuts a body short or flips a byte of it: the faults of a real store or
// network.
//
// The server binary is found as Binary says. Without it the tests that
// need it are skipped with a message, unless TAPEDECK_REQUIRE_MINIO is set
// (make test sets it, after scripts/test-deps.sh installs MinIO): then they
// fail.
package s3test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/tapedeck/tapedeck/datasets/s3store"
)

// AccessKey and SecretKey are the credentials the server accepts; Region is
// the region it runs in.
const (
	AccessKey = "tapedeck-test"
	SecretKey = "tapedeck-test-secret"
	Region    = "tapedeck-test-1"
)

// Server is a running MinIO server behind a fault-injecting proxy.
type Server struct {
	URL    string // the proxy, http://127.0.0.1:PORT: what the client is given
	Direct string // MinIO itself, without faults

	mu      sync.Mutex
	faults  map[string]Fault // by substring of the path
	Gets    atomic.Int64     // GET requests of objects (not listings)
	GetSize atomic.Int64     // bytes of those responses' bodies
	Puts    atomic.Int64     // PUT requests
	Lists   atomic.Int64     // listing requests
	Regions atomic.Int64     // region lookups (GET ?location)
	up      *http.Transport
}

// Fault is what the proxy does to the requests it matches.
type Fault struct {
	Method string // "" any
	// Status answers with this status and an S3 XML error instead.
	Status int
	// Hang reads the whole request (a PUT's body is accepted) and never
	// answers, until the client gives up.
	Hang bool
	// Stall sends the answer's headers and its first StallAt body bytes,
	// then nothing until the client gives up.
	Stall   bool
	StallAt int64
	// CutAt > 0 sends only this many body bytes, then drops the connection.
	CutAt int64
	// Flip inverts the bits of byte FlipAt of the body: the request's for a
	// PUT, the answer's otherwise.
	Flip   bool
	FlipAt int64
	// Times is how many requests the fault hits (0: every one).
	Times int
}

// Binary returns the path of the MinIO server: $TAPEDECK_MINIO, else minio
// on $PATH, else $(go env GOPATH)/bin/minio, where scripts/test-deps.sh
// installs it.
func Binary() (string, error) {
	if p := os.Getenv("TAPEDECK_MINIO"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "minio")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", errors.New("no minio binary: run scripts/test-deps.sh (go install github.com/minio/minio@" + MinioVersion + ") or set TAPEDECK_MINIO")
}

// MinioVersion is the MinIO module version scripts/test-deps.sh installs.
const MinioVersion = "v0.0.0-20260212201848-7aac2a2c5b7c"

// Start runs a MinIO server and its proxy until the test ends, creates
// buckets, points the process's S3 configuration at the proxy
// (s3store.Configure) and sets the standard credential variables for the
// test (no AWS_REGION: the client looks the region up).
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("TAPEDECK_REQUIRE_MINIO") != "" {
			t.Fatalf("s3test: %v", err)
		}
		t.Skipf("s3test: %v (TAPEDECK_REQUIRE_MINIO=1 makes this a failure, as in make test)", err)
	}
	direct := startMinio(t, bin)
	s := &Server{Direct: direct, faults: map[string]Fault{},
		up: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, DisableCompression: true}}
	t.Cleanup(s.up.CloseIdleConnections)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.URL = "http://" + ln.Addr().String()

	cl, err := minio.New(strings.TrimPrefix(direct, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Region: Region})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range buckets {
		if err := cl.MakeBucket(context.Background(), b, minio.MakeBucketOptions{Region: Region}); err != nil {
			t.Fatalf("s3test: make bucket %s: %v", b, err)
		}
	}

	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", s.URL)
	s3store.Configure(s3store.Config{Endpoint: s.URL})
	t.Cleanup(func() { s3store.Configure(s3store.Config{}) })
	return s
}

// startMinio runs the server on a free loopback port and returns its URL
// once it answers its readiness check.
func startMinio(t testing.TB, bin string) string {
	t.Helper()
	dir := t.TempDir()
	var lastErr error
	for try := 0; try < 3; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		data := filepath.Join(dir, fmt.Sprintf("data%d", try))
		var out strings.Builder
		cmd := exec.Command(bin, "server", "--quiet", "--address", addr,
			"--certs-dir", filepath.Join(dir, "certs"), data)
		cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+AccessKey, "MINIO_ROOT_PASSWORD="+SecretKey,
			"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_SITE_REGION="+Region, "HOME="+dir)
		cmd.Stdout, cmd.Stderr = &syncWriter{w: &out}, &syncWriter{w: &out}
		setDeathSignal(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatalf("s3test: start %s: %v", bin, err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			cmd.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
		}
		url := "http://" + addr
		if err := waitReady(url, exited); err != nil {
			stop()
			lastErr = fmt.Errorf("%v; its output: %s", err, out.String())
			continue
		}
		t.Cleanup(stop)
		return url
	}
	t.Fatalf("s3test: minio did not start: %v", lastErr)
	return ""
}

// waitReady polls MinIO's readiness endpoint until it answers 200, the
// process exits, or a minute passes (a loaded 2-core host).
func waitReady(url string, exited <-chan struct{}) error {
	cl := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := cl.Get(url + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("minio exited")
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("minio not ready after a minute (%v)", err)
		}
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *syncWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
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

// hop-by-hop headers, not forwarded (RFC 9110 7.6.1).
var hop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// ServeHTTP forwards r to MinIO, applying the fault that matches it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	object := strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1
	switch {
	case r.Method == http.MethodGet && q.Has("location"):
		s.Regions.Add(1)
	case r.Method == http.MethodGet && (q.Has("list-type") || q.Has("prefix") || q.Has("delimiter")):
		s.Lists.Add(1)
	case r.Method == http.MethodGet && object && len(q) == 0 || r.Method == http.MethodGet && object && q.Has("versionId"):
		s.Gets.Add(1)
	case r.Method == http.MethodPut:
		s.Puts.Add(1)
	}
	f, faulty := s.fault(r)
	if faulty && f.Status != 0 {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(f.Status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected</Message><Resource>%s</Resource></Error>`, codeFor(f.Status), r.URL.Path)
		return
	}
	if faulty && f.Hang {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, s.Direct+r.URL.RequestURI(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	for _, h := range hop {
		out.Header.Del(h)
	}
	out.Host = r.Host // signed: MinIO must see what the client signed
	if r.ContentLength != 0 {
		var body io.Reader = r.Body
		if faulty && f.Flip && r.Method == http.MethodPut {
			body = &flipReader{r: body, at: f.FlipAt}
		}
		out.Body = io.NopCloser(body)
		out.ContentLength = r.ContentLength
		out.TransferEncoding = r.TransferEncoding
	}
	resp, err := s.up.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	for _, h := range hop {
		w.Header().Del(h)
	}
	w.WriteHeader(resp.StatusCode)
	var body io.Reader = resp.Body
	if faulty && f.Flip && r.Method != http.MethodPut {
		body = &flipReader{r: body, at: f.FlipAt}
	}
	var limit int64 = -1
	switch {
	case faulty && f.Stall:
		limit = f.StallAt
	case faulty && f.CutAt > 0:
		limit = f.CutAt
	}
	if limit >= 0 {
		body = io.LimitReader(body, limit)
	}
	n, _ := io.Copy(w, body)
	if r.Method == http.MethodGet && object {
		s.GetSize.Add(n)
	}
	switch {
	case faulty && f.Stall:
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case faulty && f.CutAt > 0:
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

// flipReader inverts byte at of the stream.
type flipReader struct {
	r   io.Reader
	at  int64
	pos int64
}

func (f *flipReader) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	if f.at >= f.pos && f.at < f.pos+int64(n) {
		b[f.at-f.pos] ^= 0xff
	}
	f.pos += int64(n)
	return n, err
}
