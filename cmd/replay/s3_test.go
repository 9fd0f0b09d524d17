package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/datasets/s3store"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/s3test"
)

type s3RunJSON struct {
	Records      uint64 `json:"records"`
	Frames       uint64 `json:"frames"`
	BytesFetched int64  `json:"bytes_fetched"`
	Warmup       string `json:"warmup"`
	Digest       string `json:"digest"`
}

func s3Run(t *testing.T, args ...string) s3RunJSON {
	t.Helper()
	code, out, errs := execReplay(t, append([]string{"run", "--json"}, args...)...)
	if code != cli.ExitOK {
		t.Fatalf("replay run %v: exit %d\n%s", args, code, errs)
	}
	var s s3RunJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// idxBlocks returns [offset, end, firstWall, lastWall] of each block in an
// index file (FORMAT.md).
func idxBlocks(t *testing.T, path string) [][4]int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][4]int64
	for i := 0; i < int(binary.LittleEndian.Uint32(b[8:12])); i++ {
		p := b[32+48*i:]
		off := int64(binary.LittleEndian.Uint64(p))
		out = append(out, [4]int64{off, off + 64 + int64(binary.LittleEndian.Uint32(p[8:])),
			int64(binary.LittleEndian.Uint64(p[32:])), int64(binary.LittleEndian.Uint64(p[40:]))})
	}
	return out
}

func fileSize(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestS3Verbs: every reading verb takes s3://bucket/prefix, through the real
// client and a real S3 server on 127.0.0.1, and says what it said of the
// local copy.
func TestS3Verbs(t *testing.T) {
	s3test.Start(t, "tapes")
	local := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	for _, v := range []string{"polymarket", "hyperliquid"} {
		if _, err := s3store.UploadDataset(context.Background(), filepath.Join("..", "..", "datasets", "samples", v), "s3://tapes/2026/"+v); err != nil {
			t.Fatal(err)
		}
	}
	remote := "s3://tapes/2026/polymarket"

	l, r := s3Run(t, local), s3Run(t, remote)
	if l.Digest != r.Digest || l.Records != r.Records || r.Records == 0 {
		t.Fatalf("run: local %+v, s3 %+v", l, r)
	}
	if seg := fileSize(t, filepath.Join(local, "00000001.seg")); r.BytesFetched < seg {
		t.Errorf("whole replay fetched %d bytes, the segment is %d", r.BytesFetched, seg)
	}

	// A window of one block fetches that block, the header and dictionaries,
	// the manifest and the index.
	blocks := idxBlocks(t, filepath.Join(local, "00000001.idx"))
	b := blocks[3]
	from, to := fmt.Sprint(b[2]+1), fmt.Sprint(b[3]-1)
	w := s3Run(t, "--from", from, "--to", to, remote)
	want := fileSize(t, filepath.Join(local, "manifest.json")) + fileSize(t, filepath.Join(local, "00000001.idx")) + blocks[0][0] + (b[1] - b[0])
	if w.BytesFetched != want || w.Warmup != "none" || w.Frames == 0 {
		t.Errorf("window of block 3: fetched %d bytes (want %d), warmup %q, %d frames", w.BytesFetched, want, w.Warmup, w.Frames)
	}
	lw := s3Run(t, "--from", from, "--to", to, "--warmup", "none", local)
	if lw.Digest != w.Digest || lw.Frames != w.Frames {
		t.Errorf("window: local --warmup none %+v, s3 %+v", lw, w)
	}
	full := s3Run(t, "--from", from, "--to", to, "--warmup", "full", remote)
	lf := s3Run(t, "--from", from, "--to", to, local)
	if full.Digest != lf.Digest || lf.Warmup != "full" || full.BytesFetched <= w.BytesFetched {
		t.Errorf("--warmup full: s3 %+v, local %+v", full, lf)
	}

	for _, verb := range [][]string{{"verify"}, {"inspect"}, {"books", "--depth", "2"}, {"backtest", "--strategy", "mm", "--json"}} {
		_, lo, _ := execReplay(t, append(verb, local)...)
		code, ro, errs := execReplay(t, append(verb, remote)...)
		if code != cli.ExitOK {
			t.Fatalf("%v s3: exit %d %s", verb, code, errs)
		}
		if strings.ReplaceAll(ro, remote, "X") != strings.ReplaceAll(lo, local, "X") && verb[0] != "inspect" {
			t.Errorf("%v: s3 output differs from local\n%s\n---\n%s", verb, ro, lo)
		}
	}
	code, out, errs := execReplay(t, "ls", "--json", "s3://tapes/2026")
	if code != cli.ExitOK || !strings.Contains(out, `"s3://tapes/2026/hyperliquid"`) || !strings.Contains(out, `"s3://tapes/2026/polymarket"`) || !strings.Contains(out, `"from_index": true`) {
		t.Fatalf("ls s3: exit %d\n%s%s", code, out, errs)
	}

	code, _, errs = execReplay(t, "run", "s3://nosuchbucket/x")
	if code != cli.ExitError || !strings.Contains(errs, `bucket "nosuchbucket" does not exist`) || strings.Contains(errs, "no manifest") {
		t.Errorf("missing bucket: exit %d %s", code, errs)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "wrong")
	code, _, errs = execReplay(t, "run", remote)
	if code != cli.ExitError || !strings.Contains(errs, "access refused") || !strings.Contains(errs, remote) {
		t.Errorf("wrong credentials: exit %d %s", code, errs)
	}
}

// TestServeFromS3: replay serve streams a dataset from the S3 server to a
// venue-protocol client, byte-identical to the recorded frame.
func TestServeFromS3(t *testing.T) {
	s3test.Start(t, "tapes")
	local := filepath.Join("..", "..", "datasets", "samples", "hyperliquid")
	if _, err := s3store.UploadDataset(context.Background(), local, "s3://tapes/hl"); err != nil {
		t.Fatal(err)
	}
	want, sub := serveFirstFrame(t, local, "hyperliquid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var clientErr string
	cmd := newServeCmd(func(_ context.Context, o *serveCmdOptions) error {
		o.Window = 0
		o.Ready = func(addr net.Addr) {
			defer cancel()
			clientErr = serveExampleClient("ws://"+addr.String()+"/ws", `{"method":"ping"}`, `{"channel":"pong"}`, sub, want)
		}
		return runServe(ctx, o)
	})
	var errb bytes.Buffer
	cmd.SetArgs([]string{"s3://tapes/hl", "--listen", "127.0.0.1:0"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil || clientErr != "" {
		t.Fatalf("serve s3://tapes/hl: %v, client: %s\n%s", err, clientErr, errb.String())
	}
}
