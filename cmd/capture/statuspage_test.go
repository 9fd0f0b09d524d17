package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/s3test"
	"github.com/tapedeck/tapedeck/internal/statusweb"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// TestRunStatusPage: capture run --metrics-addr serves the status page,
// /status.json and /metrics on one loopback listener, and `capture status
// --addr` reads the running daemon: --json prints /status.json as served,
// the text names the connection and the instrument.
func TestRunStatusPage(t *testing.T) {
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	out := filepath.Join(t.TempDir(), "ds")
	addr := make(chan string, 1)
	cmd := newRunCmd(nil)
	cmd = newRunCmd(func(o *runOptions) error {
		o.ready = func(a string) { addr <- a }
		return runCapture(cmd.Context(), o)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd.SetContext(ctx)
	// An empty host: the listener binds 127.0.0.1.
	cmd.SetArgs([]string{"--venue", "hyperliquid", "--instruments", "BTC", "--channels", "l2Book", "--endpoint", s.WSURL(),
		"--rest-endpoint", s.RESTURL(), "--metrics-addr", ":0", "--out", out})
	var stderr bytes.Buffer
	cmd.SetOut(io.Discard)
	cmd.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	a := <-addr
	if !strings.HasPrefix(a, "127.0.0.1:") {
		t.Errorf("status listener on %s, want 127.0.0.1", a)
	}
	get := func(path string) string {
		resp, err := http.Get("http://" + a + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		return string(b)
	}
	if page := get("/"); !strings.Contains(page, "<title>tapedeck capture</title>") || strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Errorf("status page: %.300s", page)
	}
	capWait(t, "BTC book on the status", func() bool {
		var st statusweb.Status
		if json.Unmarshal([]byte(get("/status.json")), &st) != nil || st.LiveStatus == nil {
			return false
		}
		return len(st.Conns) == 1 && st.Conns[0].State == "connected" && len(st.Instruments) == 1 && st.Instruments[0].BidPx != ""
	})
	// The per-connection series exist once the connection slot has started
	// (ready fires before the recorder runs), which the status above shows.
	if m := get("/metrics"); !strings.Contains(m, "tapedeck_capture_frames_total") {
		t.Errorf("metrics missing on the shared listener")
	}

	code, js, errs := capExec(ctx, "status", "--addr", a, "--json")
	var st statusweb.Status
	if code != 0 || json.Unmarshal([]byte(js), &st) != nil || st.LiveStatus == nil || st.Venue != "hyperliquid" || len(st.Conns) != 1 ||
		st.Disk.Dir != out {
		t.Fatalf("status --addr --json: exit %d %s\n%.500s", code, errs, js)
	}
	code, text, errs := capExec(ctx, "status", "--addr", "http://"+a+"/", "--json=false")
	if code != 0 || !strings.Contains(text, "conn 1") || !strings.Contains(text, "connected") || !strings.Contains(text, "BTC conn 1") {
		t.Errorf("status --addr text: exit %d %s\n%s", code, errs, text)
	}
	// The page is read-only: a POST changes nothing and is refused.
	resp, err := http.Post("http://"+a+"/status.json", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /status.json: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The daemon is gone: a clear error, not a hang or a panic.
	if code, _, errs := capExec(context.Background(), "status", "--addr", a); code == 0 || !strings.Contains(errs, "running capture") {
		t.Errorf("status of a stopped daemon: exit %d %s", code, errs)
	}
}

// TestRunListenPublic: a non-loopback --metrics-addr is a usage error
// without --listen-public (and creates no dataset); with it, run goes ahead.
func TestRunListenPublic(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "ds")
	code, _, errs := capExec(context.Background(), "run", "--venue", "hyperliquid", "--instruments", "BTC",
		"--endpoint", "ws://127.0.0.1:1/ws", "--metrics-addr", "0.0.0.0:0", "--out", out)
	if code != cli.ExitUsage || !strings.Contains(errs, "not a loopback address") || !strings.Contains(errs, "--listen-public") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused run created %s", out)
	}
	code, _, errs = capExec(context.Background(), "run", "--venue", "hyperliquid", "--instruments", "BTC", "--listen-public", "--out", out)
	if code != cli.ExitUsage || !strings.Contains(errs, "--listen-public needs --metrics-addr") {
		t.Errorf("--listen-public alone: exit %d: %s", code, errs)
	}
	var got *runOptions
	cmd := newRunCmd(func(o *runOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--venue", "hyperliquid", "--instruments", "BTC", "--metrics-addr", "0.0.0.0:0", "--listen-public", "--out", out})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil || got == nil || !got.ListenPublic {
		t.Errorf("with --listen-public: %v", err)
	}
}

// TestRunStatusPageUpload: with --upload the status shows the upload
// backlog and target, and no endpoint (page, status.json, metrics, capture
// status) shows the object-storage credentials the process holds.
func TestRunStatusPageUpload(t *testing.T) {
	s3test.Start(t, "tapes")
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	out := filepath.Join(t.TempDir(), "ds")
	addr := make(chan string, 1)
	cmd := newRunCmd(nil)
	cmd = newRunCmd(func(o *runOptions) error {
		o.ready = func(a string) { addr <- a }
		return runCapture(cmd.Context(), o)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd.SetContext(ctx)
	cmd.SetArgs([]string{"--venue", "polymarket", "--instruments", fakeexchange.PolymarketStreamAsset, "--endpoint", s.WSURL(),
		"--clob-endpoint", s.CLOBURL(), "--flush-interval", "20ms", "--metrics-addr", "127.0.0.1:0", "--out", out, "--upload", "s3://tapes/live"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	a := <-addr
	get := func(path string) string {
		resp, err := http.Get("http://" + a + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var st statusweb.Status
	capWait(t, "frames", func() bool {
		st = statusweb.Status{}
		return json.Unmarshal([]byte(get("/status.json")), &st) == nil && st.LiveStatus != nil && st.Stats.Frames > 5
	})
	if st.Upload == nil || st.Upload.Target != "s3://tapes/live" {
		t.Errorf("upload status %+v", st.Upload)
	}
	_, text, _ := capExec(ctx, "status", "--addr", a, "--json=false")
	for name, body := range map[string]string{"/": get("/"), "/app.js": get("/app.js"), "/status.json": get("/status.json"),
		"/metrics": get("/metrics"), "capture status": text} {
		for _, secret := range []string{s3test.AccessKey, s3test.SecretKey} {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows the credential %q", name, secret)
			}
		}
	}
	if !strings.Contains(text, "upload      s3://tapes/live") {
		t.Errorf("capture status does not show the upload:\n%s", text)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRunStalledUploadCounted: a store that takes an upload and never
// answers is a failed attempt after --s3-timeout, while the capture runs:
// on the metric, on the status page with its reason, in the log and as an
// upload_failed note in the dataset (issue 30, finding 16: before, nothing
// said so until shutdown). The test waits on events, not on the host's
// speed: 1 KiB segments (below the flag's minimum, through the writer
// options) finish after a few frames, and the writer's segment-done event
// says when the uploader has one to send (issue 29: a 1 MiB segment at a
// flood rate took minutes on a loaded host).
func TestRunStalledUploadCounted(t *testing.T) {
	srv := s3test.Start(t, "tapes")
	srv.SetFault("/tapes/stall/", s3test.Fault{Method: "PUT", Hang: true})
	cfg := fakeexchange.PolymarketConfig()
	cfg.Flood, cfg.FloodRate = true, 1000
	s := fakeexchange.New(cfg)
	defer s.Close()
	out := filepath.Join(t.TempDir(), "ds")
	addr := make(chan string, 1)
	segDone := make(chan uint32, 1)
	cmd := newRunCmd(nil)
	cmd = newRunCmd(func(o *runOptions) error {
		o.ready = func(a string) { addr <- a }
		o.segmentDone = func(num uint32) {
			select {
			case segDone <- num:
			default:
			}
		}
		o.writerOpts = []datasets.WriterOption{datasets.WithSegmentSize(1 << 10)}
		return runCapture(cmd.Context(), o)
	})
	ctx, cancel := context.WithCancel(context.Background())
	cmd.SetContext(ctx)
	root := &cobra.Command{Use: "capture"}
	cli.AddStorageFlags(root)
	root.AddCommand(cmd)
	root.SetContext(ctx)
	root.SetArgs([]string{"run", "--venue", "polymarket", "--instruments", fakeexchange.PolymarketStreamAsset, "--endpoint", s.WSURL(),
		"--clob-endpoint", s.CLOBURL(), "--flush-interval", "20ms", "--metrics-addr", "127.0.0.1:0", "--out", out,
		"--upload", "s3://tapes/stall", "--s3-timeout", "1s", "--s3-endpoint", srv.URL})
	var logs lockedBuffer
	root.SetOut(io.Discard)
	root.SetErr(&logs)
	done := make(chan error, 1)
	go func() { done <- root.Execute() }()
	// Whatever happens below, the run and its uploader stop before the
	// test ends (before the store closes, registered earlier): a failure
	// here leaves no goroutine for a later test's leak check.
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		srv.SetFault("/tapes/stall/", s3test.Fault{})
		cancel()
		<-done
	})
	var a string
	select {
	case a = <-addr:
	case err := <-done:
		stopped = true
		t.Fatalf("run ended before recording: %v", err)
	}
	get := func(path string) string {
		resp, err := http.Get("http://" + a + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	select {
	case <-segDone:
	case err := <-done:
		stopped = true
		t.Fatalf("run ended before a segment was finished: %v", err)
	}
	// A segment is with the uploader; its PUT hangs and gives up after
	// --s3-timeout 1s.
	var st statusweb.Status
	capWait(t, "a failure counted for the stalled upload", func() bool {
		st = statusweb.Status{}
		return json.Unmarshal([]byte(get("/status.json")), &st) == nil && st.Upload != nil && st.Upload.Failures > 0
	})
	if !strings.Contains(st.Upload.LastError, "no answer in 1s") || st.Upload.PendingSegments == 0 {
		t.Errorf("status page: %+v", st.Upload)
	}
	if m := get("/metrics"); !strings.Contains(m, "tapedeck_capture_upload_failures_total") || strings.Contains(m, "tapedeck_capture_upload_failures_total 0\n") {
		t.Errorf("metric does not count the stalled upload")
	}
	if !strings.Contains(logs.String(), "upload failed; retrying") {
		t.Errorf("no log line: %.2000s", logs.String())
	}
	srv.SetFault("/tapes/stall/", s3test.Fault{})
	cancel()
	stopped = true
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r, err := datasets.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	notes := 0
	for r.Next() {
		if rec := r.Record(); rec.Kind == datasets.KindNote {
			if c, err := datasets.DecodeControl(rec.Payload); err == nil && c.Reason == "upload_failed" && strings.Contains(c.Err, "no answer") {
				notes++
			}
		}
	}
	if notes == 0 {
		t.Error("no upload_failed note in the dataset")
	}
}
