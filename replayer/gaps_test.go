package replayer

import (
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
)

// A paced replay of a recording with a 30-day silence after a disconnect
// and a 2-hour quiet stretch in the data: the loss is skipped at once, the
// quiet stretch is cut to the max gap, every record is still delivered in
// order, and the summary says how much recorded time was skipped.
func TestPacedReplaySkipsLossesAndCapsGaps(t *testing.T) {
	s, min := int64(time.Second), int64(time.Minute)
	day := 24 * 60 * min
	disc := string(datasets.EncodeControl(datasets.Control{Code: 1006}))
	recs := []rec{
		frame(0, 1000*s, "snap a 100 1 200 1"),
		frame(0, 1001*s, "snap a 101 1 200 1"),
		{datasets.KindDisconnect, 0, 1002 * s, disc},
		frame(0, 1002*s+30*day, "snap a 102 1 200 1"), // 30 days later, after the loss
		frame(0, 1003*s+30*day, "snap a 103 1 200 1"),
		frame(0, 1003*s+30*day+120*min, "snap a 104 1 200 1"), // 2 h of nothing
		frame(0, 1004*s+30*day+120*min, "snap a 105 1 200 1"),
	}
	dir := writeDataset(t, "fakevenue", recs)
	for _, tc := range []struct {
		name   string
		speed  Speed
		maxGap time.Duration
		// wall times (fake sleeper ns) each record is delivered at
		want []int64
		sk   Skipped
	}{
		{"1x default max gap", 1, DefaultMaxGap, []int64{0, s, s, s, 2 * s, 2*s + min, 3*s + min},
			Skipped{Losses: 1, LossNs: s + 30*day, Capped: 1, CappedNs: 119 * min}},
		{"10x max gap 10s", 10, 10 * time.Second, []int64{0, s / 10, s / 10, s / 10, 2 * s / 10, 12 * s / 10, 13 * s / 10},
			Skipped{Losses: 1, LossNs: s + 30*day, Capped: 1, CappedNs: 120*min - 10*s}},
		{"1x no cap", 1, 0, []int64{0, s, s, s, 2 * s, 2*s + 120*min, 3*s + 120*min},
			Skipped{Losses: 1, LossNs: s + 30*day}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSleeper{}
			r := newFakeReplayer(t, []string{dir}, WithSpeed(tc.speed), WithSleeper(f), WithMaxGap(tc.maxGap))
			var at []int64
			var seqs []uint64
			r.Subscribe(Key{}, SubscriberFunc(func(e *Event) error {
				if len(seqs) == 0 || seqs[len(seqs)-1] != e.Seq {
					at = append(at, f.Now())
					seqs = append(seqs, e.Seq)
				}
				return nil
			}))
			sum := run(t, r)
			if len(seqs) != len(recs) {
				t.Fatalf("%d records delivered, want %d: %v", len(seqs), len(recs), seqs)
			}
			for i := range seqs {
				if seqs[i] != uint64(i+1) || at[i] != tc.want[i] {
					t.Fatalf("delivered %v at %v, want at %v", seqs, at, tc.want)
				}
			}
			if sum.Skipped == nil || *sum.Skipped != tc.sk {
				t.Fatalf("summary skipped %+v, want %+v", sum.Skipped, tc.sk)
			}
		})
	}
}

// Speed factors are bounded: a paced replay slower than MinSpeed or faster
// than MaxSpeed is refused, by ParseSpeed and by the options.
func TestSpeedBounds(t *testing.T) {
	for _, in := range []string{"0.0000001x", "0.009x", "100001x", "1e9x"} {
		if _, err := ParseSpeed(in); err == nil {
			t.Errorf("ParseSpeed(%q) accepted", in)
		}
	}
	for _, in := range []string{"0.01x", "100000x", "max"} {
		if _, err := ParseSpeed(in); err != nil {
			t.Errorf("ParseSpeed(%q): %v", in, err)
		}
	}
	dir := writeDataset(t, "fakevenue", []rec{frame(0, 1, "snap a 100 1 200 1")})
	for _, sp := range []Speed{1e-7, 1e6, -1} {
		if _, err := New([]string{dir}, WithSpeed(sp)); err == nil {
			t.Errorf("WithSpeed(%v) accepted", float64(sp))
		}
	}
	if _, err := New([]string{dir}, WithMaxGap(-time.Second)); err == nil {
		t.Error("negative max gap accepted")
	}
}
