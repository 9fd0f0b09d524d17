package layering

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/tapedeck/tapedeck/"

// root is the module's directory.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// engine reports whether a package must reach venues only through venue
// and venue/registry: the recorder, the replayer and its subpackages, the
// backtester and the CLIs.
func engine(pkg string) bool {
	p := strings.TrimPrefix(pkg, module)
	for _, pre := range []string{"recorder", "replayer", "backtest", "cmd"} {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// venuePackage reports whether pkg is one venue's own package (or below):
// not the registry, the shared internals and conformance suite, or
// tradeapi, the trading contract beside package venue.
func venuePackage(pkg string) bool {
	p, ok := strings.CutPrefix(pkg, module+"venue/")
	if !ok {
		return false
	}
	top, _, _ := strings.Cut(p, "/")
	return top != "registry" && top != "internal" && top != "venuetest" && top != "tradeapi"
}

// TestEngineImportsNoVenue asserts from go list that no engine package
// imports a venue package directly (its tests may). The registry depends on
// every driver, so it is the direct imports that count.
func TestEngineImportsNoVenue(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !engine(f[0]) {
			continue
		}
		checked++
		for _, imp := range f[1:] {
			if venuePackage(imp) {
				t.Errorf("%s imports %s: engine code reaches venues through venue/registry", f[0], imp)
			}
		}
	}
	if checked < 7 {
		t.Fatalf("only %d engine packages listed:\n%s", checked, out)
	}
}

// nameSwitch matches a comparison with, or a case of, a venue's name.
var nameSwitch = regexp.MustCompile(`(==|!=|\bcase)\s*("polymarket"|"hyperliquid"|venue\.Polymarket|venue\.Hyperliquid|Polymarket\b|Hyperliquid\b)|("polymarket"|"hyperliquid"|venue\.Polymarket|venue\.Hyperliquid)\s*(==|!=|:)`)

// TestOneSwitchOnVenueNames greps the tree: outside a venue's own package
// and the registry, no code compares with or switches on a venue's name.
// Each venue's sample generator sits in its folder (venue/<name>/sample).
func TestOneSwitchOnVenueNames(t *testing.T) {
	dir := root(t)
	allowed := []string{"venue/polymarket/", "venue/hyperliquid/", "venue/registry/", "internal/layering/"}
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, a := range allowed {
			if strings.HasPrefix(rel, a) {
				return nil
			}
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if nameSwitch.MatchString(code) && !strings.Contains(code, "`") {
				t.Errorf("%s:%d chooses by venue name (only venue/registry may): %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d files read", files)
	}
}

// imports lists every package of the module with its direct imports
// (deps false) or everything it depends on (deps true), tests aside.
func imports(t *testing.T, deps bool) map[string][]string {
	t.Helper()
	field := "Imports"
	if deps {
		field = "Deps"
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join ."+field+" \" \"}}", "./...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 {
			m[strings.TrimPrefix(f[0], module)] = f[1:]
		}
	}
	return m
}

// TestRegistryImporters asserts that only the CLIs, the replayer, the
// recorder (and their servers: replay serve, the test exchange) and the
// sample generator pick a venue by name: the libraries below them (the
// event core, exports, the backtester) get the driver with the data
// (feed.Event.Driver, Replayer.Drivers).
func TestRegistryImporters(t *testing.T) {
	allowed := map[string]bool{"cmd/capture": true, "cmd/replay": true, "replayer": true,
		"replayer/serve": true, "recorder": true, "recorder/fakeexchange": true, "internal/samplegen": true}
	pkgs := imports(t, false)
	for _, must := range []string{"replayer/export", "backtest", "feed/engine"} {
		if _, ok := pkgs[must]; !ok {
			t.Fatalf("package %s not listed", must)
		}
	}
	for pkg, imps := range pkgs {
		if allowed[pkg] || strings.HasPrefix(pkg, "venue/") {
			continue
		}
		for _, imp := range imps {
			if imp == module+"venue/registry" {
				t.Errorf("%s imports venue/registry: only cmd, replayer and recorder pick a venue by name", pkg)
			}
		}
	}
}

// TestRecorderAndReplayerApart asserts that neither of recorder and
// replayer depends on the other: what they share (the event core, the
// subscriber types) lives below both, in feed.
func TestRecorderAndReplayerApart(t *testing.T) {
	deps := imports(t, true)
	for _, p := range [][2]string{{"recorder", "replayer"}, {"replayer", "recorder"}, {"feed/engine", "replayer"}, {"feed/engine", "recorder"}} {
		ds, ok := deps[p[0]]
		if !ok {
			t.Fatalf("package %s not listed", p[0])
		}
		for _, d := range ds {
			if d == module+p[1] || strings.HasPrefix(d, module+p[1]+"/") {
				t.Errorf("%s depends on %s", p[0], strings.TrimPrefix(d, module))
			}
		}
	}
}

// TestReplayLinksNoRecorder asserts that the shipped replay binary does not
// link the recorder, the test exchange or the sample recording harness
// (replay bench measures with package bench, whose generated-input
// fingerprint lives in its runner).
func TestReplayLinksNoRecorder(t *testing.T) {
	deps, ok := imports(t, true)["cmd/replay"]
	if !ok {
		t.Fatal("package cmd/replay not listed")
	}
	for _, d := range deps {
		switch strings.TrimPrefix(d, module) {
		case "recorder", "recorder/fakeexchange", "internal/samplegen":
			t.Errorf("cmd/replay depends on %s", strings.TrimPrefix(d, module))
		}
	}
}

// TestColumnarFormatLayer asserts that the columnar writer is the format
// layer only: it imports nothing of ours but book (no event, no venue), and
// the backtester writes its tables through it without depending on the
// event tables (replayer/export).
func TestColumnarFormatLayer(t *testing.T) {
	direct := imports(t, false)
	imps, ok := direct["columnar"]
	if !ok {
		t.Fatal("package columnar not listed")
	}
	for _, imp := range imps {
		if strings.HasPrefix(imp, module) && imp != module+"book" {
			t.Errorf("columnar imports %s: it may import book only", strings.TrimPrefix(imp, module))
		}
	}
	deps := imports(t, true)
	checked := 0
	for pkg, ds := range deps {
		if pkg != "backtest" && !strings.HasPrefix(pkg, "backtest/") {
			continue
		}
		checked++
		for _, d := range ds {
			if d == module+"replayer/export" {
				t.Errorf("%s depends on replayer/export: the backtester's tables go through columnar", pkg)
			}
		}
	}
	if checked < 2 {
		t.Fatalf("only %d backtest packages listed", checked)
	}
}
