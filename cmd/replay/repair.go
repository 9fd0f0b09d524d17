package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/venue/registry"
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
		Long: `Repair a dataset in place and print exactly what was lost.

Every damaged stretch (a bad block, a torn tail, a segment cut short) is cut
out and replaced by one "gap" record covering the lost records, so the loss
stays explicit to every reader and the books are marked invalid there; so are
records missing without damage (a segment file gone). What was lost is counted
from every source: the block headers that still parse, the indexes (which list
a finished segment's blocks even after it lost them) and the manifest's range;
when the count is a lower bound the report says "at least". The recorded time
range never shrinks. A segment that only repeats records already in the dataset
is set aside (renamed *.duplicate, not deleted); swapped segments are refused
(exit 3) naming the files. A dataset whose capture was killed is closed as
"recovered". A missing or corrupt manifest is rebuilt from the segments, naming
the fields they do not carry. Missing or stale indexes are rewritten. Every
file is replaced atomically; repairing a sound dataset changes nothing.

Afterwards the dataset is verified: the exit status is 0 when it verifies, 3
when problems remain (listed), 1 when it could not be repaired at all. --json
prints the report as JSON with "verified" and "problems_left".`,
		Example: `  # After a crash or a "replay verify" failure
  $ replay repair recordings/polymarket-2025-10-23

  # The report as JSON
  $ replay repair --json recordings/polymarket-2025-10-23`,
		Args: cli.ExactlyOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path, opts.Out = args[0], cmd.OutOrStdout()
			if datasets.IsRemote(opts.Path) {
				return cli.FlagErrorf("repair: %s: repair rewrites files in place and works on a local dataset; copy it down, repair it, and upload it with capture upload", opts.Path)
			}
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
	rep, err := datasets.Repair(opts.Path, datasets.WithVenueSniffer(sniffVenue))
	if errors.Is(err, datasets.ErrUnrepairable) {
		return &cli.ProblemError{Err: err}
	}
	if err != nil {
		return err
	}
	// Repair is done only when the dataset verifies: say so if it does not.
	vr, verr := datasets.Verify(opts.Path)
	if verr != nil {
		return fmt.Errorf("verify after repair: %w", verr)
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		out := struct {
			*datasets.RepairReport
			Verified bool               `json:"verified"`
			Problems []datasets.Problem `json:"problems_left"`
		}{rep, vr.OK(), vr.Problems}
		if err := enc.Encode(out); err != nil {
			return err
		}
		return repairLeft(vr)
	}
	w := opts.Out
	if !rep.Changed() {
		if vr.OK() {
			fmt.Fprintf(w, "nothing to repair: %s\n", rep.Dir)
		} else {
			fmt.Fprintf(w, "NOT REPAIRED %s: repair changed nothing, but verify still finds problems:\n", rep.Dir)
		}
		printLeft(w, vr)
		return repairLeft(vr)
	}
	if vr.OK() {
		fmt.Fprintf(w, "repaired %s (verify: ok)\n", rep.Dir)
	} else {
		fmt.Fprintf(w, "PARTLY REPAIRED %s: verify still finds problems (listed last)\n", rep.Dir)
	}
	if rep.ManifestRebuilt {
		fmt.Fprintf(w, "  manifest rebuilt from the segments (%s); not recoverable from them: %s\n",
			rep.ManifestProblem, strings.Join(rep.Unrecovered, ", "))
	}
	if rep.Recovered {
		fmt.Fprintln(w, "  the writer had died: the dataset is now closed as recovered (what the crash lost stands as a gap record)")
	}
	for _, p := range rep.SetAside {
		fmt.Fprintf(w, "  set aside %s: it only repeats records the dataset already has\n", filepath.Base(p))
	}
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
		if d.Tail {
			fmt.Fprint(w, " (torn tail cut)")
		}
		if d.GapSeq != 0 {
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
		fmt.Fprintf(w, "  manifest time range %s – %s\n", fmtNs(rep.StartNs), fmtNs(rep.EndNs))
	}
	printLeft(w, vr)
	return repairLeft(vr)
}

// sniffVenue names the venue of a dataset's frames, for a rebuilt manifest.
func sniffVenue(frames [][]byte) string {
	if d := registry.Sniff(frames); d != nil {
		return d.Name()
	}
	return ""
}

func printLeft(w io.Writer, vr *datasets.VerifyReport) {
	for _, p := range vr.Problems {
		fmt.Fprintf(w, "  still wrong: %s\n", p)
	}
}

// repairLeft is the exit-3 error when verify still fails after repair.
func repairLeft(vr *datasets.VerifyReport) error {
	if vr.OK() {
		return nil
	}
	return &cli.ProblemError{Err: fmt.Errorf("repair: %s still has %d problems (see \"replay verify\")", vr.Dir, len(vr.Problems))}
}

// fmtNs formats wall-clock ns as RFC 3339 UTC with nanoseconds; 0 is "?".
func fmtNs(ns int64) string {
	if ns == 0 {
		return "?"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}
