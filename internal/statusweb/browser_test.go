package statusweb_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tapedeck/tapedeck/internal/browsertest"
)

// pageView is what the status page shows, read from its DOM.
type pageView struct {
	Totals map[string]string `json:"totals"`
	Conns  []struct {
		Conn, State, Frames, Reconnects, Stalls, Overloads string
	} `json:"conns"`
	Insts []struct {
		Inst, Conn, Bid, Ask, Stalls, Gaps, Hash string
	} `json:"insts"`
	Events  []string `json:"events"`
	Updates string   `json:"updates"`
}

const readPage = `(() => {
  const f = (tr, k) => { const c = tr.querySelector('[data-f="' + k + '"]'); return c ? c.textContent : null; };
  const totals = {};
  document.querySelectorAll('#totals [data-k]').forEach(b => { totals[b.dataset.k] = b.textContent; });
  return {
    totals,
    conns: [...document.querySelectorAll('#conns tbody tr')].map(tr => ({Conn: f(tr, 'conn'), State: f(tr, 'state'),
      Frames: f(tr, 'frames'), Reconnects: f(tr, 'reconnects'), Stalls: f(tr, 'stalls'), Overloads: f(tr, 'overloads')})),
    insts: [...document.querySelectorAll('#insts tbody tr')].map(tr => ({Inst: f(tr, 'instrument'), Conn: f(tr, 'conn'),
      Bid: tr.querySelector('[data-f="bid"]').dataset.px, Ask: tr.querySelector('[data-f="ask"]').dataset.px,
      Stalls: f(tr, 'stalls'), Gaps: f(tr, 'gaps'), Hash: f(tr, 'hash_mismatches')})),
    events: [...document.querySelectorAll('#events tbody tr')].map(tr => f(tr, 'seq')),
    updates: document.body.dataset.updates || "0",
  };
})()`

func u(n uint64) string { return strconv.FormatUint(n, 10) }

// TestStatusPageInBrowser loads the status page of a real capture in
// headless Chromium: it loads with no console error and nothing from the
// network, it changes when the test exchange sends frames (and not while it
// is silent), and once the capture stopped every figure it shows equals
// /status.json. A screenshot is taken and checked non-blank, and on a phone
// sized screen the page does not overflow sideways.
func TestStatusPageInBrowser(t *testing.T) {
	c := startCapture(t, "")
	defer c.close()
	b := browsertest.New(t)
	b.Do(chromedp.Navigate(c.srv.URL + "/"))
	b.WaitJS("a connected connection and two books", `(() => {
	  const s = document.querySelector('#conns tr[data-conn="1"] [data-f="state"]');
	  const bids = [...document.querySelectorAll('#insts [data-f="bid"]')].filter(td => td.dataset.px);
	  return s && s.textContent === 'connected' && bids.length === 2;
	})()`, 30*time.Second)

	// Silent exchange: the frame count on the page settles.
	c.ex.Stall(true)
	frames := func() (int, int) {
		v := browsertest.Eval[pageView](b, readPage)
		n, _ := strconv.Atoi(v.Totals["frames"])
		up, _ := strconv.Atoi(v.Updates)
		return n, up
	}
	waitUpdates := func(k int) {
		_, up := frames()
		b.WaitJS(fmt.Sprintf("%d page updates", k), fmt.Sprintf(`Number(document.body.dataset.updates) >= %d`, up+k), 20*time.Second)
	}
	waitUpdates(2)
	f1, _ := frames()
	waitUpdates(1)
	if f2, _ := frames(); f2 != f1 {
		t.Fatalf("frames on the page moved from %d to %d while the exchange was silent", f1, f2)
	}
	// Frames arrive: the page shows them without a reload.
	c.ex.Stall(false)
	b.WaitJS("more frames on the page", fmt.Sprintf(`Number(document.querySelector('#totals [data-k="frames"]').textContent) > %d`, f1), 20*time.Second)

	// Stopped: the figures are final; the page must show exactly /status.json.
	c.stop()
	waitUpdates(2)
	v := browsertest.Eval[pageView](b, readPage)
	st, _ := getStatus(t, c.srv.URL)
	want := map[string]string{"frames": u(st.Stats.Frames), "dropped": u(st.Stats.Dropped), "reconnects": u(st.Stats.Reconnects),
		"stalls": u(st.Stats.Stalls), "write_errors": u(st.Stats.WriteErrors), "hash_mismatches": u(st.Live.HashMismatches),
		"top_mismatches": u(st.Live.TopMismatches), "live_skipped": u(st.Live.Skipped)}
	for k, w := range want {
		if v.Totals[k] != w {
			t.Errorf("page %s = %q, status.json %s", k, v.Totals[k], w)
		}
	}
	if st.Live.HashMismatches == 0 {
		t.Errorf("the fake market's hash mismatches are not counted")
	}
	if len(v.Conns) != len(st.Conns) {
		t.Fatalf("page shows %d connections, status.json %d", len(v.Conns), len(st.Conns))
	}
	for i, pc := range v.Conns {
		sc := st.Conns[i]
		if pc.Conn != u(uint64(sc.Conn)) || pc.State != sc.State || pc.Frames != u(sc.Frames) || pc.Reconnects != u(sc.Reconnects) ||
			pc.Stalls != u(sc.Stalls) || pc.Overloads != u(sc.Overloads) {
			t.Errorf("connection row %+v, status.json %+v", pc, sc)
		}
	}
	if sc := st.Conns[0]; sc.State != "closed" {
		t.Errorf("after the stop the connection is %q, want closed", sc.State)
	}
	if len(v.Insts) != len(st.Instruments) || len(v.Insts) != 2 {
		t.Fatalf("page shows %d instruments, status.json %d", len(v.Insts), len(st.Instruments))
	}
	var pageHash uint64
	for i, pi := range v.Insts {
		si := st.Instruments[i]
		if pi.Inst != si.Instrument || pi.Conn != u(uint64(si.Conn)) || pi.Bid != si.BidPx || pi.Ask != si.AskPx ||
			pi.Stalls != u(si.Stalls) || pi.Gaps != u(si.Gaps) || pi.Hash != u(si.HashMismatches) {
			t.Errorf("instrument row %+v, status.json %+v", pi, si)
		}
		if si.BidPx == "" || si.AskPx == "" {
			t.Errorf("%s: no top of book in status.json", si.Instrument)
		}
		n, _ := strconv.ParseUint(pi.Hash, 10, 64)
		pageHash += n
	}
	if pageHash == 0 || pageHash != st.Live.HashMismatches {
		t.Errorf("instrument rows show %d hash mismatches, the live engine counted %d", pageHash, st.Live.HashMismatches)
	}
	if len(v.Events) != len(st.Events) {
		t.Errorf("page shows %d control records, status.json %d", len(v.Events), len(st.Events))
	} else {
		for i, seq := range v.Events {
			if seq != u(st.Events[i].Seq) {
				t.Errorf("control record %d: page seq %s, status.json %d", i, seq, st.Events[i].Seq)
			}
		}
	}
	// Nothing but the page's own origin was loaded.
	if n := browsertest.Eval[int](b, `performance.getEntriesByType('resource').filter(e => !e.name.startsWith(location.origin)).length`); n != 0 {
		t.Errorf("%d resources from elsewhere", n)
	}
	dir := os.Getenv("TAPEDECK_SCREENSHOTS")
	shot := func(name string) string {
		if dir == "" {
			return ""
		}
		return filepath.Join(dir, name)
	}
	b.Screenshot(shot("status.png"))
	// A phone: the page fits the width (tables scroll inside their box).
	b.Do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	b.WaitJS("relayout", `window.innerWidth === 390`, 5*time.Second)
	if over := browsertest.Eval[int](b, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		wide := browsertest.Eval[[]string](b, `[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth && !e.closest('.scroll')).map(e => e.tagName + '.' + e.className + '#' + e.id).slice(0, 10)`)
		t.Errorf("on a 390 px screen the page is %d px too wide: %v", over, wide)
	}
	b.Screenshot(shot("status-phone.png"))
	b.NoProblems()
}
