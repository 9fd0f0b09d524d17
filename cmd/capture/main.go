// Command capture records exchange WebSocket market data into tapedeck
// datasets, and imports interchange formats into them.
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
		Use:   "capture",
		Short: "Record Polymarket and Hyperliquid market data, or import existing archives",
	}
	verbs.Attach(root)
	return root
}

func main() { os.Exit(cli.Main(newRootCmd(), os.Args[1:], os.Stderr)) }
