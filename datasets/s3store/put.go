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

func (s *Store) put(ctx context.Context, name string, r io.ReadSeeker, size int64, sum string) error {
	err := s.retry(ctx, func() error {
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return err
		}
		_, err := s.cl.PutObject(ctx, s.bucket, s.Key(name), r, size, minio.PutObjectOptions{
			SendContentMd5:   true,
			DisableMultipart: true,
			ContentType:      "application/octet-stream",
		})
		if err != nil {
			return s.putError(ctx, name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.Verify(ctx, name, size, sum)
}

// DamagedError is an upload the store refused because the body it received
// does not match what was signed or its Content-MD5: the bytes were
// changed on the way (a faulty proxy, NIC or memory), while a request
// without a body, signed with the same credentials, is accepted. It is
// transient: the upload is tried again.
type DamagedError struct {
	URL  string // s3://bucket/key
	Code string // the store's error code (BadDigest, SignatureDoesNotMatch, …)
	Msg  string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("s3: put %s: the store received a body that differs from the one sent (%s: %s): damaged in flight; the credentials are good (a request without a body was accepted)", e.URL, e.Code, e.Msg)
}

// bodyCodes are the refusals of a PUT that a body damaged in flight
// causes: the payload's signature (its SHA-256, or a streaming chunk's
// signature) or its Content-MD5 no longer match.
var bodyCodes = map[string]bool{"BadDigest": true, "XAmzContentSHA256Mismatch": true, "SignatureDoesNotMatch": true,
	"IncompleteBody": true, "InvalidDigest": true}

// putError names a failed PUT: a refusal that a damaged body explains, when
// the same credentials are accepted for a request without a body, is a
// *DamagedError, not a credentials problem.
func (s *Store) putError(ctx context.Context, name string, err error) error {
	er := minio.ToErrorResponse(err)
	if bodyCodes[er.Code] {
		if _, perr := s.cl.BucketExists(ctx, s.bucket); perr == nil {
			return &DamagedError{URL: s.Join(name), Code: er.Code, Msg: er.Message}
		}
	}
	return s.wrap("put", name, err)
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
