package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// crashedCopy copies a sample and marks it as a capture that was killed
// (no clean flag, no end), as issue 13 item 1 found it.
func crashedCopy(t *testing.T, venueName string) string {
	t.Helper()
	dir := sampleCopy(t, venueName)
	mp := filepath.Join(dir, datasets.ManifestName)
	b, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "clean")
	delete(m, "end_ns")
	delete(m, "checksum")
	b, _ = json.Marshal(m)
	if err := os.WriteFile(mp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

type runJSON struct {
	Records uint64            `json:"records"`
	Frames  uint64            `json:"frames"`
	Losses  map[string]uint64 `json:"losses"`
	Damaged *struct {
		Records      uint64 `json:"records"`
		RecordsExact bool   `json:"records_exact"`
		Bytes        int64  `json:"bytes"`
		FromNs       int64  `json:"from_ns"`
		ToNs         int64  `json:"to_ns"`
	} `json:"damaged"`
}

// TestDamagedReplayVerbs: one flipped byte before the tail of a crashed
// capture is a loss, not a torn tail. run, books, export and bench step over
// the damaged block, replay everything after it, say what was skipped and
// exit 3; --skip-damaged makes it a warning and exit 0.
func TestDamagedReplayVerbs(t *testing.T) {
	good := crashedCopy(t, "polymarket")
	bad := crashedCopy(t, "polymarket")
	damage(t, bad)

	code, out, errs := execReplay(t, "run", "--json", good)
	var g runJSON
	if err := json.Unmarshal([]byte(out), &g); code != 0 || err != nil || g.Damaged != nil {
		t.Fatalf("undamaged: exit %d %v\n%s%s", code, err, out, errs)
	}

	code, out, errs = execReplay(t, "run", "--json", bad)
	var b runJSON
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != cli.ExitProblem || !strings.Contains(errs, "damaged data") || !strings.Contains(errs, "--skip-damaged") {
		t.Fatalf("damaged: exit %d, stderr %s", code, errs)
	}
	d := b.Damaged
	if d == nil || d.Records == 0 || !d.RecordsExact || d.Bytes == 0 || d.FromNs == 0 || d.ToNs <= d.FromNs {
		t.Fatalf("damaged summary %+v", d)
	}
	// Nothing good is dropped: every record but the lost ones, plus the gap
	// record standing for them.
	if b.Records != g.Records-d.Records+1 || b.Frames >= g.Frames || b.Frames+d.Records < g.Frames || b.Losses["gap"] != g.Losses["gap"]+1 {
		t.Fatalf("records %d (undamaged %d, lost %d), frames %d of %d, losses %v", b.Records, g.Records, d.Records, b.Frames, g.Frames, b.Losses)
	}

	code, out, errs = execReplay(t, "run", "--skip-damaged", bad)
	if code != cli.ExitOK || !strings.Contains(out, "DAMAGED") || !strings.Contains(errs, "warning: damaged data skipped") {
		t.Fatalf("--skip-damaged: exit %d\n%s%s", code, out, errs)
	}

	for _, verb := range [][]string{{"books"}, {"bench", "--runs", "1"}} {
		if code, _, errs := execReplay(t, append(verb, bad)...); code != cli.ExitProblem || !strings.Contains(errs, "damaged") {
			t.Fatalf("%s: exit %d, %s", verb[0], code, errs)
		}
		if code, _, errs := execReplay(t, append(verb, "--skip-damaged", bad)...); code != cli.ExitOK {
			t.Fatalf("%s --skip-damaged: exit %d, %s", verb[0], code, errs)
		}
	}

	outFile := filepath.Join(t.TempDir(), "trades.csv")
	if code, _, errs := execReplay(t, "export", bad, "--table", "trades", "--out", outFile); code != cli.ExitProblem || !strings.Contains(errs, "nothing written") {
		t.Fatalf("export: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(outFile); !os.IsNotExist(err) {
		t.Fatalf("export of a damaged dataset left %s: %v", outFile, err)
	}
	if code, _, errs := execReplay(t, "export", "--skip-damaged", bad, "--table", "trades", "--out", outFile); code != cli.ExitOK || !strings.Contains(errs, "warning") {
		t.Fatalf("export --skip-damaged: exit %d, %s", code, errs)
	}
	if fi, err := os.Stat(outFile); err != nil || fi.Size() == 0 {
		t.Fatalf("export --skip-damaged wrote nothing: %v", err)
	}
}

// TestInspectAndLsExitOnDamage: inspect and ls read past damage, show it and
// exit 3; a sound dataset stays exit 0.
func TestInspectAndLsExitOnDamage(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "good")
	bad := filepath.Join(root, "bad")
	for _, d := range []string{good, bad} {
		if err := os.CopyFS(d, os.DirFS(filepath.Join("..", "..", "datasets", "samples", "polymarket"))); err != nil {
			t.Fatal(err)
		}
	}
	seg := damage(t, bad)
	if code, out, errs := execReplay(t, "inspect", "--format", "table", good); code != cli.ExitOK || strings.Contains(out, "DAMAGED") {
		t.Fatalf("inspect sound: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := execReplay(t, "inspect", "--format", "table", bad)
	if code != cli.ExitProblem || !strings.Contains(out, "DAMAGED (1)") || !strings.Contains(out, seg) || !strings.Contains(errs, "damaged") {
		t.Fatalf("inspect damaged: exit %d\n%s%s", code, out, errs)
	}
	// The loss shows among the losses as the gap record standing for it.
	if !strings.Contains(out, "gap") {
		t.Fatalf("inspect damaged: no gap among the losses\n%s", out)
	}
	code, out, errs = execReplay(t, "ls", "--format", "table", root)
	if code != cli.ExitProblem || !strings.Contains(out, "damaged") || !strings.Contains(errs, "1 of 2 datasets") {
		t.Fatalf("ls: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := execReplay(t, "ls", good); code != cli.ExitOK {
		t.Fatalf("ls sound: exit %d %s", code, errs)
	}
}

// TestVerifyUnreadableSegment: a segment that cannot be opened is a
// problem found (exit 3), listed with the others, not a failure to verify.
func TestVerifyUnreadableSegment(t *testing.T) {
	dir := sampleCopy(t, "hyperliquid")
	seg2 := filepath.Join(dir, "00000002.seg")
	if err := os.Symlink(filepath.Join(dir, "gone"), seg2); err != nil {
		t.Fatal(err)
	}
	code, out, errs := execReplay(t, "verify", dir)
	if code != cli.ExitProblem || !strings.Contains(out, seg2) || !strings.Contains(out, "unreadable") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// TestRunFromPastTheEnd: a window that starts after the last record
// replays nothing; that is said and is exit 3, not a silent success.
func TestRunFromPastTheEnd(t *testing.T) {
	dir := sampleCopy(t, "hyperliquid")
	m, err := datasets.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Unix(0, m.EndNs+int64(time.Hour)).UTC().Format(time.RFC3339)
	code, _, errs := execReplay(t, "run", "--from", from, dir)
	if code != cli.ExitProblem || !strings.Contains(errs, "past the last record") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, _, errs := execReplay(t, "run", "--from", "+1s", dir); code != cli.ExitOK {
		t.Fatalf("--from +1s: exit %d: %s", code, errs)
	}
}

// TestRepairVerifiesAfter (issue 13 item 14): repair says "repaired" only
// when verify then passes; what it must not fix (swapped segments) is exit 3
// naming the files, and it changes nothing then.
func TestRepairVerifiesAfter(t *testing.T) {
	bad := crashedCopy(t, "polymarket")
	damage(t, bad)
	code, out, errs := execReplay(t, "repair", bad)
	if code != cli.ExitOK || !strings.Contains(out, "(verify: ok)") || !strings.Contains(out, "gap record seq") || !strings.Contains(out, "recovered") {
		t.Fatalf("repair: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := execReplay(t, "verify", bad); code != cli.ExitOK {
		t.Fatalf("verify after repair: exit %d\n%s", code, out)
	}
	// Inspect shows the loss and the repaired state; exit 0, the damage is gone.
	code, out, _ = execReplay(t, "inspect", "--format", "table", bad)
	if code != cli.ExitOK || !strings.Contains(out, "repaired") || !strings.Contains(out, "repair: ") {
		t.Fatalf("inspect after repair: exit %d\n%s", code, out)
	}

	// Swapped segments: refused, exit 3, nothing changed.
	dir := t.TempDir()
	w, err := datasets.Create(dir+"/ds", datasets.Manifest{Venue: "hyperliquid", Endpoint: "wss://api.hyperliquid.xyz/ws"},
		datasets.WithSegmentDuration(time.Minute), datasets.WithFlushInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := w.Append(&datasets.Record{Kind: datasets.KindFrame, WallNs: int64(i+1) * 1e9, MonoNs: int64(i + 1), Payload: []byte(`{"channel":"pong","pad":"` + fmt.Sprint(i) + strings.Repeat("x", 2000) + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, b := dir+"/ds/00000001.seg", dir+"/ds/00000002.seg"
	ab, errA := os.ReadFile(a)
	bb, errB := os.ReadFile(b)
	if errA != nil || errB != nil {
		t.Fatalf("want 2+ segments: %v %v", errA, errB)
	}
	os.WriteFile(a, bb, 0o644)
	os.WriteFile(b, ab, 0o644)
	code, out, errs = execReplay(t, "repair", dir+"/ds")
	if code != cli.ExitProblem || !strings.Contains(errs, "00000001.seg") || !strings.Contains(errs, "cannot repair") {
		t.Fatalf("repair of swapped segments: exit %d\n%s%s", code, out, errs)
	}
	if now, _ := os.ReadFile(a); string(now) != string(bb) {
		t.Fatal("repair changed a swapped segment")
	}
}

// resegmented rewrites a shipped sample into segments of one minute of
// record time each (the records byte for byte, seqs as before).
func resegmented(t *testing.T, venueName string) (string, []string) {
	t.Helper()
	src := filepath.Join("..", "..", "datasets", "samples", venueName)
	r, err := datasets.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := filepath.Join(t.TempDir(), venueName)
	m := r.Manifest()
	m.Clean, m.EndNs = false, 0
	w, err := datasets.Create(dir, m, datasets.WithSegmentDuration(time.Minute), datasets.WithFlushInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		if _, err := w.Append(r.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil || r.Err() != nil {
		t.Fatal(err, r.Err())
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) < 4 {
		t.Fatalf("%d segments, want 4 or more", len(segs))
	}
	return dir, segs
}

// TestMissingAndDuplicatedSegmentVerbs is issue 13 item 3 on the command
// line: a segment file removed is a loss every replaying verb reports
// (exit 3, or 0 with --skip-damaged); a segment copied over the next is an
// error naming both files; repair fixes the first and sets the copy aside.
func TestMissingAndDuplicatedSegmentVerbs(t *testing.T) {
	dir, segs := resegmented(t, "polymarket")
	code, out, _ := execReplay(t, "run", "--json", dir)
	var whole runJSON
	if err := json.Unmarshal([]byte(out), &whole); code != 0 || err != nil {
		t.Fatalf("whole: exit %d %v", code, err)
	}
	os.Remove(segs[1])
	os.Remove(strings.TrimSuffix(segs[1], ".seg") + ".idx")
	code, out, errs := execReplay(t, "run", "--json", dir)
	var b runJSON
	if err := json.Unmarshal([]byte(out), &b); err != nil || code != cli.ExitProblem || b.Damaged == nil || !b.Damaged.RecordsExact {
		t.Fatalf("missing segment: exit %d %v\n%s", code, err, errs)
	}
	if b.Records != whole.Records-b.Damaged.Records+1 || b.Losses["gap"] != whole.Losses["gap"]+1 {
		t.Fatalf("records %d of %d, lost %d, losses %v", b.Records, whole.Records, b.Damaged.Records, b.Losses)
	}
	if code, out, _ := execReplay(t, "run", "--skip-damaged", dir); code != cli.ExitOK || !strings.Contains(out, filepath.Base(segs[1])) {
		t.Fatalf("--skip-damaged: exit %d\n%s", code, out)
	}
	if code, out, _ := execReplay(t, "repair", dir); code != cli.ExitOK || !strings.Contains(out, filepath.Base(segs[1])) {
		t.Fatalf("repair: exit %d\n%s", code, out)
	}
	if code, _, errs := execReplay(t, "run", dir); code != cli.ExitOK {
		t.Fatalf("run after repair: exit %d %s", code, errs)
	}

	// A copy of segment 3 over segment 4: an error naming both, whatever
	// the flags; repair sets the copy aside and keeps the range.
	dir, segs = resegmented(t, "polymarket")
	before, _ := datasets.ReadManifest(dir)
	c, _ := os.ReadFile(segs[2])
	os.WriteFile(segs[3], c, 0o644)
	for _, args := range [][]string{{"run", dir}, {"run", "--skip-damaged", dir}, {"books", "--skip-damaged", dir}} {
		code, _, errs := execReplay(t, args...)
		if code != cli.ExitError || !strings.Contains(errs, filepath.Base(segs[3])) || !strings.Contains(errs, "out of order") {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
	}
	if code, out, _ := execReplay(t, "repair", dir); code != cli.ExitOK || !strings.Contains(out, "set aside") {
		t.Fatalf("repair: exit %d\n%s", code, out)
	}
	if m, _ := datasets.ReadManifest(dir); m.EndNs < before.EndNs && before.EndNs != 0 {
		t.Fatalf("range shrank to %d from %d", m.EndNs, before.EndNs)
	}
	if code, _, errs := execReplay(t, "verify", dir); code != cli.ExitOK {
		t.Fatalf("verify after repair: exit %d %s", code, errs)
	}
}

// TestRepairRebuildsManifest is issue 13 item 12 on the command line: a
// corrupt manifest makes the dataset unreadable; repair rebuilds it from the
// segments (the venue told from the frames), says what it could not
// recover, and the replay then gives the same records.
func TestRepairRebuildsManifest(t *testing.T) {
	dir := sampleCopy(t, "polymarket")
	code, out, _ := execReplay(t, "run", "--json", dir)
	var whole runJSON
	if err := json.Unmarshal([]byte(out), &whole); code != 0 || err != nil {
		t.Fatalf("whole: exit %d %v", code, err)
	}
	mp := filepath.Join(dir, datasets.ManifestName)
	b, _ := os.ReadFile(mp)
	os.WriteFile(mp, b[:len(b)/3], 0o644)
	if code, _, errs := execReplay(t, "run", dir); code != cli.ExitError || !strings.Contains(errs, "manifest") {
		t.Fatalf("corrupt manifest: exit %d %s", code, errs)
	}
	code, out, errs := execReplay(t, "repair", dir)
	if code != cli.ExitOK || !strings.Contains(out, "manifest rebuilt") || !strings.Contains(out, "subscriptions") {
		t.Fatalf("repair: exit %d\n%s%s", code, out, errs)
	}
	m, err := datasets.ReadManifest(dir)
	if err != nil || m.Venue != "polymarket" || !m.Recovered {
		t.Fatalf("rebuilt manifest %+v %v", m, err)
	}
	code, out, errs = execReplay(t, "run", "--json", dir)
	var after runJSON
	if err := json.Unmarshal([]byte(out), &after); code != 0 || err != nil || after.Records != whole.Records || after.Frames != whole.Frames {
		t.Fatalf("after rebuild: exit %d %v, %d records (was %d) %s", code, err, after.Records, whole.Records, errs)
	}
}

// TestExportFromPastTheEnd: an export window after the last record writes
// nothing and says so (exit 3), as run does.
func TestExportFromPastTheEnd(t *testing.T) {
	dir := sampleCopy(t, "hyperliquid")
	m, _ := datasets.ReadManifest(dir)
	from := time.Unix(0, m.EndNs+int64(time.Hour)).UTC().Format(time.RFC3339)
	out := filepath.Join(t.TempDir(), "t.csv")
	code, _, errs := execReplay(t, "export", dir, "--table", "trades", "--from", from, "--out", out)
	if code != cli.ExitProblem || !strings.Contains(errs, "past the last record") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("%s written: %v", out, err)
	}
}

// TestMissingLastSegmentVerbs is issue 30 item 8: with a closed dataset's
// last segment file (and its index) removed, every verb that reads the
// records reports the loss and exits 3 (they exited 0 with 8,346 of 8,595
// frames, only verify noticed): the manifest's range ends after the last
// record left.
func TestMissingLastSegmentVerbs(t *testing.T) {
	dir, segs := resegmented(t, "polymarket")
	last := segs[len(segs)-1]
	if err := os.Remove(last); err != nil {
		t.Fatal(err)
	}
	os.Remove(strings.TrimSuffix(last, ".seg") + ".idx")
	out := t.TempDir()
	for _, args := range [][]string{
		{"run", dir},
		{"books", "--format", "json", dir},
		{"inspect", "--format", "json", dir},
		{"ls", "--format", "json", filepath.Dir(dir)},
		{"export", dir, "--table", "trades", "--format", "csv", "--out", filepath.Join(out, "t.csv")},
		{"report", dir, "--out", filepath.Join(out, "r.html")},
		{"bench", dir},
		{"backtest", dir, "--strategy", "noop"},
		{"verify", dir},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, stdout, errs := execReplay(t, args...)
			if code != cli.ExitProblem {
				t.Fatalf("%v: exit %d, want 3\n%s%s", args, code, stdout, errs)
			}
			if all := stdout + errs; !strings.Contains(all, "missing") && !strings.Contains(all, "lost") {
				t.Fatalf("%v: the loss is not named\n%s", args, all)
			}
		})
	}
	code, stdout, errs := execReplay(t, "run", "--json", "--skip-damaged", dir)
	var b runJSON
	if err := json.Unmarshal([]byte(stdout), &b); err != nil || code != cli.ExitOK || b.Damaged == nil || b.Losses["gap"] == 0 {
		t.Fatalf("--skip-damaged: exit %d %v %+v\n%s", code, err, b, errs)
	}
}
