package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
)

// maxSinglePut is the largest object sent in one PUT (S3's limit): one PUT
// is atomic (the object appears whole or not at all) and its ETag is the
// MD5 of its content on every S3-compatible store without SSE-KMS.
const maxSinglePut = 5 << 30

// PutFile uploads the local file at src as object name and verifies it: the
// store checks the Content-MD5 sent with the body, and the object's size
// and ETag are then compared with the file's. It returns the content's MD5
// in hex. A failure leaves no partial object (the PUT is one request).
func (s *Store) PutFile(ctx context.Context, name, src string) (string, error) {
	f, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if st.Size() > maxSinglePut {
		return "", fmt.Errorf("s3: put %s: %s is %d bytes, over the %d of one PUT", s.Join(name), src, st.Size(), int64(maxSinglePut))
	}
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("s3: put %s: read %s: %w", s.Join(name), src, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	return sum, s.put(ctx, name, io.NewSectionReader(f, 0, st.Size()), st.Size(), sum)
}

// PutBytes uploads b as object name, verified as PutFile does.
func (s *Store) PutBytes(ctx context.Context, name string, b []byte) error {
	h := md5.Sum(b)
	return s.put(ctx, name, bytes.NewReader(b), int64(len(b)), hex.EncodeToString(h[:]))
}

func (s *Store) put(ctx context.Context, name string, r io.Reader, size int64, sum string) error {
	_, err := s.cl.PutObject(ctx, s.bucket, s.Key(name), r, size, minio.PutObjectOptions{
		SendContentMd5:   true,
		DisableMultipart: true,
		ContentType:      "application/octet-stream",
	})
	if err != nil {
		return s.wrap("put", name, err)
	}
	return s.Verify(ctx, name, size, sum)
}

// Verify checks that object name exists with size bytes and, where its ETag
// is a plain MD5, that it is md5hex.
func (s *Store) Verify(ctx context.Context, name string, size int64, md5hex string) error {
	oi, err := s.cl.StatObject(ctx, s.bucket, s.Key(name), minio.StatObjectOptions{})
	if err != nil {
		return s.wrap("verify", name, err)
	}
	if oi.Size != size {
		return fmt.Errorf("s3: verify %s: %d bytes stored, %d sent", s.Join(name), oi.Size, size)
	}
	if tag := strings.Trim(oi.ETag, `"`); isMD5(tag) && !strings.EqualFold(tag, md5hex) {
		return fmt.Errorf("s3: verify %s: stored MD5 %s, sent %s", s.Join(name), tag, md5hex)
	}
	return nil
}

func isMD5(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
