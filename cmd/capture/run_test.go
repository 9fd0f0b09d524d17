package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/goleak"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// capExec runs the capture root with args and ctx; it returns the exit
// code, stdout and stderr.
func capExec(ctx context.Context, args ...string) (int, string, string) {
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetContext(ctx)
	return cli.Main(root, args, &errb), out.String(), errb.String()
}

func capWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func capSent(s *fakeexchange.Server) int {
	n := 0
	for _, c := range s.Conns() {
		n += int(c.SentCount())
	}
	return n
}

// capExamples returns the "$ capture VERB …" lines of an Example text.
func capExamples(ex, verb string) [][]string {
	var out [][]string
	for _, line := range strings.Split(ex, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "$ capture "+verb+" ") {
			out = append(out, strings.Fields(strings.TrimPrefix(line, "$ capture ")))
		}
	}
	return out
}

func TestRunFlags(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	os.Mkdir(existing, 0o755)
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(`{"venue":"hyperliquid","instruments":["BTC"],"out":"`+filepath.Join(dir, "fromcfg")+`","flush_interval":"250ms"}`), 0o644)
	offcfg := filepath.Join(dir, "off.json")
	os.WriteFile(offcfg, []byte(`{"venue":"polymarket","instruments":["1"],"rest_books":false,"clob_endpoint":"http://127.0.0.1:1"}`), 0o644)
	badcfg := filepath.Join(dir, "bad.json")
	os.WriteFile(badcfg, []byte(`{"venue":"hyperliquid","instrument":["BTC"]}`), 0o644)
	list := filepath.Join(dir, "ids.txt")
	os.WriteFile(list, []byte("# tokens\n72936048731589292555781174533757608024096898681344338816447372274344589246891\n\n"), 0o644)
	out := filepath.Join(dir, "new")
	cases := []struct {
		name  string
		args  []string
		want  string // "" = accepted
		check func(t *testing.T, o *runOptions)
	}{
		{"ok", []string{"--venue", "polymarket", "--instruments", "1,2", "--out", out}, "", func(t *testing.T, o *runOptions) {
			if sp := o.spec(); sp.DisableRESTBooks || sp.CLOBEndpoint != "" {
				t.Errorf("rest books by default: spec %+v", sp)
			}
		}},
		{"live and heal by default", []string{"--venue", "polymarket", "--instruments", "1", "--out", out}, "", func(t *testing.T, o *runOptions) {
			if !o.Live || !o.Heal {
				t.Errorf("live %v heal %v, want both on by default", o.Live, o.Heal)
			}
		}},
		{"heal off", []string{"--venue", "polymarket", "--instruments", "1", "--heal=false", "--out", out}, "", func(t *testing.T, o *runOptions) {
			if !o.Live || o.Heal {
				t.Errorf("live %v heal %v, want live on, heal off", o.Live, o.Heal)
			}
		}},
		{"trading on loopback", []string{"--venue", "hyperliquid", "--instruments", "BTC", "--trading", ":8765", "--out", out}, "", func(t *testing.T, o *runOptions) {
			if o.Trading != ":8765" || o.TradingCash != 1000 {
				t.Errorf("trading %q cash %v", o.Trading, o.TradingCash)
			}
		}},
		{"trading beyond loopback", []string{"--venue", "hyperliquid", "--instruments", "BTC", "--trading", "0.0.0.0:8765", "--out", out}, "--listen-public", nil},
		{"trading without live books", []string{"--venue", "hyperliquid", "--instruments", "BTC", "--trading", "127.0.0.1:8765", "--live=false", "--out", out}, "needs --live", nil},
		{"trading cash", []string{"--venue", "hyperliquid", "--instruments", "BTC", "--trading", "127.0.0.1:8765", "--trading-cash", "0", "--out", out}, "--trading-cash", nil},
		{"live off", []string{"--venue", "polymarket", "--instruments", "1", "--live=false", "--out", out}, "", func(t *testing.T, o *runOptions) {
			if o.Live {
				t.Error("--live=false left the live engine on")
			}
		}},
		{"rest books off", []string{"--venue", "polymarket", "--instruments", "1", "--rest-books=false", "--clob-endpoint", "http://127.0.0.1:1", "--out", out}, "",
			func(t *testing.T, o *runOptions) {
				if sp := o.spec(); !sp.DisableRESTBooks || sp.CLOBEndpoint != "http://127.0.0.1:1" {
					t.Errorf("spec %+v", sp)
				}
			}},
		{"rest books off in config", []string{"--config", offcfg, "--out", out}, "", func(t *testing.T, o *runOptions) {
			if sp := o.spec(); !sp.DisableRESTBooks || sp.CLOBEndpoint != "http://127.0.0.1:1" {
				t.Errorf("spec %+v", sp)
			}
		}},
		{"rest books flag beats config", []string{"--config", offcfg, "--rest-books", "--out", out}, "", func(t *testing.T, o *runOptions) {
			if o.spec().DisableRESTBooks {
				t.Error("--rest-books did not override the config")
			}
		}},
		{"bad clob endpoint", []string{"--venue", "polymarket", "--instruments", "1", "--clob-endpoint", "clob.polymarket.com", "--out", out}, "--clob-endpoint", nil},
		{"file", []string{"--venue", "polymarket", "--instruments-file", list, "--out", out}, "", func(t *testing.T, o *runOptions) {
			if len(o.Instruments) != 1 {
				t.Errorf("instruments %v", o.Instruments)
			}
		}},
		{"config", []string{"--config", cfg, "--stall-timeout", "7s"}, "", func(t *testing.T, o *runOptions) {
			if o.Venue != "hyperliquid" || o.FlushInterval != 250*time.Millisecond || o.StallTimeout != 7*time.Second || !strings.HasSuffix(o.Out, "fromcfg") {
				t.Errorf("options %+v", o)
			}
		}},
		{"flag beats config", []string{"--config", cfg, "--venue", "polymarket", "--instruments", "1"}, "", func(t *testing.T, o *runOptions) {
			if o.Venue != "polymarket" || o.Instruments[0] != "1" {
				t.Errorf("options %+v", o)
			}
		}},
		{"unknown config key", []string{"--config", badcfg, "--out", out}, `unknown key "instrument"`, nil},
		{"no venue", []string{"--instruments", "1", "--out", out}, "--venue", nil},
		{"no instruments", []string{"--venue", "polymarket", "--out", out}, "--instruments", nil},
		{"no out", []string{"--venue", "polymarket", "--instruments", "1"}, "--out", nil},
		{"exists", []string{"--venue", "polymarket", "--instruments", "1", "--out", existing}, "never overwrites", nil},
		{"conns on polymarket", []string{"--venue", "polymarket", "--instruments", "1", "--conns", "2", "--out", out}, "--conns", nil},
		{"channels on polymarket", []string{"--venue", "polymarket", "--instruments", "1", "--channels", "bbo", "--out", out}, "--channels", nil},
		{"shards on hyperliquid", []string{"--venue", "hyperliquid", "--instruments", "BTC", "--assets-per-conn", "5", "--out", out}, "--assets-per-conn", nil},
		{"zero assets per conn", []string{"--venue", "polymarket", "--instruments", "1", "--assets-per-conn", "0", "--out", out}, "--assets-per-conn 0: want 1..500", nil},
		{"negative assets per conn", []string{"--venue", "polymarket", "--instruments", "1", "--assets-per-conn", "-3", "--out", out}, "--assets-per-conn -3", nil},
		{"too many assets per conn", []string{"--venue", "polymarket", "--instruments", "1", "--assets-per-conn", "501", "--out", out}, "--assets-per-conn 501", nil},
		{"assets per conn", []string{"--venue", "polymarket", "--instruments", "1", "--assets-per-conn", "500", "--out", out}, "", nil},
		{"zero flush", []string{"--venue", "polymarket", "--instruments", "1", "--flush-interval", "0s", "--out", out}, "--flush-interval", nil},
		{"rotate 1ns", []string{"--venue", "polymarket", "--instruments", "1", "--rotate", "1ns", "--out", out}, "--rotate 1ns is below the minimum 1m0s", nil},
		{"rotate-size 1", []string{"--venue", "polymarket", "--instruments", "1", "--rotate-size", "1", "--out", out}, "--rotate-size 1 is below the minimum", nil},
		{"flush 1ns", []string{"--venue", "polymarket", "--instruments", "1", "--flush-interval", "1ns", "--out", out}, "--flush-interval 1ns is below", nil},
		{"rotate minimum", []string{"--venue", "polymarket", "--instruments", "1", "--rotate", "1m", "--rotate-size", "1048576", "--out", out}, "", nil},
		{"bad endpoint", []string{"--venue", "polymarket", "--instruments", "1", "--endpoint", "localhost", "--out", out}, "--endpoint", nil},
		{"bad metrics", []string{"--venue", "polymarket", "--instruments", "1", "--metrics-addr", "9464", "--out", out}, "--metrics-addr", nil},
		{"bad log format", []string{"--venue", "polymarket", "--instruments", "1", "--log-format", "xml", "--out", out}, "--log-format", nil},
		{"args", []string{"--venue", "polymarket", "--instruments", "1", "--out", out, "extra"}, "unknown command", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *runOptions
			cmd := newRunCmd(func(o *runOptions) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.FlagError{Err: err} })
			err := cmd.Execute()
			if tc.want == "" {
				if err != nil || got == nil {
					t.Fatalf("rejected: %v", err)
				}
				if tc.check != nil {
					tc.check(t, got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
			var fe *cli.FlagError
			if !errors.As(err, &fe) && tc.name != "args" {
				t.Errorf("%v is not a usage error", err)
			}
			if got != nil {
				t.Fatal("runF called despite the error")
			}
		})
	}
}

// TestPlanExamples runs every Example of plan: no network is needed.
func TestPlanExamples(t *testing.T) {
	defer goleak.VerifyNone(t)
	t.Chdir("../..")
	exs := capExamples(newPlanCmd(nil).Example, "plan")
	if len(exs) != 3 {
		t.Fatalf("%d plan examples", len(exs))
	}
	for _, args := range exs {
		code, out, errs := capExec(context.Background(), args...)
		if code != cli.ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		switch {
		case strings.Contains(strings.Join(args, " "), "--json"):
			var p recorder.Plan
			if err := json.Unmarshal([]byte(out), &p); err != nil || len(p.Conns) != 1 || len(p.Conns[0].Frames) != 2 {
				t.Errorf("%v: %v\n%s", args, err, out)
			}
			if !strings.Contains(p.Conns[0].Frames[0], `"nSigFigs":5,"mantissa":2`) {
				t.Errorf("frame %s", p.Conns[0].Frames[0])
			}
		case strings.Contains(strings.Join(args, " "), "hyperliquid"):
			if !strings.Contains(out, "connections 2") || strings.Count(out, `"fast":true`) != 2 ||
				!strings.Contains(out, "at most 20 frames per 100ms and 2000 per minute") {
				t.Errorf("%v:\n%s", args, out)
			}
			// The two l2Books of each coin are on different connections.
			blocks := strings.Split(out, "\nconn ")
			for _, b := range blocks[1:] {
				if strings.Count(b, `"coin":"BTC"`) > 2 || strings.Count(b, `"type":"l2Book","coin":"BTC"`) != 1 {
					t.Errorf("a connection carries both BTC books:\n%s", b)
				}
			}
		default:
			if !strings.Contains(out, "connections 2") || strings.Count(out, `"type":"market"`) != 2 ||
				strings.Count(out, "before every (re)connect: POST https://clob.polymarket.com/books for the 4 tokens' book summaries in 1 request") != 2 {
				t.Errorf("%v:\n%s", args, out)
			}
		}
	}
}

func TestStatusExamples(t *testing.T) {
	defer goleak.VerifyNone(t)
	t.Chdir("../..")
	for _, args := range capExamples(newStatusCmd(nil).Example, "status") {
		code, out, errs := capExec(context.Background(), args...)
		if code != cli.ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		var st recorder.Status
		if err := json.Unmarshal([]byte(out), &st); err != nil || st.Frames == 0 || st.Venue == "" {
			t.Errorf("%v: %v: %s", args, err, out)
		}
	}
	code, _, errs := capExec(context.Background(), "status")
	if code != cli.ExitUsage || !strings.Contains(errs, "DATASET") {
		t.Errorf("status without a dataset: exit %d, %s", code, errs)
	}
	code, _, errs = capExec(context.Background(), "status", t.TempDir())
	if code != cli.ExitError || !strings.Contains(errs, "not a dataset") {
		t.Errorf("status of an empty dir: exit %d, %s", code, errs)
	}
}

// TestRunExamples runs every Example of run against a loopback fake of the
// venue (the endpoints redirected), stops it like SIGINT would, and checks
// the dataset is sealed with a clean close.
func TestRunExamples(t *testing.T) {
	defer goleak.VerifyNone(t)
	pm := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer pm.Close()
	hl := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer hl.Close()
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("capture.json", []byte(`{"venue":"polymarket","stall_timeout":"5m"}`), 0o644)
	exs := capExamples(newRunCmd(nil).Example, "run")
	if len(exs) != 4 {
		t.Fatalf("%d run examples", len(exs))
	}
	for _, args := range exs {
		s := pm
		if strings.Contains(strings.Join(args, " "), "hyperliquid") {
			s = hl
		}
		for i := range args {
			if a := args[i-min(i, 1)]; a == "--metrics-addr" || a == "--trading" {
				args[i] = "127.0.0.1:0"
			}
		}
		args = append(args, "--endpoint", s.WSURL(), "--rest-endpoint", s.RESTURL(), "--clob-endpoint", s.CLOBURL(), "--flush-interval", "20ms")
		out := args[slicesIndex(args, "--out")+1]
		before := capSent(s)
		ctx, cancel := context.WithCancel(context.Background())
		type result struct {
			code     int
			out, err string
		}
		done := make(chan result, 1)
		go func() {
			c, o, e := capExec(ctx, args...)
			done <- result{c, o, e}
		}()
		capWait(t, "frames", func() bool { return capSent(s) > before+50 })
		cancel()
		res := <-done
		if res.code != cli.ExitOK {
			t.Fatalf("%v: exit %d\n%s", args, res.code, res.err)
		}
		if !strings.Contains(res.out, out) {
			t.Errorf("summary %q", res.out)
		}
		st, err := recorder.ReadStatus(out)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Clean || !st.Stopped || st.Frames == 0 || st.Dropped != 0 {
			t.Errorf("%v: status %+v", args, st)
		}
		if strings.Contains(strings.Join(args, " "), "all-markets") && st.Conns == 0 {
			t.Errorf("all markets recorded nothing")
		}
		if s == pm && restBodiesOnConns(t, out) == 0 {
			t.Errorf("%v: no REST book summaries stored on a connection", args)
		}
	}
}

// restBodiesOnConns counts the REST bodies a dataset holds on connection
// slots (conn 0 holds the session's discovery responses).
func restBodiesOnConns(t *testing.T, dir string) int {
	t.Helper()
	rd, err := datasets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	n := 0
	for rd.Next() {
		if r := rd.Record(); r.Kind == datasets.KindRESTResponse && r.Conn != 0 {
			n++
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestRunMetrics checks the Prometheus endpoint of a running capture.
func TestRunMetrics(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	out := filepath.Join(t.TempDir(), "ds")
	cmd := newRunCmd(nil)
	addr := make(chan string, 1)
	var opts *runOptions
	cmd = newRunCmd(func(o *runOptions) error {
		opts = o
		o.ready = func(a string) { addr <- a }
		return runCapture(cmd.Context(), o)
	})
	ctx, cancel := context.WithCancel(context.Background())
	cmd.SetContext(ctx)
	cmd.SetArgs([]string{"--venue", "hyperliquid", "--instruments", "BTC", "--channels", "l2Book,bbo", "--endpoint", s.WSURL(),
		"--rest-endpoint", s.RESTURL(), "--metrics-addr", "127.0.0.1:0", "--out", out, "--log-format", "json"})
	var stderr bytes.Buffer
	cmd.SetOut(io.Discard)
	cmd.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	a := <-addr
	capWait(t, "frames", func() bool { return capSent(s) > 50 })
	var body string
	capWait(t, "frame metrics", func() bool {
		resp, err := http.Get("http://" + a + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return strings.Contains(body, `tapedeck_capture_frames_total{conn="1",venue="hyperliquid"}`)
	})
	for _, m := range []string{"tapedeck_capture_frame_bytes_total", "tapedeck_capture_queue_depth", "tapedeck_capture_receive_lag_seconds",
		"tapedeck_capture_read_to_disk_seconds_bucket", "tapedeck_capture_connected"} {
		if !strings.Contains(body, m) {
			t.Errorf("metric %s missing", m)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if opts == nil || !strings.Contains(stderr.String(), `"msg":"connected"`) {
		t.Errorf("structured logs: %s", stderr.String())
	}
}

// buildCapture builds the capture binary into a temporary directory.
func buildCapture(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "capture")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestKillNineRecovers SIGKILLs a real capture process mid-recording and
// checks the dataset: everything sealed before the kill is readable,
// byte-identical to what the server sent and in order, and Repair makes it
// whole.
func TestKillNineRecovers(t *testing.T) {
	defer goleak.VerifyNone(t)
	bin := buildCapture(t)
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	out := filepath.Join(t.TempDir(), "ds")
	cmd := exec.Command(bin, "run", "--venue", "polymarket", "--instruments", fakeexchange.PolymarketStreamAsset,
		"--endpoint", s.WSURL(), "--clob-endpoint", s.CLOBURL(), "--out", out, "--flush-interval", "20ms")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	capWait(t, "frames on disk", func() bool {
		if capSent(s) < 300 {
			return false
		}
		st, err := recorder.ReadStatus(out)
		return err == nil && st.Frames > 200
	})
	cmd.Process.Kill()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("capture did not die of SIGKILL: %v\n%s", err, stderr.String())
	}
	if _, err := datasets.Repair(out); err != nil {
		t.Fatalf("repair: %v", err)
	}
	rd, err := datasets.Open(out, datasets.WithStrict())
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	clean := false
	for rd.Next() {
		r := rd.Record()
		switch r.Kind {
		case datasets.KindFrame:
			frames = append(frames, bytes.Clone(r.Payload))
		case datasets.KindCleanClose:
			clean = true
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatalf("read after repair: %v", err)
	}
	rd.Close()
	if clean {
		t.Error("a killed recorder wrote a clean close")
	}
	sent := s.Conns()[0].Sent()
	if len(frames) < 200 || len(frames) > len(sent) {
		t.Fatalf("%d frames recovered, server sent %d", len(frames), len(sent))
	}
	for i := range frames {
		if !bytes.Equal(frames[i], sent[i]) {
			t.Fatalf("frame %d differs from what the server sent", i)
		}
	}
}

// TestSIGTERMIsGraceful stops a real capture process with SIGTERM: exit 0,
// clean close, sealed manifest.
func TestSIGTERMIsGraceful(t *testing.T) {
	defer goleak.VerifyNone(t)
	bin := buildCapture(t)
	s := fakeexchange.New(fakeexchange.HyperliquidConfig())
	defer s.Close()
	out := filepath.Join(t.TempDir(), "ds")
	cmd := exec.Command(bin, "run", "--venue", "hyperliquid", "--instruments", "BTC,ETH", "--channels", "l2Book,trades",
		"--endpoint", s.WSURL(), "--rest-endpoint", s.RESTURL(), "--out", out, "--flush-interval", "20ms")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	capWait(t, "frames", func() bool { return capSent(s) > 100 })
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	st, err := recorder.ReadStatus(out)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Clean || !st.Stopped || st.Frames < 100 || st.Truncated != "" {
		t.Errorf("status %+v", st)
	}
	if !strings.Contains(stdout.String(), out) {
		t.Errorf("summary %q", stdout.String())
	}
}
