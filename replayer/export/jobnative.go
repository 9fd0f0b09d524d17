package export

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/datasets/interchange"
	"github.com/tapedeck/tapedeck/replayer"
)

// Native reports whether the job writes another tool's own layout, a
// directory of files the format defines (--format hftbacktest or nautilus
// without a --table), instead of one table.
func (j *Job) Native() bool {
	return j.Table == "" && (j.Format == FormatHftBacktest.String() || j.Format == FormatNautilus.String())
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
			return optionf("export: %s does not apply to %s (it writes the tool's own files)", name, f)
		}
	}
	if j.NautilusPrecision != 0 && j.Format != FormatNautilus.String() {
		return optionf("export: --nautilus-precision applies to --format nautilus only")
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

// nautilus is the subscriber of a --format nautilus job: NautilusTrader's
// catalog under Out (data/KIND/ID/FIRST_LAST.parquet). A data file whose
// name exists is refused without Force (a definition is replaced); a file
// beside it whose time range overlaps its own is refused always (Nautilus
// needs an instrument's files of a kind disjoint), so exports of other
// windows add to one catalog.
func (j *Job) nautilus(open func(path string) (io.Writer, error)) (*Nautilus, error) {
	root := j.out()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	opts := []Option{WithDatasets(j.Datasets...)}
	if len(j.Instruments) > 0 {
		opts = append(opts, WithInstruments(j.Instruments...))
	}
	if !j.Shard.Whole() {
		opts = append(opts, WithShard(j.Shard))
	}
	if j.NautilusPrecision != 0 {
		opts = append(opts, WithNautilusPrecision(j.NautilusPrecision))
	}
	if j.FromNs != 0 || j.ToNs != 0 {
		// The replay reads it all: the definitions come from the REST
		// bodies stored at the start of the recording.
		opts = append(opts, WithWindow(j.FromNs, j.ToNs))
	}
	seen := map[string]bool{}
	n, err := NewNautilus(func(kind, id string, first, last int64) (io.Writer, error) {
		if id == "" || strings.ContainsFunc(id, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\\' }) {
			return nil, fmt.Errorf("export: nautilus: instrument id %q cannot name a directory", id)
		}
		dir := filepath.Join(root, filepath.FromSlash(NautilusDir(kind, id)))
		name := NautilusFileName(first, last)
		p := filepath.Join(dir, name)
		if seen[p] {
			return nil, fmt.Errorf("export: nautilus: two instruments map to %s", p)
		}
		seen[p] = true
		// A definition is the instrument as of its first fact: an export of
		// another window writes the same file, and replaces it.
		def := kind != NautilusDeltasDir && kind != NautilusQuotesDir && kind != NautilusTradesDir
		if err := nautDisjoint(dir, name, first, last, j.Force || def); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		return open(p)
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return n, nil
}

// nautDisjoint checks that a file named name, of rows from first to last,
// may be written in dir: the name not taken (unless force) and no other
// catalog file's range overlapping.
func nautDisjoint(dir, name string, first, last int64, force bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("export: %w", err)
	}
	for _, e := range ents {
		if e.Name() == name {
			if !force {
				return fmt.Errorf("export: %s exists (use -f/--force to overwrite)", filepath.Join(dir, name))
			}
			continue
		}
		lo, hi, ok := nautFileRange(e.Name())
		if ok && lo <= last && first <= hi {
			return fmt.Errorf("export: %s overlaps the rows to write (%s): Nautilus needs an instrument's files disjoint in time; remove it or export another window",
				filepath.Join(dir, e.Name()), name)
		}
	}
	return nil
}

// nautFileRange parses a catalog file name (NautilusFileName).
func nautFileRange(name string) (first, last int64, ok bool) {
	base, isPq := strings.CutSuffix(name, ".parquet")
	a, b, cut := strings.Cut(base, "_")
	if !isPq || !cut {
		return 0, 0, false
	}
	parse := func(s string) (int64, bool) {
		// Go reads a fraction only after '.': the nanoseconds' '-' becomes one.
		if len(s) != len("2006-01-02T15-04-05-000000000Z") || s[19] != '-' {
			return 0, false
		}
		t, err := time.Parse("2006-01-02T15-04-05.000000000Z", s[:19]+"."+s[20:])
		return t.UnixNano(), err == nil
	}
	first, ok1 := parse(a)
	last, ok2 := parse(b)
	return first, last, ok1 && ok2
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
