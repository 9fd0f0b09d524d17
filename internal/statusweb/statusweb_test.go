package statusweb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/loopback"
	"github.com/tapedeck/tapedeck/internal/statusweb"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

func TestMain(m *testing.M) {
	loopback.Guard()
	os.Exit(m.Run())
}

// capture is a real recorder writing a real dataset from the loopback test
// exchange, with the status server over it.
type capture struct {
	ex     *fakeexchange.Server
	rec    *recorder.Recorder
	dir    string
	srv    *httptest.Server
	page   *statusweb.Server
	cancel context.CancelFunc
	done   chan error
	w      *datasets.Writer
}

func startCapture(t *testing.T, endpointSuffix string) *capture {
	t.Helper()
	cfg := fakeexchange.PolymarketConfig()
	cfg.Interval = 5 * time.Millisecond
	ex := fakeexchange.New(cfg)
	spec := recorder.Spec{Venue: "polymarket", Endpoint: ex.WSURL() + endpointSuffix, RESTEndpoint: ex.RESTURL(), CLOBEndpoint: ex.CLOBURL(),
		Instruments: []string{fakeexchange.PolymarketStreamAsset, fakeexchange.PolymarketOtherAsset}}
	rec, err := recorder.New(spec, recorder.WithBackoff(5*time.Millisecond, 50*time.Millisecond),
		recorder.WithPingInterval(time.Minute), recorder.WithFlushInterval(20*time.Millisecond),
		recorder.WithSubscribePacing(1000, time.Millisecond, 1<<20), recorder.WithDialPacing(1000, time.Millisecond, 1<<20),
		recorder.WithHeal(false), // no resubscribes: a silent exchange then sends nothing at all
		recorder.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := rec.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := datasets.Create(dir, rec.Manifest(), datasets.WithFlushInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	c := &capture{ex: ex, rec: rec, dir: dir, cancel: cancel, done: make(chan error, 1), w: w}
	c.page = statusweb.New(statusweb.Config{Status: rec.LiveStatus, Dir: dir})
	c.srv = httptest.NewServer(c.page)
	go func() { c.done <- rec.Run(ctx, w) }()
	t.Cleanup(c.stop)
	return c
}

// stop ends the recording (idempotent) and leaves the server up.
func (c *capture) stop() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	c.cancel = nil
	<-c.done
	c.w.Close()
	c.ex.Close()
}

func (c *capture) close() {
	c.stop()
	c.srv.Close()
	c.page.Close()
}

func getStatus(t *testing.T, base string) (*statusweb.Status, []byte) {
	t.Helper()
	resp, err := http.Get(base + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status.json: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("status.json content type %q", ct)
	}
	st := &statusweb.Status{}
	if err := json.Unmarshal(body, st); err != nil {
		t.Fatal(err)
	}
	return st, body
}

func waitFor(t *testing.T, what string, d time.Duration, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStatusJSONOfARunningCapture: a real capture's /status.json names its
// connection, connected with an uptime and frames, both instruments with a
// live top of book equal to the recorder's live books, the hash mismatches
// the live engine found (the fake market's books fail their hash), its
// connect record among the latest events and the dataset's disk use.
func TestStatusJSONOfARunningCapture(t *testing.T) {
	c := startCapture(t, "")
	defer c.close()
	var st *statusweb.Status
	waitFor(t, "frames, books and a hash mismatch", 20*time.Second, func() bool {
		st, _ = getStatus(t, c.srv.URL)
		if len(st.Conns) != 1 || st.Conns[0].Frames < 20 || len(st.Instruments) != 2 || st.Live.HashMismatches == 0 {
			return false
		}
		for _, in := range st.Instruments {
			if !in.HasBook || in.BidPx == "" {
				return false
			}
		}
		return true
	})
	cs := st.Conns[0]
	if cs.Conn != 1 || cs.State != "connected" || cs.UptimeNs <= 0 || cs.Connects != 1 || cs.LastFrameNs == 0 || cs.Instruments != 2 {
		t.Errorf("connection: %+v", cs)
	}
	if len(cs.Rate) != recorder.RateBuckets || cs.Rate[len(cs.Rate)-1]+cs.Rate[len(cs.Rate)-2] == 0 {
		t.Errorf("rate history: %d buckets, last two %v", len(cs.Rate), cs.Rate[len(cs.Rate)-2:])
	}
	var hm uint64
	for _, in := range st.Instruments {
		hm += in.HashMismatches
		b, ok := c.rec.LiveBook(in.Instrument)
		if !ok {
			t.Fatalf("no live book for %s", in.Instrument)
		}
		if in.Conn != b.Conn || in.UpdatedNs > b.UpdatedNs {
			t.Errorf("%s: status conn %d updated %d, live book conn %d updated %d", in.Instrument, in.Conn, in.UpdatedNs, b.Conn, b.UpdatedNs)
		}
	}
	if hm == 0 {
		t.Errorf("no instrument shows the hash mismatches the live engine counted (%d)", st.Live.HashMismatches)
	}
	found := false
	for _, e := range st.Events {
		found = found || (e.Kind == "connect" && e.Conn == 1)
	}
	if !found {
		t.Errorf("no connect among the events: %+v", st.Events)
	}
	if st.Disk.Dir != c.dir || st.Disk.UsedBytes <= 0 || st.Disk.FreeBytes <= 0 || st.Disk.TotalBytes < st.Disk.FreeBytes {
		t.Errorf("disk: %+v", st.Disk)
	}
	if st.Venue != "polymarket" || st.Stats.Frames == 0 || !st.Live.On {
		t.Errorf("totals: venue %q stats %+v live %+v", st.Venue, st.Stats, st.Live)
	}
}

// TestStatusShowsADisconnect: the exchange kills the socket; the status
// counts the disconnect and the reconnect, the gaps of both instruments
// and lists the disconnect record as a loss.
func TestStatusShowsADisconnect(t *testing.T) {
	c := startCapture(t, "")
	defer c.close()
	waitFor(t, "connected with frames", 20*time.Second, func() bool {
		st, _ := getStatus(t, c.srv.URL)
		return len(st.Conns) == 1 && st.Conns[0].State == "connected" && st.Conns[0].Frames > 10
	})
	c.ex.KillAll()
	var st *statusweb.Status
	waitFor(t, "the reconnect", 20*time.Second, func() bool {
		st, _ = getStatus(t, c.srv.URL)
		return st.Conns[0].Disconnects >= 1 && st.Conns[0].Connects >= 2 && st.Conns[0].State == "connected"
	})
	cs := st.Conns[0]
	if cs.Reconnects < 1 || cs.Losses < 2 || cs.LastError == "" {
		t.Errorf("connection after a kill: %+v", cs)
	}
	for _, in := range st.Instruments {
		if in.Gaps < cs.Losses {
			t.Errorf("%s: %d gaps, its connection had %d losses", in.Instrument, in.Gaps, cs.Losses)
		}
	}
	loss := false
	for _, e := range st.Events {
		loss = loss || (e.Kind == "disconnect" && e.Loss)
	}
	if !loss {
		t.Errorf("no disconnect loss among the events: %+v", st.Events)
	}
}

// TestEndpointsAreReadOnly: every method but GET and HEAD is refused on
// every path, and what is refused changes nothing.
func TestEndpointsAreReadOnly(t *testing.T) {
	page := statusweb.New(statusweb.Config{Status: func() *recorder.LiveStatus { return &recorder.LiveStatus{Venue: "x"} },
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "m 1\n") })})
	defer page.Close()
	srv := httptest.NewServer(page)
	defer srv.Close()
	for _, path := range []string{"/", "/status.json", "/metrics", "/app.js", "/style.css"} {
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			req, _ := http.NewRequest(m, srv.URL+path, strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q", m, path, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		if path != "/metrics" && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("GET %s: no content security policy", path)
		}
	}
	if resp, _ := http.Get(srv.URL + "/nope"); resp == nil || resp.StatusCode != 404 {
		t.Errorf("unknown path not 404")
	}
}

// TestListenPolicy: an empty host binds 127.0.0.1; a non-loopback address
// is refused without the explicit flag, and with it listens and logs a
// warning.
func TestListenPolicy(t *testing.T) {
	ln, err := statusweb.Listen(":0", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := ln.Addr().String(); !strings.HasPrefix(a, "127.0.0.1:") {
		t.Errorf("empty host bound %s", a)
	}
	ln.Close()
	for _, a := range []string{"localhost:0", "127.0.0.1:0", "[::1]:0"} {
		if _, loop, err := statusweb.CheckAddr(a, false); err != nil || !loop {
			t.Errorf("%s: loopback %v, %v", a, loop, err)
		}
	}
	for _, a := range []string{"0.0.0.0:0", "[::]:0", "10.1.2.3:9464", "192.168.1.5:80"} {
		_, _, err := statusweb.CheckAddr(a, false)
		if err == nil || !strings.Contains(err.Error(), "--listen-public") {
			t.Errorf("%s without --listen-public: %v", a, err)
		}
		if _, loop, err := statusweb.CheckAddr(a, true); err != nil || loop {
			t.Errorf("%s with --listen-public: loopback %v, %v", a, loop, err)
		}
	}
	var logs bytes.Buffer
	ln, err = statusweb.Listen("0.0.0.0:0", true, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "beyond loopback") {
		t.Errorf("no warning for a public listener: %s", logs.String())
	}
}

func TestRedact(t *testing.T) {
	for in, secret := range map[string]string{
		"wss://alice:hunter2@example.com/ws":                             "hunter2",
		"https://s3.example.com/b?X-Amz-Signature=abcdef123&x=1":         "abcdef123",
		"dial ws://h/ws?apikey=sekrit1: refused":                         "sekrit1",
		"upload failed: key AKIAIOSFODNN7EXAMPLE denied":                 "AKIAIOSFODNN7EXAMPLE",
		"https://h/p?token=t0k3n&page=2":                                 "t0k3n",
		"put http://u:pw-xyz@minio.local:9000/bucket/seg: 403 Forbidden": "pw-xyz",
	} {
		out := statusweb.Redact(in)
		if strings.Contains(out, secret) {
			t.Errorf("Redact(%q) = %q keeps %q", in, out, secret)
		}
	}
	if got := statusweb.Redact("wss://ws-subscriptions-clob.polymarket.com/ws/market"); got != "wss://ws-subscriptions-clob.polymarket.com/ws/market" {
		t.Errorf("a plain URL changed: %q", got)
	}
}

// TestNoCredentialOnStatus: credentials in the endpoint URL, in a
// connection's error and in the upload target never reach status.json.
func TestNoCredentialOnStatus(t *testing.T) {
	page := statusweb.New(statusweb.Config{
		Status: func() *recorder.LiveStatus {
			return &recorder.LiveStatus{Venue: "polymarket", Endpoint: "wss://bob:pa55word@h/ws?auth_token=zzz999",
				Conns:  []recorder.ConnStatus{{Conn: 1, State: "down", LastError: "dial wss://bob:pa55word@h/ws: refused"}},
				Events: []recorder.StatusEvent{{Seq: 3, Conn: 1, Kind: "disconnect", Detail: "wss://bob:pa55word@h/ws?auth_token=zzz999"}}}
		},
		Upload: func() *statusweb.UploadStatus {
			return &statusweb.UploadStatus{Target: "s3://k3y:s3cr3tvalue@bucket/prefix", LastError: "AKIAIOSFODNN7EXAMPLE: 403", PendingSegments: 2}
		},
	})
	defer page.Close()
	srv := httptest.NewServer(page)
	defer srv.Close()
	_, body := getStatus(t, srv.URL)
	for _, s := range []string{"pa55word", "zzz999", "s3cr3tvalue", "AKIAIOSFODNN7EXAMPLE"} {
		if bytes.Contains(body, []byte(s)) {
			t.Errorf("status.json shows %q: %s", s, body)
		}
	}
}

// TestDiskRateAndTimeToFull: a dataset directory that grows gets a write
// rate and a time to full equal to the free space at that rate.
func TestDiskRateAndTimeToFull(t *testing.T) {
	dir := t.TempDir()
	page := statusweb.New(statusweb.Config{Dir: dir, SampleEvery: 50 * time.Millisecond})
	defer page.Close()
	if d := page.Snapshot().Disk; d.UsedBytes != 0 || d.BytesPerSec != 0 || d.TimeToFullNs != 0 || d.FreeBytes <= 0 {
		t.Fatalf("empty dataset: %+v", d)
	}
	if err := os.WriteFile(filepath.Join(dir, "00000001.seg"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var d statusweb.Disk
	waitFor(t, "a write rate", 10*time.Second, func() bool {
		d = page.Snapshot().Disk
		return d.BytesPerSec > 0
	})
	if d.UsedBytes != 1<<20 || d.WindowNs <= 0 || d.TimeToFullNs <= 0 {
		t.Fatalf("disk %+v", d)
	}
	want := float64(d.FreeBytes) / d.BytesPerSec * 1e9
	if got := float64(d.TimeToFullNs); got < want*0.99 || got > want*1.01 {
		t.Errorf("time to full %v, free/rate %v", time.Duration(d.TimeToFullNs), time.Duration(want))
	}
}

// TestStatusJSONIsPaged is issue 30 item 13: a hostile venue of 100,000
// instruments made /status.json 31 MB, and every client that did not read
// held a copy. It is paged now (offset, limit up to MaxPage, a filter q),
// says how many match, and more than a few answers in progress at once are
// refused (503) rather than held.
func TestStatusJSONIsPaged(t *testing.T) {
	const n = 100_000
	insts := make([]recorder.InstrumentStatus, n)
	for i := range insts {
		insts[i] = recorder.InstrumentStatus{Instrument: fmt.Sprintf("%078d", i), Conn: uint32(i % 40)}
	}
	release := make(chan struct{})
	var blocked atomic.Bool
	entered := make(chan struct{}, 100)
	page := statusweb.New(statusweb.Config{Status: func() *recorder.LiveStatus {
		if blocked.Load() {
			entered <- struct{}{}
			<-release
		}
		return &recorder.LiveStatus{Venue: "polymarket", Instruments: slices.Clone(insts)}
	}})
	defer page.Close()
	srv := httptest.NewServer(page)
	defer srv.Close()
	get := func(q string) (*statusweb.Status, int, int) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/status.json" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return nil, len(body), resp.StatusCode
		}
		var st statusweb.Status
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
		return &st, len(body), 200
	}
	st, size, _ := get("")
	if st.InstrumentsTotal != n || len(st.Instruments) != statusweb.DefaultPage || size > 1<<20 {
		t.Fatalf("default page: %d of %d instruments, %d bytes", len(st.Instruments), st.InstrumentsTotal, size)
	}
	st, _, _ = get("?offset=99990&limit=100")
	if len(st.Instruments) != 10 || st.Instruments[0].Instrument != fmt.Sprintf("%078d", 99990) || st.Offset != 99990 {
		t.Fatalf("last page: %d from %d", len(st.Instruments), st.Offset)
	}
	st, _, _ = get("?limit=1000000")
	if len(st.Instruments) != statusweb.MaxPage {
		t.Fatalf("limit capped at %d, got %d", statusweb.MaxPage, len(st.Instruments))
	}
	st, _, _ = get("?q=" + fmt.Sprintf("%078d", 4242))
	if st.InstrumentsTotal != 1 || len(st.Instruments) != 1 {
		t.Fatalf("filter: %d of %d", len(st.Instruments), st.InstrumentsTotal)
	}
	// Answers in progress are bounded: with every slot held, one more is
	// refused at once instead of holding another copy.
	blocked.Store(true)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { get("") })
		<-entered
	}
	if _, _, code := get(""); code != http.StatusServiceUnavailable {
		t.Errorf("a ninth answer in progress: HTTP %d, want 503", code)
	}
	close(release)
	wg.Wait()
}
