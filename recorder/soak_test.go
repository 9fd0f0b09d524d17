package recorder_test

import (
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// TestSoak runs a compressed day: four connections receiving about a
// thousand real frames per second each, every connection killed a dozen
// times (a day of hourly drops in a few seconds), and checks that
// not a single frame is missing, altered, reordered or unaccounted for.
func TestSoak(t *testing.T) {
	// Kill rounds are paced by frames, not by the clock: each round waits
	// until every connection is back and the exchange has sent another
	// perRound frames, so a loaded host does the same work, only slower.
	rounds, perRound := 12, 100
	if testing.Short() {
		rounds, perRound = 4, 50
	}
	s := fakeexchange.New(fakeexchange.PolymarketConfig())
	defer s.Close()
	spec := pmSpec(s, fakeexchange.PolymarketStreamAsset, fakeexchange.PolymarketOtherAsset,
		"85354956062430465315924116860125388538595433819574542752031640332592237464430",
		"115474063863764126958837769719736461272619491980773624567012766320777398670353")
	spec.AssetsPerConn = 1
	c := startCapture(t, spec, nil, recorder.WithStallTimeout(time.Minute))
	waitFor(t, "four connections", func() bool { return len(s.Live()) == 4 })
	kills := 0
	for ; kills < rounds; kills++ {
		target := sentTotal(s) + perRound
		waitFor(t, "frames before the next kill", func() bool { return len(s.Live()) == 4 && sentTotal(s) >= target })
		s.KillAll()
	}
	waitFor(t, "reconnected", func() bool { return len(s.Live()) == 4 })
	recs := c.stop()
	checkOrder(t, recs)
	checkByteIdentical(t, s, recs, 0)
	st := c.rec.Stats()
	if st.Dropped != 0 || st.Lost != 0 {
		t.Errorf("lost frames: %+v", st)
	}
	frames := len(ofKind(recs, datasets.KindFrame))
	if want := rounds * perRound; frames < want {
		t.Errorf("only %d frames recorded, want at least %d", frames, want)
	}
	if n, want := len(ofKind(recs, datasets.KindConnect)), len(s.Conns()); n != want {
		t.Errorf("%d connect records for %d server connections", n, want)
	}
	// Every connection ended in a disconnect record, or, for the ones open
	// at shutdown, a clean close of their own.
	closes := 0
	for _, c := range ofKind(recs, datasets.KindCleanClose) {
		if c.Conn != 0 {
			closes++
		}
	}
	if n := len(ofKind(recs, datasets.KindDisconnect)) + closes; n != len(s.Conns()) {
		t.Errorf("%d disconnect and %d clean close records for %d connections", n-closes, closes, len(s.Conns()))
	}
	t.Logf("%d frames over %d connections, %d kill rounds, read-to-disk p50 %v p99 %v",
		frames, len(s.Conns()), kills, st.DiskLag.P50, st.DiskLag.P99)
}
