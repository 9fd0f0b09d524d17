package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// ReportVersion is the version of the JSON report layout.
const ReportVersion = 1

// Report is the outcome of one run of the suite: per scenario and unit, the
// samples of every -count run with their median and 95th percentile.
type Report struct {
	Version   int    `json:"version"`
	Commit    string `json:"commit"` // git HEAD of the code measured, "+dirty" when modified; "" if unknown
	Env       Env    `json:"env"`
	Suite     string `json:"suite_fingerprint"` // the suite fingerprint (benchrun) of the bench sources and inputs
	Count     int    `json:"count"`             // runs per scenario (-count, or gate rounds)
	Benchtime string `json:"benchtime,omitempty"`
	// Paired marks a report taken in alternating rounds with another one
	// (the gate's baseline and current): Samples[i] of both come from round i.
	Paired    bool       `json:"paired,omitempty"`
	Scenarios []Scenario `json:"scenarios"`
}

// Scenario is one benchmark measured in one unit.
type Scenario struct {
	Name    string    `json:"scenario"` // benchmark name without "Benchmark" and the -GOMAXPROCS suffix
	Unit    string    `json:"unit"`     // "ns/frame", "MB/s", "allocs/op", …
	Median  float64   `json:"median"`
	P95     float64   `json:"p95"`
	Runs    int       `json:"runs"`
	Samples []float64 `json:"samples"` // in run order
}

// Key identifies a scenario and unit within a report.
func (s *Scenario) Key() string { return s.Name + " " + s.Unit }

// ErrReport means a report file is not a tapedeck bench report.
var ErrReport = errors.New("bench: not a bench report")

// Lookup returns the scenario with name and unit, or nil.
func (r *Report) Lookup(name, unit string) *Scenario {
	for i := range r.Scenarios {
		if r.Scenarios[i].Name == name && r.Scenarios[i].Unit == unit {
			return &r.Scenarios[i]
		}
	}
	return nil
}

// NewReport builds a report from parsed benchmark samples, computing the
// median and p95 of each; scenarios are sorted by name then unit so the
// report is deterministic.
func NewReport(samples map[string]map[string][]float64) *Report {
	r := &Report{Version: ReportVersion}
	for name, units := range samples {
		for unit, xs := range units {
			r.Scenarios = append(r.Scenarios, Scenario{
				Name: name, Unit: unit, Median: Median(xs), P95: Percentile(xs, 0.95),
				Runs: len(xs), Samples: append([]float64(nil), xs...),
			})
		}
	}
	sort.Slice(r.Scenarios, func(i, j int) bool { return r.Scenarios[i].Key() < r.Scenarios[j].Key() })
	return r
}

// WriteFile writes the report as indented JSON.
func (r *Report) WriteFile(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: write report: %w", err)
	}
	return nil
}

// ReadReport reads a report written by WriteFile.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w: %v", path, ErrReport, err)
	}
	if r.Version != ReportVersion {
		return nil, fmt.Errorf("bench: %s: %w: version %d, want %d", path, ErrReport, r.Version, ReportVersion)
	}
	return &r, nil
}

// Primary reports whether unit is one a human table shows for a scenario:
// the per-unit time (ns/frame, ns/record, …), throughput and allocations.
// ns/op is shown only for scenarios that report no per-unit time.
func Primary(unit string) bool {
	return strings.HasPrefix(unit, "ns/") || strings.HasSuffix(unit, "/s") ||
		strings.HasPrefix(unit, "allocs/") || strings.Contains(unit, "-ns") ||
		strings.HasPrefix(unit, "peak-rss") || strings.HasPrefix(unit, "cpu-")
}

// Direction says whether a smaller value of unit is better (+1 means larger
// is worse, as for ns/frame), larger is better (-1, as for MB/s), or the
// unit is not a speed and is not gated (0: B/op, counts, percent).
func Direction(unit string) int {
	switch {
	case unit == "B/op" || strings.HasPrefix(unit, "allocs/"):
		return 0
	case strings.HasPrefix(unit, "ns/") || strings.HasSuffix(unit, "-ns"):
		return +1
	case strings.HasSuffix(unit, "/s"):
		return -1
	}
	return 0
}
