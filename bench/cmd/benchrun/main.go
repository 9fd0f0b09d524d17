// Command benchrun runs tapedeck's benchmark suite (package bench) and turns
// its output into a human table and a JSON report; records a baseline on
// this machine; gates a build against that baseline in paired rounds; and
// regenerates bench/RESULTS.md. It is what make bench, make bench-baseline
// and make bench-gate call.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// newRootCmd is benchrun with every verb: the one place verbs are registered.
func newRootCmd() *cobra.Command {
	return cli.NewRoot("benchrun", "Run, baseline, gate and publish tapedeck's benchmark suite",
		newBaselineCmd(nil),
		newCompareCmd(nil),
		newGateCmd(nil),
		newPeersCmd(nil),
		newPeersResultsCmd(nil),
		newResultsCmd(nil),
		newRunCmd(nil),
	)
}

// noArgs and twoArgs check positional arguments as usage errors.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return cli.FlagErrorf("%s takes no arguments, got %q", cmd.Name(), args)
	}
	return nil
}

func twoArgs(cmd *cobra.Command, args []string) error {
	if len(args) != 2 {
		return cli.FlagErrorf("%s needs BASELINE.json and CURRENT.json, got %d arguments", cmd.Name(), len(args))
	}
	return nil
}

func main() { os.Exit(cli.Main(newRootCmd(), os.Args[1:], os.Stderr)) }
