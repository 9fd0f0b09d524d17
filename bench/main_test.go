package bench

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/samplegen"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/hyperliquid"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

var (
	tmpOnce sync.Once
	tmpRoot string
	tmpErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tmpRoot != "" {
		os.RemoveAll(tmpRoot)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// sessionFrames returns the size of generated inputs, from EnvFrames.
func sessionFrames(tb testing.TB) int64 {
	s := os.Getenv(EnvFrames)
	if s == "" {
		return DefaultFrames
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1000 {
		tb.Fatalf("%s=%q: want an integer ≥ 1000", EnvFrames, s)
	}
	return n
}

var venues = []string{venue.Polymarket, venue.Hyperliquid}

func newDecoder(v string) venue.Decoder {
	if v == venue.Polymarket {
		return slowed(polymarket.NewDecoder())
	}
	return slowed(hyperliquid.NewDecoder())
}

// session is a generated recording held in memory: its received frames in
// order with their receive times.
type session struct {
	venue          string
	frames         [][]byte
	recvNs         []int64
	bytes          int64
	startNs, endNs int64
}

// memAppender collects the frames samplegen generates.
type memAppender struct{ s *session }

func (m memAppender) Append(r *datasets.Record) (uint64, error) {
	if r.Kind == datasets.KindFrame {
		m.s.frames = append(m.s.frames, bytes.Clone(r.Payload))
		m.s.recvNs = append(m.s.recvNs, r.WallNs)
		m.s.bytes += int64(len(r.Payload))
	}
	return uint64(len(m.s.frames)), nil
}

var (
	sessionsMu sync.Mutex
	sessions   = map[string]*session{}
)

// loadSession returns a generated session of n frames (GenSeed, the seed of
// the shipped samples), built once per process.
func loadSession(tb testing.TB, v string, n int64) *session {
	sessionsMu.Lock()
	defer sessionsMu.Unlock()
	key := fmt.Sprint(v, n)
	if s, ok := sessions[key]; ok {
		return s
	}
	s := &session{venue: v}
	sum, err := samplegen.Generate(v, samplegen.Options{Seed: GenSeed, Frames: n, FastHashes: true}, memAppender{s})
	if err != nil {
		tb.Fatalf("generate %s session: %v", v, err)
	}
	s.startNs, s.endNs = sum.StartNs, sum.EndNs
	sessions[key] = s
	return s
}

var (
	datasetsMu  sync.Mutex
	datasetDirs = map[string]string{}
)

// datasetDir returns a dataset on disk holding a generated session of n
// frames (every record kind the generator writes, not just frames), written
// once per process under a temporary root removed by TestMain.
func datasetDir(tb testing.TB, v string, n int64) string {
	datasetsMu.Lock()
	defer datasetsMu.Unlock()
	key := fmt.Sprint(v, n)
	if d, ok := datasetDirs[key]; ok {
		return d
	}
	tmpOnce.Do(func() { tmpRoot, tmpErr = os.MkdirTemp("", "tapedeck-bench-") })
	if tmpErr != nil {
		tb.Fatal(tmpErr)
	}
	dir := filepath.Join(tmpRoot, fmt.Sprintf("%s-%d", v, n))
	opts := samplegen.Options{Seed: GenSeed, Frames: n, FastHashes: true}
	m, err := samplegen.Manifest(v, opts)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := datasets.Create(dir, m)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := samplegen.Generate(v, opts, w); err != nil {
		w.Close()
		tb.Fatalf("generate %s dataset: %v", v, err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	datasetDirs[key] = dir
	return dir
}

// readFrames returns the lines of an NDJSON file (or the whole file when it
// is one frame without a trailing newline).
func readFrames(tb testing.TB, path string) [][]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, bytes.Clone(sc.Bytes()))
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestPeerInputsPinned checks the peers' inputs against their SHA256SUMS, so
// a figure set beside a peer's was measured on the peer's exact bytes.
func TestPeerInputsPinned(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/peers/*/SHA256SUMS")
	if len(dirs) != 3 {
		t.Fatalf("found %d SHA256SUMS files, want 3", len(dirs))
	}
	for _, sums := range dirs {
		b, err := os.ReadFile(sums)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			want, name, ok := strings.Cut(line, "  ")
			if !ok {
				t.Fatalf("%s: bad line %q", sums, line)
			}
			data, err := os.ReadFile(filepath.Join(filepath.Dir(sums), name))
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256(data)
			if got := hex.EncodeToString(h[:]); got != want {
				t.Errorf("%s: sha256 %s, want %s", name, got, want)
			}
		}
	}
}
