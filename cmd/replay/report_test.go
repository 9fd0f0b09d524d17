package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/browsertest"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// reportDOM is what the report shows, read from its DOM in the browser.
type reportDOM struct {
	Datasets []map[string]string `json:"datasets"`
	Conns    []map[string]string `json:"conns"`
	Losses   []map[string]string `json:"losses"`
	Checks   map[string]string   `json:"checks"`
	Insts    []map[string]string `json:"insts"`
	Marks    int                 `json:"marks"`
	Down     int                 `json:"down"`
	Charts   int                 `json:"charts"`
}

// readReport collects every [data-f] cell of the tables: its text, and its
// data-ns / data-v value under "NAME.ns" / "NAME.v".
const readReport = `(() => {
  const rows = sel => [...document.querySelectorAll(sel + ' tbody tr')].map(tr => {
    const o = {ds: tr.dataset.ds || '', conn: tr.dataset.conn || ''};
    tr.querySelectorAll('[data-f]').forEach(td => {
      o[td.dataset.f] = td.textContent;
      if (td.dataset.ns !== undefined) o[td.dataset.f + '.ns'] = td.dataset.ns;
      if (td.dataset.v !== undefined) o[td.dataset.f + '.v'] = td.dataset.v;
    });
    return o;
  });
  const checks = {};
  document.querySelectorAll('#checks [data-k]').forEach(b => { checks[b.dataset.k] = b.textContent; });
  return {datasets: rows('#datasets'), conns: rows('#conns'), losses: rows('#losses'), insts: rows('#insts'), checks,
    marks: document.querySelectorAll('#timeline .mark').length, down: document.querySelectorAll('#timeline .down').length,
    charts: document.querySelectorAll('figure.inst-chart svg path.mid').length};
})()`

func ns(v int64) string { return strconv.FormatInt(v, 10) }

// TestReportInBrowser writes the report of both shipped samples and reads
// it in headless Chromium: it loads with no console error and nothing
// else, every dataset, connection and loss figure equals `replay inspect
// --json`, the hash and top-of-book figures equal `replay run --json` with
// the same --hash-check, the timeline marks every loss and the connection
// down, each instrument has its chart, and a screenshot is not blank. The
// same inputs give the same bytes.
func TestReportInBrowser(t *testing.T) {
	pm, hl := expSample(t, venue.Polymarket), expSample(t, venue.Hyperliquid)
	dir := t.TempDir()
	out := filepath.Join(dir, "report.html")
	code, stdout, errs := execReplay(t, "report", pm, hl, "--hash-check=all", "--out", out)
	if code != cli.ExitOK || !strings.Contains(stdout, out) {
		t.Fatalf("report: exit %d %s %s", code, stdout, errs)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", " src=", " href=", "@import", "url("} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("the report is not self-contained: it has %q", bad)
		}
	}
	// Deterministic.
	out2 := filepath.Join(dir, "again.html")
	if code, _, errs := execReplay(t, "report", pm, hl, "--hash-check=all", "--out", out2); code != cli.ExitOK {
		t.Fatalf("report again: %d %s", code, errs)
	}
	if again, _ := os.ReadFile(out2); !bytes.Equal(again, page) {
		t.Errorf("two reports of the same inputs differ")
	}

	var infos []datasets.Info
	for _, ds := range []string{pm, hl} {
		code, js, errs := execReplay(t, "inspect", "--json", ds)
		var info datasets.Info
		if code != cli.ExitOK || json.Unmarshal([]byte(js), &info) != nil {
			t.Fatalf("inspect %s: exit %d %s", ds, code, errs)
		}
		infos = append(infos, info)
	}
	code, js, errs := execReplay(t, "run", "--json", "--hash-check=all", pm, hl)
	var sum replayer.Summary
	if code != cli.ExitOK || json.Unmarshal([]byte(js), &sum) != nil {
		t.Fatalf("run: exit %d %s", code, errs)
	}

	b := browsertest.New(t)
	b.Do(chromedp.Navigate("file://" + out))
	b.WaitJS("the report", `document.querySelectorAll('#datasets tbody tr').length === 2`, 10*time.Second)
	v := browsertest.Eval[reportDOM](b, readReport)

	if len(v.Datasets) != len(infos) {
		t.Fatalf("%d dataset rows", len(v.Datasets))
	}
	var conns, losses int
	for i, info := range infos {
		row := v.Datasets[i]
		want := map[string]string{"dir": info.Dir, "venue": info.Manifest.Venue, "records": strconv.FormatUint(info.Records, 10),
			"frames": strconv.FormatUint(info.ByKind["frame"], 10), "disk_bytes.v": ns(info.DiskBytes),
			"raw_bytes.v": strconv.FormatUint(info.RawBytes, 10), "start_ns.ns": ns(info.StartNs), "end_ns.ns": ns(info.EndNs),
			"losses": strconv.Itoa(len(info.Losses)), "ratio": strconv.FormatFloat(info.Ratio, 'f', 1, 64), "damage": "none"}
		for k, w := range want {
			if row[k] != w {
				t.Errorf("dataset %d %s: page %q, inspect %q", i, k, row[k], w)
			}
		}
		if row["start_ns"] != fmtNsReport(info.StartNs) {
			t.Errorf("dataset %d start shown %q for %d", i, row["start_ns"], info.StartNs)
		}
		for _, c := range info.Conns {
			if conns >= len(v.Conns) {
				t.Fatalf("page has %d connection rows, inspect more", len(v.Conns))
			}
			r := v.Conns[conns]
			conns++
			want := map[string]string{"ds": strconv.Itoa(i), "conn": fmtConn(c.Conn), "url": c.URL, "records": strconv.FormatUint(c.Records, 10),
				"frames": strconv.FormatUint(c.Frames, 10), "frame_bytes.v": strconv.FormatUint(c.FrameBytes, 10),
				"first_ns.ns": ns(c.FirstNs), "last_ns.ns": ns(c.LastNs), "connects": strconv.Itoa(c.Connects),
				"disconnects": strconv.Itoa(c.Disconnects), "losses": strconv.Itoa(c.Losses)}
			for k, w := range want {
				if r[k] != w {
					t.Errorf("dataset %d conn %d %s: page %q, inspect %q", i, c.Conn, k, r[k], w)
				}
			}
		}
		for _, l := range info.Losses {
			if losses >= len(v.Losses) {
				t.Fatalf("page has %d loss rows, inspect more", len(v.Losses))
			}
			r := v.Losses[losses]
			losses++
			want := map[string]string{"ds": strconv.Itoa(i), "seq": strconv.FormatUint(l.Seq, 10), "conn": fmtConn(l.Conn), "kind": l.Kind,
				"wall_ns.ns": ns(l.WallNs), "from_ns.ns": ns(l.FromNs), "to_ns.ns": ns(l.ToNs),
				"dropped": strconv.FormatUint(l.Dropped, 10), "detail": l.Detail}
			for k, w := range want {
				if r[k] != w {
					t.Errorf("dataset %d loss seq %d %s: page %q, inspect %q", i, l.Seq, k, r[k], w)
				}
			}
		}
	}
	if conns != len(v.Conns) || losses != len(v.Losses) || losses == 0 {
		t.Errorf("page: %d connection and %d loss rows; inspect: %d and %d", len(v.Conns), len(v.Losses), conns, losses)
	}
	// Each loss is marked on its connection's row and on each of its
	// instruments' rows; both samples have a connection down.
	if v.Marks < losses || v.Down != 2 {
		t.Errorf("timeline: %d loss marks for %d losses, %d down stretches", v.Marks, losses, v.Down)
	}
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	for k, w := range map[string]string{"hash_checked": u(sum.HashChecked), "hash_mismatch": u(sum.HashChecked - sum.HashOK),
		"top_checked": u(sum.TopChecked), "top_mismatch": u(sum.TopMismatch), "crossed_batches": u(sum.CrossedBatches),
		"decode_errors": u(sum.DecodeErrors), "events": u(sum.Frames)} {
		if v.Checks[k] != w {
			t.Errorf("book check %s: page %q, replay run %q", k, v.Checks[k], w)
		}
	}
	if sum.HashChecked == 0 {
		t.Errorf("no hash checked on the samples")
	}
	if len(v.Insts) != sum.Instruments || v.Charts != len(v.Insts) {
		t.Errorf("%d instrument rows and %d charts, replay saw %d instruments", len(v.Insts), v.Charts, sum.Instruments)
	}
	var hashChecked uint64
	for _, in := range v.Insts {
		n, _ := strconv.ParseUint(in["hash_checked"], 10, 64)
		hashChecked += n
	}
	if hashChecked != sum.HashChecked {
		t.Errorf("instrument rows sum to %d hash checks, replay run %d", hashChecked, sum.HashChecked)
	}
	if n := browsertest.Eval[int](b, `performance.getEntriesByType('resource').length`); n != 0 {
		t.Errorf("the report loaded %d resources", n)
	}
	shot := ""
	if d := os.Getenv("TAPEDECK_SCREENSHOTS"); d != "" {
		shot = filepath.Join(d, "report.png")
	}
	b.Screenshot(shot)
	b.NoProblems()
}

// fmtNsReport is how the report prints a time.
func fmtNsReport(v int64) string {
	return time.Unix(0, v).UTC().Format("2006-01-02 15:04:05.000")
}

func TestReportFlags(t *testing.T) {
	pm := expSample(t, venue.Polymarket)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", pm}, "--out FILE is required"},
		{[]string{"report", "--out", "x.html"}, "DATASET"},
		{[]string{"report", pm, "--out", "x.html", "--buckets", "3"}, "--buckets 3"},
		{[]string{"report", pm, "--out", "x.html", "--hash-check=some"}, "hash"},
	} {
		if code, _, errs := execReplay(t, tc.args...); code != cli.ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %s", tc.args, code, errs)
		}
	}
	// A missing dataset: an error naming it, and no report.
	out := filepath.Join(t.TempDir(), "r.html")
	if code, _, errs := execReplay(t, "report", filepath.Join(t.TempDir(), "nope"), "--out", out); code != cli.ExitError || !strings.Contains(errs, "nope") {
		t.Errorf("missing dataset: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed report left %s", out)
	}
}

// TestReportOfDamage: the report of a damaged dataset is written and shows
// the damage and its gap record; the exit status is 3 unless
// --skip-damaged.
func TestReportOfDamage(t *testing.T) {
	bad := crashedCopy(t, "polymarket")
	damage(t, bad)
	out := filepath.Join(t.TempDir(), "r.html")
	code, _, errs := execReplay(t, "report", bad, "--out", out)
	if code != cli.ExitProblem || !strings.Contains(errs, "report written") || !strings.Contains(errs, "damaged") {
		t.Fatalf("exit %d, %s", code, errs)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("stretches")) || !bytes.Contains(page, []byte(`<td data-f="kind">gap</td>`)) {
		t.Errorf("the report does not show the damage and its gap")
	}
	if code, _, errs := execReplay(t, "report", bad, "--skip-damaged", "--out", out); code != cli.ExitOK {
		t.Errorf("--skip-damaged: exit %d, %s", code, errs)
	}
}
