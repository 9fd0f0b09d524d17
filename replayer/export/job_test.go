package export

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/s3store"
	"github.com/tapedeck/tapedeck/internal/s3test"
	"github.com/tapedeck/tapedeck/internal/testdisk"
	"github.com/tapedeck/tapedeck/venue"
)

// hlBooks is a Hyperliquid dataset of rounds l2Book snapshots of each coin
// (levels a side), in turn: the instruments of a per-instrument export.
func hlBooks(t testing.TB, coins []string, rounds, levels int) string {
	t.Helper()
	recs := []rec{ctl(datasets.KindConnect, datasets.Control{URL: "wss://api.hyperliquid.xyz/ws"})}
	for r := range rounds {
		for i, c := range coins {
			var b bytes.Buffer
			fmt.Fprintf(&b, `{"channel":"l2Book","data":{"coin":%q,"time":%d,"levels":[[`, c, 1790232236546+r*1000+i)
			for l := range levels {
				if l > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"px":"%d.0","sz":"%d.5","n":%d}`, 1000-l, 1+(r+l+i)%7, 1+l)
			}
			b.WriteString(`],[`)
			for l := range levels {
				if l > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"px":"%d.0","sz":"%d.25","n":%d}`, 1001+l, 1+(r*3+l+i)%5, 1+l)
			}
			b.WriteString(`]]}}`)
			recs = append(recs, rec{kind: datasets.KindFrame, payload: b.Bytes()})
		}
	}
	recs = append(recs, ctl(datasets.KindCleanClose, datasets.Control{}))
	return writeDataset(t, venue.Hyperliquid, 0, recs)
}

// files lists the regular files under root, relative and slash-separated.
func files(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func run(t testing.TB, j Job) error {
	t.Helper()
	_, err := Run(t.Context(), &j)
	return err
}

// TestForceReplacesItsTree: a forced re-export of fewer partitions leaves
// exactly its own files under _SUCCESS, byte for byte a fresh export's,
// locally and on S3; without Force an earlier export's files are refused.
func TestForceReplacesItsTree(t *testing.T) {
	ds := hlBooks(t, []string{"BTC", "ETH", "SOL", "DOGE"}, 5, 3)
	pf, _ := ParsePartitionBy("venue,instrument")
	job := Job{Datasets: []string{ds}, Table: "depth", Levels: 2, PartitionBy: pf}
	fresh := filepath.Join(t.TempDir(), "fresh")
	j := job
	j.Out, j.Instruments = fresh, []string{"ETH"}
	if err := run(t, j); err != nil {
		t.Fatal(err)
	}
	want := files(t, fresh)
	if strings.Join(want, " ") != "_SUCCESS venue=hyperliquid/instrument=ETH/part-0.parquet" {
		t.Fatalf("fresh export: %v", want)
	}

	check := func(t *testing.T, out string, list func() []string, read func(string) []byte) {
		j := job
		j.Out = out
		if err := run(t, j); err != nil {
			t.Fatal(err)
		}
		if n := len(list()); n != 5 {
			t.Fatalf("first export: %d files", n)
		}
		j.Instruments = []string{"ETH"}
		if err := run(t, j); !errors.Is(err, ErrOption) || !strings.Contains(err.Error(), "_SUCCESS exists") {
			t.Fatalf("over a complete tree: %v", err)
		}
		j.Force = true
		if err := run(t, j); err != nil {
			t.Fatal(err)
		}
		if got := list(); !slices.Equal(got, want) {
			t.Fatalf("forced re-export of one instrument left %v, want %v", got, want)
		}
		for _, f := range want {
			if b, _ := os.ReadFile(filepath.Join(fresh, f)); !bytes.Equal(read(f), b) {
				t.Errorf("%s differs from a fresh export", f)
			}
		}
	}
	t.Run("local", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "tree")
		check(t, out, func() []string { return files(t, out) }, func(f string) []byte {
			b, _ := os.ReadFile(filepath.Join(out, f))
			return b
		})
		// Without --force, the part files of an earlier export (its
		// _SUCCESS gone: an interrupted re-run) are refused.
		os.Remove(filepath.Join(out, successName))
		j := job
		j.Out = out
		if err := run(t, j); !errors.Is(err, ErrOption) || !strings.Contains(err.Error(), "earlier export") {
			t.Fatalf("over an earlier export's files: %v", err)
		}
	})
	t.Run("s3", func(t *testing.T) {
		s3test.Start(t, "tapes")
		st, err := s3store.Open("s3://tapes/tree")
		if err != nil {
			t.Fatal(err)
		}
		list := func() []string {
			objs, err := st.Objects()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, o := range objs {
				out = append(out, o.Key)
			}
			return out
		}
		check(t, "s3://tapes/tree", list, func(f string) []byte {
			b, err := st.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			return b
		})
	})
}

// TestForceShardKeepsOtherShards: shard 2/2 re-run with --force over a
// complete sharded tree removes its own stale part files, not shard 1's.
func TestForceShardKeepsOtherShards(t *testing.T) {
	coins := []string{"BTC", "ETH", "SOL", "DOGE", "HYPE", "PURR", "ARB", "OP"}
	ds := hlBooks(t, coins, 2, 2)
	pf, _ := ParsePartitionBy("instrument")
	out := filepath.Join(t.TempDir(), "tree")
	j := Job{Datasets: []string{ds}, Table: "depth", Format: "csv", PartitionBy: pf, Out: out}
	for k := 1; k <= 2; k++ {
		j.Shard.K, j.Shard.N = k, 2
		if err := run(t, j); err != nil {
			t.Fatal(err)
		}
	}
	all := files(t, out)
	var part0, part1 []string
	for _, f := range all {
		switch {
		case strings.HasSuffix(f, "/part-0.csv"):
			part0 = append(part0, f)
		case strings.HasSuffix(f, "/part-1.csv"):
			part1 = append(part1, f)
		}
	}
	if len(part0) == 0 || len(part1) < 2 || !slices.Contains(all, successName) {
		t.Fatalf("the coins do not spread over both shards: %v", all)
	}
	// Shard 2 again, forced, with one of its instruments.
	one := strings.TrimSuffix(strings.TrimPrefix(part1[0], "instrument="), "/part-1.csv")
	j.Force, j.Instruments = true, []string{one}
	if err := run(t, j); err != nil {
		t.Fatal(err)
	}
	got := files(t, out)
	for _, f := range part0 {
		if !slices.Contains(got, f) {
			t.Errorf("shard 1's %s removed by shard 2's re-run", f)
		}
	}
	for _, f := range part1[1:] {
		if slices.Contains(got, f) {
			t.Errorf("shard 2's stale %s kept", f)
		}
	}
	if !slices.Contains(got, part1[0]) || !slices.Contains(got, successName) {
		t.Errorf("after the re-run: %v", got)
	}
}

// TestSplitHostileNames: an instrument named ".." stays inside the split
// template's directory, and one of 5,000 characters gets a file (a
// shortened name with a hash) instead of failing the whole export; the
// same in a Hive tree.
func TestSplitHostileNames(t *testing.T) {
	long := strings.Repeat("x", 5000)
	long2 := strings.Repeat("x", 4999) + "y" // same first bytes: another file
	ds := hlBooks(t, []string{"..", ".", "BTC", long, long2}, 2, 2)
	root := t.TempDir()
	tables := filepath.Join(root, "tables")
	if err := os.Mkdir(tables, 0o755); err != nil {
		t.Fatal(err)
	}
	err := run(t, Job{Datasets: []string{ds}, Table: "depth", Format: "csv", SplitBy: "instrument",
		Out: filepath.Join(tables, "{instrument}", "depth.csv")})
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, root)
	if len(got) != 5 {
		t.Fatalf("files: %v", got)
	}
	for _, f := range got {
		if !strings.HasPrefix(f, "tables/") || strings.Count(f, "/") != 2 {
			t.Errorf("%.80s… is not tables/{instrument}/depth.csv", f)
		}
		if len(f) > 200 {
			t.Errorf("%d-byte path", len(f))
		}
	}
	if !slices.Contains(got, "tables/__/depth.csv") || !slices.Contains(got, "tables/_/depth.csv") {
		t.Errorf("files: %v", got)
	}
	pf, _ := ParsePartitionBy("instrument")
	tree := filepath.Join(root, "tree")
	if err := run(t, Job{Datasets: []string{ds}, Table: "depth", PartitionBy: pf, Out: tree}); err != nil {
		t.Fatal(err)
	}
	if got := files(t, tree); len(got) != 6 {
		t.Fatalf("tree: %v", got)
	}
}

// TestPartitionedDiskFull: a partitioned export that runs out of disk
// fails with the error and leaves no temporary file or empty partition
// behind.
func TestPartitionedDiskFull(t *testing.T) {
	coins := make([]string, 40)
	for i := range coins {
		coins[i] = fmt.Sprintf("C%02d", i)
	}
	ds := hlBooks(t, coins, 40, 20)
	disk := testdisk.Small(t, "1m")
	testdisk.Fill(t, disk)
	// Leave room for some partitions but not all.
	if err := os.Truncate(filepath.Join(disk, "filler"), 1<<20-300<<10); err != nil {
		t.Fatal(err)
	}
	pf, _ := ParsePartitionBy("venue,instrument")
	out := filepath.Join(disk, "tree")
	err := run(t, Job{Datasets: []string{ds}, Table: "depth", Format: "csv", PartitionBy: pf, Out: out, Encoders: 1})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("export: %v, want ENOSPC", err)
	}
	for _, f := range files(t, disk) {
		if f == "filler" {
			continue
		}
		if strings.Contains(f, ".tmp") || !strings.HasSuffix(f, "/part-0.csv") {
			t.Errorf("%s left behind", f)
		}
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != out {
			if ents, _ := os.ReadDir(p); len(ents) == 0 {
				t.Errorf("empty partition %s left behind", p)
			}
		}
		return nil
	})
}
