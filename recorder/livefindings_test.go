package recorder_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
	"github.com/tapedeck/tapedeck/replayer"
)

// counter sums the values of metric name whose labels include want.
func counter(t *testing.T, r *recorder.Recorder, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				found := false
				for _, l := range m.GetLabel() {
					found = found || l.GetName() == k && l.GetValue() == v
				}
				if !found {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// recordedFindings sums what the integrity records of check say: each one
// finding plus the Dropped it gathers.
func recordedFindings(t *testing.T, recs []rec, check string) (records int, findings uint64, ctls []datasets.Control) {
	for _, r := range ofKind(recs, datasets.KindIntegrity) {
		ctl := r.control(t)
		if ctl.Reason != check {
			continue
		}
		records++
		findings += 1 + ctl.Dropped
		ctls = append(ctls, ctl)
	}
	return records, findings, ctls
}

// crossedL2Book is a real Hyperliquid l2Book frame with its best bid moved
// above its best ask: the decoder rejects every one.
const crossedL2Book = `{"channel":"l2Book","data":{"coin":"BTC","time":1790232236546,"levels":[` +
	`[{"px":"84145.0","sz":"10.25923","n":36},{"px":"84142.0","sz":"1.65875","n":7}],` +
	`[{"px":"84144.0","sz":"50.66449","n":18},{"px":"84150.0","sz":"0.00711","n":2}]]}}`

// TestLiveRejectedFramesAreRecorded: a Hyperliquid venue whose every l2Book
// is crossed. Each frame the live decoder rejects is a finding: on the
// integrity metric (check "rejected"), in the recording as integrity records
// naming the coin and the decoder's error (those the spacing held back
// counted in the next one's Dropped, the rest written before the capture
// ends), on the status page of the coin, which has no book. Before, 602 of
// 602 such frames left nothing but a decode-error count.
func TestLiveRejectedFramesAreRecorded(t *testing.T) {
	cfg := fakeexchange.HyperliquidConfig()
	cfg.Feed = map[string][]fakeexchange.Template{"l2Book": {{Frame: []byte(crossedL2Book), ID: "BTC"}}}
	s := fakeexchange.New(cfg)
	defer s.Close()
	c := startCapture(t, hlSpec(s, []string{"l2Book"}, "BTC"), nil)
	const want = 200
	waitFor(t, "rejected frames", func() bool { return c.rec.LiveStats().DecodeErrors >= want })
	waitFor(t, "the status line", func() bool {
		for _, in := range c.rec.LiveStatus().Instruments {
			if in.Instrument == "BTC" && in.Rejected > 0 {
				return true
			}
		}
		return false
	})
	for _, in := range c.rec.LiveStatus().Instruments {
		if in.Instrument == "BTC" && (in.HasBook || !strings.Contains(in.LastReject, "crossed")) {
			t.Errorf("status of BTC %+v: want no book and the decoder's error", in)
		}
	}
	recs := c.stop()

	frames := 0
	for _, r := range ofKind(recs, datasets.KindFrame) {
		if bytes.Contains(r.Payload, []byte(`"channel":"l2Book"`)) {
			frames++
		}
	}
	st := c.rec.LiveStats()
	if st.Skipped != 0 {
		t.Skipf("the live engine fell behind on this host (%d skipped): the counts below need every frame", st.Skipped)
	}
	if frames < want || st.DecodeErrors != uint64(frames) {
		t.Fatalf("%d crossed frames recorded, %d rejected live", frames, st.DecodeErrors)
	}
	metric := counter(t, c.rec, "tapedeck_capture_integrity_total", map[string]string{"check": datasets.CheckRejected})
	unrec := counter(t, c.rec, "tapedeck_capture_integrity_unrecorded_total", map[string]string{"check": datasets.CheckRejected})
	n, found, ctls := recordedFindings(t, recs, datasets.CheckRejected)
	if metric != float64(frames) || float64(found)+unrec != metric || unrec != 0 {
		t.Errorf("rejected frames: %d recorded frames, metric %v, %d in %d records, %v not recorded", frames, metric, found, n, unrec)
	}
	if n == 0 || n > frames/2 {
		t.Errorf("%d rejected records for %d frames: want them spaced", n, frames)
	}
	for _, ctl := range ctls {
		if !slices.Equal(ctl.Instruments, []string{"BTC"}) || !strings.Contains(ctl.Err, "crossed") {
			t.Errorf("rejected record %+v", ctl)
			break
		}
	}
}

// TestLiveIntegrityBurstAllAccounted: a burst of confirmed hash mismatches
// far faster than the per-instrument spacing of integrity records. Every
// finding on the metric is in the recording: one record each or counted in
// a record's Dropped, including those still held back when the capture
// stops. Before, those were lost (metric 52,321, recorded 31,985).
func TestLiveIntegrityBurstAllAccounted(t *testing.T) {
	s, c, _, bad := hashCapture(t, recorder.WithHeal(false))
	const burst = 300
	for range burst {
		s.SendAll(bad)
	}
	waitFor(t, "the burst", func() bool { return c.rec.LiveStats().HashMismatches >= burst })
	st := c.rec.LiveStats()
	if held := st.IntegrityHeld; held == 0 {
		t.Errorf("live stats %+v: want findings held back by the spacing while running", st)
	}
	recs := c.stop()
	if st := c.rec.LiveStats(); st.Skipped != 0 {
		t.Skipf("the live engine fell behind on this host (%d skipped)", st.Skipped)
	}
	metric := counter(t, c.rec, "tapedeck_capture_integrity_total", map[string]string{"check": datasets.CheckHashMismatch})
	unrec := counter(t, c.rec, "tapedeck_capture_integrity_unrecorded_total", nil)
	n, found, _ := recordedFindings(t, recs, datasets.CheckHashMismatch)
	if metric != burst || float64(found) != metric || unrec != 0 {
		t.Errorf("metric %v, %d findings in %d records, %v not recorded; want %d = recorded", metric, found, n, unrec, burst)
	}
	if n >= burst/2 {
		t.Errorf("%d records for %d findings: want them spaced", n, burst)
	}
	if st := c.rec.LiveStats(); st.IntegrityHeld != 0 || st.IntegrityUnrecorded != 0 {
		t.Errorf("after the capture: %+v", st)
	}
}

// TestLiveHeldFindingsBeforeCleanClose: findings the spacing of integrity
// records still holds back when the capture stops are written before the
// clean close of their connection, not after it. The dataset format says
// that anything after a connection's clean close on its slot starts after
// an unrecorded gap, so a replay invalidates the connection's books there:
// before, a capture stopped within the spacing of a burst of mismatches
// (the whole tail of a sample recording on an idle host) left every book of
// the connection invalid at the end of its replay, healed or not.
func TestLiveHeldFindingsBeforeCleanClose(t *testing.T) {
	asset := fakeexchange.PolymarketHashAsset
	// An hour of spacing: every finding after the first is held until the
	// capture stops, whatever the speed of the host.
	s, c, good, bad := hashCapture(t, recorder.WithHeal(false), recorder.WithHealBackoff(time.Hour, time.Hour))
	const burst = 3
	for range burst {
		s.SendAll(bad)
	}
	waitFor(t, "the mismatches", func() bool { return c.rec.LiveStats().HashMismatches >= burst })
	b, _ := c.rec.LiveBook(asset)
	ok := b.Quality.HashOK
	s.SendAll(good) // the venue's next snapshot: the book is right again
	waitFor(t, "the good snapshot", func() bool {
		b, _ := c.rec.LiveBook(asset)
		return b.Quality.HashOK > ok && b.Valid
	})
	if held := c.rec.LiveStats().IntegrityHeld; held != burst-1 {
		t.Fatalf("%d findings held back at the stop, want %d", held, burst-1)
	}
	recs := c.stop()
	if st := c.rec.LiveStats(); st.Skipped != 0 {
		t.Skipf("the live engine fell behind on this host (%d skipped)", st.Skipped)
	}
	if _, found, _ := recordedFindings(t, recs, datasets.CheckHashMismatch); found != burst {
		t.Errorf("%d findings recorded, want %d", found, burst)
	}
	closed := map[uint32]uint64{}
	for _, r := range recs {
		if r.Conn == 0 {
			continue
		}
		if seq, ok := closed[r.Conn]; ok {
			t.Errorf("record %d (%s) on conn %d after its clean close (record %d)", r.Seq, r.Kind, r.Conn, seq)
		}
		if r.Kind == datasets.KindCleanClose {
			closed[r.Conn] = r.Seq
		}
	}
	if len(closed) == 0 {
		t.Fatalf("no clean close of a connection: %s", describe(recs))
	}
	rp, err := replayer.New([]string{c.dir}, replayer.WithHashCheck(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, b := range rp.Books() {
		if b.Instrument == asset && !b.Book.Valid() {
			t.Errorf("the replayed book of %s is not valid at the end: the venue's last snapshot matched its hash", asset)
		}
	}
}

// hashCapture records a Polymarket venue whose book hashes are checked
// (fakeexchange.PolymarketHashConfig) until its first book has been
// checked, and returns the venue's book frame as sent and a copy whose hash
// differs by one digit.
func hashCapture(t *testing.T, opts ...recorder.Option) (s *fakeexchange.Server, c *capture, good, bad []byte) {
	t.Helper()
	s = fakeexchange.New(fakeexchange.PolymarketHashConfig())
	t.Cleanup(s.Close)
	asset := fakeexchange.PolymarketHashAsset
	c = startCapture(t, pmSpec(s, asset), nil, opts...)
	waitFor(t, "the first hash-checked book", func() bool {
		b, ok := c.rec.LiveBook(asset)
		return ok && b.Quality.HashChecked >= 2 && len(s.Live()) > 0
	})
	good = s.Conns()[0].Sent()[0]
	i := strings.Index(string(good), `"hash":"`) + len(`"hash":"`)
	bad = slices.Clone(good)
	bad[i] = "01"[min(int(bad[i]-'0'), 1)^1]
	return s, c, good, bad
}
