package cli

import (
	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets/s3store"
)

// AddStorageFlags gives every verb of root the object-storage flags
// (--s3-endpoint, --s3-cache, --s3-read-ahead) and configures package
// s3store from them before a verb runs, which makes s3://bucket/prefix
// usable wherever a dataset path goes.
func AddStorageFlags(root *cobra.Command) {
	var c s3store.Config
	var readAhead int64
	f := root.PersistentFlags()
	f.StringVar(&c.Endpoint, "s3-endpoint", "", "S3-compatible endpoint `URL` for s3:// paths (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS S3; credentials from the AWS variables, profile or instance role)")
	f.StringVar(&c.CacheDir, "s3-cache", "", "keep the byte ranges read from s3:// datasets in `DIR` and reuse them (never evicted: remove DIR to free it)")
	f.Int64Var(&readAhead, "s3-read-ahead", 32, "read at most this many `MiB` ahead of a replay from s3://")
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if readAhead < 1 {
			return FlagErrorf("--s3-read-ahead %d: want at least 1 (MiB)", readAhead)
		}
		c.ReadAhead = readAhead << 20
		s3store.Configure(c)
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}
