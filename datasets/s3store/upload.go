package s3store

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tapedeck/tapedeck/datasets"
)

// DatasetFile reports whether a file of a dataset directory belongs in an
// upload: segments, indexes and the manifest, not the lock, temporary or
// compaction files a writer leaves.
func DatasetFile(name string) bool {
	if name == datasets.ManifestName {
		return true
	}
	base, ok := strings.CutSuffix(name, ".seg")
	if !ok {
		base, ok = strings.CutSuffix(name, ".idx")
	}
	if !ok || len(base) != 8 {
		return false
	}
	for _, c := range base {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// UploadResult says what UploadDataset did.
type UploadResult struct {
	Uploaded []string // files sent and verified
	Skipped  []string // already there, same size and MD5
	Bytes    int64    // bytes sent
}

// UploadDataset copies the finished dataset in the local directory dir to
// the location loc (s3://bucket/prefix): every segment and index, each
// verified, then the manifest last, so a reader never finds a manifest
// naming objects that are not all there. A file already there with the same
// size and MD5 is not sent again, so an interrupted upload resumes.
func UploadDataset(ctx context.Context, dir, loc string) (*UploadResult, error) {
	st, err := Open(loc)
	if err != nil {
		return nil, err
	}
	names, err := localFiles(dir)
	if err != nil {
		return nil, err
	}
	have := map[string]string{}
	if objs, err := st.Objects(); err == nil {
		for _, o := range objs {
			have[o.Key] = fmt.Sprintf("%d/%s", o.Size, strings.Trim(o.ETag, `"`))
		}
	} else {
		return nil, err
	}
	res := &UploadResult{}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		p := filepath.Join(dir, name)
		if tag, ok := have[name]; ok {
			size, sum, err := fileMD5(p)
			if err == nil && tag == fmt.Sprintf("%d/%s", size, sum) {
				res.Skipped = append(res.Skipped, name)
				continue
			}
		}
		if _, err := st.PutFile(ctx, name, p); err != nil {
			return res, err
		}
		fi, _ := os.Stat(p)
		if fi != nil {
			res.Bytes += fi.Size()
		}
		res.Uploaded = append(res.Uploaded, name)
	}
	return res, nil
}

// fileMD5 returns the size and MD5 (hex) of the file at p.
func fileMD5(p string) (int64, string, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := md5.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
