package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/datasets/interchange"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// importOptions are the parsed flags of `capture import`.
type importOptions struct {
	Venue   string
	Format  interchange.Format
	Files   []string
	OutDir  string
	Force   bool
	Merge   bool          // interleave the files by receive time
	StartNs int64         // first assigned time (NDJSON without times)
	Step    time.Duration // between assigned times
	Note    string
	JSON    bool

	Out, ErrOut io.Writer
	Progress    bool   // a progress bar on ErrOut
	remote      string // an s3:// --out, while OutDir is the staging copy
}

func newImportCmd(runF func(*importOptions) error) *cobra.Command {
	opts := &importOptions{}
	var format, start string
	cmd := &cobra.Command{
		Use:   "import --venue VENUE --format FORMAT FILE... --out DATASET",
		Short: "Import NDJSON, Tardis raw or hftbacktest files into a new dataset",
		Long: `Import archives of raw venue frames into a new tapedeck dataset, frame bytes
unchanged. Files are read in the order given and appended to one dataset, or with
--merge interleaved by receive time (hftbacktest writes one file per symbol);
gzip and zstd are detected from the file contents; "-" reads standard input.

Formats:
  ndjson       one frame per line. Lines carrying no receive time get times
               assigned in line order (--start, --step), and the manifest says
               so (times_assigned). A file whose first line is a wrapper object
               {"recv_ns":…,"frame":…} (what "replay export --table raw
               --format ndjson" writes; tardis-machine's {"localTimestamp":…,
               "message":…} too) keeps its times and record kinds.
  tardis       Tardis raw slices: "<ISO 8601 UTC time> <frame>" lines; an empty
               line is a disconnect.
  hftbacktest  hftbacktest collector files: "<receive ns> <frame>" lines.

Errors name the file and line. The dataset keeps the records imported before
an error.`,
		Example: `  # A Tardis raw slice (plain, gzip or zstd)
  $ capture import --venue hyperliquid --format tardis datasets/interchange/testdata/tardis_hyperliquid.txt --out hl-imported

  # hftbacktest collector output (one file per symbol), merged by receive time
  $ capture import --venue polymarket --format hftbacktest --merge datasets/interchange/testdata/hftbacktest_polymarket.txt --out pm-imported

  # Bare frames, one per line, 1 ms apart from a given start
  $ capture import --venue polymarket --format ndjson --start 2025-10-23T00:38:00Z datasets/interchange/testdata/polymarket_frames.ndjson --out pm-lines`,
		Args: cli.AtLeastOne("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			opts.Progress = cli.IsTerminal(opts.ErrOut)
			if err := opts.validate(cmd, format, start); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runImport(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Venue, "venue", "", "venue of the frames: "+registry.Choice()+" (required)")
	f.StringVar(&format, "format", "", "input format: ndjson, tardis or hftbacktest (required)")
	f.StringVar(&opts.OutDir, "out", "", "`DATASET` directory to create, or s3://BUCKET/PREFIX (staged locally, uploaded verified, the manifest last) (required)")
	f.BoolVarP(&opts.Force, "force", "f", false, "replace an existing dataset at --out")
	f.BoolVar(&opts.Merge, "merge", false, "interleave the files by receive time instead of appending them in order")
	f.StringVar(&start, "start", "", "ndjson without times: first assigned receive time (`T`: RFC 3339 or unix time, 10 digits s, 13 ms, 16 µs, 19 ns, or with a unit; default 0)")
	f.DurationVar(&opts.Step, "step", interchange.DefaultAssignedStep, "ndjson without times: spacing of assigned receive times")
	f.StringVar(&opts.Note, "note", "", "free text stored in the manifest's notes")
	f.BoolVar(&opts.JSON, "json", false, "print the summary as JSON")
	return cmd
}

// validate checks every flag and path before any work, naming the flag.
func (o *importOptions) validate(cmd *cobra.Command, format, start string) error {
	if _, err := registry.Lookup(o.Venue); err != nil {
		return cli.FlagErrorf("--venue must be %s, not %q", registry.Choice(), o.Venue)
	}
	if format == "" {
		return cli.FlagErrorf("--format is required (ndjson, tardis or hftbacktest)")
	}
	var err error
	if o.Format, err = interchange.ParseFormat(format); err != nil {
		return cli.FlagErrorf("--format: %v", err)
	}
	if o.OutDir == "" {
		return cli.FlagErrorf("--out DATASET is required")
	}
	changed := cmd.Flags().Changed
	if o.Format != interchange.NDJSON && (changed("start") || changed("step")) {
		return cli.FlagErrorf("--start and --step apply to --format ndjson only (%s lines carry their times)", o.Format)
	}
	if o.Merge && o.Format == interchange.NDJSON && changed("start") {
		return cli.FlagErrorf("--merge needs receive times in the files; --start means they have none")
	}
	if o.Step <= 0 {
		return cli.FlagErrorf("--step must be positive, not %v", o.Step)
	}
	if start != "" {
		if o.StartNs, err = cli.ParseTime(start, 0, false); err != nil {
			return cli.FlagErrorf("--start: %v", err)
		}
	}
	stdin := 0
	outAbs, _ := filepath.Abs(o.OutDir)
	for _, p := range o.Files {
		if p == "-" {
			if stdin++; stdin > 1 {
				return cli.FlagErrorf(`"-" (standard input) given more than once`)
			}
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		if fi.IsDir() {
			return cli.FlagErrorf("%s is a directory, not an input file", p)
		}
		if abs, _ := filepath.Abs(p); abs == outAbs || filepath.Dir(abs) == outAbs {
			return cli.FlagErrorf("input %s is inside --out %s", p, o.OutDir)
		}
	}
	if datasets.IsRemote(o.OutDir) {
		return checkRemoteOut(o.OutDir, o.Force)
	}
	return checkOutDir(o.OutDir, o.Force)
}

// checkOutDir refuses to overwrite: --out must be absent or empty, or hold a
// dataset and --force be given. It never deletes anything itself.
func checkOutDir(dir string, force bool) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if !fi.IsDir() {
		return cli.FlagErrorf("--out %s is a file, not a dataset directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if len(ents) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, datasets.ManifestName)); err != nil {
		return cli.FlagErrorf("--out %s exists and is not a dataset; choose another directory", dir)
	}
	if !force {
		return cli.FlagErrorf("--out %s already holds a dataset (add --force to replace it)", dir)
	}
	return nil
}

func runImport(o *importOptions) error {
	if datasets.IsRemote(o.OutDir) {
		return importToStore(o)
	}
	if o.Force {
		// checkOutDir made sure this is a dataset (it holds a manifest).
		if err := os.RemoveAll(o.OutDir); err != nil {
			return fmt.Errorf("import: remove old dataset: %w", err)
		}
	}
	drv, err := registry.Lookup(o.Venue)
	if err != nil {
		return err
	}
	m := datasets.Manifest{Venue: o.Venue, Endpoint: drv.Endpoints().WebSocket, ToolVersion: "capture import", Notes: o.Note}
	if h, err := os.Hostname(); err == nil {
		m.Host = h
	}
	iopts := []interchange.ImportOption{interchange.WithStartNs(o.StartNs), interchange.WithAssignedStep(o.Step)}
	if o.Merge {
		iopts = append(iopts, interchange.WithMerge())
	}
	var bar *cli.Progress
	if o.Progress {
		var total int64
		for _, p := range o.Files {
			if fi, err := os.Stat(p); p != "-" && err == nil {
				total += fi.Size()
			}
		}
		bar = cli.NewProgress(o.ErrOut, "import", total, true)
		read := map[string]int64{} // per file: merged imports read them in turns
		var sum int64
		iopts = append(iopts, interchange.WithProgress(func(path string, n, size int64) {
			sum += n - read[path]
			read[path] = n
			bar.Set(sum)
		}))
	}
	st, err := interchange.ImportFiles(o.OutDir, m, o.Format, o.Files, iopts...)
	bar.Finish()
	if st != nil && st.Records > 0 {
		if other := looksLikeOtherVenue(o.OutDir, o.Venue); other != "" {
			fmt.Fprintf(o.ErrOut, "warning: the first frames look like %s, not %s (check --venue)\n", other, o.Venue)
		}
	}
	if st != nil && st.Records > 0 || err == nil {
		if perr := printImport(o, st); err == nil {
			err = perr
		}
	}
	return err
}

// importSummary is the JSON form of the summary.
type importSummary struct {
	Dataset       string `json:"dataset"`
	Venue         string `json:"venue"`
	Format        string `json:"format"`
	Files         int    `json:"files"`
	Lines         int64  `json:"lines"`
	Records       int64  `json:"records"`
	Frames        int64  `json:"frames"`
	Disconnects   int64  `json:"disconnects"`
	Skipped       int64  `json:"skipped_empty_lines"`
	Bytes         int64  `json:"frame_bytes"`
	TimesAssigned bool   `json:"times_assigned"`
	Backwards     int64  `json:"times_backwards"`
	InFile        int64  `json:"times_backwards_in_file"`
	FirstNs       int64  `json:"first_ns"`
	LastNs        int64  `json:"last_ns"`
}

func printImport(o *importOptions, st *interchange.ImportStats) error {
	ds := o.OutDir
	if o.remote != "" {
		ds = o.remote
	}
	s := importSummary{Dataset: ds, Venue: o.Venue, Format: o.Format.String(), Files: st.Files,
		Lines: st.Lines, Records: st.Records, Frames: st.Frames, Disconnects: st.Disconnects, Skipped: st.Skipped,
		Bytes: st.Bytes, TimesAssigned: st.TimesAssigned, Backwards: st.Backwards, InFile: st.BackwardsInFile, FirstNs: st.FirstNs, LastNs: st.LastNs}
	if o.JSON {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	// Aligned for a terminal, TSV (one key and value a line) when piped.
	var tw io.Writer = o.Out
	flush := func() error { return nil }
	if cli.IsTerminal(o.Out) {
		t := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
		tw, flush = t, t.Flush
	}
	fmt.Fprintf(tw, "dataset\t%s (%s)\n", s.Dataset, s.Venue)
	fmt.Fprintf(tw, "read\t%d files, %d lines (%s)\n", s.Files, s.Lines, s.Format)
	fmt.Fprintf(tw, "records\t%d: %d frames (%d bytes), %d disconnects\n", s.Records, s.Frames, s.Bytes, s.Disconnects)
	if s.Skipped > 0 {
		fmt.Fprintf(tw, "skipped\t%d empty lines\n", s.Skipped)
	}
	times := "as recorded"
	if s.TimesAssigned {
		times = "ASSIGNED in line order (the input carries none)"
	}
	fmt.Fprintf(tw, "receive times\t%s\n", times)
	if s.Records > 0 {
		fmt.Fprintf(tw, "span\t%s .. %s (%v)\n", fmtNs(s.FirstNs), fmtNs(s.LastNs), time.Duration(s.LastNs-s.FirstNs))
	}
	if s.InFile > 0 {
		fmt.Fprintf(tw, "warning\t%d records earlier than the one before them in the same file: kept in file order (the file is not in receive order; --merge interleaves files, it does not sort one)\n", s.InFile)
	}
	if n := s.Backwards - s.InFile; n > 0 {
		fmt.Fprintf(tw, "warning\t%d records earlier than the last one of the file before (files out of order? --merge interleaves them by receive time)\n", n)
	}
	return flush()
}

func fmtNs(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// looksLikeOtherVenue reads the first frames of the new dataset and returns
// the name of the venue whose envelope most of them carry when that is not
// venue (registry.Sniff), "" otherwise. A mislabelled import would fail every
// decode at replay.
func looksLikeOtherVenue(dir, venue string) string {
	r, err := datasets.Open(dir)
	if err != nil {
		return ""
	}
	defer r.Close()
	var frames [][]byte
	for len(frames) < 200 && r.Next() {
		if rec := r.Record(); rec.Kind == datasets.KindFrame {
			frames = append(frames, bytes.Clone(rec.Payload))
		}
	}
	if d := registry.Sniff(frames); d != nil && d.Name() != venue {
		return d.Name()
	}
	return ""
}
