package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// The fixture's figures are chosen to be checked by hand (testdata/peers-results/README.md):
// 1,000,000 frames; tardis-raw walls 2, 2.5, 1.6 s → 500 k, 400 k, 625 k frames/s; tapedeck-run
// 0.5, 1, 0.4 s → 2 M, 1 M, 2.5 M; tardis-books 40, 50, 20 s → 25 k, 20 k, 50 k; tapedeck-depth
// 10, 8, 12.5 s → 100 k, 125 k, 80 k.
const smallPeers = "testdata/peers-results/small.json"

func readSmall(t *testing.T) (*PeersResult, []byte) {
	t.Helper()
	b, err := os.ReadFile(smallPeers)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePeersResult(b)
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

func TestPeersSections(t *testing.T) {
	p, _ := readSmall(t)
	sec := PeersResultsSection(p, "bench/x.json")
	for _, want := range []string{
		"Generated from `bench/x.json` (written by `ROUNDS=3 MINUTES=15 BOOKS=1 make bench-peers`)",
		"3 rounds, the workloads alternated (even rounds in reverse order), 2026-01-02T03:04:05Z to 03:09:10 UTC, commit `0123456789abcdef0123456789abcdef01234567`, on Test CPU, 2 logical CPUs, linux/amd64, go1.26.8, node v20.0.0, tardis-dev 13.35.3.",
		"Load average 0.50 0.40 0.30 before, 1.50 1.00 0.50 after (a fixture).",
		"1,000,000 frames, 700.0 MB of frame text (SHA-256 `abababababab`), 140.0 MB as tardis-dev's gzip cache",
		"`replay run` digest `xxh64:0123456789abcdef`",
		// medians: frames/s, wall, CPU, frames per CPU-s (1e6/2.2 = 454,545), process wall (2.4), RSS, rounds in round order
		"| tardis-dev raw replay | 500 k | 2.00 | 2.20 | 455 k | 2.40 | 90 MB | - | 500 k, 400 k, 625 k |\n",
		"| tapedeck replay run | 2.00 M | 0.50 | 0.90 | 1.11 M | 0.51 | 40 MB | - | 2.00 M, 1.00 M, 2.50 M |\n",
		"| tardis-dev books | 25 k | 40.00 | 30.00 | 33 k | 40.40 | 130 MB | 2,000,000 | 25 k, 20 k, 50 k |\n",
		"| tapedeck depth export | 100 k | 10.00 | 10.00 | 100 k | 10.00 | 60 MB | 1,800,000 | 100 k, 125 k, 80 k |\n",
		// per CPU-second: 1.11 M / 455 k, 1.11 M / 33 k, 100 k / 33 k
		"- tapedeck run / tardis-dev raw: **4.00×** (medians; per round 4.00×, 2.50×, 4.00×); per CPU-second 2.44×\n",
		"- tapedeck run / tardis-dev books: **80×** (medians; per round 80×, 50×, 50×); per CPU-second 33×\n",
		"- tapedeck depth export / tardis-dev books: **4.00×** (medians; per round 4.00×, 6.25×, 1.60×); per CPU-second 3.00×\n",
		"replay export DATASET --table depth --levels 25 --every-event --format csv --out - > /dev/null\n```\n",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("RESULTS section lacks %q\n%s", want, sec)
		}
	}
	// The workloads come in the JSON's order.
	if i, j := strings.Index(sec, "| tardis-dev raw"), strings.Index(sec, "| tapedeck depth"); i < 0 || j < i {
		t.Errorf("rows out of order\n%s", sec)
	}

	tab := PeersReadmeTable(p, "bench/x.json")
	for _, want := range []string{
		"Same run, same frames (`make bench-peers`: 3 rounds, alternated, medians, 2026-01-02; `bench/x.json`): a generated 15-minute Polymarket recording of 1,000,000 frames (700 MB of frame text), as tardis-dev@13.35.3's cache and as a tapedeck dataset, on Test CPU, 2 logical CPUs; load average 0.50 0.40 0.30 before, 1.50 1.00 0.50 after (a fixture).",
		"| mode | tapedeck | tardis-dev | tapedeck / tardis-dev | per CPU-second: tapedeck, tardis-dev, ratio |\n|---|---|---|---|---|\n",
		"runs its integrity checks; tardis-dev does not decode) | 2.00 M frames/s | 500 k frames/s | 4.00× | 1.11 M, 455 k, 2.44× |\n",
		"after each change that moves the top 25) | 100 k frames/s | 25 k frames/s | 4.00× | 100 k, 33 k, 3.00× |\n",
	} {
		if !strings.Contains(tab, want) {
			t.Errorf("README table lacks %q\n%s", want, tab)
		}
	}

	// Deterministic: the same JSON gives the same bytes.
	q, _ := readSmall(t)
	if PeersResultsSection(q, "bench/x.json") != sec || PeersReadmeTable(q, "bench/x.json") != tab {
		t.Error("the same JSON rendered differently")
	}
}

// Without the book modes (BOOKS=0) the book row says so and no book ratio is claimed.
func TestPeersSectionsRawOnly(t *testing.T) {
	p, _ := readSmall(t)
	p.Workloads = p.Workloads[:2]
	var runs []PeersRun
	for _, r := range p.Runs {
		if r.Workload == PeerTardisRaw || r.Workload == PeerTapedeckRun {
			runs = append(runs, r)
		}
	}
	p.Runs = runs
	p.Finish()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(p.Ratios) != 1 || p.Ratios[0].Of != PeerTapedeckRun || p.Ratios[0].Over != PeerTardisRaw {
		t.Fatalf("ratios %+v", p.Ratios)
	}
	tab := PeersReadmeTable(p, "x")
	if strings.Contains(tab, "books:") {
		t.Errorf("a book row without book runs:\n%s", tab)
	}
	if !strings.Contains(tab, "| 2.00 M frames/s | 500 k frames/s | 4.00× | 1.11 M, 455 k, 2.44× |") {
		t.Errorf("raw row missing:\n%s", tab)
	}
}

// Finish derives what a hand-made fixture states; written and read back, a
// result is unchanged.
func TestPeersFinishRoundTrip(t *testing.T) {
	p, raw := readSmall(t)
	q := *p
	q.Runs = append([]PeersRun(nil), p.Runs...)
	q.Medians, q.Ratios = nil, nil
	q.Finish()
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePeersResult(&b, &q); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Bytes(), []byte(`\u003e`)) {
		t.Error("the commands' > is escaped")
	}
	back, err := ParsePeersResult(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	json.Unmarshal(raw, &want)
	json.Unmarshal(b.Bytes(), &got)
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if !bytes.Equal(wj, gj) {
		t.Errorf("Finish on the fixture's runs gives other figures:\n got %s\nwant %s", gj, wj)
	}
	if PeersResultsSection(back, "x") != PeersResultsSection(p, "x") {
		t.Error("round trip changed the section")
	}
}

func TestPeersMalformed(t *testing.T) {
	_, raw := readSmall(t)
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	run := func(m map[string]any, i int) map[string]any { return m["runs"].([]any)[i].(map[string]any) }
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"not JSON", []byte("{\n  \"schema\": \"tapedeck-bench-peers/1\",\n  \"rounds\": 3,,\n}"), "line 3"},
		{"truncated", raw[:len(raw)/2], "unexpected EOF"},
		{"two objects", append(append([]byte(nil), raw...), raw...), "data after the JSON object"},
		{"unknown field", edit(func(m map[string]any) { m["roundz"] = 3 }), `unknown field "roundz"`},
		{"wrong type", edit(func(m map[string]any) { m["rounds"] = "three" }), "rounds"},
		{"other schema", edit(func(m map[string]any) { m["schema"] = "tapedeck-bench-peers/0" }), `schema "tapedeck-bench-peers/0"`},
		{"no versions", edit(func(m map[string]any) { m["versions"].(map[string]any)["node"] = "" }), "versions"},
		{"missing run", edit(func(m map[string]any) { m["runs"] = m["runs"].([]any)[1:] }), "11 runs, want 12"},
		{"run twice", edit(func(m map[string]any) { run(m, 1)["workload"] = "tardis-raw" }), "runs[1] (round 1, tardis-raw): a second run"},
		{"round out of range", edit(func(m map[string]any) { run(m, 0)["round"] = 4 }), "round out of 1..3"},
		{"short read", edit(func(m map[string]any) { run(m, 2)["frames"] = 999 }), "runs[2] (round 1, tardis-books): frames 999, but the recording has 1000000"},
		{"zero wall", edit(func(m map[string]any) { run(m, 3)["wall_s"] = 0 }), "wall_s 0: want > 0"},
		{"rows disagree", edit(func(m map[string]any) { run(m, 2)["rows"] = 5 }), "rows 5, but the workload's rows are 2000000"},
		{"timer", edit(func(m map[string]any) { run(m, 3)["timer"] = "" }), `timer ""`},
		{"rate disagrees", edit(func(m map[string]any) { run(m, 0)["frames_per_s"] = 600000 }), "frames_per_s 600000, but frames / wall_s = 500000"},
		{"other digest", edit(func(m map[string]any) { run(m, 1)["digest"] = "xxh64:ffff" }), `digest "xxh64:ffff"`},
		{"unknown workload", edit(func(m map[string]any) { m["workloads"].([]any)[0].(map[string]any)["id"] = "tardis-fast" }), `unknown id "tardis-fast"`},
		{"median edited", edit(func(m map[string]any) {
			m["medians"].(map[string]any)["tapedeck-run"].(map[string]any)["frames_per_s"] = 3e6
		}), `medians["tapedeck-run"].frames_per_s 3e+06, but the runs' median is 2e+06`},
		{"ratio edited", edit(func(m map[string]any) { m["ratios"].([]any)[0].(map[string]any)["of_medians"] = 5 }), "of_medians 5, but the medians give 4"},
		{"CPU ratio edited", edit(func(m map[string]any) { m["ratios"].([]any)[2].(map[string]any)["per_cpu_s"] = 2 }), "per_cpu_s 2, but the medians give 3"},
		{"ratio dropped", edit(func(m map[string]any) { m["ratios"] = m["ratios"].([]any)[:2] }), "2 ratios, want 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePeersResult(tt.in)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrPeersResult) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want ErrPeersResult with %q", err, tt.want)
			}
		})
	}
	if _, err := ReadPeersResult("testdata/peers-results/missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestReplaceBlock(t *testing.T) {
	doc := []byte("# T\n\n<!-- x:begin -->\nold\nlines\n<!-- x:end -->\n\nafter\n")
	got, err := ReplaceBlock(doc, "x", "new")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# T\n\n<!-- x:begin -->\nnew\n<!-- x:end -->\n\nafter\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	again, err := ReplaceBlock(got, "x", "new\n")
	if err != nil || !bytes.Equal(again, got) {
		t.Fatalf("not idempotent: %q, %v", again, err)
	}
	for _, tt := range []struct{ doc, want string }{
		{"no markers\n", `"<!-- x:begin -->": found 0 times`},
		{"<!-- x:begin -->\n<!-- x:begin -->\n<!-- x:end -->\n", "found 2 times"},
		{"<!-- x:begin -->\n", `"<!-- x:end -->": found 0 times`},
		{"<!-- x:end -->\n<!-- x:begin -->\n", "comes before"},
		{"<!-- x:begin -->\ntext <!-- x:end -->\n", "must start their lines"},
	} {
		if _, err := ReplaceBlock([]byte(tt.doc), "x", "b"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.doc, err, tt.want)
		}
	}
}

// The committed docs cannot drift from the committed JSON: their bench-peers
// blocks are exactly what the generator gives for it (make bench-peers-results
// rewrites them).
func TestCommittedPeersDocs(t *testing.T) {
	results, err := os.ReadFile("RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var newResults, newReadme []byte
	p, err := ReadPeersResult("RESULTS-peers.json")
	switch {
	case errors.Is(err, os.ErrNotExist): // nothing measured yet: both blocks say so
		if newResults, err = ReplaceBlock(results, PeersMarker, PeersPlaceholder); err != nil {
			t.Fatal(err)
		}
		if newReadme, err = ReplaceBlock(readme, PeersMarker, PeersPlaceholder); err != nil {
			t.Fatal(err)
		}
	case err != nil:
		t.Fatal(err)
	default:
		if newResults, newReadme, err = RegeneratePeersDocs(p, PeersFile, results, readme); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []struct{ name, got, want []byte }{
		{[]byte("bench/RESULTS.md"), results, newResults}, {[]byte("README.md"), readme, newReadme},
	} {
		if !bytes.Equal(d.got, d.want) {
			got, _ := PeersBlock(d.got)
			want, _ := PeersBlock(d.want)
			t.Errorf("%s's bench-peers block is not what %s gives (run make bench-peers-results):\n--- committed\n%s\n--- generated\n%s", d.name, PeersFile, got, want)
		}
	}
	// The section WriteResults lays out around the block is the committed one.
	var b strings.Builder
	if err := WriteResults(&b, &Report{Version: ReportVersion, Env: CurrentEnv()}, nil, "make bench-results"); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(b.String()[strings.Index(b.String(), "## tardis-dev"):], "<!-- "+PeersMarker+":begin -->")
	if !bytes.Contains(results, []byte(head+"<!-- "+PeersMarker+":begin -->")) {
		t.Errorf("RESULTS.md's tardis-dev heading is not WriteResults':\n%s", head)
	}
	if !strings.Contains(b.String(), "<!-- "+PeersMarker+":begin -->\n"+PeersPlaceholder+"<!-- "+PeersMarker+":end -->") {
		t.Error("WriteResults leaves no bench-peers block")
	}
}
