package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/statusweb"
	"github.com/tapedeck/tapedeck/recorder"
)

// statusOptions are the parsed flags of `capture status`.
type statusOptions struct {
	Dir    string
	Addr   string
	JSON   bool
	Stdout io.Writer
	ctx    context.Context
}

func newStatusCmd(runF func(*statusOptions) error) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status (DATASET | --addr HOST:PORT)",
		Short: "Summarise a recording, or ask a running capture for its live status",
		Long: `Read a dataset, finished or still being written, and report how much it holds,
frames per second (overall and over its last minute), receive lag (receive
time minus the venue's timestamp: p50, p99, max), connects, disconnects and
reconnect attempts, and every interval of known loss (a connection down, a
stall, a queue overflow, a write failure) with its duration.

A recording that is still running (or was killed) is read up to its last
sealed block.

With --addr, ask a running "capture run --metrics-addr" instead: its
/status.json (what its status page shows), with each connection's state,
uptime, reconnects and frame rate, each instrument's live top of book, last
update, stalls, gaps and hash mismatches, disk use and time to full, and the
latest control records (for example "capture status --addr 127.0.0.1:9464"
for a capture run with --metrics-addr 127.0.0.1:9464). With --json that
document is printed as served.

The summary is JSON with --json, or when standard output is not a terminal.`,
		Example: `  $ capture status datasets/samples/polymarket
  $ capture status datasets/samples/hyperliquid --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("addr") {
				if len(args) != 0 {
					return cli.FlagErrorf("give a DATASET or --addr, not both")
				}
				return nil
			}
			return cli.ExactlyOne("DATASET")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Dir = args[0]
			}
			o.Stdout, o.ctx = cmd.OutOrStdout(), cmd.Context()
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
	cmd.Flags().StringVar(&o.Addr, "addr", "", "`HOST:PORT` (or http:// URL) of a running capture's --metrics-addr: print its live status")
	return cmd
}

func runStatus(o *statusOptions) error {
	if o.Addr != "" {
		ctx := o.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		body, st, err := statusweb.Fetch(ctx, o.Addr)
		if err != nil {
			return err
		}
		if o.JSON {
			_, err = o.Stdout.Write(body)
			return err
		}
		return st.WriteText(cli.SafeText(o.Stdout)) // names from the venue: shown, never obeyed
	}
	st, err := recorder.ReadStatus(o.Dir)
	if err != nil {
		return err
	}
	if o.JSON {
		return st.WriteJSON(o.Stdout)
	}
	return st.WriteText(cli.SafeText(o.Stdout))
}
