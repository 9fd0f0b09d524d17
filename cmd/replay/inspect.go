package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/units"
	"github.com/tapedeck/tapedeck/replayer"
)

// inspectOptions are the parsed flags of `replay inspect`.
type inspectOptions struct {
	Path   string
	Format string // "json" or "table"
	Out    io.Writer
}

func newInspectCmd(runF func(*inspectOptions) error) *cobra.Command {
	opts := &inspectOptions{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect DATASET",
		Short: "Describe a dataset: coverage, connections, record counts, losses",
		Long: `Read a dataset and describe it: venue and endpoint, time coverage, size on
disk and raw frame bytes with the compression ratio, records by kind, each
connection slot (URL, records, frames, first and last receive time, connects
and disconnects), every loss record (disconnect, reconnect, stall, gap,
overload, write error) with its time range and detail, and every record of
the capture's live engine (integrity: a book that failed a check, with the
instrument and what was seen; resubscribe: a heal; live_lag: the engine fell
behind, the recording did not).

A table on a terminal, JSON otherwise (or with --json): the JSON object has
"dir", "manifest", "segments", "disk_bytes", "raw_bytes",
"compression_ratio", "records", "records_by_kind", "start_ns", "end_ns",
"connections", "losses", "live" (the capture's live engine records), "rest"
(REST responses recorded and those the venue decoder rejects: "bodies",
"rejected", "first_errors"; and the venue book hashes they carry, judged
against their own levels: "hash_ok", "hash_mismatch", "hash_unverifiable"),
and "truncated"/"error" when reading stopped early.`,
		Example: `  # What is in the shipped Polymarket sample
  $ replay inspect datasets/samples/polymarket

  # As JSON, for a script
  $ replay inspect --json datasets/samples/hyperliquid`,
		Args: cli.ExactlyOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path, opts.Out = args[0], cmd.OutOrStdout()
			var err error
			if opts.Format, err = cli.OutputFormat(opts.Format, asJSON, opts.Out); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runInspect(opts)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (same as --format json)")
	cmd.Flags().StringVar(&opts.Format, "format", "", "json or table (default: table on a terminal, json otherwise)")
	return cmd
}

func runInspect(opts *inspectOptions) error {
	info, err := datasets.Inspect(opts.Path)
	if err != nil {
		return err
	}
	// The REST responses the recording relied on, and those its decoder
	// rejects (a /books body with a bad summary, say): the replay would
	// lack them, so they are counted here too.
	rest, rerr := replayer.CheckREST(opts.Path)
	if rerr != nil {
		rest = &replayer.RESTCheck{}
	}
	if opts.Format == "json" {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			*datasets.Info
			REST *replayer.RESTCheck `json:"rest"`
		}{info, rest})
	} else {
		err = printInfo(opts.Out, info)
		if err == nil && rest.Bodies > 0 {
			_, err = fmt.Fprintf(opts.Out, "\nREST responses\t%d, %d rejected by the decoder; venue hashes %d ok, %d mismatch, %d unverifiable\n",
				rest.Bodies, rest.Rejected, rest.HashOK, rest.HashMismatch, rest.HashUnverifiable)
			for _, e := range rest.FirstErrors {
				if err == nil {
					_, err = fmt.Fprintf(opts.Out, "  conn %d seq %d: %s\n", e.Conn, e.Seq, e.Err)
				}
			}
		}
	}
	if err != nil {
		return err
	}
	return infoProblem(info)
}

// infoProblem is the exit-3 error for a dataset Inspect found damaged.
func infoProblem(info *datasets.Info) error {
	switch {
	case info.Err != "":
		return &cli.ProblemError{Err: fmt.Errorf("%s: %s (run \"replay verify\")", info.Dir, info.Err)}
	case len(info.Damage) > 0:
		recs, exact, bytes, _, _ := datasets.DamageTotals(info.Damage)
		n := fmt.Sprint(recs)
		if !exact {
			n = "at least " + n
		}
		return &cli.ProblemError{Err: fmt.Errorf("%s: damaged: %s records, %d bytes unreadable, first %s (run \"replay verify\", then \"replay repair\")", info.Dir, n, bytes, info.Damage[0].Reason)}
	}
	return nil
}

func printInfo(out io.Writer, info *datasets.Info) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	m := info.Manifest
	fmt.Fprintf(w, "dataset\t%s\n", info.Dir)
	fmt.Fprintf(w, "venue\t%s\n", m.Venue)
	fmt.Fprintf(w, "endpoint\t%s\n", m.Endpoint)
	if len(m.Subscriptions) > 0 {
		fmt.Fprintf(w, "subscriptions\t%d\n", len(m.Subscriptions))
	}
	fmt.Fprintf(w, "coverage\t%s – %s (%s)\n", fmtNs(info.StartNs), fmtNs(info.EndNs), time.Duration(info.EndNs-info.StartNs))
	state := "clean"
	switch {
	case m.Recovered:
		state = "recovered: the writer died, \"replay repair\" closed it (what was lost is in the losses)"
	case !m.Clean:
		state = "not closed cleanly (crashed or still recording)"
	}
	if m.Repaired {
		state += "; repaired: damage cut out, each loss stands as a gap record (see losses)"
	}
	fmt.Fprintf(w, "state\t%s\n", state)
	if m.TimesAssigned {
		fmt.Fprintf(w, "times\tassigned at import (%s)\n", m.Source)
	}
	fmt.Fprintf(w, "size\t%d segments, %s on disk, %s of frames, ratio %.1f\n", info.Segments, fmtBytes(info.DiskBytes), fmtBytes(int64(info.RawBytes)), info.Ratio)
	fmt.Fprintf(w, "records\t%d\n", info.Records)
	kinds := make([]string, 0, len(info.ByKind))
	for k := range info.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "  %s\t%d\n", k, info.ByKind[k])
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nconnections (%d)\n", len(info.Conns))
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  CONN\tRECORDS\tFRAMES\tFRAME BYTES\tFIRST\tLAST\tCONNECTS\tDISCONNECTS\tLOSSES\tURL")
	for _, c := range info.Conns {
		fmt.Fprintf(w, "  %s\t%d\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", fmtConn(c.Conn), c.Records, c.Frames, fmtBytes(int64(c.FrameBytes)),
			fmtNs(c.FirstNs), fmtNs(c.LastNs), c.Connects, c.Disconnects, c.Losses, c.URL)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nlosses (%d)\n", len(info.Losses))
	if len(info.Losses) > 0 {
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  SEQ\tCONN\tKIND\tAT\tFROM\tTO\tDROPPED\tDETAIL")
		for _, l := range info.Losses {
			fmt.Fprintf(w, "  %d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", l.Seq, fmtConn(l.Conn), l.Kind, fmtNs(l.WallNs), fmtNs(l.FromNs), fmtNs(l.ToNs), l.Dropped, l.Detail)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(info.Live) > 0 {
		// Integrity findings, resubscribes and lags of the live engine.
		fmt.Fprintf(out, "\nlive engine (%d)\n", len(info.Live))
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  SEQ\tCONN\tKIND\tAT\tINSTRUMENTS\tDETAIL")
		for _, l := range info.Live {
			insts := strings.Join(l.Instruments[:min(len(l.Instruments), 3)], ",")
			if len(l.Instruments) > 3 {
				insts += fmt.Sprintf(",… (%d)", len(l.Instruments))
			}
			fmt.Fprintf(w, "  %d\t%s\t%s\t%s\t%s\t%s\n", l.Seq, fmtConn(l.Conn), l.Kind, fmtNs(l.WallNs), insts, l.Detail)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(info.Damage) > 0 {
		fmt.Fprintf(out, "\nDAMAGED (%d)\n", len(info.Damage))
		for _, d := range info.Damage {
			fmt.Fprintf(out, "  %s\n", d.String())
		}
	}
	if info.Truncated != nil {
		fmt.Fprintf(out, "\n%s (run \"replay repair\")\n", info.Truncated)
	}
	if info.Err != "" {
		fmt.Fprintf(out, "\nreading stopped: %s (run \"replay verify\")\n", info.Err)
	}
	return nil
}

func fmtConn(c uint32) string {
	if c == datasets.ConnAll {
		return "all"
	}
	return fmt.Sprint(c)
}

// fmtBytes prints a byte count with a binary unit.
func fmtBytes(n int64) string { return units.Bytes(n) }
