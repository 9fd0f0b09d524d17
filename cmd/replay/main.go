// Command replay reads tapedeck datasets: replays them through the books,
// prints reconstructed books, serves them over WebSocket, exports tables,
// writes HTML reports of them, verifies and benchmarks them.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// newRootCmd is the replay command with every verb: the one place verbs are
// registered (a new verb adds its constructor here).
func newRootCmd() *cobra.Command {
	root := cli.NewRoot("replay", "Replay, inspect, verify, serve and export tapedeck recordings",
		newBacktestCmd(),
		newBenchCmd(nil),
		newBooksCmd(nil),
		newExportCmd(nil),
		newInspectCmd(nil),
		newLsCmd(nil),
		newRepairCmd(nil),
		newReportCmd(nil),
		newRunCmd(nil),
		newServeCmd(nil),
		newVerifyCmd(nil),
	)
	cli.AddStorageFlags(root)
	return addProfileFlag(root)
}

func main() { os.Exit(cli.Main(newRootCmd(), os.Args[1:], os.Stderr)) }
