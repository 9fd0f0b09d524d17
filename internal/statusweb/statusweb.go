// Package statusweb is the status page of a running capture: an HTML page
// (/, with its CSS and JS embedded, nothing loaded from the network) that
// updates itself from /status.json, served beside /metrics on the capture's
// listener. Every endpoint is read-only (GET and HEAD; anything else is
// 405), the listener binds loopback unless told otherwise (Listen), and no
// credential reaches a page: URLs lose their user info and secret-looking
// query parameters (Redact).
package statusweb

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/internal/units"
	"github.com/tapedeck/tapedeck/recorder"
)

//go:embed assets
var assets embed.FS

// Status is what /status.json serves: the recorder's LiveStatus, the
// dataset's disk, and the upload backlog when uploading.
type Status struct {
	*recorder.LiveStatus
	Disk   Disk          `json:"disk"`
	Upload *UploadStatus `json:"upload,omitempty"`
	// InstrumentsTotal is how many instruments match the request's filter
	// (q); Instruments holds at most Limit of them from Offset on
	// (/status.json?offset=N&limit=M&q=TEXT; limit 1..MaxPage, default
	// DefaultPage).
	InstrumentsTotal int `json:"instruments_total"`
	Offset           int `json:"instruments_offset"`
	Limit            int `json:"instruments_limit"`
}

// Pages of /status.json: a venue of 100,000 instruments is 31 MB of JSON
// unpaged, and every client waiting for one held it.
const (
	DefaultPage = 500
	MaxPage     = 5000
	// maxInFlight bounds the /status.json answers being built or written
	// at once; more get 503 and retry. Each holds a page, and the server's
	// write timeout cuts off a client that does not read.
	maxInFlight = 8
)

// WriteTimeout is what the status server gives a client to take an
// answer: one that never reads is cut off then (http.Server.WriteTimeout).
const WriteTimeout = 15 * time.Second

// Disk is the dataset directory's use of its file system.
type Disk struct {
	Dir       string `json:"dir"`
	UsedBytes int64  `json:"used_bytes"` // every file of the dataset directory
	// FreeBytes is what the file system has left for us, TotalBytes its size.
	FreeBytes  int64 `json:"free_bytes"`
	TotalBytes int64 `json:"total_bytes"`
	// BytesPerSec is how fast UsedBytes grew over the last WindowNs (up to
	// 15 minutes of samples taken every 10 s); TimeToFullNs is FreeBytes at
	// that rate (0 when the rate is not known yet or not positive).
	BytesPerSec  float64 `json:"bytes_per_sec"`
	WindowNs     int64   `json:"window_ns"`
	TimeToFullNs int64   `json:"time_to_full_ns"`
	Err          string  `json:"error,omitempty"`
}

// UploadStatus is an uploader's backlog (capture run --upload).
type UploadStatus struct {
	Target          string `json:"target"`           // s3://bucket/prefix, never credentials
	PendingSegments int    `json:"pending_segments"` // finished segments not yet uploaded and verified
	UploadedFiles   uint64 `json:"uploaded_files"`
	UploadedBytes   uint64 `json:"uploaded_bytes"`
	Failures        uint64 `json:"failures"` // failed attempts (each retried with backoff)
	LastError       string `json:"last_error,omitempty"`
}

// Config is what a Server serves.
type Config struct {
	// Status returns the recorder's state (Recorder.LiveStatus).
	Status func() *recorder.LiveStatus
	// Dir is the dataset directory whose disk use is shown.
	Dir string
	// Upload, if set, returns the upload backlog.
	Upload func() *UploadStatus
	// Metrics, if set, is served at /metrics.
	Metrics http.Handler
	// SampleEvery is how often the dataset's size is sampled for the write
	// rate (0: every 10 s).
	SampleEvery time.Duration
}

// Server serves the status page. Create it with New, Close it when done.
type Server struct {
	cfg  Config
	mux  *http.ServeMux
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	samples []diskSample

	inFlight chan struct{} // a slot per /status.json answer in progress
}

type diskSample struct {
	at   time.Time
	used int64
}

// Sampling of the dataset's size for the write rate.
const (
	sampleEvery  = 10 * time.Second
	sampleWindow = 15 * time.Minute
)

// New returns a server and starts sampling the dataset's disk use.
func New(cfg Config) *Server {
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = sampleEvery
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), stop: make(chan struct{}), inFlight: make(chan struct{}, maxInFlight)}
	sub, _ := fs.Sub(assets, "assets")
	static := http.FileServerFS(sub)
	s.mux.Handle("/", readOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/", "/style.css", "/app.js":
			secure(w)
			w.Header().Set("Cache-Control", "no-cache")
			static.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})))
	s.mux.Handle("/status.json", readOnly(http.HandlerFunc(s.serveJSON)))
	if cfg.Metrics != nil {
		s.mux.Handle("/metrics", readOnly(cfg.Metrics))
	}
	s.sample()
	s.wg.Go(func() {
		t := time.NewTicker(cfg.SampleEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	})
	return s
}

// Close stops the sampler.
func (s *Server) Close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
}

// ServeHTTP serves /, /style.css, /app.js, /status.json and /metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// secure sets the headers that keep the page to itself: nothing from
// another origin, no framing, no sniffing.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// readOnly refuses every method but GET and HEAD: no endpoint changes anything.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: only GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request) {
	select {
	case s.inFlight <- struct{}{}:
		defer func() { <-s.inFlight }()
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy: too many status requests in progress", http.StatusServiceUnavailable)
		return
	}
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = DefaultPage
	}
	st := s.Snapshot()
	st.page(max(offset, 0), min(limit, MaxPage), q.Get("q"))
	b, err := json.Marshal(st)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	secure(w)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}

// page keeps the instruments whose id contains filter (any case), limit
// of them from offset on.
func (st *Status) page(offset, limit int, filter string) {
	all := st.Instruments
	if filter != "" {
		f := strings.ToLower(filter)
		kept := all[:0:0]
		for _, in := range all {
			if strings.Contains(strings.ToLower(in.Instrument), f) {
				kept = append(kept, in)
			}
		}
		all = kept
	}
	st.InstrumentsTotal, st.Offset, st.Limit = len(all), min(offset, len(all)), limit
	// A copy of the page: the rest of the snapshot can go at once.
	st.Instruments = append([]recorder.InstrumentStatus(nil), all[st.Offset:min(st.Offset+limit, len(all))]...)
}

// Snapshot is what /status.json serves now, redacted.
func (s *Server) Snapshot() *Status {
	var ls *recorder.LiveStatus
	if s.cfg.Status != nil {
		ls = s.cfg.Status()
	}
	if ls == nil {
		ls = &recorder.LiveStatus{NowNs: time.Now().UnixNano()}
	}
	st := &Status{LiveStatus: ls, Disk: s.disk()}
	if s.cfg.Upload != nil {
		st.Upload = s.cfg.Upload()
	}
	redactStatus(st)
	return st
}

func (s *Server) sample() {
	if s.cfg.Dir == "" {
		return
	}
	used, err := dirSize(s.cfg.Dir)
	if err != nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, diskSample{now, used})
	i := 0
	for i < len(s.samples)-1 && now.Sub(s.samples[i].at) > max(sampleWindow, 90*s.cfg.SampleEvery) {
		i++
	}
	s.samples = append(s.samples[:0], s.samples[i:]...)
}

func (s *Server) disk() Disk {
	d := Disk{Dir: s.cfg.Dir}
	if s.cfg.Dir == "" {
		return d
	}
	used, err := dirSize(s.cfg.Dir)
	if err != nil {
		d.Err = err.Error()
		return d
	}
	d.UsedBytes = used
	if free, total, err := diskSpace(s.cfg.Dir); err != nil {
		d.Err = err.Error()
	} else {
		d.FreeBytes, d.TotalBytes = free, total
	}
	now := time.Now()
	s.mu.Lock()
	var first diskSample
	if len(s.samples) > 0 {
		first = s.samples[0]
	}
	s.mu.Unlock()
	if dt := now.Sub(first.at); !first.at.IsZero() && dt >= s.cfg.SampleEvery {
		d.WindowNs = int64(dt)
		d.BytesPerSec = float64(used-first.used) / dt.Seconds()
		if d.BytesPerSec > 0 && d.FreeBytes > 0 {
			d.TimeToFullNs = int64(float64(d.FreeBytes) / d.BytesPerSec * 1e9)
		}
	}
	return d
}

// dirSize is the size of every regular file under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a file rotated away under us
			}
			return err
		}
		if e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n, err
}

// Listen opens the status listener on addr (HOST:PORT). An empty host means
// 127.0.0.1. A host that is not loopback (0.0.0.0, a LAN address, a name
// that resolves elsewhere) is refused unless public is true, and then
// logged as a warning: the page shows what is recorded to whoever reaches
// it.
func Listen(addr string, public bool, log *slog.Logger) (net.Listener, error) {
	hostPort, loop, err := CheckAddr(addr, public)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", hostPort)
	if err != nil {
		return nil, err
	}
	if !loop && log != nil {
		log.Warn("status page and metrics listen beyond loopback: anyone who reaches the address sees what is recorded (read-only)", "addr", ln.Addr().String())
	}
	return ln, nil
}

// CheckAddr applies Listen's rules to addr without listening: it returns
// the address to listen on (an empty host made 127.0.0.1) and whether it is
// loopback, or an error for a malformed address and for one beyond
// loopback when public is false.
func CheckAddr(addr string, public bool) (hostPort string, loopback bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false, err
	}
	if host == "" {
		host = "127.0.0.1"
	}
	loop, err := isLoopback(host)
	if err != nil {
		return "", false, err
	}
	if !loop && !public {
		return "", false, fmt.Errorf("%s is not a loopback address: the status page and metrics would be reachable from the network; give --listen-public to allow it", addr)
	}
	return net.JoinHostPort(host, port), loop, nil
}

func isLoopback(host string) (bool, error) {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback(), nil
	}
	if host == "localhost" {
		return true, nil
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return false, err
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false, nil
		}
	}
	return len(ips) > 0, nil
}

// secretParam matches query parameters that carry credentials.
var secretParam = regexp.MustCompile(`(?i)(key|token|secret|signature|password|passwd|auth|credential|session|sig)`)

// urlLike finds URLs inside free text (error messages, details).
var urlLike = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// awsKeyLike finds access key ids in free text.
var awsKeyLike = regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`)

// Redact removes credentials from s: the user info of every URL in it and
// the values of query parameters named like keys, tokens or signatures, and
// anything shaped like an access key id.
func Redact(s string) string {
	if s == "" {
		return s
	}
	s = urlLike.ReplaceAllStringFunc(s, func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			return "[url redacted]"
		}
		if u.User != nil {
			u.User = url.User("redacted")
		}
		if u.RawQuery != "" {
			q := u.Query()
			for k := range q {
				if secretParam.MatchString(k) {
					q.Set(k, "redacted")
				}
			}
			u.RawQuery = q.Encode()
		}
		return u.String()
	})
	return awsKeyLike.ReplaceAllString(s, "[key redacted]")
}

func redactStatus(st *Status) {
	ls := st.LiveStatus
	ls.Endpoint = Redact(ls.Endpoint)
	for i := range ls.Conns {
		ls.Conns[i].LastError = Redact(ls.Conns[i].LastError)
	}
	for i := range ls.Events {
		ls.Events[i].Detail = Redact(ls.Events[i].Detail)
	}
	if st.Upload != nil {
		st.Upload.Target = Redact(st.Upload.Target)
		st.Upload.LastError = Redact(st.Upload.LastError)
	}
}

// Fetch reads /status.json from a running capture at addr (HOST:PORT or a
// http:// URL). It returns the body as served and its decoding.
func Fetch(ctx context.Context, addr string) ([]byte, *Status, error) {
	u := addr
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	u = strings.TrimSuffix(u, "/")
	if !strings.HasSuffix(u, "/status.json") {
		u += "/status.json"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("status of a running capture: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("status of a running capture: %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("status of a running capture: %s: HTTP %d", u, resp.StatusCode)
	}
	st := &Status{}
	if err := json.Unmarshal(body, st); err != nil {
		return nil, nil, fmt.Errorf("status of a running capture: %s: not a status document: %w", u, err)
	}
	if st.LiveStatus == nil {
		st.LiveStatus = &recorder.LiveStatus{}
	}
	return body, st, nil
}

// WriteText writes the status for people, as `capture status` prints it.
func (st *Status) WriteText(w io.Writer) error {
	var b strings.Builder
	now := time.Unix(0, st.NowNs)
	fmt.Fprintf(&b, "venue       %s\nendpoint    %s\n", st.Venue, st.Endpoint)
	fmt.Fprintf(&b, "up          %v (since %s)\n", time.Duration(st.UptimeNs).Round(time.Second), time.Unix(0, st.StartedNs).UTC().Format(time.RFC3339))
	s := st.Stats
	fmt.Fprintf(&b, "frames      %d (%d bytes), %d records written, %d dropped, %d reconnects, %d stalls, %d write errors, %d lost\n",
		s.Frames, s.Bytes, s.Records, s.Dropped, s.Reconnects, s.Stalls, s.WriteErrors, s.Lost)
	if l := st.Live; l.On {
		fmt.Fprintf(&b, "live        %d frames decoded, %d rejected, %d hash mismatches, %d top mismatches, %d crossed, %d resubscribes, %d skipped",
			l.Frames, l.DecodeErrors, l.HashMismatches, l.TopMismatches, l.CrossedBooks, l.Resubscribes, l.Skipped)
		if l.IntegrityHeld > 0 || l.IntegrityUnrecorded > 0 {
			fmt.Fprintf(&b, ", %d findings held for their next record, %d not recorded", l.IntegrityHeld, l.IntegrityUnrecorded)
		}
		b.WriteByte('\n')
	}
	if d := st.Disk; d.Dir != "" {
		ttf := "unknown"
		if d.TimeToFullNs > 0 {
			ttf = time.Duration(d.TimeToFullNs).Round(time.Minute).String()
		}
		fmt.Fprintf(&b, "disk        %s used, %s free, %.0f B/s, full in %s\n", units.Bytes(d.UsedBytes), units.Bytes(d.FreeBytes), d.BytesPerSec, ttf)
	}
	if u := st.Upload; u != nil {
		fmt.Fprintf(&b, "upload      %s: %d segments pending, %d files (%s) uploaded, %d failed attempts %s\n", u.Target, u.PendingSegments,
			u.UploadedFiles, units.Bytes(int64(u.UploadedBytes)), u.Failures, u.LastError)
	}
	fmt.Fprintf(&b, "\nconnections (%d)\n", len(st.Conns))
	for _, c := range st.Conns {
		rate := 0.0
		if n := len(c.Rate); n > 1 {
			rate = c.Rate[n-2] // the last full bucket
		}
		age := "-"
		if c.LastFrameNs > 0 {
			age = time.Duration(c.LastFrameAgeNs).Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "  conn %-3d %-12s up %-10v %d frames  %.1f/s  last frame %s ago  %d reconnects  %d stalls  %d overloads  %s",
			c.Conn, c.State, time.Duration(c.UptimeNs).Round(time.Second), c.Frames, rate, age, c.Reconnects, c.Stalls, c.Overloads, c.LastError)
		if c.Rejected > 0 {
			fmt.Fprintf(&b, "  %d frames rejected naming no instrument (last: %s)", c.Rejected, c.LastReject)
		}
		b.WriteByte('\n')
	}
	if st.InstrumentsTotal > len(st.Instruments) {
		fmt.Fprintf(&b, "\ninstruments (%d to %d of %d)\n", st.Offset+1, st.Offset+len(st.Instruments), st.InstrumentsTotal)
	} else {
		fmt.Fprintf(&b, "\ninstruments (%d)\n", len(st.Instruments))
	}
	for _, in := range st.Instruments {
		top := "no book"
		if in.HasBook {
			top = fmt.Sprintf("%s@%s / %s@%s", orDash(in.BidSz), orDash(in.BidPx), orDash(in.AskSz), orDash(in.AskPx))
			if !in.Valid {
				top += " (invalid)"
			}
		}
		fmt.Fprintf(&b, "  %s conn %d  %s  updated %v ago  %d stalls  %d gaps  %d hash mismatches",
			in.Instrument, in.Conn, top, time.Duration(in.AgeNs).Round(time.Millisecond), in.Stalls, in.Gaps, in.HashMismatches)
		if in.Rejected > 0 {
			fmt.Fprintf(&b, "  %d frames rejected (last: %s)", in.Rejected, in.LastReject)
		}
		b.WriteByte('\n')
	}
	if len(st.Events) > 0 {
		fmt.Fprintf(&b, "\nlatest control records\n")
		for _, e := range st.Events {
			fmt.Fprintf(&b, "  %s ago  conn %d  %-12s %s\n", now.Sub(time.Unix(0, e.WallNs)).Round(time.Second), e.Conn, e.Kind, e.Detail)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
