package replayer

import (
	"context"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
)

// firstBuy is the first entry of a price_change frame when it is a BUY.
var firstBuy = regexp.MustCompile(`"price_changes":\[\{"asset_id":"[0-9]+", "price":"[0-9.]+", "size":"[0-9.]+", "side":"BUY"`)

// copySample copies the shipped Polymarket sample record for record into a
// new dataset; with corrupt, the BUY entry opening the middle price_change
// frame that has one instead adds a level at 0.01 that the venue's book
// never had: the local book diverges from the venue's from there on, until
// the asset's next snapshot. It returns the new dataset's path.
func copySample(t *testing.T, corrupt bool) string {
	t.Helper()
	src := "../datasets/samples/polymarket"
	r, err := datasets.Open(src, datasets.WithAllKinds())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []datasets.Record
	var candidates []int
	for r.Next() {
		rec := *r.Record()
		rec.Payload = append([]byte(nil), rec.Payload...)
		if rec.Kind == datasets.KindFrame && firstBuy.Match(rec.Payload) {
			candidates = append(candidates, len(recs))
		}
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(candidates) < 100 {
		t.Fatalf("the sample has %d price_change frames opening with a BUY; want a long run", len(candidates))
	}
	if corrupt {
		p := &recs[candidates[len(candidates)/2]].Payload
		loc := firstBuy.FindIndex(*p)
		entry := (*p)[loc[0]:loc[1]]
		asset := regexp.MustCompile(`"asset_id":"[0-9]+"`).Find(entry)
		repl := append([]byte(`"price_changes":[{`), asset...)
		repl = append(repl, `, "price":"0.01", "size":"7", "side":"BUY"`...)
		*p = append(append(append([]byte(nil), (*p)[:loc[0]]...), repl...), (*p)[loc[1]:]...)
	}
	m := r.Manifest()
	dir := filepath.Join(t.TempDir(), "pm")
	w, err := datasets.Create(dir, datasets.Manifest{Venue: m.Venue, Endpoint: m.Endpoint, StartNs: m.StartNs})
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		rec := recs[i]
		rec.Seq = 0
		if _, err := w.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func replayHashes(t *testing.T, dir string, mode HashMode) *Summary {
	t.Helper()
	r, err := New([]string{dir}, WithHashMode(mode, DefaultHashEvery))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSampledHashesCatchDivergence: a level corrupted in the middle of a
// long run is a hash mismatch in the default sampled mode as in mode all,
// while the clean copy of the same recording matches every check; sampling
// checks far fewer hashes and leaves the digest alone.
func TestSampledHashesCatchDivergence(t *testing.T) {
	clean, bad := copySample(t, false), copySample(t, true)

	cs, ca, co := replayHashes(t, clean, HashSampled), replayHashes(t, clean, HashAll), replayHashes(t, clean, HashOff)
	if ca.HashChecked == 0 || ca.HashOK != ca.HashChecked {
		t.Fatalf("clean copy, all: %d of %d hashes match; want every one of many", ca.HashOK, ca.HashChecked)
	}
	if cs.HashChecked == 0 || cs.HashOK != cs.HashChecked {
		t.Fatalf("clean copy, sampled: %d of %d hashes match; want every one", cs.HashOK, cs.HashChecked)
	}
	if cs.HashSeen != ca.HashChecked || 2*cs.HashChecked > ca.HashChecked {
		t.Errorf("sampled checked %d of %d hashes seen, all checked %d: want the same hashes seen and at most half checked",
			cs.HashChecked, cs.HashSeen, ca.HashChecked)
	}
	if co.HashChecked != 0 || co.HashMode != "off" || cs.HashMode != "sampled" || cs.HashEvery != DefaultHashEvery.String() {
		t.Errorf("modes: off checked %d (%q); sampled reported %q every %q", co.HashChecked, co.HashMode, cs.HashMode, cs.HashEvery)
	}
	if cs.Digest != ca.Digest || co.Digest != ca.Digest {
		t.Errorf("digests differ by hash mode: sampled %s, all %s, off %s", cs.Digest, ca.Digest, co.Digest)
	}

	bs, ba := replayHashes(t, bad, HashSampled), replayHashes(t, bad, HashAll)
	if ba.HashMismatch == 0 {
		t.Fatalf("corrupted copy, all: no mismatch in %d checks; the corruption did not make the book diverge", ba.HashChecked)
	}
	if bs.HashMismatch == 0 {
		t.Errorf("corrupted copy, sampled: no mismatch in %d checks (all found %d): a diverged book went unnoticed",
			bs.HashChecked, ba.HashMismatch)
	}
	if ca.HashMismatch != 0 || cs.HashMismatch != 0 {
		t.Errorf("clean copy: %d mismatches (all), %d (sampled)", ca.HashMismatch, cs.HashMismatch)
	}
}

func TestParseHashMode(t *testing.T) {
	for s, want := range map[string]HashMode{"all": HashAll, "true": HashAll, "sampled": HashSampled, "off": HashOff, "false": HashOff} {
		if m, err := ParseHashMode(s); err != nil || m != want {
			t.Errorf("ParseHashMode(%q) = %v, %v; want %v", s, m, err, want)
		}
	}
	if _, err := ParseHashMode("some"); err == nil {
		t.Error(`ParseHashMode("some") took it`)
	}
	if _, err := New(nil, WithHashMode(HashSampled, 0)); err == nil {
		t.Error("WithHashMode(HashSampled, 0) was accepted")
	}
}
