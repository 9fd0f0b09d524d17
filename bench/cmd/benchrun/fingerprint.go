package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/bench"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/samplegen"
)

// suiteFingerprint returns the SHA-256 of what defines the suite: the
// scenario sources (bench/*_test.go under root), their stored inputs
// (bench/testdata, except the recorded reports in testdata/reports, and the
// shipped samples in datasets/samples, which BenchmarkReplay replays), and
// the generated inputs themselves, that is every record the generator
// yields for each venue with one (in registry order) at the given size (0 means DefaultFrames). Hashing
// the generated records rather than the generator's sources means an edit
// that does not change the inputs keeps a baseline valid, and one that does,
// does not. The gate and runner code (bench/*.go, bench/cmd) is not part of
// the suite. Two reports with different suite fingerprints measured
// different things.
func suiteFingerprint(root string, frames int64) (string, error) {
	if frames <= 0 {
		frames = bench.DefaultFrames
	}
	var files []string
	dir := filepath.Join(root, "bench")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("bench: suite fingerprint: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), "_test.go") {
			files = append(files, "bench/"+e.Name())
		}
	}
	for _, d := range []string{filepath.Join(dir, "testdata"), filepath.Join(root, "datasets", "samples")} {
		err = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && e.Name() == "reports" {
				return filepath.SkipDir
			}
			if e.Type().IsRegular() {
				rel, _ := filepath.Rel(root, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return "", fmt.Errorf("bench: suite fingerprint: %w", err)
		}
	}
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", fmt.Errorf("bench: suite fingerprint: %w", err)
		}
		writeField(h, []byte(f))
		writeField(h, b)
	}
	for _, v := range samplegen.Venues() {
		writeField(h, []byte(fmt.Sprintf("generated %s seed %d frames %d", v, bench.GenSeed, frames)))
		if _, err := samplegen.Generate(v, samplegen.Options{Seed: bench.GenSeed, Frames: frames, FastHashes: true}, hashAppender{h}); err != nil {
			return "", fmt.Errorf("bench: suite fingerprint: generate %s: %w", v, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeField hashes a length-prefixed field, so that field boundaries count.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// hashAppender hashes each generated record's kind, connection, times and
// payload.
type hashAppender struct{ h hash.Hash }

func (a hashAppender) Append(r *datasets.Record) (uint64, error) {
	var hdr [1 + 4 + 8 + 8]byte
	hdr[0] = byte(r.Kind)
	binary.LittleEndian.PutUint32(hdr[1:], r.Conn)
	binary.LittleEndian.PutUint64(hdr[5:], uint64(r.WallNs))
	binary.LittleEndian.PutUint64(hdr[13:], uint64(r.MonoNs))
	a.h.Write(hdr[:])
	writeField(a.h, r.Payload)
	return 1, nil
}
