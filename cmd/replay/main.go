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
		// Verbs that replay stop on Ctrl-C/SIGTERM by their context and
		// remove what they had not finished; serve shuts down as its normal
		// end; the others exit at once (cli.OnSignal).
		cli.OnSignal(newBacktestCmd(), cli.SignalCancel),
		cli.OnSignal(newBenchCmd(nil), cli.SignalCancel),
		cli.OnSignal(newBooksCmd(nil), cli.SignalCancel),
		cli.OnSignal(newExportCmd(nil), cli.SignalCancel),
		newInspectCmd(nil),
		newLsCmd(nil),
		newRepairCmd(nil),
		cli.OnSignal(newReportCmd(nil), cli.SignalCancel),
		cli.OnSignal(newRunCmd(nil), cli.SignalCancel),
		cli.OnSignal(newServeCmd(nil), cli.SignalOwn),
		newVerifyCmd(nil),
	)
	cli.AddStorageFlags(root)
	return addProfileFlag(root)
}

func main() { os.Exit(cli.Main(newRootCmd(), os.Args[1:], os.Stderr)) }
