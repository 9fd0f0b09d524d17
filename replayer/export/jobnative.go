package export

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/datasets/interchange"
	"github.com/tapedeck/tapedeck/replayer"
)

// Native reports whether the job writes another tool's own layout, a
// directory of files the format defines (--format hftbacktest without a
// --table), instead of one table.
func (j *Job) Native() bool {
	return j.Table == "" && j.Format == FormatHftBacktest.String()
}

// validateNative checks a native-format job: Out is a directory, and the
// table flags do not apply.
func (j *Job) validateNative() error {
	f := "--format " + j.Format
	if j.Out == "-" || strings.HasPrefix(j.Out, "s3://") {
		return optionf("export: %s writes a directory of files: --out DIR", f)
	}
	if st, err := os.Stat(j.out()); err == nil && !st.IsDir() {
		return optionf("export: %s writes a directory of files: --out %s is a file", f, j.out())
	}
	if len(j.Datasets) == 0 {
		return optionf("export: at least one DATASET is required")
	}
	for name, set := range map[string]bool{"--levels": j.Levels != 0, "--interval": j.Interval != 0,
		"--every-event": j.EveryEvent, "--exact": j.Exact, "--quality-columns": j.Quality, "--compression": j.Compression != 0,
		"--snapshots": j.Snapshots != 0, "--bucket-time": j.BucketTime != 0, "--tardis-exchange": j.TardisExch != "",
		"--split-by": j.SplitBy != "", "--partition-by": j.PartitionBy != nil, "--shard-by time": j.ShardByTime,
		"--compress": j.Compress != interchange.None || interchange.CompressionFromPath(j.Out) != interchange.None} {
		if set {
			return optionf("export: %s does not apply to %s (it writes the tool's own files, one per instrument and day)", name, f)
		}
	}
	return nil
}

// hftBacktest is the subscriber of a --format hftbacktest job: one
// INSTRUMENT_YYYYMMDD.npz per instrument and day under Out (the
// instrument's characters that do not belong in a file name become '_').
func (j *Job) hftBacktest(open func(path string) (io.Writer, error)) (*HftBacktest, error) {
	dir := j.out()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	files := j.instrumentFiles(open)
	var opts []Option
	if len(j.Instruments) > 0 {
		opts = append(opts, WithInstruments(j.Instruments...))
	}
	if !j.Shard.Whole() {
		opts = append(opts, WithShard(j.Shard))
	}
	h, err := NewHftBacktest(func(v, inst, date string) (io.Writer, error) {
		return files(filepath.Join(dir, "{instrument}_"+date+".npz"), v, inst)
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return h, nil
}

// instrumentFiles returns a function opening the file of an instrument,
// named by a template with {instrument} (and {venue}): it refuses two
// instruments in one file and, without Force, an existing file.
func (j *Job) instrumentFiles(open func(path string) (io.Writer, error)) func(tmpl, venue, instrument string) (io.Writer, error) {
	paths := map[string]string{} // file → instrument
	return func(tmpl, v, inst string) (io.Writer, error) {
		p := splitPath(tmpl, v, inst)
		if other, ok := paths[p]; ok && other != inst {
			return nil, fmt.Errorf("export: instruments %s and %s both map to %s", other, inst, p)
		}
		paths[p] = inst
		// A template may name a directory per instrument: tables/{instrument}/depth.csv.
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		if !j.Force {
			if _, err := os.Stat(p); err == nil {
				return nil, fmt.Errorf("export: %s exists (use -f/--force to overwrite)", p)
			}
		}
		return open(p)
	}
}

// filterProbe notes which ids of --instrument an event matched (by its
// instrument or its market, as WithInstruments does), so that a filter
// matching nothing is an error rather than an empty output.
type filterProbe struct {
	ids  map[string]bool // id → matched
	left int             // ids not matched yet
}

func newFilterProbe(ids []string) *filterProbe {
	p := &filterProbe{ids: map[string]bool{}}
	for _, id := range ids {
		if _, dup := p.ids[id]; !dup {
			p.ids[id] = false
			p.left++
		}
	}
	return p
}

func (p *filterProbe) OnEvent(e *replayer.Event) error {
	if p.left == 0 || e.Instrument == "" {
		return nil
	}
	p.mark(e.Instrument)
	if d := e.Decoded; d != nil && d.Market != "" {
		p.mark(d.Market)
	}
	return nil
}

func (p *filterProbe) mark(id string) {
	if m, ok := p.ids[id]; ok && !m {
		p.ids[id] = true
		p.left--
	}
}

// missing returns the ids no event matched, in the order given.
func (p *filterProbe) missing(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !p.ids[id] && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
