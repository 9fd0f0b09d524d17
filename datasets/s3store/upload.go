package s3store

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
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
	objs, err := st.Objects()
	if err != nil {
		return nil, err
	}
	have := objectMap(objs)
	res := &UploadResult{}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		p := filepath.Join(dir, name)
		if o, ok := have[name]; ok && sameContent(p, o) {
			res.Skipped = append(res.Skipped, name)
			continue
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

// objectMap indexes a listing by name.
func objectMap(objs []minio.ObjectInfo) map[string]minio.ObjectInfo {
	m := make(map[string]minio.ObjectInfo, len(objs))
	for _, o := range objs {
		m[o.Key] = o
	}
	return m
}

// sameContent reports whether the local file at p has the size and content
// of object o, by its ETag: the MD5 of the content for an object sent in
// one PUT, and for one sent in parts (by another tool: "MD5-N", the MD5 of
// the parts' MD5s) the same computed over the file cut in N parts of the
// sizes uploaders use. An ETag that is neither (SSE-KMS, a store of its
// own) matches nothing: the file is sent again.
func sameContent(p string, o minio.ObjectInfo) bool {
	fi, err := os.Stat(p)
	if err != nil || fi.Size() != o.Size {
		return false
	}
	tag := strings.Trim(o.ETag, `"`)
	if isMD5(tag) {
		_, sum, err := fileMD5(p)
		return err == nil && strings.EqualFold(sum, tag)
	}
	hexSum, nstr, ok := strings.Cut(tag, "-")
	parts, err := strconv.Atoi(nstr)
	if !ok || err != nil || parts < 1 || !isMD5(hexSum) {
		return false
	}
	for _, size := range partSizes(o.Size, parts) {
		if sum, err := multipartETag(p, size); err == nil && strings.EqualFold(sum, tag) {
			return true
		}
	}
	return false
}

// partSizes returns the part sizes that cut size bytes into exactly n
// parts among those uploaders use: whole MiB from 5 (S3's least; rclone),
// 8 (AWS CLI), 15 (s3cmd), 16 (minio-go, AWS SDKs' managers) up to 5 GiB,
// the smallest that suffices rounded up to a MiB first. At most six, each
// costing a read of the file.
func partSizes(size int64, n int) []int64 {
	const mib = 1 << 20
	fits := func(p int64) bool { return p > 0 && (size+p-1)/p == int64(n) }
	var out []int64
	add := func(p int64) {
		if len(out) < 6 && fits(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if n == 1 {
		add(size)
	}
	least := (size + int64(n) - 1) / int64(n)
	add((least + mib - 1) / mib * mib)
	for _, m := range []int64{5, 8, 15, 16, 10, 32, 64, 100, 128, 256, 512, 1024, 5120} {
		add(m * mib)
	}
	return out
}

// multipartETag is the ETag S3 gives the file at p uploaded in parts of
// partSize bytes: the MD5 of the parts' MD5s, then "-" and their count.
func multipartETag(p string, partSize int64) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	all := md5.New()
	n := 0
	for {
		h := md5.New()
		m, err := io.CopyN(h, f, partSize)
		if m > 0 {
			all.Write(h.Sum(nil))
			n++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s-%d", hex.EncodeToString(all.Sum(nil)), n), nil
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
