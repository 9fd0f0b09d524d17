package replayer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/venue"
)

// craftedBooks returns n copies of a real Polymarket book frame, each for
// another asset id, on connection conn(i).
func craftedBooks(t *testing.T, n int, conn func(i int) uint32) []rec {
	t.Helper()
	lines := fixtureLines(t, "polypy_hash_vector_ws_2025-10.ndjson")
	const id = "94022367472047775158269173293876979533288470167463650966689320774843018181757"
	if !bytes.Contains(lines[0], []byte(id)) {
		t.Fatal("fixture changed: first line is not the book of " + id)
	}
	out := make([]rec, n)
	for i := range out {
		p := strings.Replace(string(lines[0]), id, fmt.Sprintf("%d", 1_000_000+i), 1)
		out[i] = frame(conn(i), fixtureBaseNs+int64(i)*int64(time.Microsecond), p)
	}
	return out
}

// TestConnectionBound is issue 13 item 9: a crafted dataset spreading
// frames over more connection slots than the bound stops with ErrLimit
// naming the dataset, instead of growing a decoder per slot without end.
func TestConnectionBound(t *testing.T) {
	const n = 300
	dir := writeDataset(t, venue.Polymarket, craftedBooks(t, n, func(i int) uint32 { return uint32(i) }))
	r, err := New([]string{dir}, WithLimits(100, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(context.Background())
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "100 connection slots") {
		t.Fatalf("Run: %v, want ErrLimit naming %s", err, dir)
	}
	if s == nil || s.Frames != 100 || len(r.run.eng.Conns()) != 100 {
		t.Fatalf("frames %d, decoders %d: want the bound", s.Frames, len(r.run.eng.Conns()))
	}
	// Within the bound the same dataset replays whole.
	r, _ = New([]string{dir}, WithLimits(n, 1<<20))
	if s, err := r.Run(context.Background()); err != nil || s.Frames != n {
		t.Fatalf("within the bound: %v, %d frames", err, s.Frames)
	}
	if _, err := New([]string{dir}, WithLimits(0, 1)); !errors.Is(err, ErrOption) {
		t.Fatalf("WithLimits(0, 1): %v", err)
	}
}

// TestInstrumentBound: a dataset with more instruments than the bound stops
// with ErrLimit (checked every instrumentCheckMask+1 frames of a connection).
func TestInstrumentBound(t *testing.T) {
	defer func(m uint32) { instrumentCheckMask = m }(instrumentCheckMask)
	instrumentCheckMask = 1<<6 - 1
	dir := writeDataset(t, venue.Polymarket, craftedBooks(t, 500, func(int) uint32 { return 0 }))
	r, _ := New([]string{dir}, WithLimits(10, 200))
	s, err := r.Run(context.Background())
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "200 instruments") {
		t.Fatalf("Run: %v, want ErrLimit", err)
	}
	if s.Frames > 200+64 {
		t.Fatalf("%d frames before the bound was noticed, want at most 264", s.Frames)
	}
	r, _ = New([]string{dir}, WithLimits(10, 500))
	if s, err := r.Run(context.Background()); err != nil || s.Frames != 500 || s.Instruments != 500 {
		t.Fatalf("within the bound: %v, %d frames, %d instruments", err, s.Frames, s.Instruments)
	}
}
