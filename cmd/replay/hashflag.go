package main

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"

	"github.com/tapedeck/tapedeck/replayer"
)

// hashFlags are --hash-check, --hash-every and --hash-window, shared by the verbs that
// replay through the books.
type hashFlags struct {
	mode   replayer.HashMode
	every  time.Duration
	window time.Duration
}

// add registers the flags on fs. --hash-check alone means all; true and false,
// the values of the boolean flag it replaced, still mean all and off.
func (h *hashFlags) add(fs *pflag.FlagSet) {
	h.mode, h.every = replayer.HashSampled, replayer.DefaultHashEvery
	fs.Var((*hashModeValue)(&h.mode), "hash-check",
		"venue book hash verification: sampled (at most one per instrument per --hash-every of venue time, always before a snapshot, a loss and at the end: a diverged book is still caught), all, or off; books are the same in every mode")
	fs.Lookup("hash-check").NoOptDefVal = "all"
	fs.DurationVar(&h.every, "hash-every", replayer.DefaultHashEvery, "--hash-check=sampled: the interval of venue time between checks of one instrument")
	fs.DurationVar(&h.window, "hash-window", time.Second,
		"how long (venue time) a hash the known last trade price does not explain waits for a trade that may: then ok, mismatch, or unverifiable if no trade came (Polymarket sends a trade's hash before its last_trade_price)")
}

// options are the replayer options the flags ask for.
func (h *hashFlags) options() []replayer.Option {
	return []replayer.Option{replayer.WithHashMode(h.mode, h.every), replayer.WithHashWindow(h.window)}
}

type hashModeValue replayer.HashMode

func (v *hashModeValue) String() string { return replayer.HashMode(*v).String() }
func (v *hashModeValue) Type() string   { return "mode" }
func (v *hashModeValue) Set(s string) error {
	m, err := replayer.ParseHashMode(s)
	if err != nil {
		return err
	}
	*v = hashModeValue(m)
	return nil
}

// addReadAheadFlag registers --read-ahead on cmd and checks its value
// before the verb runs.
func addReadAheadFlag(cmd *cobra.Command, n *int) {
	cmd.Flags().IntVar(n, "read-ahead", datasets.DefaultReadAhead,
		"blocks of each dataset read and decompressed ahead on a second core (`N`, 0 to 64; 0: all on one goroutine); the output and digest are the same")
	pre := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if *n < 0 || *n > 64 {
			return cli.FlagErrorf("--read-ahead %d: want 0 to 64 blocks", *n)
		}
		if pre != nil {
			return pre(c, args)
		}
		return nil
	}
}
