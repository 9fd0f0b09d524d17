package bench

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrEnvMismatch means two reports were measured on different machines or
// toolchains; their timings are not comparable.
var ErrEnvMismatch = errors.New("bench: reports come from different environments")

// ErrSuiteMismatch means two reports ran different scenario code or inputs.
var ErrSuiteMismatch = errors.New("bench: reports come from different suites")

// GateConfig tunes Gate. The zero value uses the defaults.
type GateConfig struct {
	// Threshold is the slowdown that fails the gate: 0.10 (the default)
	// fails when the current build is surely more than 10% slower.
	Threshold float64
	// Confidence is the level of the noise band around the median paired
	// ratio; default 0.95.
	Confidence float64
	// ForceEnv and ForceSuite compare reports whose environment or suite
	// fingerprints differ, instead of returning an error.
	ForceEnv, ForceSuite bool
}

// DefaultThreshold and DefaultConfidence are GateConfig's zero-value defaults.
const (
	DefaultThreshold  = 0.10
	DefaultConfidence = 0.95
)

// Verdict is the gate's finding for one scenario.
type Verdict uint8

// Verdicts.
const (
	Unchanged   Verdict = iota // the band holds no change beyond the threshold, or straddles it
	Regression                 // the whole band is slower than 1+Threshold
	Improvement                // the whole band is faster than 1/(1+Threshold)
	TooFewRuns                 // too few pairs for a band at the confidence level (6 at 95%): no verdict, never fails
)

// String returns the verdict's name as reports print it.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "invalid"
}

var verdictNames = [...]string{"unchanged", "REGRESSION", "improvement", "too few runs"}

// MarshalText writes the verdict's name, so JSON reports read as text.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// Comparison is one scenario's result. Ratio, Lo and Hi are slowdown
// factors, current over baseline for times (base over current for
// throughputs), so above 1 is worse; they are 0 with TooFewRuns.
type Comparison struct {
	Scenario   string  `json:"scenario"`
	Unit       string  `json:"unit"`
	BaseMedian float64 `json:"baseline_median"`
	CurMedian  float64 `json:"current_median"`
	Ratio      float64 `json:"ratio"`   // median paired ratio
	Lo         float64 `json:"band_lo"` // its noise band
	Hi         float64 `json:"band_hi"`
	Pairs      int     `json:"pairs"`
	Verdict    Verdict `json:"verdict"`
}

// GateResult lists every comparison, regressions first.
type GateResult struct {
	Comparisons []Comparison `json:"comparisons"`
	Regressions int          `json:"regressions"`
	// Missing lists scenarios of the baseline the current report lacks.
	Missing []string `json:"missing,omitempty"`
}

// Gate compares a current report with a baseline. Samples are paired by run
// index (the gate runs baseline and current in alternating rounds, so pair i
// shares the machine's state of round i). Each scenario is judged on one
// unit, its time per unit of work (see GatedUnit): MB/s, ns/level and ns/op
// restate the same measurement, and judging it several times would only add
// chances of a false alarm. Gate takes the ratios of the pairs, their median
// and a distribution-free confidence band for that median, and reports a
// Regression only when the whole band lies above 1+Threshold. Noise widens
// the band and cannot fail the gate by itself.
//
// Reports from different environments (Env.Fingerprint) or suites (Suite)
// are ErrEnvMismatch / ErrSuiteMismatch unless forced in cfg.
func Gate(base, cur *Report, cfg GateConfig) (*GateResult, error) {
	if cfg.Threshold <= 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.Confidence <= 0 || cfg.Confidence >= 1 {
		cfg.Confidence = DefaultConfidence
	}
	if base.Env.Fingerprint != cur.Env.Fingerprint && !cfg.ForceEnv {
		return nil, fmt.Errorf("%w: baseline %s (%s, %d cores, %s) vs current %s (%s, %d cores, %s); re-record the baseline here or pass --force-env",
			ErrEnvMismatch, short(base.Env.Fingerprint), base.Env.CPU, base.Env.Cores, base.Env.GoVersion,
			short(cur.Env.Fingerprint), cur.Env.CPU, cur.Env.Cores, cur.Env.GoVersion)
	}
	if base.Suite != cur.Suite && !cfg.ForceSuite {
		return nil, fmt.Errorf("%w: baseline suite %s vs current %s; re-record the baseline or pass --force-suite",
			ErrSuiteMismatch, short(base.Suite), short(cur.Suite))
	}
	res := &GateResult{}
	units := map[string][]string{}
	for _, s := range base.Scenarios {
		units[s.Name] = append(units[s.Name], s.Unit)
	}
	for i := range base.Scenarios {
		b := &base.Scenarios[i]
		dir := Direction(b.Unit)
		if dir == 0 || b.Unit != GatedUnit(units[b.Name]) {
			continue
		}
		c := cur.Lookup(b.Name, b.Unit)
		if c == nil {
			res.Missing = append(res.Missing, b.Key())
			continue
		}
		n := min(len(b.Samples), len(c.Samples))
		ratios := make([]float64, 0, n)
		for k := 0; k < n; k++ {
			bv, cv := b.Samples[k], c.Samples[k]
			if bv <= 0 || cv <= 0 {
				continue
			}
			if dir > 0 {
				ratios = append(ratios, cv/bv)
			} else {
				ratios = append(ratios, bv/cv)
			}
		}
		cmp := Comparison{Scenario: b.Name, Unit: b.Unit, BaseMedian: Median(b.Samples),
			CurMedian: Median(c.Samples), Pairs: len(ratios)}
		lo, hi, ok := medianBand(ratios, cfg.Confidence)
		if !ok {
			cmp.Verdict = TooFewRuns
		} else {
			cmp.Ratio = Median(ratios)
			cmp.Lo, cmp.Hi = lo, hi
			switch {
			case cmp.Lo > 1+cfg.Threshold:
				cmp.Verdict = Regression
				res.Regressions++
			case cmp.Hi < 1/(1+cfg.Threshold):
				cmp.Verdict = Improvement
			}
		}
		res.Comparisons = append(res.Comparisons, cmp)
	}
	sort.SliceStable(res.Comparisons, func(i, j int) bool {
		return res.Comparisons[i].Verdict == Regression && res.Comparisons[j].Verdict != Regression
	})
	return res, nil
}

// GatedUnit returns the unit the gate judges a scenario by, among the units
// it reports: its time per unit of work (ns/frame, ns/record, ns/row, …;
// ns/level only when there is nothing else), else ns/op, else its first
// throughput (…/s), else "".
func GatedUnit(units []string) string {
	best, rank := "", 0
	for _, u := range units {
		r := 0
		switch {
		case strings.HasPrefix(u, "ns/") && u != "ns/op" && u != "ns/level":
			r = 4
		case u == "ns/level":
			r = 3
		case u == "ns/op":
			r = 2
		case strings.HasSuffix(u, "/s"):
			r = 1
		}
		if r > rank || (r == rank && r > 0 && u < best) {
			best, rank = u, r
		}
	}
	return best
}

func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}
