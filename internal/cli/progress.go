package cli

import (
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress is the one progress bar of every tapedeck command: on standard
// error, only when it is a terminal (callers check IsTerminal), redrawn at
// most every 100 ms, with an ETA, cleared when done. The zero of its scale
// is 0 and its end is total.
type Progress struct {
	bar *progressbar.ProgressBar
}

// NewProgress starts a bar named desc on w up to total; bytes shows the
// values as byte sizes. A nil *Progress (see ProgressIf) ignores every call.
func NewProgress(w io.Writer, desc string, total int64, bytes bool) *Progress {
	opts := []progressbar.Option{progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(desc),
		progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100 * time.Millisecond)}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	}
	return &Progress{bar: progressbar.NewOptions64(total, opts...)}
}

// ProgressIf is NewProgress when on, else nil (a bar that draws nothing).
func ProgressIf(on bool, w io.Writer, desc string, total int64, bytes bool) *Progress {
	if !on {
		return nil
	}
	return NewProgress(w, desc, total, bytes)
}

// Set moves the bar to v.
func (p *Progress) Set(v int64) {
	if p != nil {
		_ = p.bar.Set64(v)
	}
}

// Finish completes and clears the bar.
func (p *Progress) Finish() {
	if p != nil {
		_ = p.bar.Finish()
	}
}

// FollowTime draws a bar named desc on w while a replay runs through the
// recorded span [start, end) ns, polling pos (the replay's position, safe to
// call from another goroutine) every 200 ms; stop ends and clears it. With
// on false or an empty span it draws nothing.
func FollowTime(on bool, w io.Writer, desc string, start, end int64, pos func() int64) (stop func()) {
	if !on || end <= start {
		return func() {}
	}
	const unit = int64(time.Millisecond)
	p := NewProgress(w, desc, (end-start)/unit, false)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				p.Finish()
				return
			case <-t.C:
				if v := pos(); v > start {
					p.Set((min(v, end) - start) / unit)
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
