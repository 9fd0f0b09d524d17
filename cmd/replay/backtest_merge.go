package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/backtest/research"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/internal/cli"
)

func newBacktestMergeCmd() *cobra.Command {
	var (
		out       string
		batchRows int
	)
	cmd := &cobra.Command{
		Use:   "merge TABLE...",
		Short: "Join the sweep tables of a sharded sweep's jobs into one",
		Long: `Join the sweep tables that "replay backtest --sweep … --shard K/N" jobs wrote
(DIR/sweep.csv, sweep.parquet or sweep.arrow, by --format) into the table the
unsharded sweep writes with the same flags, byte for byte: rows by point,
every point exactly once, the shards' K/N metadata dropped. The format is
read from each table's content (Parquet and Arrow IPC by their magic, else
CSV); all must be of one format. A missing shard, one given twice, tables of
other sweeps (other swept names) or damaged tables are errors, and nothing is
written.

The merged table is in the tables' format, with their compression and batch
size, unless --out names a file ending in .csv, .parquet or .arrow: then it
is in that format (so Parquet shards can be merged into a CSV table).
Without --out it goes to standard output in the tables' format.`,
		Example: `  $ replay backtest merge --out sweep.csv part-1/sweep.csv part-2/sweep.csv
  $ replay backtest merge --out sweep.parquet part-*/sweep.parquet
  $ replay backtest merge --out sweep.csv part-*/sweep.parquet   # Parquet shards, a CSV table`,
		Args: cli.AtLeastOne("TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if batchRows < 0 || batchRows > columnar.MaxBatchRows {
				return cli.FlagErrorf("--batch-rows %d: want 0 to %d", batchRows, columnar.MaxBatchRows)
			}
			o := research.MergeOptions{Names: args, BatchRows: batchRows}
			if f, ok := columnar.FormatOfName(out); ok {
				o.Format = f
			}
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
				return research.Merge(cmd.OutOrStdout(), o, parts...)
			}
			return writeFileAtomic(out, func(w io.Writer) error { return research.Merge(w, o, parts...) })
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the merged table to `FILE` (default: standard output)")
	cmd.Flags().IntVar(&batchRows, "batch-rows", 0, "rows per Parquet row group or Arrow record batch, as the sweep's --batch-rows (default: the tables' when one has several, else the writer's)")
	return cmd
}
