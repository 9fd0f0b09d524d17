// Command replay reads tapedeck datasets: replays them through the books,
// prints reconstructed books, serves them over WebSocket, exports tables,
// verifies and benchmarks them.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// verbs collects the subcommands; each verb file registers itself in init.
var verbs cli.Registry

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "replay",
		Short: "Replay, inspect, verify, serve and export tapedeck recordings",
	}
	verbs.Attach(root)
	return root
}

func main() { os.Exit(cli.Main(newRootCmd(), os.Args[1:], os.Stderr)) }
