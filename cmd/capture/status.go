package main

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/recorder"
)

// statusOptions are the parsed flags of `capture status`.
type statusOptions struct {
	Dir    string
	JSON   bool
	Stdout io.Writer
}

func newStatusCmd(runF func(*statusOptions) error) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status DATASET",
		Short: "Summarise a running or finished recording: rates, lag, reconnects, gaps",
		Long: `Read a dataset, finished or still being written, and report how much it holds,
frames per second (overall and over its last minute), receive lag (receive
time minus the venue's timestamp: p50, p99, max), connects, disconnects and
reconnect attempts, and every interval of known loss (a connection down, a
stall, a queue overflow, a write failure) with its duration.

A recording that is still running (or was killed) is read up to its last
sealed block. The summary is JSON with --json, or when standard output is not
a terminal.`,
		Example: `  $ capture status datasets/samples/polymarket
  $ capture status datasets/samples/hyperliquid --json`,
		Args: cli.ExactlyOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir, o.Stdout = args[0], cmd.OutOrStdout()
			if !cmd.Flags().Changed("json") && !cli.IsTerminal(o.Stdout) {
				o.JSON = true
			}
			if runF != nil {
				return runF(o)
			}
			return runStatus(o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the summary as JSON (default when not a terminal)")
	return cmd
}

func runStatus(o *statusOptions) error {
	st, err := recorder.ReadStatus(o.Dir)
	if err != nil {
		return err
	}
	if o.JSON {
		return st.WriteJSON(o.Stdout)
	}
	return st.WriteText(o.Stdout)
}
