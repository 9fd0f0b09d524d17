// Command capture records exchange WebSocket market data into tapedeck
// datasets (with a read-only status page of the running daemon), reports on
// them, and imports interchange formats into them.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// newRootCmd is the capture command with every verb: the one place verbs are
// registered (a new verb adds its constructor here).
func newRootCmd() *cobra.Command {
	root := cli.NewRoot("capture", "Record Polymarket and Hyperliquid market data, or import existing archives",
		newImportCmd(nil),
		newPlanCmd(nil),
		// run and upload flush, seal and exit 0 on SIGINT/SIGTERM (their
		// normal end); the others exit at once (cli.OnSignal).
		cli.OnSignal(newRunCmd(nil), cli.SignalOwn),
		newStatusCmd(nil),
		cli.OnSignal(newUploadCmd(nil), cli.SignalOwn),
	)
	cli.AddStorageFlags(root)
	return root
}

func main() { os.Exit(cli.Main(newRootCmd(), os.Args[1:], os.Stderr)) }
