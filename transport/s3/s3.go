package s3

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/media"
)

// Config says where the bucket is and how to reach it. Nothing in it is
// secret: the keys come from CredentialsFile or the environment.
type Config struct {
	// Endpoint is the service's URL: https://s3.eu-west-1.amazonaws.com,
	// https://<account>.r2.cloudflarestorage.com, http://127.0.0.1:9000.
	Endpoint string
	Bucket   string
	// Region is the bucket's region ("" asks the service, once).
	Region string
	// PathStyle addresses the bucket as <endpoint>/<bucket> instead of
	// <bucket>.<endpoint> (MinIO, Garage, Ceph and most servers on one
	// host want it).
	PathStyle bool
	// Prefix is put before every object name (say "kino/"; a "/" is added
	// when it lacks one), so that one bucket can hold other things, or
	// several kinos. kino removes only objects under it whose names start
	// with a video id.
	Prefix string
	// CredentialsFile is an AWS shared credentials file (its profile from
	// AWS_PROFILE, else "default"). Empty: the usual AWS chain, the
	// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
	// AWS_SESSION_TOKEN), then ~/.aws/credentials, then the instance's
	// IAM role.
	CredentialsFile string
	// Transport carries the requests (nil: the default).
	Transport http.RoundTripper
	// MaxRetries bounds the tries of a request the service answers with a
	// 5xx, a throttling code or a dropped connection (0: 10), backing
	// off exponentially with jitter between them.
	MaxRetries int
}

// Store is a bucket of an S3-compatible service as a media.ObjectStore.
type Store struct {
	client *minio.Client
	core   minio.Core
	bucket string
	prefix string
	// threads is how many parts of a large object go up at once.
	threads uint
}

var (
	_ media.ObjectStore       = (*Store)(nil)
	_ media.ObjectPresigner   = (*Store)(nil)
	_ media.IncompleteAborter = (*Store)(nil)
)

// digestKey is the user metadata that keeps an object's SHA-256, as
// media.ObjectInfo.Digest spells it.
const digestKey = "Kino-Digest"

// Open connects to the bucket and checks that it exists and that the
// credentials may read it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
		shown := "that cannot be read"
		if err == nil {
			shown = strconv.Quote(u.Redacted())
		}
		return nil, fmt.Errorf("s3: endpoint %s: want a URL such as https://s3.eu-west-1.amazonaws.com, with no path, query or credentials", shown)
	}
	if cfg.Bucket == "" {
		return nil, errors.New("s3: a bucket name is required")
	}
	if strings.HasPrefix(cfg.Prefix, "/") || strings.Contains(cfg.Prefix, "..") {
		return nil, fmt.Errorf("s3: prefix %q: want a relative prefix such as kino/", cfg.Prefix)
	}
	// A prefix is a folder: "kino" must not take in "kino2/...".
	if cfg.Prefix != "" && !strings.HasSuffix(cfg.Prefix, "/") {
		cfg.Prefix += "/"
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
		&credentials.IAM{Client: &http.Client{Transport: http.DefaultTransport}},
	})
	if cfg.CredentialsFile != "" {
		creds = credentials.NewFileAWSCredentials(cfg.CredentialsFile, "")
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	retries := cfg.MaxRetries
	if retries <= 0 {
		retries = minio.MaxRetry
	}
	client, err := minio.New(u.Host, &minio.Options{Creds: creds, Secure: u.Scheme == "https", Region: cfg.Region,
		BucketLookup: lookup, Transport: cfg.Transport, MaxRetries: retries})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	s := &Store{client: client, core: minio.Core{Client: client}, bucket: cfg.Bucket, prefix: cfg.Prefix, threads: 4}
	if err := s.Ready(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) key(name string) string { return s.prefix + name }

// Put stores r as name. A reader that can seek (a file, bytes) is read
// twice: once for its SHA-256 and size, kept with the object, then to
// send it, in parts of 16 MiB or more, 4 at once, when it is large. A
// failed multipart upload is aborted; one a crash left behind is found by
// AbortIncomplete.
func (s *Store) Put(ctx context.Context, name string, r io.Reader) (media.ObjectInfo, error) {
	size, sum := int64(-1), ""
	if rs, ok := r.(io.ReadSeeker); ok {
		h := sha256.New()
		n, err := io.Copy(h, rs)
		if err == nil {
			_, err = rs.Seek(0, io.SeekStart)
		}
		if err != nil {
			return media.ObjectInfo{}, fmt.Errorf("s3: put %s: %w", name, err)
		}
		size, sum = n, "SHA-256="+base64.URLEncoding.EncodeToString(h.Sum(nil))
	}
	opts := minio.PutObjectOptions{ContentType: contentType(name), NumThreads: s.threads}
	if sum != "" {
		opts.UserMetadata = map[string]string{digestKey: sum}
	}
	info, err := s.client.PutObject(ctx, s.bucket, s.key(name), r, size, opts)
	if err != nil {
		return media.ObjectInfo{}, s.fail("put", name, err)
	}
	mod := info.LastModified
	if mod.IsZero() {
		mod = time.Now()
	}
	return media.ObjectInfo{Name: name, Size: info.Size, ModTime: mod, Digest: sum}, nil
}

// Get reads name from offset, in one request whose answer also describes
// the object.
func (s *Store) Get(ctx context.Context, name string, offset int64) (io.ReadCloser, media.ObjectInfo, error) {
	var opts minio.GetObjectOptions
	if offset > 0 {
		if err := opts.SetRange(offset, 0); err != nil {
			return nil, media.ObjectInfo{}, err
		}
	}
	rc, oi, h, err := s.core.GetObject(ctx, s.bucket, s.key(name), opts)
	if err != nil {
		if offset > 0 && minio.ToErrorResponse(err).Code == "InvalidRange" {
			// At or past the end: nothing to read.
			info, serr := s.Stat(ctx, name)
			if serr != nil {
				return nil, media.ObjectInfo{}, serr
			}
			return io.NopCloser(strings.NewReader("")), info, nil
		}
		return nil, media.ObjectInfo{}, s.fail("get", name, err)
	}
	info := describe(name, oi, h)
	if offset > 0 {
		total, ok := rangeTotal(h.Get("Content-Range"))
		if !ok {
			rc.Close()
			return nil, media.ObjectInfo{}, fmt.Errorf("s3: get %s: a ranged answer without a Content-Range", name)
		}
		info.Size = total
	}
	return rc, info, nil
}

// rangeTotal reads the complete length of "bytes a-b/total".
func rangeTotal(cr string) (int64, bool) {
	_, total, ok := strings.Cut(cr, "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil && n >= 0
}

func describe(name string, oi minio.ObjectInfo, h http.Header) media.ObjectInfo {
	d := h.Get("X-Amz-Meta-" + digestKey)
	if !strings.HasPrefix(d, "SHA-256=") {
		d = ""
	}
	return media.ObjectInfo{Name: name, Size: oi.Size, ModTime: oi.LastModified, Digest: d}
}

// Stat describes name.
func (s *Store) Stat(ctx context.Context, name string) (media.ObjectInfo, error) {
	oi, err := s.client.StatObject(ctx, s.bucket, s.key(name), minio.StatObjectOptions{})
	if err != nil {
		return media.ObjectInfo{}, s.fail("stat", name, err)
	}
	return describe(name, oi, oi.Metadata), nil
}

// List describes every object under the prefix (without digests).
func (s *Store) List(ctx context.Context) ([]media.ObjectInfo, error) {
	var all []media.ObjectInfo
	for oi := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true}) {
		if oi.Err != nil {
			return nil, fmt.Errorf("s3: list: %w", oi.Err)
		}
		all = append(all, media.ObjectInfo{Name: strings.TrimPrefix(oi.Key, s.prefix), Size: oi.Size, ModTime: oi.LastModified})
	}
	return all, nil
}

// Delete removes name; a missing object is fine.
func (s *Store) Delete(ctx context.Context, name string) error {
	err := s.client.RemoveObject(ctx, s.bucket, s.key(name), minio.RemoveObjectOptions{})
	if err != nil && !missing(err) {
		return s.fail("delete", name, err)
	}
	return nil
}

// Ready checks that the bucket answers and exists.
func (s *Store) Ready(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("s3: bucket %s: %w", s.bucket, err)
	}
	if !ok {
		return fmt.Errorf("s3: bucket %s does not exist: create it first", s.bucket)
	}
	return nil
}

// Presign is a URL that lets its holder GET name for ttl, without
// credentials, answered with contentType and cacheControl (the
// response-content-type and response-cache-control overrides).
func (s *Store) Presign(ctx context.Context, name string, ttl time.Duration, contentType, cacheControl string) (*url.URL, error) {
	q := url.Values{}
	if contentType != "" {
		q.Set("response-content-type", contentType)
	}
	if cacheControl != "" {
		q.Set("response-cache-control", cacheControl)
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, s.key(name), ttl, q)
	if err != nil {
		return nil, fmt.Errorf("s3: presign %s: %w", name, err)
	}
	return u, nil
}

// AbortIncomplete aborts kino's multipart uploads (of names under the
// prefix that start with a video id) begun before olderThan ago: parts of objects whose upload died with its
// process, which the service keeps (and bills) until they are aborted.
// A bucket lifecycle rule (AbortIncompleteMultipartUpload) does the same
// on the service's side.
func (s *Store) AbortIncomplete(ctx context.Context, olderThan time.Duration) (aborted []string, err error) {
	for u := range s.client.ListIncompleteUploads(ctx, s.bucket, s.prefix, true) {
		if u.Err != nil {
			return aborted, fmt.Errorf("s3: incomplete uploads: %w", u.Err)
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(u.Key, s.prefix), "/")
		if time.Since(u.Initiated) < olderThan || !domain.ValidID(id) {
			continue // too young, or not kino's (a shared bucket)
		}
		if err := s.core.AbortMultipartUpload(ctx, s.bucket, u.Key, u.UploadID); err != nil && !missing(err) {
			return aborted, fmt.Errorf("s3: abort the upload of %s: %w", u.Key, err)
		}
		aborted = append(aborted, strings.TrimPrefix(u.Key, s.prefix))
	}
	return aborted, nil
}

func missing(err error) bool {
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchKey", "NotFound", "NoSuchUpload":
		return true
	}
	return false
}

// fail wraps a service's error; a missing object matches fs.ErrNotExist.
func (s *Store) fail(op, name string, err error) error {
	if missing(err) {
		return fmt.Errorf("s3: %s %s: %w", op, name, fs.ErrNotExist)
	}
	return fmt.Errorf("s3: %s %s: %w", op, name, err)
}

// contentType is what the service answers a presigned GET of name with.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".m3u8":
		return "application/vnd.apple.mpegurl"
	case ".ts":
		return "video/mp2t"
	case ".m4s":
		return "video/iso.segment"
	case ".mp4":
		return "video/mp4"
	case ".jpg":
		return "image/jpeg"
	case ".vtt":
		return "text/vtt; charset=utf-8"
	case ".json":
		return "application/json"
	}
	return "application/octet-stream"
}
