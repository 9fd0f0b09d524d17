package backtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
)

// walkFrames generates n Polymarket frames of one binary market whose
// price walks at random (seeded): each YES book is followed by its mirror
// NO book, every fifth by a trade at the best bid. Jumps of up to four
// ticks move through the market maker's quotes, so it fills all along.
func walkFrames(n int) []string {
	level := func(p, size int) string { return fmt.Sprintf(`{"price":"0.%02d","size":"%d"}`, p, size) }
	bookOf := func(id string, bid int) string {
		var b, a []string
		for i := range 3 {
			b = append(b, level(bid-i, 100+10*i))
			a = append(a, level(bid+2+i, 100+10*i))
		}
		return `{"event_type":"book","asset_id":"` + id + `","market":"` + pmMarket + `","timestamp":"TS","hash":"",` +
			`"bids":[` + strings.Join(b, ",") + `],"asks":[` + strings.Join(a, ",") + `],"tick_size":"0.01"}`
	}
	var out []string
	mid, x := 50, uint64(1)
	for len(out) < n {
		x = x*6364136223846793005 + 1442695040888963407
		mid = min(max(mid+int(x>>32%9)-4, 10), 90) // −4 … +4 ticks
		out = append(out, bookOf(pmYes, mid-1), bookOf(pmNo, 100-mid-1))
		if len(out)%10 == 0 {
			out = append(out, `{"event_type":"last_trade_price","asset_id":"`+pmYes+`","market":"`+pmMarket+
				`","price":"0.`+strconv.Itoa(mid-1)+`","size":"60","side":"SELL","fee_rate_bps":"0","timestamp":"TS"}`)
		}
	}
	return out[:n]
}

// heapProbe reads the live heap, after a collection, at the first event
// received at or after atNs: late in the run, with every engine's state
// as it stands then.
type heapProbe struct {
	atNs int64
	heap uint64
}

func (p *heapProbe) OnEvent(ev *feed.Event) error {
	if p.heap == 0 && ev.RecvNs >= p.atNs {
		runtime.GC()
		runtime.GC() // what sync.Pools hold survives one collection
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		p.heap = m.HeapAlloc
	}
	return nil
}

// sweepHeap runs a points-point mm sweep over a generated recording of
// frames frames (100 ms apart) and returns the live heap late in the run
// (nine tenths of the way) and the results.
func sweepHeap(t *testing.T, dir string, frames, points int, summaryOnly bool) (uint64, []*Result) {
	t.Helper()
	specs := make([]Spec, points)
	for i := range specs {
		s, ps, err := NewBuiltin("mm", Params{"spread": strconv.FormatFloat(0.02+0.01*float64(i%2), 'f', 2, 64),
			"size": strconv.Itoa(5 + 5*(i/2)), "max_position": "1000000", "skew": "0"})
		if err != nil {
			t.Fatal(err)
		}
		specs[i] = Spec{Strategy: s, Config: Config{Cash: cash(t, "1000000"), Latency: ConstantLatency{EntryNs: 5e6, AckNs: 5e6, CancelNs: 5e6}},
			Name: "mm", Params: ps}
	}
	probe := &heapProbe{atNs: t0 + int64(frames)*100e6*9/10}
	res, _, err := RunMany(context.Background(), []string{dir}, specs, ManyOptions{SummaryOnly: summaryOnly, Also: []feed.Subscriber{probe},
		// No blocks decompressed ahead: what the reader holds then is the
		// same at any point of any recording.
		Replay: []replayer.Option{replayer.WithReadAhead(0)}})
	if err != nil {
		t.Fatal(err)
	}
	if probe.heap == 0 {
		t.Fatal("the probe never ran")
	}
	runtime.KeepAlive(res)
	return probe.heap, res
}

// TestSummaryOnlyHeapBounded: while a summary-only sweep runs, the heap it
// holds does not grow with the recording's length (a recording four times
// as long: four times the orders, fills and equity samples), while a full
// sweep's grows with it; and the summary-only runs' summaries and digests
// are the full runs' to the last bit, their fills' digest records spilled
// to a temporary file that is gone at the end (issue 28).
func TestSummaryOnlyHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("four 8-point sweeps over generated recordings")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	defer func(n int) { spillBytes = n }(spillBytes)
	spillBytes = 1 << 10 // spill often: the digest must come out the same

	const points, short = 8, 3000 // 5 minutes of frames
	dirShort, dirLong := writePM(t, "", walkFrames(short)...), writePM(t, "", walkFrames(4*short)...)
	soShort, _ := sweepHeap(t, dirShort, short, points, true)
	soLong, sumRes := sweepHeap(t, dirLong, 4*short, points, true)
	fullShort, _ := sweepHeap(t, dirShort, short, points, false)
	fullLong, fullRes := sweepHeap(t, dirLong, 4*short, points, false)
	growth := func(a, b uint64) float64 { return (float64(b) - float64(a)) / points }
	t.Logf("live heap late in the run, per point, ×4 the recording less ×1: summary only %+.0f B (%d → %d B in all), full %+.0f B (%d → %d B)",
		growth(soShort, soLong), soShort, soLong, growth(fullShort, fullLong), fullShort, fullLong)

	minFills := sumRes[0].Summary.Fills
	for i, r := range sumRes {
		f := fullRes[i]
		if r.Summary.Digest != f.Summary.Digest || r.Summary.Fills != f.Summary.Fills || r.Summary.Orders != f.Summary.Orders ||
			r.Summary.PnL != f.Summary.PnL || r.Summary.FillRatio != f.Summary.FillRatio || r.Summary.Markouts["1s"] != f.Summary.Markouts["1s"] {
			t.Fatalf("point %d: summary only %+v, full %+v", i, r.Summary, f.Summary)
		}
		if len(r.Errors) > 0 {
			t.Fatalf("point %d: %v", i, r.Errors)
		}
		minFills = min(minFills, r.Summary.Fills)
	}
	// Each fill's encoded record takes a byte per field at least (fillLog):
	// every run spilled four times or more.
	leastRecord := len(fillFields(&Fill{}))
	if minFills*leastRecord < 4*spillBytes || sumRes[0].Summary.Orders < 4000 {
		t.Fatalf("%d fills, %d orders: too few to show anything", minFills, sumRes[0].Summary.Orders)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Fatalf("%d temporary files left behind (%s …)", len(left), left[0].Name())
	}
	// The full runs show the probe sees what runs keep: orders, fills and
	// series, by the hundred kB per point over the longer recording.
	if growth(fullShort, fullLong) < 200<<10 {
		t.Fatalf("full runs grew by %.0f B per point: the measure is blind", growth(fullShort, fullLong))
	}
	// A summary-only run holds its open orders, reports in flight and
	// fills' records below spillBytes: the same whatever the length (a
	// margin for the collector's noise and the buffers' doubling).
	if g := growth(soShort, soLong); g > 16<<10 {
		t.Fatalf("summary-only runs grew by %.0f B per point over a recording four times as long", g)
	}
}

// watcher runs the market maker and looks at what the strategy's view
// keeps: its first order once done, the fills Context.Fills holds.
type watcher struct {
	*MM
	firstGone bool // Context.Order(1) answered nil
	cancelErr error
	maxFills  int
	endFills  int
}

func (w *watcher) OnEvent(ctx *Context, e *feed.Event) {
	w.MM.OnEvent(ctx, e)
	w.maxFills = max(w.maxFills, len(ctx.Fills()))
}

func (w *watcher) OnEnd(ctx *Context) {
	w.firstGone = ctx.Order(1) == nil
	w.cancelErr = ctx.Cancel(1)
	w.endFills = len(ctx.Fills())
}

// A summary-only run forgets done orders and reported fills, as
// ManyOptions.SummaryOnly says, and with measured latencies, whose reports
// overtake each other (a 1 s round trip beside 2 ms ones), its summaries
// and digests are still the full runs', with one worker or two.
func TestSummaryOnlyForgets(t *testing.T) {
	dir := writePM(t, "", walkFrames(2000)...)
	for _, workers := range []int{1, 2} {
		var sums [2][]Summary
		var ws [2][]*watcher
		for mode, summaryOnly := range []bool{false, true} {
			var specs []Spec
			for i := range 4 {
				s, ps, err := NewBuiltin("mm", Params{"spread": "0.02", "size": strconv.Itoa(5 * (i + 1)), "skew": "0"})
				if err != nil {
					t.Fatal(err)
				}
				w := &watcher{MM: s.(*MM)}
				ws[mode] = append(ws[mode], w)
				lat := &SampledLatency{RoundTrips: []int64{4e6, 2e9, 2e6, 300e6, 10e6, 150e6}[i:]}
				specs = append(specs, Spec{Strategy: w, Config: Config{Cash: cash(t, "100000"), Latency: lat}, Name: "mm", Params: ps})
			}
			res, _, err := RunMany(context.Background(), []string{dir}, specs, ManyOptions{SummaryOnly: summaryOnly, Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				sums[mode] = append(sums[mode], r.Summary)
			}
		}
		for i := range sums[0] {
			full, so := sums[0][i], sums[1][i]
			if !reflect.DeepEqual(full, so) {
				t.Fatalf("workers %d point %d: summary only %+v, full %+v", workers, i, so, full)
			}
			if full.Fills == 0 || full.CancelRejects == 0 {
				t.Fatalf("point %d: %d fills, %d refused cancels: the latencies overtake nothing", i, full.Fills, full.CancelRejects)
			}
			wf, ws := ws[0][i], ws[1][i]
			var e *Error
			if wf.firstGone || wf.endFills < full.Fills/2 || !errors.As(wf.cancelErr, &e) || e.Reason != "order is cancelled" {
				t.Fatalf("full run's view: order 1 gone %v, %d fills of %d, cancel: %v", wf.firstGone, wf.endFills, full.Fills, wf.cancelErr)
			}
			if !ws.firstGone || ws.maxFills >= full.Fills/4 || !errors.As(ws.cancelErr, &e) || e.Reason != "order is done" {
				t.Fatalf("summary-only run's view: order 1 gone %v, at most %d fills of %d at once, cancel: %v", ws.firstGone, ws.maxFills, full.Fills, ws.cancelErr)
			}
		}
	}
}
