package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/recorder"
)

// planOptions are the parsed flags of `capture plan`.
type planOptions struct {
	sessionFlags
	Check bool // ask the venue's REST endpoint (network)
	JSON  bool

	Stdout io.Writer
}

func newPlanCmd(runF func(*planOptions) error) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan --venue VENUE (--instruments IDS | --instruments-file FILE | --all-markets)",
		Short: "Show the connections, subscribe frames and pacing a run would use, without recording",
		Long: `Print what "capture run" would do with the same flags: the connections, the
instruments each carries, every subscribe frame it sends after each
(re)connect, and how the frames are paced (Hyperliquid: at most 20 per 100 ms
and 2000 a minute across connections) and how often heartbeats go out.

Nothing touches the network unless the plan needs discovery: --all-markets,
Polymarket markets named by slug or condition id, or --check (Hyperliquid:
check coins against meta and spotMeta, since an unknown coin makes the venue
close the socket with 1006).`,
		Example: `  # Hyperliquid: default and fast books of one coin go on different sockets
  $ capture plan --venue hyperliquid --instruments BTC,ETH --channels l2Book,l2Book+fast,bbo

  # Polymarket tokens from a file, 4 per connection
  $ capture plan --venue polymarket --instruments-file recorder/testdata/polymarket_tokens.txt --assets-per-conn 4

  # The same as JSON
  $ capture plan --venue hyperliquid --instruments BTC --channels l2Book+nSigFigs=5+mantissa=2,candle+interval=1m --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Stdout = cmd.OutOrStdout()
			// run's own keys are accepted and ignored, so one config serves both.
			if err := o.sessionFlags.load(cmd, runOnlyKeys()...); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runPlan(cmd.Context(), o)
		},
	}
	o.sessionFlags.add(cmd.Flags())
	cmd.Flags().BoolVar(&o.Check, "check", false, "check instruments against the venue's listing (uses the network)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the plan as JSON")
	return cmd
}

// runOnlyKeys are the --config keys of run's flags that plan does not have.
func runOnlyKeys() []string {
	var keys []string
	plan := newPlanCmd(nil).Flags()
	newRunCmd(nil).Flags().VisitAll(func(f *pflag.Flag) {
		if plan.Lookup(f.Name) == nil {
			keys = append(keys, cli.ConfigKey(f.Name))
		}
	})
	return keys
}

func runPlan(ctx context.Context, o *planOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	rec, err := recorder.New(o.spec())
	if err != nil {
		return cli.FlagErrorf("%v", err)
	}
	if o.Check {
		if err := rec.Discover(ctx); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
	}
	p, err := rec.Plan(ctx)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if o.JSON {
		return p.WriteJSON(o.Stdout)
	}
	return p.WriteText(o.Stdout)
}
