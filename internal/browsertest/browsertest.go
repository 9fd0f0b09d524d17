// Package browsertest runs a real headless Chromium (Debian's chromium, which
// scripts/test-deps.sh installs) for tests, driven with chromedp. It records
// every console error and uncaught exception of the pages it loads, and
// fails the test on any; it skips the test, saying why, only when no
// Chromium binary exists on the machine.
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Binary returns the Chromium binary to run: $CHROMIUM_BIN, or the first of
// chromium, chromium-browser, google-chrome on PATH ("" if none).
func Binary() string {
	if b := os.Getenv("CHROMIUM_BIN"); b != "" {
		return b
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Browser is one headless Chromium of a test: one tab.
type Browser struct {
	Ctx context.Context
	t   testing.TB

	mu       sync.Mutex
	problems []string
}

// New starts Chromium for t (closed at the end of the test) or skips t when
// there is no Chromium binary. Host names other than 127.0.0.1 do not
// resolve in it, so a page that loads anything from the network fails.
func New(t testing.TB) *Browser {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("no chromium binary (install Debian's chromium: make test runs scripts/test-deps.sh, which does)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // root in CI containers
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	b := &Browser{Ctx: ctx, t: t}
	t.Cleanup(func() {
		cancelC()
		cancelA()
	})
	// The first run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", bin, err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.problem("%s (%s:%d)", m.String(), m.URL, m.Line)
			}
		}
	}()
	return b
}

func (b *Browser) problem(format string, a ...any) {
	b.mu.Lock()
	b.problems = append(b.problems, fmt.Sprintf(format, a...))
	b.mu.Unlock()
}

// Problems returns the console errors and exceptions so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// NoProblems fails the test for every console error or exception so far.
func (b *Browser) NoProblems() {
	b.t.Helper()
	for _, p := range b.Problems() {
		b.t.Errorf("page: %s", p)
	}
}

// Do runs chromedp actions within a minute, failing the test on error.
func (b *Browser) Do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its value.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("browser: evaluate %s: %v", expr, err)
	}
	return v
}

// WaitJS waits up to d for a JavaScript expression to be truthy.
func (b *Browser) WaitJS(what, expr string, d time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, d+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(d))); err != nil {
		b.t.Fatalf("browser: waiting for %s (%s): %v", what, expr, err)
	}
}

// Screenshot takes a full-page PNG and checks it is not blank: it must
// decode and hold more than a few distinct colours over a real area.
// It returns the PNG and writes it to path when path is not "".
func (b *Browser) Screenshot(path string) []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	r := img.Bounds()
	if r.Dx() < 200 || r.Dy() < 200 {
		b.t.Fatalf("screenshot %dx%d: too small", r.Dx(), r.Dy())
	}
	colours := map[uint32]int{}
	first, _, _, _ := img.At(r.Min.X, r.Min.Y).RGBA()
	differ := 0
	for y := r.Min.Y; y < r.Max.Y; y += 3 {
		for x := r.Min.X; x < r.Max.X; x += 3 {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			colours[(cr>>8)<<16|(cg>>8)<<8|cb>>8]++
			if cr != first {
				differ++
			}
		}
	}
	if len(colours) < 8 || differ < 200 {
		b.t.Fatalf("screenshot looks blank: %d colours, %d pixels differ from the corner", len(colours), differ)
	}
	if path != "" {
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	return buf
}
