package cli

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets/s3store"
)

// AddStorageFlags gives every verb of root the object-storage flags
// (--s3-endpoint, --s3-cache, --s3-read-ahead, --s3-timeout) and configures package
// s3store from them before a verb runs, which makes s3://bucket/prefix
// usable wherever a dataset path goes.
func AddStorageFlags(root *cobra.Command) {
	var c s3store.Config
	var readAhead int64
	f := root.PersistentFlags()
	f.StringVar(&c.Endpoint, "s3-endpoint", "", "S3-compatible endpoint `URL` for s3:// paths (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS S3; credentials from the AWS variables, profile or instance role)")
	f.StringVar(&c.CacheDir, "s3-cache", "", "keep the byte ranges read from s3:// datasets in `DIR` and reuse them (never evicted: remove DIR to free it)")
	f.Int64Var(&readAhead, "s3-read-ahead", 32, "read at most this many `MiB` ahead of a replay from s3://")
	f.DurationVar(&c.Timeout, "s3-timeout", 10*time.Second, "fail an S3 request that makes no progress for this `long` (no connection, no answer, a body that stops moving), then retry it once")
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if readAhead < 1 {
			return FlagErrorf("--s3-read-ahead %d: want at least 1 (MiB)", readAhead)
		}
		if c.Timeout <= 0 {
			return FlagErrorf("--s3-timeout %v: want a positive duration", c.Timeout)
		}
		c.ReadAhead = readAhead << 20
		s3store.Configure(c)
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}
