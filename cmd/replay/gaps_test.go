package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// gappyDataset copies the first frames of the Hyperliquid sample twice: a
// disconnect and 30 days of silence between the halves, then a 2-hour quiet
// stretch before the last frame.
func gappyDataset(t *testing.T) (string, int) {
	t.Helper()
	src := expSample(t, venue.Hyperliquid)
	rd, err := datasets.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var frames []datasets.Record
	for rd.Next() && len(frames) < 12 {
		if r := rd.Record(); r.Kind == datasets.KindFrame {
			c := *r
			c.Payload = bytes.Clone(r.Payload)
			frames = append(frames, c)
		}
	}
	dir := filepath.Join(t.TempDir(), "gappy")
	w, err := datasets.Create(dir, rd.Manifest())
	if err != nil {
		t.Fatal(err)
	}
	base := frames[0].WallNs
	put := func(r datasets.Record, at int64) {
		r.WallNs, r.MonoNs = at, at-base
		if _, err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	last := frames[len(frames)-1].WallNs
	for _, f := range frames {
		put(f, f.WallNs)
	}
	put(datasets.Record{Kind: datasets.KindDisconnect, Conn: frames[0].Conn, Payload: datasets.EncodeControl(datasets.Control{Code: 1006})}, last)
	month := int64(30 * 24 * time.Hour)
	for i, f := range frames {
		at := f.WallNs + month
		if i == len(frames)-1 {
			at += int64(2 * time.Hour)
		}
		put(f, at)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, 2 * len(frames)
}

// replay run --speed 1x over a recording with a 30-day loss and a 2-hour
// quiet stretch ends (the hang guard is the test's deadline, not a timing
// assertion), delivers every frame, and its summary says what it skipped.
func TestRunAtWireSpeedSkipsGaps(t *testing.T) {
	dir, frames := gappyDataset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetContext(ctx)
	code := cli.Main(root, []string{"run", "--speed", "1x", "--max-gap", "100ms", "--json", dir}, &errb)
	if code != cli.ExitOK || ctx.Err() != nil {
		t.Fatalf("exit %d (%v): %s", code, ctx.Err(), errb.String())
	}
	var s replayer.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	k := s.Skipped
	if int(s.Frames) != frames || k == nil || k.Losses != 1 || k.LossNs < int64(30*24*time.Hour-time.Minute) ||
		k.Capped != 1 || k.CappedNs < int64(2*time.Hour-time.Second) {
		t.Fatalf("frames %d (want %d), skipped %+v", s.Frames, frames, k)
	}
	// The table says so too.
	code, txt, errs := execReplay(t, "run", "--speed", "100000x", "--max-gap", "1s", dir)
	if code != cli.ExitOK || !bytes.Contains([]byte(txt), []byte("1 recorded losses skipped at once")) {
		t.Fatalf("exit %d: %s%s", code, txt, errs)
	}
	for _, bad := range [][]string{{"--speed", "0.0000001x"}, {"--speed", "1e9x"}, {"--max-gap", "-1s"}} {
		if code, _, errs := execReplay(t, append(append([]string{"run"}, bad...), dir)...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d: %s", bad, code, errs)
		}
	}
}
