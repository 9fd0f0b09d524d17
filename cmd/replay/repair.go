package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// repairOptions are the parsed flags of `replay repair`.
type repairOptions struct {
	Path string
	JSON bool
	Out  io.Writer
}

func newRepairCmd(runF func(*repairOptions) error) *cobra.Command {
	opts := &repairOptions{}
	cmd := &cobra.Command{
		Use:   "repair DATASET",
		Short: "Make a damaged or crashed dataset readable again",
		Long: `Repair a dataset in place and print exactly what was dropped.

A torn tail (the last block a crashed writer did not finish) is cut off at the
last good block. Damage anywhere else is cut out of its segment and replaced
by one "gap" record covering the lost records, so the loss stays explicit to
every reader and the books are marked invalid there. Missing or stale indexes
are rewritten and the manifest's time range is set from the records. Every
file is replaced atomically; repairing a sound dataset changes nothing.

For each dropped run it prints the file and offset, the bytes removed, the
records lost (with their sequence numbers, when they can be known) and the
time range around them. --json prints the report as JSON.`,
		Example: `  # After a crash or a "replay verify" failure
  $ replay repair recordings/polymarket-2025-10-23

  # The report as JSON
  $ replay repair --json recordings/polymarket-2025-10-23`,
		Args: cli.ExactlyOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path, opts.Out = args[0], cmd.OutOrStdout()
			if runF != nil {
				return runF(opts)
			}
			return runRepair(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

func runRepair(opts *repairOptions) error {
	rep, err := datasets.Repair(opts.Path)
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	w := opts.Out
	if !rep.Changed() {
		fmt.Fprintf(w, "nothing to repair: %s\n", rep.Dir)
		return nil
	}
	fmt.Fprintf(w, "repaired %s\n", rep.Dir)
	if len(rep.Dropped) > 0 {
		records := fmt.Sprint(rep.DroppedRecords)
		if !rep.RecordsExact {
			records = "at least " + records
		}
		fmt.Fprintf(w, "  dropped %d damaged run(s): %s records, %d bytes\n", len(rep.Dropped), records, rep.DroppedBytes)
	}
	for _, d := range rep.Dropped {
		fmt.Fprintf(w, "  %s@%d: %d bytes, ", filepath.Base(d.File), d.Offset, d.Bytes)
		switch {
		case !d.RecordsKnown:
			fmt.Fprint(w, "records unknown")
		case d.Records == 0:
			fmt.Fprint(w, "no records")
		default:
			fmt.Fprintf(w, "%d records (seq %d–%d)", d.Records, d.FirstSeq, d.LastSeq)
		}
		if d.FromNs != 0 || d.ToNs != 0 {
			fmt.Fprintf(w, " between %s and %s", fmtNs(d.FromNs), fmtNs(d.ToNs))
		}
		fmt.Fprintf(w, ": %s", d.Reason)
		switch {
		case d.Tail:
			fmt.Fprint(w, " (torn tail cut)")
		case d.GapSeq != 0:
			fmt.Fprintf(w, " (gap record seq %d put in its place)", d.GapSeq)
		}
		fmt.Fprintln(w)
	}
	for _, p := range rep.RemovedFiles {
		fmt.Fprintf(w, "  removed %s\n", filepath.Base(p))
	}
	for _, p := range rep.IndexesWritten {
		fmt.Fprintf(w, "  rewrote index %s\n", filepath.Base(p))
	}
	if rep.ManifestFixed {
		fmt.Fprintf(w, "  manifest time range set to %s – %s\n", fmtNs(rep.StartNs), fmtNs(rep.EndNs))
	}
	return nil
}

// fmtNs formats wall-clock ns as RFC 3339 UTC with nanoseconds; 0 is "?".
func fmtNs(ns int64) string {
	if ns == 0 {
		return "?"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}
