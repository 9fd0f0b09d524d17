package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// PeersSchema names the layout of a make bench-peers result (PeersResult).
const PeersSchema = "tapedeck-bench-peers/1"

// PeersFile is where the result behind bench/RESULTS.md's tardis-dev section
// and the README's table is kept, relative to the module root.
const PeersFile = "bench/RESULTS-peers.json"

// PeersMarker is the name of the generated blocks in bench/RESULTS.md and
// README.md: everything between "<!-- bench-peers:begin -->" and
// "<!-- bench-peers:end -->" is rewritten from the JSON by
// WritePeersBlocks.
const PeersMarker = "bench-peers"

// The workloads of make bench-peers, by id. Each reads every frame of the
// same generated recording.
const (
	PeerTardisRaw     = "tardis-raw"     // tardis-dev replay({skipDecoding:true}): frames off its cache, no decoding
	PeerTapedeckRun   = "tapedeck-run"   // replay run: zstd → decoder → books, default integrity checks
	PeerTardisBooks   = "tardis-books"   // tardis-dev replayNormalized + computeBookSnapshots({depth:25, interval:0})
	PeerTapedeckDepth = "tapedeck-depth" // replay export --table depth --levels 25 --every-event --format csv
)

// PeersWorkloads are the workloads in the order a round runs them (even
// rounds run them in reverse), with what each is.
var PeersWorkloads = []PeersWorkload{
	{ID: PeerTardisRaw, Tool: "tardis-dev", Mode: "raw",
		Name: "tardis-dev raw replay, no decoding (`replay({skipDecoding: true})`, tardis-machine's /replay path)"},
	{ID: PeerTapedeckRun, Tool: "tapedeck", Mode: "raw",
		Name: "tapedeck `replay run`: decode + books + default integrity checks"},
	{ID: PeerTardisBooks, Tool: "tardis-dev", Mode: "books",
		Name: "tardis-dev books: `replayNormalized` + `computeBookSnapshots({depth: 25, interval: 0})`, a 25-level snapshot after each change that moves the top 25"},
	{ID: PeerTapedeckDepth, Tool: "tapedeck", Mode: "books",
		Name: "tapedeck `replay export --table depth --levels 25 --every-event --format csv`: a 25-level row for each book a frame changes, written out"},
}

// PeersRatios are the same-run ratios a result states: of's frames per
// second over over's.
var PeersRatios = []struct{ Name, Of, Over string }{
	{"tapedeck run / tardis-dev raw", PeerTapedeckRun, PeerTardisRaw},
	{"tapedeck run / tardis-dev books", PeerTapedeckRun, PeerTardisBooks},
	{"tapedeck depth export / tardis-dev books", PeerTapedeckDepth, PeerTardisBooks},
}

// PeersResult is one run of make bench-peers: the machine, the tools, the
// recording, every timed pass of every workload, their medians and the
// same-run ratios. The medians and ratios are derived from Runs; Validate
// recomputes them, so a hand-edited figure is an error.
type PeersResult struct {
	Schema    string         `json:"schema"`
	Command   string         `json:"command"`  // the command line that produced it
	Started   string         `json:"started"`  // RFC 3339, UTC
	Finished  string         `json:"finished"` // RFC 3339, UTC
	Commit    string         `json:"commit"`   // git HEAD measured, "+dirty" when modified
	Machine   PeersMachine   `json:"machine"`
	Versions  PeersVersions  `json:"versions"`
	Recording PeersRecording `json:"recording"`
	Rounds    int            `json:"rounds"`
	// Workloads are those that ran, in the order of odd rounds.
	Workloads []PeersWorkload `json:"workloads"`
	// Runs are every timed pass, in the order they ran.
	Runs    []PeersRun             `json:"runs"`
	Medians map[string]PeersMedian `json:"medians"` // by workload id
	Ratios  []PeersRatio           `json:"ratios"`
}

// PeersMachine is the machine a result was measured on and how busy it was.
type PeersMachine struct {
	CPU          string `json:"cpu"`
	Cores        int    `json:"cores"`
	GOOS         string `json:"goos"`
	GOARCH       string `json:"goarch"`
	MemTotalKB   int64  `json:"mem_total_kb"`
	Kernel       string `json:"kernel,omitempty"`
	LoadAvgStart string `json:"load_avg_start"` // /proc/loadavg's 1, 5, 15 minutes before the first run
	LoadAvgEnd   string `json:"load_avg_end"`   // and after the last
	Note         string `json:"note,omitempty"` // the conditions, as the person who ran it states them
}

// PeersVersions are the versions of the tools measured.
type PeersVersions struct {
	Go        string `json:"go"`         // the toolchain that built replay
	Node      string `json:"node"`       // what ran tardis-dev
	TardisDev string `json:"tardis_dev"` // npm tardis-dev, as installed
}

// PeersRecording is the generated recording every workload reads: the same
// frames as a tardis-dev cache and as a tapedeck dataset.
type PeersRecording struct {
	Generator  string `json:"generator"` // bench/peers/gen_polymarket_cache.py
	Seed       string `json:"seed"`
	Minutes    int    `json:"minutes"`
	From       string `json:"from"`
	To         string `json:"to"`
	Frames     int64  `json:"frames"`
	TextBytes  int64  `json:"text_bytes"` // the frames' text, as tardis-dev's cache lines hold it
	GzBytes    int64  `json:"gz_bytes"`   // the cache's gzip bytes
	TextSHA256 string `json:"text_sha256"`
	Markets    int    `json:"markets"`
	Tokens     int    `json:"tokens"`
	// TapedeckDigest is replay run's digest of the dataset imported from
	// the cache; every round must give the same.
	TapedeckDigest string `json:"tapedeck_digest"`
}

// PeersWorkload is one of the compared workloads.
type PeersWorkload struct {
	ID      string `json:"id"`
	Tool    string `json:"tool"` // tardis-dev or tapedeck
	Mode    string `json:"mode"` // raw or books
	Name    string `json:"name"`
	Command string `json:"command,omitempty"` // as run, paths relative to the module root
	// Rows is what one pass outputs, for the book modes: tardis-dev's book
	// snapshots (every timed pass counts them) or tapedeck's depth rows
	// (counted on one more, untimed, pass after the rounds: the timed ones
	// write to /dev/null).
	Rows int64 `json:"rows,omitempty"`
}

// PeersRun is one timed pass of one workload, a child process. WallS and
// CPUS are of the replay itself: the tool's own timer around its replay
// loop where it has one (Timer "tool": tardis-dev's harness, replay run's
// wall_ns; node's start-up and tardis-dev's loading, about half a second, are
// left out), else the process (Timer "process": replay export, whose Go
// start-up is milliseconds). ProcessWallS and ProcessCPUS are the whole
// process as the operating system saw it.
type PeersRun struct {
	Round        int     `json:"round"`
	Workload     string  `json:"workload"`
	Frames       int64   `json:"frames"` // input frames it read
	Timer        string  `json:"timer"`  // "tool" or "process": what WallS and CPUS time
	WallS        float64 `json:"wall_s"`
	CPUS         float64 `json:"cpu_s"`        // user + system seconds, all threads
	FramesPerS   float64 `json:"frames_per_s"` // Frames / WallS
	ProcessWallS float64 `json:"process_wall_s"`
	ProcessCPUS  float64 `json:"process_cpu_s"`
	MaxRSSMB     float64 `json:"max_rss_mb,omitempty"`
	Rows         int64   `json:"rows,omitempty"` // book snapshots tardis-dev computed
	Digest       string  `json:"digest,omitempty"`
	LoadAvg      string  `json:"load_avg,omitempty"` // /proc/loadavg before the pass
}

// PeersMedian is the median of a workload's runs.
type PeersMedian struct {
	WallS         float64 `json:"wall_s"`
	CPUS          float64 `json:"cpu_s"`
	FramesPerS    float64 `json:"frames_per_s"`
	FramesPerCPUS float64 `json:"frames_per_cpu_s"` // Frames / CPUS of each run, median
}

// PeersRatio is one same-run ratio: the median frames/s of Of over Over's,
// each round's own ratio, and the ratio of their median frames per
// CPU-second (what a busy host disturbs least: a process waiting for a core
// spends wall time, not CPU time).
type PeersRatio struct {
	Name     string    `json:"name"`
	Of       string    `json:"of"`
	Over     string    `json:"over"`
	Median   float64   `json:"of_medians"`
	PerRound []float64 `json:"per_round"`
	PerCPUS  float64   `json:"per_cpu_s"`
}

// ErrPeersResult means a file is not a valid make bench-peers result.
var ErrPeersResult = errors.New("bench: not a valid bench-peers result")

// ReadPeersResult reads and validates a result written by make bench-peers.
func ReadPeersResult(path string) (*PeersResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParsePeersResult(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ParsePeersResult decodes and validates a result. Unknown fields, a
// missing round, a figure that disagrees with its runs are errors that say
// which field.
func ParsePeersResult(b []byte) (*PeersResult, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p PeersResult
	if err := dec.Decode(&p); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
			return nil, fmt.Errorf("%w: line %d: %v", ErrPeersResult, line, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrPeersResult, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrPeersResult)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Finish keeps 6 significant digits of each run's figures (frames/s
// recomputed from them, so that whoever recomputes a figure from the JSON
// gets the same) and sets the medians and ratios from the runs.
func (p *PeersResult) Finish() {
	for i := range p.Runs {
		r := &p.Runs[i]
		r.WallS, r.CPUS, r.MaxRSSMB = round6(r.WallS), round6(r.CPUS), round6(r.MaxRSSMB)
		r.ProcessWallS, r.ProcessCPUS = round6(r.ProcessWallS), round6(r.ProcessCPUS)
		if r.WallS > 0 {
			r.FramesPerS = round6(float64(r.Frames) / r.WallS)
		}
	}
	p.Medians, p.Ratios = p.derived()
}

// derived computes the medians and ratios from the runs.
func (p *PeersResult) derived() (map[string]PeersMedian, []PeersRatio) {
	medians := map[string]PeersMedian{}
	for _, w := range p.Workloads {
		var wall, cpu, fps, fpc []float64
		for _, r := range p.Runs {
			if r.Workload != w.ID {
				continue
			}
			wall, cpu, fps = append(wall, r.WallS), append(cpu, r.CPUS), append(fps, r.FramesPerS)
			if r.CPUS > 0 {
				fpc = append(fpc, float64(r.Frames)/r.CPUS)
			}
		}
		if len(wall) == 0 {
			continue
		}
		m := PeersMedian{WallS: round6(Median(wall)), CPUS: round6(Median(cpu)), FramesPerS: round6(Median(fps))}
		if len(fpc) > 0 {
			m.FramesPerCPUS = round6(Median(fpc))
		}
		medians[w.ID] = m
	}
	var ratios []PeersRatio
	for _, q := range PeersRatios {
		of, ok1 := medians[q.Of]
		over, ok2 := medians[q.Over]
		if !ok1 || !ok2 || over.FramesPerS <= 0 {
			continue
		}
		r := PeersRatio{Name: q.Name, Of: q.Of, Over: q.Over, Median: round6(of.FramesPerS / over.FramesPerS)}
		if over.FramesPerCPUS > 0 {
			r.PerCPUS = round6(of.FramesPerCPUS / over.FramesPerCPUS)
		}
		for round := 1; round <= p.Rounds; round++ {
			a, b := p.run(round, q.Of), p.run(round, q.Over)
			if a != nil && b != nil && b.FramesPerS > 0 {
				r.PerRound = append(r.PerRound, round6(a.FramesPerS/b.FramesPerS))
			}
		}
		ratios = append(ratios, r)
	}
	return medians, ratios
}

func (p *PeersResult) run(round int, workload string) *PeersRun {
	for i := range p.Runs {
		if p.Runs[i].Round == round && p.Runs[i].Workload == workload {
			return &p.Runs[i]
		}
	}
	return nil
}

func (p *PeersResult) workload(id string) PeersWorkload {
	for _, w := range p.Workloads {
		if w.ID == id {
			return w
		}
	}
	return PeersWorkload{}
}

// Median returns the medians of workload id and whether it ran.
func (p *PeersResult) Median(id string) (PeersMedian, bool) {
	m, ok := p.Medians[id]
	return m, ok
}

// Ratio returns the ratio named name, or nil.
func (p *PeersResult) Ratio(name string) *PeersRatio {
	for i := range p.Ratios {
		if p.Ratios[i].Name == name {
			return &p.Ratios[i]
		}
	}
	return nil
}

// Validate checks that a result is complete and self-consistent: one run per
// workload per round, each over the recording's frames, frames/s equal to
// frames over wall time, one tapedeck digest, and the medians and ratios
// those of the runs.
func (p *PeersResult) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrPeersResult, fmt.Sprintf(format, a...))
	}
	if p.Schema != PeersSchema {
		return bad("schema %q, want %q", p.Schema, PeersSchema)
	}
	if p.Rounds < 1 {
		return bad("rounds %d: want at least 1", p.Rounds)
	}
	if p.Recording.Frames <= 0 {
		return bad("recording.frames %d: want > 0", p.Recording.Frames)
	}
	if p.Machine.Cores < 1 || p.Machine.CPU == "" {
		return bad("machine: cpu %q, cores %d: want both", p.Machine.CPU, p.Machine.Cores)
	}
	if p.Versions.Go == "" || p.Versions.Node == "" || p.Versions.TardisDev == "" {
		return bad("versions: go %q, node %q, tardis_dev %q: want all three", p.Versions.Go, p.Versions.Node, p.Versions.TardisDev)
	}
	if len(p.Workloads) == 0 {
		return bad("no workloads")
	}
	known := map[string]bool{}
	for _, w := range PeersWorkloads {
		known[w.ID] = true
	}
	seen := map[string]bool{}
	for i, w := range p.Workloads {
		if !known[w.ID] {
			return bad("workloads[%d]: unknown id %q", i, w.ID)
		}
		if seen[w.ID] {
			return bad("workloads[%d]: %q twice", i, w.ID)
		}
		seen[w.ID] = true
	}
	if want := p.Rounds * len(p.Workloads); len(p.Runs) != want {
		return bad("%d runs, want %d (%d rounds × %d workloads)", len(p.Runs), want, p.Rounds, len(p.Workloads))
	}
	done := map[string]bool{}
	for i, r := range p.Runs {
		at := fmt.Sprintf("runs[%d] (round %d, %s)", i, r.Round, r.Workload)
		switch {
		case !seen[r.Workload]:
			return bad("%s: workload not in workloads", at)
		case r.Round < 1 || r.Round > p.Rounds:
			return bad("%s: round out of 1..%d", at, p.Rounds)
		case done[fmt.Sprint(r.Round, r.Workload)]:
			return bad("%s: a second run of this workload in this round", at)
		case r.Frames != p.Recording.Frames:
			return bad("%s: frames %d, but the recording has %d", at, r.Frames, p.Recording.Frames)
		case !(r.WallS > 0) || math.IsInf(r.WallS, 0):
			return bad("%s: wall_s %v: want > 0", at, r.WallS)
		case r.Timer != "tool" && r.Timer != "process":
			return bad("%s: timer %q: want \"tool\" or \"process\"", at, r.Timer)
		case !(r.ProcessWallS >= r.WallS) && !near(r.ProcessWallS, r.WallS):
			return bad("%s: process_wall_s %v is less than wall_s %v", at, r.ProcessWallS, r.WallS)
		case !(r.CPUS >= 0) || math.IsInf(r.CPUS, 0):
			return bad("%s: cpu_s %v: want >= 0", at, r.CPUS)
		case !near(r.FramesPerS, float64(r.Frames)/r.WallS):
			return bad("%s: frames_per_s %v, but frames / wall_s = %v", at, r.FramesPerS, float64(r.Frames)/r.WallS)
		case r.Rows != 0 && r.Rows != p.workload(r.Workload).Rows:
			return bad("%s: rows %d, but the workload's rows are %d", at, r.Rows, p.workload(r.Workload).Rows)
		case r.Workload == PeerTapedeckRun && r.Digest != p.Recording.TapedeckDigest:
			return bad("%s: digest %q, but recording.tapedeck_digest is %q", at, r.Digest, p.Recording.TapedeckDigest)
		}
		done[fmt.Sprint(r.Round, r.Workload)] = true
	}
	var want PeersResult
	want.Medians, want.Ratios = p.derived()
	for _, w := range p.Workloads {
		got, ok := p.Medians[w.ID]
		exp := want.Medians[w.ID]
		if !ok {
			return bad("medians: %q missing", w.ID)
		}
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"wall_s", got.WallS, exp.WallS}, {"cpu_s", got.CPUS, exp.CPUS}, {"frames_per_s", got.FramesPerS, exp.FramesPerS}, {"frames_per_cpu_s", got.FramesPerCPUS, exp.FramesPerCPUS}} {
			if !near(f.got, f.want) {
				return bad("medians[%q].%s %v, but the runs' median is %v", w.ID, f.name, f.got, f.want)
			}
		}
	}
	if len(p.Medians) != len(want.Medians) {
		return bad("medians: %d workloads, want %d", len(p.Medians), len(want.Medians))
	}
	if len(p.Ratios) != len(want.Ratios) {
		return bad("%d ratios, want %d", len(p.Ratios), len(want.Ratios))
	}
	for i, r := range p.Ratios {
		e := want.Ratios[i]
		if r.Name != e.Name || r.Of != e.Of || r.Over != e.Over {
			return bad("ratios[%d]: %q (%s / %s), want %q (%s / %s)", i, r.Name, r.Of, r.Over, e.Name, e.Of, e.Over)
		}
		if !near(r.Median, e.Median) {
			return bad("ratios[%d] %q: of_medians %v, but the medians give %v", i, r.Name, r.Median, e.Median)
		}
		if !near(r.PerCPUS, e.PerCPUS) {
			return bad("ratios[%d] %q: per_cpu_s %v, but the medians give %v", i, r.Name, r.PerCPUS, e.PerCPUS)
		}
		if len(r.PerRound) != len(e.PerRound) {
			return bad("ratios[%d] %q: %d per_round, want %d", i, r.Name, len(r.PerRound), len(e.PerRound))
		}
		for j := range r.PerRound {
			if !near(r.PerRound[j], e.PerRound[j]) {
				return bad("ratios[%d] %q: per_round[%d] %v, but round %d gives %v", i, r.Name, j, r.PerRound[j], j+1, e.PerRound[j])
			}
		}
	}
	return nil
}

// near says whether two derived figures agree to the 6 significant digits
// they are written with.
func near(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-5*math.Max(math.Abs(a), math.Abs(b))
}

// round6 keeps 6 significant digits, so the JSON stays readable and the
// figures a reader recomputes agree with it.
func round6(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	e := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*e) / e
}

// WritePeersResult writes p as indented JSON.
func WritePeersResult(w io.Writer, p *PeersResult) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // the commands hold "> /dev/null"
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// PeersResultsSection is the generated body of bench/RESULTS.md's tardis-dev
// section: the conditions, one row per workload with its medians and every
// round, and the ratios.
func PeersResultsSection(p *PeersResult, source string) string {
	var b strings.Builder
	f := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	f("Generated from `%s` (written by `%s`) — do not edit by hand; `make bench-peers-results` regenerates this block. ", source, p.Command)
	f("%s, the workloads alternated (even rounds in reverse order), %s to %s UTC, commit `%s`, on %s, %d logical CPUs, %s/%s, %s, node %s, tardis-dev %s. ",
		plural(p.Rounds, "round"), p.Started, clock(p.Finished), orDash(p.Commit), p.Machine.CPU, p.Machine.Cores, p.Machine.GOOS, p.Machine.GOARCH, p.Versions.Go, p.Versions.Node, p.Versions.TardisDev)
	f("Load average %s before, %s after", orDash(p.Machine.LoadAvgStart), orDash(p.Machine.LoadAvgEnd))
	if p.Machine.Note != "" {
		f(" (%s)", p.Machine.Note)
	}
	f(".\n\n")
	rec := p.Recording
	f("The recording: `%s --minutes %d` (seed `%s`), %d Polymarket markets (%d tokens), %s frames, %.1f MB of frame text (SHA-256 `%s`), %.1f MB as tardis-dev's gzip cache, imported into a tapedeck dataset (`capture import --format tardis`; `replay run` digest `%s`). ",
		rec.Generator, rec.Minutes, rec.Seed, rec.Markets, rec.Tokens, thousands(rec.Frames), float64(rec.TextBytes)/1e6, short(rec.TextSHA256), float64(rec.GzBytes)/1e6, orDash(rec.TapedeckDigest))
	f("Every pass reads all of it, offline (tardis-dev's API is a stub on 127.0.0.1 that must see no request). ")
	f("Each pass is its own process. Wall and CPU (user + system, all threads) are of the replay: the tool's own timer around its replay loop where it has one (tardis-dev's harness, `replay run`'s `wall_ns`; this leaves out node's start-up and the loading of tardis-dev), else the whole process (`replay export`); frames/s is the recording's frames over that wall time. The process's own wall time is beside it.\n\n")
	f("| workload | frames/s (median) | wall s | CPU s | frames per CPU-s | process wall s | max RSS | books out per pass | frames/s per round |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, w := range p.Workloads {
		m := p.Medians[w.ID]
		var rounds []string
		var rss, pwall []float64
		for round := 1; round <= p.Rounds; round++ {
			if r := p.run(round, w.ID); r != nil {
				rounds = append(rounds, fmtRate(r.FramesPerS))
				pwall = append(pwall, r.ProcessWallS)
				if r.MaxRSSMB > 0 {
					rss = append(rss, r.MaxRSSMB)
				}
			}
		}
		mem, snaps := "-", "-"
		if len(rss) > 0 {
			mem = fmt.Sprintf("%.0f MB", Median(rss))
		}
		if w.Rows > 0 {
			snaps = thousands(w.Rows)
		}
		f("| %s | %s | %.2f | %.2f | %s | %.2f | %s | %s | %s |\n", w.Name, fmtRate(m.FramesPerS), m.WallS, m.CPUS, fmtRate(m.FramesPerCPUS), Median(pwall), mem, snaps, strings.Join(rounds, ", "))
	}
	f("\n")
	for _, r := range p.Ratios {
		per := make([]string, len(r.PerRound))
		for i, v := range r.PerRound {
			per[i] = fmtRatio(v)
		}
		f("- %s: **%s** (medians; per round %s); per CPU-second %s\n", r.Name, fmtRatio(r.Median), strings.Join(per, ", "), fmtRatio(r.PerCPUS))
	}
	f("\nCommands, from the module root:\n\n```sh\n")
	for _, w := range p.Workloads {
		if w.Command != "" {
			f("%s\n", w.Command)
		}
	}
	f("```\n")
	return b.String()
}

// PeersReadmeTable is the generated body of the README's tardis-dev table.
func PeersReadmeTable(p *PeersResult, source string) string {
	var b strings.Builder
	f := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	rec := p.Recording
	f("Same run, same frames (`make bench-peers`: %s, alternated, medians, %s; `%s`): a generated %d-minute Polymarket recording of %s frames (%.0f MB of frame text), as tardis-dev@%s's cache and as a tapedeck dataset, on %s, %d logical CPUs; load average %s before, %s after",
		plural(p.Rounds, "round"), day(p.Started), source, rec.Minutes, thousands(rec.Frames), float64(rec.TextBytes)/1e6, p.Versions.TardisDev, p.Machine.CPU, p.Machine.Cores, orDash(p.Machine.LoadAvgStart), orDash(p.Machine.LoadAvgEnd))
	if p.Machine.Note != "" {
		f(" (%s)", p.Machine.Note)
	}
	f(". Frames per CPU-second (user + system, all threads) are what a busy host disturbs least.\n\n| mode | tapedeck | tardis-dev | tapedeck / tardis-dev | per CPU-second: tapedeck, tardis-dev, ratio |\n|---|---|---|---|---|\n")
	rows := []struct{ mode, ours, theirs, ratio string }{
		{"raw: every frame off disk (tapedeck also decodes, rebuilds every book and runs its integrity checks; tardis-dev does not decode)", PeerTapedeckRun, PeerTardisRaw, "tapedeck run / tardis-dev raw"},
		{"books: the top 25 levels after every change (tapedeck writes a CSV row for each book a frame changes; tardis-dev computes a snapshot after each change that moves the top 25)", PeerTapedeckDepth, PeerTardisBooks, "tapedeck depth export / tardis-dev books"},
	}
	for _, row := range rows {
		a, ok1 := p.Median(row.ours)
		c, ok2 := p.Median(row.theirs)
		if !ok1 && !ok2 {
			continue
		}
		cell := func(m PeersMedian, ok bool) string {
			if !ok {
				return "not run"
			}
			return fmtRate(m.FramesPerS) + " frames/s"
		}
		ratio, cpu := "-", "-"
		if r := p.Ratio(row.ratio); r != nil {
			ratio = fmtRatio(r.Median)
			cpu = fmt.Sprintf("%s, %s, %s", fmtRate(a.FramesPerCPUS), fmtRate(c.FramesPerCPUS), fmtRatio(r.PerCPUS))
		}
		f("| %s | %s | %s | %s | %s |\n", row.mode, cell(a, ok1), cell(c, ok2), ratio, cpu)
	}
	return b.String()
}

// ReplaceBlock returns doc with the text between the begin and end markers
// named name ("<!-- name:begin -->", "<!-- name:end -->", each alone on its
// line, once) replaced by body.
func ReplaceBlock(doc []byte, name, body string) ([]byte, error) {
	begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
	if n := bytes.Count(doc, []byte(begin)); n != 1 {
		return nil, fmt.Errorf("marker %q: found %d times, want once at the start of a line", strings.TrimSpace(begin), n)
	}
	if n := bytes.Count(doc, []byte(end)); n != 1 {
		return nil, fmt.Errorf("marker %q: found %d times, want once", end, n)
	}
	i := bytes.Index(doc, []byte(begin))
	j := bytes.Index(doc, []byte(end))
	if j < i {
		return nil, fmt.Errorf("marker %q comes before %q", end, strings.TrimSpace(begin))
	}
	if i > 0 && doc[i-1] != '\n' || j > 0 && doc[j-1] != '\n' {
		return nil, fmt.Errorf("markers of %q must start their lines", name)
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(begin)])
	out.WriteString(body)
	if !strings.HasSuffix(body, "\n") {
		out.WriteByte('\n')
	}
	out.Write(doc[j:])
	return out.Bytes(), nil
}

// PeersBlock returns the generated block named PeersMarker in doc, or an
// error when its markers are missing.
func PeersBlock(doc []byte) (string, error) {
	begin, end := "<!-- "+PeersMarker+":begin -->\n", "<!-- "+PeersMarker+":end -->"
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		return "", fmt.Errorf("no %s block (markers %q … %q)", PeersMarker, strings.TrimSpace(begin), end)
	}
	return string(doc[i+len(begin) : j]), nil
}

// RegeneratePeersDocs rewrites the bench-peers blocks of the RESULTS.md
// text and the README text from p (source is the JSON's path as the docs
// name it) and returns them.
func RegeneratePeersDocs(p *PeersResult, source string, results, readme []byte) (newResults, newReadme []byte, err error) {
	if newResults, err = ReplaceBlock(results, PeersMarker, PeersResultsSection(p, source)); err != nil {
		return nil, nil, fmt.Errorf("RESULTS.md: %w", err)
	}
	if newReadme, err = ReplaceBlock(readme, PeersMarker, PeersReadmeTable(p, source)); err != nil {
		return nil, nil, fmt.Errorf("README.md: %w", err)
	}
	return newResults, newReadme, nil
}

// PeersPlaceholder is the block WriteResults leaves for the tardis-dev
// section when there is no result to fill it with.
const PeersPlaceholder = "Not measured yet: run `make bench-peers`.\n"

func fmtRate(v float64) string {
	switch {
	case !(v > 0):
		return "-"
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0f k", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtRatio(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

// plural is "1 round", "3 rounds".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// thousands writes n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// clock is the time of day of an RFC 3339 timestamp ("" when it is not one).
func clock(ts string) string {
	if _, t, ok := strings.Cut(ts, "T"); ok {
		return strings.TrimSuffix(t, "Z")
	}
	return ts
}

// day is the date of an RFC 3339 timestamp.
func day(ts string) string {
	d, _, _ := strings.Cut(ts, "T")
	return d
}
