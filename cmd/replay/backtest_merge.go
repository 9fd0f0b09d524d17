package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/backtest/research"
	"github.com/tapedeck/tapedeck/internal/cli"
)

func newBacktestMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge TABLE.csv...",
		Short: "Join the sweep tables of a sharded sweep's jobs into one",
		Long: `Join the CSV sweep tables that "replay backtest --sweep … --shard K/N" jobs
wrote (DIR/sweep.csv) into the table the unsharded sweep writes, byte for byte:
rows by point, every point exactly once. A missing shard or one given twice is
an error.`,
		Example: `  $ replay backtest merge --out sweep.csv part-1/sweep.csv part-2/sweep.csv`,
		Args:    cli.AtLeastOne("TABLE.csv"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var parts []io.Reader
			for _, a := range args {
				fh, err := os.Open(a)
				if err != nil {
					return err
				}
				defer fh.Close()
				parts = append(parts, fh)
			}
			if out == "" || out == "-" {
				return research.Merge(cmd.OutOrStdout(), parts...)
			}
			return writeFileAtomic(out, func(w io.Writer) error { return research.Merge(w, parts...) })
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the merged table to `FILE` (default: standard output)")
	return cmd
}
