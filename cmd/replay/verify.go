package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// verifyOptions are the parsed flags of `replay verify`.
type verifyOptions struct {
	Paths []string
	JSON  bool
	Out   io.Writer
}

func newVerifyCmd(runF func(*verifyOptions) error) *cobra.Command {
	opts := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify DATASET...",
		Short: "Check datasets for damage and inconsistencies",
		Long: `Read every block of each dataset and check it: segment and block headers,
the checksums of the stored and the decoded content, record framing, sequence
numbers strictly increasing across the dataset, monotonic receive times never
going backwards, segment numbering, indexes and the manifest's time range.
Reading continues past damage so that every problem is listed, each with the
file and byte offset where it is.

The exit status is 0 when every dataset is sound, 3 when a problem was found
(run "replay repair" on it), 1 when a dataset could not be read at all.
--json prints {"ok":BOOL,"datasets":[{"dir","segments","blocks","records",
"problems":[{"file","offset","seq","problem"}],"warnings":[…]}]}.`,
		Example: `  # Check the shipped samples
  $ replay verify datasets/samples/polymarket datasets/samples/hyperliquid

  # The same as JSON, for a script
  $ replay verify --json datasets/samples/polymarket`,
		Args: cli.AtLeastOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths, opts.Out = args, cmd.OutOrStdout()
			if runF != nil {
				return runF(opts)
			}
			return runVerify(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the reports as JSON")
	return cmd
}

func runVerify(opts *verifyOptions) error {
	var reports []*datasets.VerifyReport
	var errs []error
	bad := 0
	for _, p := range opts.Paths {
		rep, err := datasets.Verify(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("verify %s: %w", p, err))
			if !opts.JSON {
				fmt.Fprintf(opts.Out, "ERROR %s: %v\n", p, err)
			}
			continue
		}
		reports = append(reports, rep)
		if !rep.OK() {
			bad++
		}
		if !opts.JSON {
			printVerify(opts.Out, rep)
		}
	}
	if opts.JSON {
		if reports == nil {
			reports = []*datasets.VerifyReport{}
		}
		out := struct {
			OK       bool                     `json:"ok"`
			Datasets []*datasets.VerifyReport `json:"datasets"`
		}{bad == 0 && len(errs) == 0, reports}
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if bad > 0 {
		return &cli.ProblemError{Err: fmt.Errorf("verify: %d of %d datasets have problems", bad, len(opts.Paths))}
	}
	return nil
}

func printVerify(w io.Writer, rep *datasets.VerifyReport) {
	status := "ok"
	if !rep.OK() {
		status = "FAIL"
	}
	fmt.Fprintf(w, "%-4s %s: %d records in %d blocks, %d segments", status, rep.Dir, rep.Records, rep.Blocks, rep.Segments)
	if !rep.OK() {
		fmt.Fprintf(w, ", %d problems", len(rep.Problems))
	}
	fmt.Fprintln(w)
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	for _, p := range rep.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", p)
	}
}
