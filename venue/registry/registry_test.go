package registry

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/venue"
)

// realFrames reads the first n lines of every fixture in a venue's testdata.
func realFrames(t *testing.T, glob string, n int) [][]byte {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures at %s (%v)", glob, err)
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 64<<20)
		for i := 0; i < n && sc.Scan(); i++ {
			if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
				out = append(out, bytes.Clone(l))
			}
		}
	}
	return out
}

func TestLookup(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range Names() {
		if seen[name] {
			t.Errorf("venue %q registered twice", name)
		}
		seen[name] = true
		d, err := Lookup(name)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", name, err)
		}
		if d.Name() != name || name != strings.ToLower(name) {
			t.Errorf("Lookup(%q).Name() = %q", name, d.Name())
		}
		e := d.Endpoints()
		if !strings.HasPrefix(e.WebSocket, "wss://") || !strings.HasPrefix(e.Discovery, "https://") || !strings.HasPrefix(e.ServePath, "/") {
			t.Errorf("%s: endpoints %+v", name, e)
		}
	}
	for _, want := range []string{venue.Polymarket, venue.Hyperliquid} {
		if !seen[want] {
			t.Errorf("%s not registered", want)
		}
	}
	_, err := Lookup("no-such-venue")
	if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "no-such-venue") || !strings.Contains(err.Error(), venue.Polymarket) {
		t.Errorf("Lookup(no-such-venue) = %v, want ErrUnknown naming it and the known venues", err)
	}
}

func TestSniffRealFrames(t *testing.T) {
	for _, c := range []struct{ name, glob string }{
		{venue.Polymarket, "../polymarket/testdata/real/*.ndjson"},
		{venue.Hyperliquid, "../hyperliquid/testdata/*.ndjson"},
	} {
		frames := realFrames(t, c.glob, 20)
		d := Sniff(frames)
		if d == nil || d.Name() != c.name {
			t.Errorf("Sniff(%d %s frames) = %v, want %s", len(frames), c.name, d, c.name)
		}
	}
	if d := Sniff([][]byte{[]byte("PONG"), []byte(`{"x":1}`)}); d != nil {
		t.Errorf("Sniff(no envelope) = %s, want nil", d.Name())
	}
}

func TestCapabilities(t *testing.T) {
	pm, _ := Lookup(venue.Polymarket)
	hl, _ := Lookup(venue.Hyperliquid)
	if c := pm.Capabilities(); c.LevelCounts || !c.BookHashes || !c.Markets {
		t.Errorf("polymarket capabilities %+v", c)
	}
	if c := hl.Capabilities(); !c.LevelCounts || c.BookHashes || c.Markets {
		t.Errorf("hyperliquid capabilities %+v", c)
	}
}
