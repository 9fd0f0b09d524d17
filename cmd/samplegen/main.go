// Command samplegen regenerates the shipped sample datasets
// (datasets/samples/<venue> of every venue whose driver has a sample
// generator, venue/<venue>/sample) with internal/samplegen, or writes
// sessions of any size for benchmarks:
//
//	go run ./cmd/samplegen --force                       # the shipped samples
//	go run ./cmd/samplegen --venue hyperliquid --frames 1000000 --out /tmp/big
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/samplegen"
)

type options struct {
	venues   []string
	out      string
	seed     uint64
	duration time.Duration
	frames   int64
	fast     bool
	force    bool
	direct   bool // append the generated records instead of recording them
	stdout   io.Writer
}

func newRootCmd(runF func(*options) error) *cobra.Command {
	o := &options{}
	var venue string
	cmd := &cobra.Command{
		Use:   "samplegen [flags]",
		Short: "Make the sample datasets: a generated session (real ids and books, generated walk) recorded by the real recorder",
		Example: `  # regenerate the shipped samples in datasets/samples
  samplegen --force
  # a large Hyperliquid session for benchmarks
  samplegen --venue hyperliquid --frames 1000000 --fast-hashes --out /tmp/bench`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case venue == "all":
				o.venues = samplegen.Venues()
			case slices.Contains(samplegen.Venues(), venue):
				o.venues = []string{venue}
			default:
				return cli.FlagErrorf("--venue must be %s, not %q", venueChoice(), venue)
			}
			if o.duration < 0 || o.frames < 0 {
				return cli.FlagErrorf("--duration and --frames must not be negative")
			}
			o.stdout = cmd.OutOrStdout()
			if runF != nil {
				return runF(o)
			}
			return run(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&venue, "venue", "all", venueChoice())
	f.StringVar(&o.out, "out", filepath.Join("datasets", "samples"), "parent directory: each venue goes to OUT/<venue>")
	f.Uint64Var(&o.seed, "seed", samplegen.ShippedSeed, "PRNG seed")
	f.DurationVar(&o.duration, "duration", 0, "session length in generated time (default 10m unless --frames)")
	f.Int64Var(&o.frames, "frames", 0, "stop after this many received frames")
	f.BoolVar(&o.fast, "fast-hashes", false, "random Polymarket hashes instead of SHA-1 of each book (faster)")
	f.BoolVarP(&o.force, "force", "f", false, "replace existing datasets")
	f.BoolVar(&o.direct, "direct", false, "append the generated records to the dataset directly instead of recording the session through the real recorder against a loopback test exchange (what the shipped samples are); the default with --frames or --fast-hashes, for big benchmark sessions")
	return cmd
}

// venueChoice lists the venues with a sample generator, and all.
func venueChoice() string { return strings.Join(samplegen.Venues(), ", ") + " or all" }

func run(o *options) error {
	for _, v := range o.venues {
		dir := filepath.Join(o.out, v)
		if err := prepare(dir, o.force); err != nil {
			return err
		}
		opts := samplegen.Options{Seed: o.seed, Duration: o.duration, Frames: o.frames, FastHashes: o.fast}
		m, err := samplegen.Manifest(v, opts)
		if err != nil {
			return err
		}
		var sum *samplegen.Summary
		if o.direct || o.frames > 0 || o.fast {
			w, err := datasets.Create(dir, m)
			if err != nil {
				return err
			}
			sum, err = samplegen.Generate(v, opts, w)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("generate %s: %w", dir, err)
			}
		} else if sum, err = samplegen.Record(context.Background(), v, opts, dir); err != nil {
			return err
		}
		fmt.Fprintf(o.stdout, "%s\t%d records\t%d frames\t%d payload bytes\t%s\n", dir, sum.Records, sum.Frames,
			sum.Bytes, time.Duration(sum.EndNs-sum.StartNs).Round(time.Millisecond))
	}
	return nil
}

// prepare makes sure dir can receive a new dataset: absent, empty, or (with
// force) an existing dataset, which is removed. Anything else is refused, so
// a wrong --out never deletes unrelated files.
func prepare(dir string, force bool) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(ents) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, datasets.ManifestName)); err != nil {
		return fmt.Errorf("%s exists and is not a dataset; not touching it", dir)
	}
	if !force {
		return fmt.Errorf("%s already holds a dataset (use --force to replace it)", dir)
	}
	return os.RemoveAll(dir)
}

func main() { os.Exit(cli.Main(newRootCmd(nil), os.Args[1:], os.Stderr)) }
