package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// sampleCopy copies a shipped sample into a temp dir, so a test may damage it.
func sampleCopy(t *testing.T, venueName string) string {
	t.Helper()
	src := filepath.Join("..", "..", "datasets", "samples", venueName)
	dst := filepath.Join(t.TempDir(), venueName)
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// damage flips a byte two thirds into the dataset's first segment.
func damage(t *testing.T, dir string) string {
	t.Helper()
	seg := filepath.Join(dir, "00000001.seg")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)*2/3] ^= 0x10
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return seg
}

type verifyJSON struct {
	OK       bool `json:"ok"`
	Datasets []struct {
		Dir      string `json:"dir"`
		Records  uint64 `json:"records"`
		Problems []struct {
			File    string `json:"file"`
			Offset  int64  `json:"offset"`
			Problem string `json:"problem"`
		} `json:"problems"`
	} `json:"datasets"`
}

func TestVerifyVerb(t *testing.T) {
	good := sampleCopy(t, "hyperliquid")
	bad := sampleCopy(t, "polymarket")
	seg := damage(t, bad)

	code, out, errs := execReplay(t, "verify", good)
	if code != cli.ExitOK || !strings.HasPrefix(out, "ok ") {
		t.Fatalf("sound dataset: exit %d\n%s%s", code, out, errs)
	}

	code, out, errs = execReplay(t, "verify", good, bad)
	if code != cli.ExitProblem || !strings.Contains(out, "FAIL "+bad) || !strings.Contains(out, seg+":") || !strings.Contains(errs, "1 of 2 datasets") {
		t.Fatalf("damaged dataset: exit %d\n%s%s", code, out, errs)
	}

	code, out, _ = execReplay(t, "verify", "--json", good, bad)
	var got verifyJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != cli.ExitProblem || got.OK || len(got.Datasets) != 2 || len(got.Datasets[0].Problems) != 0 ||
		len(got.Datasets[1].Problems) == 0 || got.Datasets[1].Problems[0].File != seg || got.Datasets[1].Problems[0].Offset <= 0 {
		t.Fatalf("json: exit %d %+v", code, got)
	}

	if code, _, errs := execReplay(t, "verify", filepath.Join(t.TempDir(), "nothing")); code != cli.ExitError || !strings.Contains(errs, "not a dataset") {
		t.Fatalf("missing dataset: exit %d %s", code, errs)
	}
	if code, _, _ := execReplay(t, "verify"); code != cli.ExitUsage {
		t.Fatalf("no args: exit %d", code)
	}
}

func TestRepairVerb(t *testing.T) {
	dir := sampleCopy(t, "polymarket")
	seg := damage(t, dir)
	code, out, errs := execReplay(t, "repair", dir)
	if code != cli.ExitOK || !strings.Contains(out, "repaired "+dir) || !strings.Contains(out, "dropped 1 damaged run") ||
		!strings.Contains(out, filepath.Base(seg)+"@") || !strings.Contains(out, "gap record seq") {
		t.Fatalf("repair: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := execReplay(t, "verify", dir); code != cli.ExitOK {
		t.Fatalf("verify after repair: exit %d\n%s", code, out)
	}
	code, out, _ = execReplay(t, "repair", "--json", dir)
	var rep datasets.RepairReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != cli.ExitOK || rep.Changed() {
		t.Fatalf("second repair: exit %d %v\n%s", code, err, out)
	}
	if code, out, _ := execReplay(t, "repair", dir); !strings.HasPrefix(out, "nothing to repair") || code != cli.ExitOK {
		t.Fatalf("sound dataset: exit %d %s", code, out)
	}
	if code, _, _ := execReplay(t, "repair", dir, dir); code != cli.ExitUsage {
		t.Fatalf("two args: exit %d", code)
	}
}

func TestInspectVerb(t *testing.T) {
	dir := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	code, out, errs := execReplay(t, "inspect", "--json", dir)
	var info datasets.Info
	if err := json.Unmarshal([]byte(out), &info); err != nil || code != cli.ExitOK {
		t.Fatalf("exit %d %v\n%s%s", code, err, out, errs)
	}
	if info.Manifest.Venue != "polymarket" || info.Records == 0 || info.ByKind["frame"] == 0 || len(info.Conns) == 0 ||
		len(info.Losses) == 0 || info.Ratio <= 1 || info.StartNs >= info.EndNs {
		t.Fatalf("%+v", info)
	}
	// Piped without flags: JSON, the same as --json.
	if _, piped, _ := execReplay(t, "inspect", dir); piped != out {
		t.Fatal("piped output is not the JSON form")
	}
	code, out, _ = execReplay(t, "inspect", "--format", "table", dir)
	for _, want := range []string{"venue            polymarket", "connections (", "losses (", "disconnect"} {
		if code != cli.ExitOK || !strings.Contains(out, want) {
			t.Fatalf("table lacks %q:\n%s", want, out)
		}
	}
	if code, _, _ := execReplay(t, "inspect", "--json", "--format", "table", dir); code != cli.ExitUsage {
		t.Fatalf("contradicting flags: exit %d", code)
	}
	if code, _, _ := execReplay(t, "inspect", "--format", "xml", dir); code != cli.ExitUsage {
		t.Fatalf("bad format: exit %d", code)
	}
}

func TestLsVerb(t *testing.T) {
	root := filepath.Join("..", "..", "datasets", "samples")
	code, out, errs := execReplay(t, "ls", "--json", root)
	var infos []datasets.Info
	if err := json.Unmarshal([]byte(out), &infos); err != nil || code != cli.ExitOK {
		t.Fatalf("exit %d %v\n%s%s", code, err, out, errs)
	}
	if len(infos) != 2 || infos[0].Manifest.Venue != "hyperliquid" || infos[1].Manifest.Venue != "polymarket" {
		t.Fatalf("%+v", infos)
	}
	code, out, _ = execReplay(t, "ls", "--format", "table", root)
	if code != cli.ExitOK || !strings.HasPrefix(out, "DATASET") || strings.Count(out, "\n") != 3 || !strings.Contains(out, "clean") {
		t.Fatalf("table: exit %d\n%s", code, out)
	}
}

// Every Example of these verbs runs, on the shipped samples (a copy where
// the command writes).
func TestDatasetVerbExamples(t *testing.T) {
	scratch := sampleCopy(t, "polymarket")
	for _, ctor := range []func() *cobra.Command{
		func() *cobra.Command { return newVerifyCmd(nil) },
		func() *cobra.Command { return newRepairCmd(nil) },
		func() *cobra.Command { return newInspectCmd(nil) },
		func() *cobra.Command { return newLsCmd(nil) },
	} {
		cmd := ctor()
		n := 0
		for _, line := range strings.Split(cmd.Example, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "$ replay ") {
				continue
			}
			n++
			args := strings.Fields(strings.TrimPrefix(line, "$ replay "))
			for i, a := range args {
				switch {
				case strings.HasPrefix(a, "datasets/"):
					args[i] = filepath.Join("..", "..", a)
				case strings.HasPrefix(a, "recordings/"):
					args[i] = scratch
				}
			}
			if code, out, errs := execReplay(t, args...); code != cli.ExitOK || out == "" {
				t.Errorf("%s: exit %d\n%s%s", line, code, out, errs)
			}
		}
		if n == 0 {
			t.Errorf("%s has no runnable example", cmd.Name())
		}
	}
}

// A crashed recording: inspect reports the torn tail, verify fails on it,
// repair cuts it, and then both are happy.
func TestCrashedDatasetVerbs(t *testing.T) {
	dir := sampleCopy(t, "hyperliquid")
	m, err := datasets.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Clean = false
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, datasets.ManifestName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "00000001.seg")
	st, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, st.Size()-1000); err != nil {
		t.Fatal(err)
	}
	code, out, errs := execReplay(t, "inspect", "--json", dir)
	var info struct {
		Records   uint64 `json:"records"`
		Truncated *struct {
			File   string `json:"file"`
			Offset int64  `json:"offset"`
			Bytes  int64  `json:"bytes"`
			Error  string `json:"error"`
		} `json:"truncated"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil || code != cli.ExitOK {
		t.Fatalf("inspect: exit %d %v\n%s%s", code, err, out, errs)
	}
	if info.Truncated == nil || info.Truncated.File != seg || info.Truncated.Bytes <= 0 || info.Truncated.Error == "" || info.Records == 0 {
		t.Fatalf("inspect of a torn dataset: %s", out)
	}
	if code, _, _ := execReplay(t, "verify", dir); code != cli.ExitProblem {
		t.Fatalf("verify of a torn dataset: exit %d", code)
	}
	code, out, _ = execReplay(t, "repair", dir)
	if code != cli.ExitOK || !strings.Contains(out, "torn tail cut") || !strings.Contains(out, fmt.Sprintf("%d bytes", info.Truncated.Bytes)) {
		t.Fatalf("repair: exit %d\n%s", code, out)
	}
	if code, out, _ := execReplay(t, "verify", dir); code != cli.ExitOK {
		t.Fatalf("verify after repair: exit %d\n%s", code, out)
	}
	code, out, _ = execReplay(t, "inspect", "--json", dir)
	var after struct {
		Records   uint64          `json:"records"`
		Truncated json.RawMessage `json:"truncated"`
	}
	// The torn block stands as a gap record: one record more, a loss.
	if err := json.Unmarshal([]byte(out), &after); err != nil || after.Records != info.Records+1 || after.Truncated != nil {
		t.Fatalf("inspect after repair: %v %s", err, out)
	}
}
