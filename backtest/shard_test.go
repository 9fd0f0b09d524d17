package backtest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tapedeck/tapedeck/replayer"
)

// TestShardsMakeTheUnshardedFills runs the built-in strategies whole and in
// shards: the shards' fills together are the whole run's, each once. On
// Polymarket this needs a market's YES and NO tokens in one shard (their
// orders meet in one mirrored book); sharded by token id, the market maker
// made 862 fills against the whole run's 897, 383 of them fills the whole run
// never made.
func TestShardsMakeTheUnshardedFills(t *testing.T) {
	for _, c := range []struct {
		path, strategy string
		n              int
		p              Params
	}{
		// complement finds no edge on the sample's settled books: with a
		// negative one it trades, which is what this compares.
		{pmSample, "mm", 3, nil}, {pmSample, "complement", 2, Params{"edge": "-0.02"}}, {hlSample, "mm", 2, nil},
	} {
		t.Run(fmt.Sprintf("%s/%s/%d", c.path[len("../datasets/samples/"):], c.strategy, c.n), func(t *testing.T) {
			whole := fillKeys(runBuiltin(t, c.path, c.strategy, c.p, Config{Cash: 100000e10}))
			if len(whole) == 0 {
				t.Fatal("the whole run made no fill: nothing to compare")
			}
			var union []string
			nonEmpty := 0
			for k := 1; k <= c.n; k++ {
				part := fillKeys(runBuiltin(t, c.path, c.strategy, c.p, Config{Cash: 100000e10, Shard: replayer.Shard{K: k, N: c.n}}))
				if len(part) > 0 {
					nonEmpty++
				}
				union = append(union, part...)
			}
			slices.Sort(union)
			if !slices.Equal(whole, union) {
				t.Fatalf("%d fills whole, %d in the %d shards together; first whole %q", len(whole), len(union), c.n, whole[0])
			}
			if c.path == pmSample && c.strategy == "mm" && nonEmpty < 2 {
				t.Fatalf("only %d of %d shards traded: the split divided nothing", nonEmpty, c.n)
			}
		})
	}
}

// fillKeys are a run's fills without their run-local numbering (fill and
// order sequence), sorted.
func fillKeys(res *Result) []string {
	out := make([]string, 0, len(res.Fills))
	for _, f := range res.Fills {
		out = append(out, fmt.Sprintf("%s %s %v %d %d %v %d %d %d %d %s", f.Venue, f.Instrument, f.Side, f.Price, f.Size,
			f.Liquidity, f.Queue, f.Fee, f.ExchangeNs, f.RecvNs, f.Tag))
	}
	slices.Sort(out)
	return out
}
