package main

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
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/export"
)

// successName marks a complete partitioned table (Hadoop/Spark's marker).
const successName = "_SUCCESS"

// shardMark names the marker a finished shard leaves beside the tree.
func shardMark(s replayer.Shard) string { return fmt.Sprintf("_SHARD-%d-of-%d", s.K, s.N) }

// validatePartition checks --partition-by and --shard against the other
// export flags.
func (o *exportOptions) validatePartition(partitionBy, shard string) error {
	var err error
	if o.Shard, err = replayer.ParseShard(shard); err != nil {
		return cli.FlagErrorf("--shard: %v", err)
	}
	if o.ShardByTime && o.Shard.Whole() {
		return cli.FlagErrorf("export: --shard-by time needs --shard K/N")
	}
	if o.Table == "instruments" && (partitionBy != "" || shard != "") {
		return cli.FlagErrorf("export: --table instruments is one row per instrument already: no --partition-by or --shard")
	}
	if partitionBy == "" {
		if datasets.IsRemote(o.Out) {
			return cli.FlagErrorf("export: --out %s: an object store takes a partitioned table (--partition-by)", o.Out)
		}
		if !o.Shard.Whole() && o.SplitBy == "" && !strings.Contains(o.Out, "{shard}") {
			return cli.FlagErrorf("export: --shard %s writes one shard's rows: put {shard} in --out (e.g. 'trades-{shard}.parquet'), or use --partition-by", shard)
		}
		if o.Table == "raw" && !o.Shard.Whole() {
			return cli.FlagErrorf("export: --shard does not apply to --table raw")
		}
		o.Out = strings.ReplaceAll(o.Out, "{shard}", fmt.Sprintf("%d-of-%d", o.Shard.K, o.Shard.N))
		return nil
	}
	if o.PartitionBy, err = export.ParsePartitionBy(partitionBy); err != nil {
		return cli.FlagErrorf("--partition-by: %v", err)
	}
	switch {
	case o.Table == "raw":
		return cli.FlagErrorf("export: --partition-by does not apply to --table raw")
	case o.SplitBy != "":
		return cli.FlagErrorf("export: --partition-by and --split-by are exclusive (partition by instrument instead)")
	case o.Out == "-":
		return cli.FlagErrorf("export: --partition-by writes a directory tree, not standard output")
	case o.Compress != 0:
		return cli.FlagErrorf("export: --partition-by writes Parquet, Arrow or CSV files, not whole-file compressed ones")
	}
	return nil
}

// partOut is where a partitioned export writes: a local directory, or a
// local staging directory whose files go to the object store as each is
// finished.
type partOut struct {
	o       *exportOptions
	root    string         // local directory the files are written under
	remote  *s3store.Store // nil: local
	open    map[string]*outFile
	written []string
}

func newPartOut(o *exportOptions) (*partOut, error) {
	p := &partOut{o: o, root: o.Out, open: map[string]*outFile{}}
	if datasets.IsRemote(o.Out) {
		st, err := s3store.Open(o.Out)
		if err != nil {
			return nil, err
		}
		if _, _, err := st.Stat(successName); err == nil && !o.Force {
			return nil, cli.FlagErrorf("export: %s exists: the table there is complete (use -f/--force to rewrite it)", st.Join(successName))
		} else if err == nil {
			if err := st.Remove(context.Background(), successName); err != nil {
				return nil, err
			}
		}
		if o.Force && !o.Shard.Whole() {
			if err := st.Remove(context.Background(), shardMark(o.Shard)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		if p.root, err = os.MkdirTemp("", "tapedeck-export-*"); err != nil {
			return nil, err
		}
		p.remote = st
		return p, nil
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	succ := filepath.Join(o.Out, successName)
	if _, err := os.Stat(succ); err == nil {
		if !o.Force {
			return nil, cli.FlagErrorf("export: %s exists: the table there is complete (use -f/--force to rewrite it)", succ)
		}
		if err := os.Remove(succ); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
	}
	if o.Force && !o.Shard.Whole() {
		os.Remove(filepath.Join(o.Out, shardMark(o.Shard)))
	}
	return p, nil
}

func (p *partOut) create(rel string) (io.Writer, error) {
	path := filepath.Join(p.root, filepath.FromSlash(rel))
	if p.remote != nil {
		if _, _, err := p.remote.Stat(rel); err == nil && !p.o.Force {
			return nil, fmt.Errorf("export: %s exists (use -f/--force to overwrite)", p.remote.Join(rel))
		}
	} else if _, err := os.Stat(path); err == nil && !p.o.Force {
		return nil, fmt.Errorf("export: %s exists (use -f/--force to overwrite)", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	f, err := createOut(p.o, path)
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

// abort removes what is not finished (and the staging directory).
func (p *partOut) abort() {
	for _, f := range p.open {
		f.abort()
	}
	if p.remote != nil {
		os.RemoveAll(p.root)
	}
}

// finish marks the table complete: _SUCCESS when unsharded; with --shard,
// this shard's marker _SHARD-K-of-N, and _SUCCESS once every shard's is
// there (whichever shard ends last writes it).
func (p *partOut) finish() error {
	defer p.abort()
	marks := []string{successName}
	if s := p.o.Shard; !s.Whole() {
		marks = []string{shardMark(s)}
	}
	// Readers test for the markers' existence; a line says what they mean
	// (and an object store wants a body).
	put := func(name string) error {
		body := []byte("tapedeck export complete\n")
		if name != successName {
			body = fmt.Appendf(nil, "tapedeck export shard %s complete\n", p.o.Shard)
		}
		if p.remote != nil {
			return p.remote.PutBytes(context.Background(), name, body)
		}
		return os.WriteFile(filepath.Join(p.root, name), body, 0o644)
	}
	if err := put(marks[0]); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if p.o.Shard.Whole() {
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
	for k := 1; k <= p.o.Shard.N; k++ {
		if _, found := sort.Find(len(names), func(i int) int {
			return strings.Compare(shardMark(replayer.Shard{K: k, N: p.o.Shard.N}), names[i])
		}); !found {
			return nil // another shard is still running; it writes _SUCCESS
		}
	}
	if err := put(successName); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// validateShardBy checks --shard-by (before --shard is parsed).
func (o *exportOptions) validateShardBy(by string) error {
	switch by {
	case "", "instrument":
	case "time":
		o.ShardByTime = true
	default:
		return cli.FlagErrorf("--shard-by %q: want instrument or time", by)
	}
	return nil
}

// timeShard returns the window of a time shard: the K-th of N equal slices
// of the inputs' time range (within --from/--to), from their manifests.
func timeShard(o *exportOptions) (from, to int64, err error) {
	var start, end int64
	for _, p := range o.Datasets {
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
	if o.FromNs != 0 {
		start = max(start, o.FromNs)
	}
	if o.ToNs != 0 {
		end = min(end, o.ToNs)
	}
	if end <= start {
		return 0, 0, &cli.ProblemError{Err: fmt.Errorf("export: the window is empty")}
	}
	s := o.Shard
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
