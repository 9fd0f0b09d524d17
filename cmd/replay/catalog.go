package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// lsOptions are the parsed flags of `replay ls`.
type lsOptions struct {
	Root   string
	Format string // "json" or "table"
	Out    io.Writer
}

func newLsCmd(runF func(*lsOptions) error) *cobra.Command {
	opts := &lsOptions{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls ROOT",
		Aliases: []string{"catalog"},
		Short:   "List the datasets under a directory or an s3:// prefix",
		Long: `Find every dataset under ROOT (ROOT itself included) and list it with its
venue, time coverage, size on disk, compression ratio, record count and loss
records (disconnects, gaps, …). A dataset that cannot be read is listed with
its error. A table on a terminal, JSON otherwise (or with --json): an array
of the objects "replay inspect" prints.

Under s3://bucket/prefix the catalog comes from the manifests and indexes
alone, without reading segment bodies: records and time coverage from the
indexes, "from_index": true, no ratio or loss count ("-").`,
		Example: `  # The shipped samples
  $ replay ls datasets/samples

  # As JSON
  $ replay ls --json datasets/samples`,
		Args: cli.ExactlyOne("ROOT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Root, opts.Out = args[0], cmd.OutOrStdout()
			var err error
			if opts.Format, err = cli.OutputFormat(opts.Format, asJSON, opts.Out); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runLs(opts)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (same as --format json)")
	cmd.Flags().StringVar(&opts.Format, "format", "", "json or table (default: table on a terminal, json otherwise)")
	return cmd
}

func runLs(opts *lsOptions) error {
	infos, err := datasets.Catalog(opts.Root)
	if err != nil {
		return err
	}
	bad := 0
	for _, in := range infos {
		if infoProblem(in) != nil {
			bad++
		}
	}
	var problem error
	if bad > 0 {
		problem = &cli.ProblemError{Err: fmt.Errorf("ls: %d of %d datasets are damaged or unreadable", bad, len(infos))}
	}
	if opts.Format == "json" {
		if infos == nil {
			infos = []*datasets.Info{}
		}
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(infos); err != nil {
			return err
		}
		return problem
	}
	w := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "DATASET\tVENUE\tSTART\tDURATION\tSIZE\tRATIO\tRECORDS\tLOSSES\tSTATE")
	for _, in := range infos {
		if in.Manifest.Venue == "" && in.Err != "" {
			fmt.Fprintf(w, "%s\t\t\t\t\t\t\t\terror: %s\n", in.Dir, in.Err)
			continue
		}
		state := "clean"
		switch {
		case in.Err != "":
			state = "damaged: " + in.Err
		case len(in.Damage) > 0:
			state = "damaged: " + infoProblem(in).Error()
		case in.Truncated != nil:
			state = "torn tail"
		case in.Manifest.Repaired:
			state = "repaired (losses recorded)"
		case in.Manifest.Recovered:
			state = "recovered"
		case !in.Manifest.Clean:
			state = "open or crashed"
		}
		ratio, losses := fmt.Sprintf("%.1f", in.Ratio), fmt.Sprint(len(in.Losses))
		if in.FromIndex {
			ratio, losses = "-", "-" // from the indexes: no segment body was read
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", in.Dir, in.Manifest.Venue, fmtNs(in.StartNs),
			time.Duration(in.EndNs-in.StartNs).Round(time.Millisecond), fmtBytes(in.DiskBytes), ratio, in.Records, losses, state)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return problem
}
