package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/venue"
)

var updateGolden = flag.Bool("update-export-digests", false, "rewrite testdata/export-digests.txt from this tree's exports")

// goldenExports are exports of the shipped samples over the tables,
// formats and layouts (single file, split, partitioned, sharded), named
// by a key; {out} is the output path, {pm} and {hl} the samples.
var goldenExports = []struct{ name, args string }{
	{"pm-depth-parquet", "{pm} --table depth --out {out}/d.parquet"},
	{"hl-depth-parquet-exact-zstd", "{hl} --table depth --levels 10 --exact --compression zstd --out {out}/d.parquet"},
	{"pm-depth-tardis-interval", "{pm} --table depth --levels 5 --interval 100ms --format tardis --out {out}/d.csv.gz"},
	{"hl-depth-csv-zst", "{hl} --table depth --levels 3 --format csv --out {out}/d.csv.zst"},
	{"pm-book_changes-csv", "{pm} --table book_changes --format csv --out {out}/c.csv"},
	{"hl-book_changes-tardis-split", "{hl} --table book_changes --format tardis --split-by instrument --out {out}/c-{instrument}.csv"},
	{"pm-book_changes-diff-arrow", "{pm} --table book_changes --snapshots diff --out {out}/c.arrow"},
	{"hl-trades-arrow-exact", "{hl} --table trades --exact --format arrow --from +1s --out {out}/t.arrow"},
	{"pm-trades-tardis-quality", "{pm} --table trades --format tardis --quality-columns --tardis-exchange hyperliquid --out {out}/t.csv"},
	{"pm-quotes-csv", "{pm} --table quotes --format csv --out {out}/q.csv"},
	{"hl-quotes-parquet-split", "{hl} --table quotes --split-by instrument --out {out}/q-{venue}-{instrument}.parquet"},
	{"pm-events-csv", "{pm} --table events --format csv --out {out}/e.csv"},
	{"hl-events-parquet", "{hl} --table events --out {out}/e.parquet"},
	{"pm-instruments-parquet", "{pm} --table instruments --out {out}/i.parquet"},
	{"hl-instruments-csv", "{hl} --table instruments --format csv --out {out}/i.csv"},
	{"pm-raw-ndjson", "{pm} --table raw --format ndjson --out {out}/r.ndjson"},
	{"hl-raw-tardis", "{hl} --table raw --format tardis --to +2m --out {out}/r.csv.gz"},
	{"hl-raw-hftbacktest", "{hl} --table raw --format hftbacktest --out {out}/r.txt"},
	{"pm-depth-partitioned", "{pm} --table depth --levels 5 --partition-by venue,date,hour,instrument --out {out}/tree"},
	{"hl-trades-partitioned-csv", "{hl} --table trades --partition-by date,instrument --format csv --out {out}/tree"},
	{"pm-trades-shard-1", "{pm} --table trades --shard 1/2 --out {out}/t-{shard}.parquet"},
	{"pm-trades-shard-2", "{pm} --table trades --shard 2/2 --out {out}/t-{shard}.parquet"},
	{"hl-depth-partitioned-shards", "{hl} --table depth --levels 2 --shard 1/2 --partition-by instrument --out {out}/tree;{hl} --table depth --levels 2 --shard 2/2 --partition-by instrument --out {out}/tree"},
	{"hl-depth-shard-time", "{hl} --table depth --levels 2 --shard 2/3 --shard-by time --format csv --out {out}/t-{shard}.csv"},
	{"pm-book_changes-instrument", "{pm} --table book_changes --instrument 0xdd22472e552920b8438158ea7238bfadfa4f736aa4cee91a6b86c39ead110917 --format tardis --out {out}/c.csv"},
}

// TestExportDigests runs each golden export of the shipped samples and
// compares the SHA-256 of every file it writes with
// testdata/export-digests.txt: the same datasets and flags give the same
// bytes, whatever code path writes them. Regenerate (after a change that
// means to alter an output) with
//
//	go test ./cmd/replay -run TestExportDigests -update-export-digests
func TestExportDigests(t *testing.T) {
	if testing.Short() {
		t.Skip("exports every table of both samples")
	}
	pm, hl := expSample(t, venue.Polymarket), expSample(t, venue.Hyperliquid)
	var got []string
	for _, g := range goldenExports {
		out := t.TempDir()
		for _, cmdline := range strings.Split(g.args, ";") {
			args := strings.Fields(strings.NewReplacer("{pm}", pm, "{hl}", hl, "{out}", out).Replace(cmdline))
			if code, _, errs := execReplay(t, append([]string{"export"}, args...)...); code != cli.ExitOK {
				t.Fatalf("%s: exit %d: %s", g.name, code, errs)
			}
		}
		err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(out, p)
			sum := sha256.Sum256(b)
			got = append(got, fmt.Sprintf("%s %s %s", g.name, filepath.ToSlash(rel), hex.EncodeToString(sum[:])))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	path := filepath.Join("testdata", "export-digests.txt")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing or changed: %s", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("new or changed: %s", g)
		}
	}
}
