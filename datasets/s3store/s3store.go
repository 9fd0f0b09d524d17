// Package s3store keeps datasets and exports on S3-compatible object storage
// (AWS S3, MinIO, Cloudflare R2, GCS's S3 interface) through minio-go.
//
// Importing it registers the "s3" scheme with package datasets, so that
// datasets.Open("s3://bucket/prefix") and every reader of datasets work on
// a prefix of a bucket as on a directory: the manifest and indexes are read
// whole, segments through ranged GETs guided by the index, with a bounded
// read-ahead and an optional local cache (Config).
//
// The endpoint is Config.Endpoint, else AWS_ENDPOINT_URL_S3, else
// AWS_ENDPOINT_URL, else AWS S3. Credentials come from the usual chain:
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), the
// shared credentials file (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE), then
// the EC2/ECS instance role unless AWS_EC2_METADATA_DISABLED=true; the
// region is AWS_REGION or AWS_DEFAULT_REGION (else it is looked up). A
// custom endpoint that is an IP address or not under amazonaws.com is
// addressed path-style.
//
// No request waits forever: one that makes no progress for Config.Timeout
// fails with a *TimeoutError and every request is tried a bounded number
// of times (Config.Attempts); a body that stalls, is cut short or (an
// upload) arrives damaged (*DamagedError) is tried again. Errors name the
// s3:// URL of the object.
package s3store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/tapedeck/tapedeck/datasets"
)

// Config says how to reach the object store and how to read from it.
type Config struct {
	// Endpoint is the S3 API's URL (http://127.0.0.1:9000, https://…);
	// "" takes AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then AWS S3.
	Endpoint string
	// CacheDir, when set, keeps every byte range fetched from a segment
	// there (keyed by bucket, key, ETag and range), so a second read of the
	// same blocks costs no request.
	CacheDir string
	// ReadAhead bounds the bytes fetched ahead of a reader (default 32 MiB);
	// ChunkSize is the largest ranged GET (default 4 MiB).
	ReadAhead, ChunkSize int64
	// Timeout is the longest a request may go without progress: to
	// connect, to get an answer, between two reads of a body, sent or
	// received (default 10 s). A request that times out fails with a
	// *TimeoutError naming it and is retried: Attempts bounds the tries of
	// one request, and of a body that stalls, is cut short or arrives
	// damaged (default 2), so a server that never answers costs about
	// Attempts×Timeout per command.
	Timeout  time.Duration
	Attempts int
}

const (
	defaultReadAhead = 32 << 20
	defaultChunk     = 4 << 20
	defaultTimeout   = 10 * time.Second
	defaultAttempts  = 2
)

var (
	cfgMu   sync.Mutex
	cfg     Config
	clients = map[string]*minio.Client{}
)

func init() {
	datasets.RegisterScheme("s3", func(loc string) (datasets.Store, error) { return Open(loc) })
}

// Configure sets how every later Open reaches and reads the store.
func Configure(c Config) {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	cfg = c
}

func config() Config {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	c := cfg
	if c.ReadAhead <= 0 {
		c.ReadAhead = defaultReadAhead
	}
	if c.ChunkSize <= 0 {
		c.ChunkSize = defaultChunk
	}
	if c.ChunkSize > c.ReadAhead {
		c.ChunkSize = c.ReadAhead
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultTimeout
	}
	if c.Attempts <= 0 {
		c.Attempts = defaultAttempts
	}
	return c
}

// endpoint returns the configured endpoint URL.
func endpoint(c Config) string {
	for _, e := range []string{c.Endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL")} {
		if e != "" {
			return e
		}
	}
	return "https://s3.amazonaws.com"
}

// client returns the client of the configured endpoint, made once; it
// tries a request c.Attempts times.
func client(c Config) (*minio.Client, error) {
	ep := endpoint(c)
	attempts := c.Attempts
	// One client (and connection pool) per endpoint and identity: the
	// credential chain caches what it found.
	id := ep + "\x00" + os.Getenv("AWS_ACCESS_KEY_ID") + "\x00" + os.Getenv("AWS_SECRET_ACCESS_KEY") + "\x00" + os.Getenv("AWS_SESSION_TOKEN") + "\x00" + os.Getenv("AWS_PROFILE") + "\x00" + os.Getenv("AWS_SHARED_CREDENTIALS_FILE") +
		"\x00" + os.Getenv("AWS_REGION") + os.Getenv("AWS_DEFAULT_REGION") + fmt.Sprintf("\x00%d\x00%v", attempts, c.Timeout)
	cfgMu.Lock()
	defer cfgMu.Unlock()
	if cl := clients[id]; cl != nil {
		return cl, nil
	}
	raw := ep
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("s3: endpoint %q: want http(s)://host[:port]", ep)
	}
	providers := []credentials.Provider{&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}}
	if !strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		providers = append(providers, &credentials.IAM{})
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	tr, err := minio.DefaultTransport(u.Scheme == "https")
	if err != nil {
		return nil, fmt.Errorf("s3: endpoint %s: %w", ep, err)
	}
	// The watchdog bounds every wait, the connection's too.
	tr.ResponseHeaderTimeout = 0
	tr.DialContext = (&net.Dialer{Timeout: c.Timeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = c.Timeout
	cl, err := minio.New(u.Host, &minio.Options{
		Creds:      credentials.NewChainCredentials(providers),
		Secure:     u.Scheme == "https",
		Region:     region,
		MaxRetries: attempts,
		Transport:  &watchdog{base: tr, timeout: c.Timeout},
	})
	if err != nil {
		return nil, fmt.Errorf("s3: endpoint %s: %w", ep, err)
	}
	clients[id] = cl
	return cl, nil
}

// Store is a prefix of a bucket holding one dataset (or, for Catalog and
// exports, a tree of them). It implements datasets.Store and
// datasets.Walker.
type Store struct {
	cl      *minio.Client
	cfg     Config
	bucket  string
	prefix  string // without a trailing slash; "" for the bucket's root
	fetched atomic.Int64
}

// ParseURL splits s3://bucket/prefix into its bucket and prefix (no
// leading or trailing slash).
func ParseURL(loc string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(loc, "s3://")
	if !ok {
		return "", "", fmt.Errorf("s3: %q is not an s3://bucket/prefix URL", loc)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("s3: %q names no bucket", loc)
	}
	if strings.Contains(prefix, "//") {
		return "", "", fmt.Errorf("s3: %q has an empty path element", loc)
	}
	return bucket, prefix, nil
}

// Open returns the Store of s3://bucket/prefix with the configuration set
// by Configure. It makes no request.
func Open(loc string) (*Store, error) { return open(loc, 0) }

func open(loc string, attempts int) (*Store, error) {
	bucket, prefix, err := ParseURL(loc)
	if err != nil {
		return nil, err
	}
	c := config()
	if attempts > 0 {
		c.Attempts = attempts // an uploader retries itself, with backoff
	}
	cl, err := client(c)
	if err != nil {
		return nil, err
	}
	return &Store{cl: cl, cfg: c, bucket: bucket, prefix: prefix}, nil
}

// Location returns s3://bucket/prefix.
func (s *Store) Location() string {
	if s.prefix == "" {
		return "s3://" + s.bucket
	}
	return "s3://" + s.bucket + "/" + s.prefix
}

// Join returns the URL of the object name under the prefix.
func (s *Store) Join(name string) string { return s.Location() + "/" + name }

// Key returns the object key of name under the prefix.
func (s *Store) Key(name string) string {
	if s.prefix == "" {
		return name
	}
	return s.prefix + "/" + name
}

// Sub returns the Store of the prefix name under s.
func (s *Store) Sub(name string) *Store {
	return &Store{cl: s.cl, cfg: s.cfg, bucket: s.bucket, prefix: strings.Trim(s.Key(name), "/")}
}

// Fetched returns the bytes fetched from the store so far (GET bodies).
func (s *Store) Fetched() int64 { return s.fetched.Load() }

// NoBucketError is a request to a bucket that does not exist. It is not an
// fs.ErrNotExist: a missing bucket is a wrong URL or endpoint, not a
// missing dataset.
type NoBucketError struct{ Bucket string }

func (e *NoBucketError) Error() string {
	return fmt.Sprintf("bucket %q does not exist (check the URL and the endpoint)", e.Bucket)
}

// wrap gives err the object's URL and, for a missing object,
// fs.ErrNotExist; a missing bucket is a *NoBucketError; access errors say
// so plainly.
func (s *Store) wrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	er := minio.ToErrorResponse(err)
	switch er.Code {
	case "NoSuchKey", "NotFound":
		return &fs.PathError{Op: op, Path: s.Join(name), Err: fs.ErrNotExist}
	case "NoSuchBucket":
		return fmt.Errorf("s3: %s %s: %w", op, s.Join(name), &NoBucketError{Bucket: s.bucket})
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken":
		return fmt.Errorf("s3: %s %s: access refused (%s: %s); check the credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE, …)", op, s.Join(name), er.Code, er.Message)
	}
	if er.StatusCode == 404 {
		return &fs.PathError{Op: op, Path: s.Join(name), Err: fs.ErrNotExist}
	}
	if er.Code != "" {
		return fmt.Errorf("s3: %s %s: HTTP %d %s: %w", op, s.Join(name), er.StatusCode, er.Code, err)
	}
	return fmt.Errorf("s3: %s %s: %w", op, s.Join(name), err)
}

// ReadFile returns the whole object name. A body that stalls or is cut
// short is read again (Config.Attempts tries in all).
func (s *Store) ReadFile(name string) ([]byte, error) {
	var b []byte
	err := s.retry(context.Background(), func() (err error) {
		b, err = s.readFile(name)
		return err
	})
	return b, err
}

func (s *Store) readFile(name string) ([]byte, error) {
	ctx := context.Background()
	obj, err := s.cl.GetObject(ctx, s.bucket, s.Key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("read", name, err)
	}
	defer obj.Close()
	st, err := obj.Stat()
	if err != nil {
		return nil, s.wrap("read", name, err)
	}
	b := make([]byte, st.Size)
	n, err := readFull(obj, b)
	s.fetched.Add(int64(n))
	if err != nil {
		if errors.Is(err, errShort) || errors.Is(err, errEOF) {
			return nil, &cutError{msg: fmt.Sprintf("s3: read %s: the response ended after %d of %d bytes", s.Join(name), n, st.Size)}
		}
		return nil, s.wrap("read", name, fmt.Errorf("%d of %d bytes: %w", n, st.Size, err))
	}
	return b, nil
}

// List returns the objects directly under the prefix, sorted by name.
func (s *Store) List() ([]datasets.FileInfo, error) {
	pre := s.Key("")
	var out []datasets.FileInfo
	for oi := range s.cl.ListObjectsIter(context.Background(), s.bucket, minio.ListObjectsOptions{Prefix: pre}) {
		if oi.Err != nil {
			return nil, s.wrap("list", "", oi.Err)
		}
		name := strings.TrimPrefix(oi.Key, pre)
		if name == "" || strings.Contains(name, "/") {
			continue // a common prefix (sub-directory)
		}
		out = append(out, datasets.FileInfo{Name: name, Size: oi.Size, Regular: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Objects returns every object under the prefix (recursively): its name
// relative to the prefix, size and ETag.
func (s *Store) Objects() ([]minio.ObjectInfo, error) {
	pre := s.Key("")
	var out []minio.ObjectInfo
	for oi := range s.cl.ListObjectsIter(context.Background(), s.bucket, minio.ListObjectsOptions{Prefix: pre, Recursive: true}) {
		if oi.Err != nil {
			return nil, s.wrap("list", "", oi.Err)
		}
		oi.Key = strings.TrimPrefix(oi.Key, pre)
		out = append(out, oi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Datasets returns the location of every dataset under the prefix (the
// prefix itself included): each prefix holding a manifest, without those
// inside another dataset.
func (s *Store) Datasets() ([]string, error) {
	objs, err := s.Objects()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, o := range objs {
		if path.Base(o.Key) != datasets.ManifestName {
			continue
		}
		dirs = append(dirs, strings.TrimSuffix(path.Dir(o.Key), "."))
	}
	sort.Strings(dirs)
	var out []string
	var last string
	for i, d := range dirs {
		if i > 0 && (last == "" || strings.HasPrefix(d, last+"/")) {
			continue // inside a dataset already listed
		}
		last = d
		if d == "" {
			out = append(out, s.Location())
		} else {
			out = append(out, s.Join(d))
		}
	}
	return out, nil
}

// Check makes sure the bucket exists and answers with these credentials:
// it fails with a *NoBucketError, or the refusal.
func (s *Store) Check(ctx context.Context) error {
	ok, err := s.cl.BucketExists(ctx, s.bucket)
	if err != nil {
		return s.wrap("check", "", err)
	}
	if !ok {
		return fmt.Errorf("s3: %s: %w", s.Location(), &NoBucketError{Bucket: s.bucket})
	}
	return nil
}

// Stat returns the size and ETag of object name.
func (s *Store) Stat(name string) (size int64, etag string, err error) {
	oi, err := s.cl.StatObject(context.Background(), s.bucket, s.Key(name), minio.StatObjectOptions{})
	if err != nil {
		return 0, "", s.wrap("stat", name, err)
	}
	return oi.Size, oi.ETag, nil
}

// Remove deletes object name.
func (s *Store) Remove(ctx context.Context, name string) error {
	return s.wrap("remove", name, s.cl.RemoveObject(ctx, s.bucket, s.Key(name), minio.RemoveObjectOptions{}))
}

// Open opens object name for reading.
func (s *Store) Open(name string) (datasets.File, error) {
	size, etag, err := s.Stat(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &file{s: s, name: name, key: s.Key(name), size: size, etag: etag, ctx: ctx, cancel: cancel}, nil
}

// readFull reads len(b) bytes of r, io.ErrUnexpectedEOF if r ends before.
func readFull(r interface{ Read([]byte) (int, error) }, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			if errors.Is(err, errEOF) && n == len(b) {
				return n, nil
			}
			if errors.Is(err, errEOF) {
				return n, errShort
			}
			return n, err
		}
	}
	return n, nil
}
