package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/s3store"
	"github.com/tapedeck/tapedeck/replayer"
)

// successName marks a complete partitioned table (Hadoop/Spark's marker).
const successName = "_SUCCESS"

// shardMark names the marker a finished shard leaves beside the tree.
func shardMark(s replayer.Shard) string { return fmt.Sprintf("_SHARD-%d-of-%d", s.K, s.N) }

// validatePartition checks PartitionBy and Shard against the other fields.
func (j *Job) validatePartition() error {
	if j.ShardByTime && j.Shard.Whole() {
		return optionf("export: --shard-by time needs --shard K/N")
	}
	if j.Table == "instruments" && (j.PartitionBy != nil || !j.Shard.Whole()) {
		return optionf("export: --table instruments is one row per instrument already: no --partition-by or --shard")
	}
	if j.PartitionBy == nil {
		if datasets.IsRemote(j.Out) {
			return optionf("export: --out %s: an object store takes a partitioned table (--partition-by)", j.Out)
		}
		if !j.Shard.Whole() && j.SplitBy == "" && !strings.Contains(j.Out, "{shard}") {
			return optionf("export: --shard %s writes one shard's rows: put {shard} in --out (e.g. 'trades-{shard}.parquet'), or use --partition-by", j.Shard)
		}
		if j.Table == "raw" && !j.Shard.Whole() {
			return optionf("export: --shard does not apply to --table raw")
		}
		return nil
	}
	switch {
	case len(j.PartitionBy) == 0:
		return optionf("export: --partition-by names no field")
	case j.Table == "raw":
		return optionf("export: --partition-by does not apply to --table raw")
	case j.SplitBy != "":
		return optionf("export: --partition-by and --split-by are exclusive (partition by instrument instead)")
	case j.Out == "-":
		return optionf("export: --partition-by writes a directory tree, not standard output")
	case j.Compress != 0:
		return optionf("export: --partition-by writes Parquet, Arrow or CSV files, not whole-file compressed ones")
	}
	return nil
}

// out is Out with {shard} filled in (K-of-N), unless it is a partitioned
// tree's root.
func (j *Job) out() string {
	if j.PartitionBy != nil {
		return j.Out
	}
	return strings.ReplaceAll(j.Out, "{shard}", fmt.Sprintf("%d-of-%d", j.Shard.K, j.Shard.N))
}

// splitPath is a split template with {venue} and {instrument} filled in;
// characters that do not belong in a file name (Hyperliquid's "@107",
// "PURR/USDC") become '_', and a name of dots only ("..") is all '_' so it
// never names a directory. See fitName for long names.
func splitPath(tmpl, venueName, instrument string) string {
	clean := func(s string) string {
		dots := true
		s = strings.Map(func(r rune) rune {
			dots = dots && r == '.'
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' {
				return r
			}
			return '_'
		}, s)
		if dots {
			s = strings.Repeat("_", len(s))
		}
		return fitName(s)
	}
	return strings.NewReplacer("{instrument}", clean(instrument), "{venue}", clean(venueName)).Replace(tmpl)
}

// partOut is where a partitioned export writes: a local directory, or a
// local staging directory whose files go to the object store as each is
// finished.
type partOut struct {
	j       *Job
	root    string         // local directory the files are written under
	remote  *s3store.Store // nil: local
	open    map[string]*outFile
	written []string
}

func (j *Job) newPartOut() (*partOut, error) {
	p := &partOut{j: j, root: j.Out, open: map[string]*outFile{}}
	if datasets.IsRemote(j.Out) {
		st, err := s3store.Open(j.Out)
		if err != nil {
			return nil, err
		}
		if _, _, err := st.Stat(successName); err == nil && !j.Force {
			return nil, optionf("export: %s exists: the table there is complete (use -f/--force to rewrite it)", st.Join(successName))
		} else if err == nil {
			if err := st.Remove(context.Background(), successName); err != nil {
				return nil, err
			}
		}
		if j.Force && !j.Shard.Whole() {
			if err := st.Remove(context.Background(), shardMark(j.Shard)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		p.remote = st
		if err := p.refuseEarlier(); err != nil {
			return nil, err
		}
		if p.root, err = os.MkdirTemp("", "tapedeck-export-*"); err != nil {
			return nil, err
		}
		return p, nil
	}
	if err := os.MkdirAll(j.Out, 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	succ := filepath.Join(j.Out, successName)
	if _, err := os.Stat(succ); err == nil {
		if !j.Force {
			return nil, optionf("export: %s exists: the table there is complete (use -f/--force to rewrite it)", succ)
		}
		if err := os.Remove(succ); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
	}
	if j.Force && !j.Shard.Whole() {
		os.Remove(filepath.Join(j.Out, shardMark(j.Shard)))
	}
	if err := p.refuseEarlier(); err != nil {
		return nil, err
	}
	return p, nil
}

// refuseEarlier refuses, without Force, a tree holding files this export
// would replace: partitions it might not write again would stay beside its
// own under _SUCCESS.
func (p *partOut) refuseEarlier() error {
	if p.j.Force {
		return nil
	}
	old, err := p.existing()
	if err != nil || len(old) == 0 {
		return err
	}
	where := filepath.Join(p.root, filepath.FromSlash(old[0]))
	if p.remote != nil {
		where = p.remote.Join(old[0])
	}
	return optionf("export: %s exists, from an earlier export into %s (use -f/--force to replace that export's files)", where, p.j.Out)
}

func (p *partOut) create(rel string) (io.Writer, error) {
	path := filepath.Join(p.root, filepath.FromSlash(rel))
	if p.remote != nil {
		if _, _, err := p.remote.Stat(rel); err == nil && !p.j.Force {
			return nil, fmt.Errorf("export: %s exists (use -f/--force to overwrite)", p.remote.Join(rel))
		}
	} else if _, err := os.Stat(path); err == nil && !p.j.Force {
		return nil, fmt.Errorf("export: %s exists (use -f/--force to overwrite)", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	f, err := p.j.createOut(path, true)
	if err != nil {
		return nil, err
	}
	p.open[rel] = f
	return f.w, nil
}

// done commits a finished file: renamed into place, or uploaded (verified)
// and its staged copy removed.
func (p *partOut) done(rel string) error {
	f := p.open[rel]
	delete(p.open, rel)
	if err := f.commit(); err != nil {
		f.abort()
		p.prune(f.path)
		return err
	}
	if p.remote != nil {
		if _, err := p.remote.PutFile(context.Background(), rel, f.path); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		os.Remove(f.path)
	}
	p.written = append(p.written, rel)
	return nil
}

// abort removes what is not finished (and the staging directory): the
// temporary files and the partition directories left empty.
func (p *partOut) abort() {
	for _, f := range p.open {
		f.abort()
		p.prune(f.path)
	}
	clear(p.open)
	if p.remote != nil {
		os.RemoveAll(p.root)
	}
}

// prune removes the directories of path up to the tree's root that are
// empty (a partition whose only file was not written).
func (p *partOut) prune(path string) {
	for dir := filepath.Dir(path); dir != p.root && strings.HasPrefix(dir, p.root+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			return
		}
	}
}

// partNumber returns N of a file a partitioned export writes in its tree,
// field=value/…/part-N.ext, or -1 for any other path.
func partNumber(rel string) int {
	dirs := strings.Split(rel, "/")
	base := dirs[len(dirs)-1]
	dirs = dirs[:len(dirs)-1]
	if len(dirs) == 0 {
		return -1
	}
	for _, d := range dirs {
		if !strings.Contains(d, "=") {
			return -1
		}
	}
	num, ok := strings.CutPrefix(base, "part-")
	if !ok {
		return -1
	}
	num, ext, _ := strings.Cut(num, ".")
	if ext != "parquet" && ext != "arrow" && ext != "csv" {
		return -1
	}
	n := 0
	for _, c := range []byte(num) {
		if c < '0' || c > '9' || n > 1<<20 {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	if num == "" {
		return -1
	}
	return n
}

// own reports whether the file at rel (relative, slash-separated) is one
// this export replaces: a part file of the tree, of its own shard when
// sharded (part-(K-1)), of any shard when not, and when not sharded the
// shard markers of an earlier sharded export.
func (p *partOut) own(rel string) bool {
	if p.j.Shard.Whole() && strings.HasPrefix(rel, "_SHARD-") && !strings.Contains(rel, "/") {
		return true
	}
	n := partNumber(rel)
	if p.j.Shard.Whole() {
		return n >= 0
	}
	return n == p.j.Shard.K-1
}

// existing returns the files of the tree this export replaces
// (partOut.own), relative and slash-separated, sorted.
func (p *partOut) existing() ([]string, error) {
	var out []string
	if p.remote != nil {
		objs, err := p.remote.Objects()
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		for _, o := range objs {
			if p.own(o.Key) {
				out = append(out, o.Key)
			}
		}
		return out, nil
	}
	err := filepath.WalkDir(p.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(p.root, path)
		if rel = filepath.ToSlash(rel); p.own(rel) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	sort.Strings(out)
	return out, nil
}

// sweep removes the files of the tree this export replaces that it did not
// write (partitions of an earlier, wider export): with Force, a re-run
// leaves exactly its own tree under the markers.
func (p *partOut) sweep() error {
	old, err := p.existing()
	if err != nil {
		return err
	}
	written := make(map[string]bool, len(p.written))
	for _, rel := range p.written {
		written[rel] = true
	}
	for _, rel := range old {
		if written[rel] {
			continue
		}
		if p.remote != nil {
			if err := p.remote.Remove(context.Background(), rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("export: remove the earlier export's %s: %w", p.remote.Join(rel), err)
			}
			continue
		}
		path := filepath.Join(p.root, filepath.FromSlash(rel))
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("export: remove the earlier export's %s: %w", path, err)
		}
		p.prune(path)
	}
	return nil
}

// finish marks the table complete: _SUCCESS when unsharded; with a shard,
// this shard's marker _SHARD-K-of-N, and _SUCCESS once every shard's is
// there (whichever shard ends last writes it).
func (p *partOut) finish() error {
	defer p.abort()
	if err := p.sweep(); err != nil {
		return err
	}
	marks := []string{successName}
	if s := p.j.Shard; !s.Whole() {
		marks = []string{shardMark(s)}
	}
	// Readers test for the markers' existence; a line says what they mean
	// (and an object store wants a body).
	put := func(name string) error {
		body := []byte("tapedeck export complete\n")
		if name != successName {
			body = fmt.Appendf(nil, "tapedeck export shard %s complete\n", p.j.Shard)
		}
		if p.remote != nil {
			return p.remote.PutBytes(context.Background(), name, body)
		}
		return os.WriteFile(filepath.Join(p.root, name), body, 0o644)
	}
	if err := put(marks[0]); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if p.j.Shard.Whole() {
		return nil
	}
	var names []string
	if p.remote != nil {
		ents, err := p.remote.List()
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		for _, e := range ents {
			names = append(names, e.Name)
		}
	} else {
		ents, err := os.ReadDir(p.root)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		for _, e := range ents {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for k := 1; k <= p.j.Shard.N; k++ {
		if _, found := sort.Find(len(names), func(i int) int {
			return strings.Compare(shardMark(replayer.Shard{K: k, N: p.j.Shard.N}), names[i])
		}); !found {
			return nil // another shard is still running; it writes _SUCCESS
		}
	}
	if err := put(successName); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// timeShard returns the window of a time shard: the K-th of N equal slices
// of the inputs' time range (within FromNs/ToNs), from their manifests.
func (j *Job) timeShard() (from, to int64, err error) {
	var start, end int64
	for _, p := range j.Datasets {
		m, err := datasets.ReadManifest(p)
		if err != nil {
			return 0, 0, fmt.Errorf("export: %w", err)
		}
		if m.EndNs == 0 {
			return 0, 0, fmt.Errorf("export: --shard-by time needs the end time of %s, which is still open or was not closed (replay repair closes it)", p)
		}
		if start == 0 || m.StartNs < start {
			start = m.StartNs
		}
		end = max(end, m.EndNs+1)
	}
	if j.FromNs != 0 {
		start = max(start, j.FromNs)
	}
	if j.ToNs != 0 {
		end = min(end, j.ToNs)
	}
	if end <= start {
		return 0, 0, nothingf("export: the window is empty")
	}
	s := j.Shard
	if s.Whole() {
		return start, end, nil
	}
	span, n := end-start, int64(s.N)
	at := func(k int64) int64 { return start + span/n*k + span%n*k/n } // no overflow over months
	from, to = at(int64(s.K-1)), at(int64(s.K))
	if s.K == s.N {
		to = end
	}
	return from, to, nil
}
