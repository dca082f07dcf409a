package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/objects"
	"github.com/kino-video/kino/transport/httpapi"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/s3"
	"github.com/kino-video/kino/transport/transcoder"
)

// Media backends (--media).
const (
	mediaDir  = "dir"  // <data>/media on the local disk
	mediaNATS = "nats" // the JetStream object store bucket KINO_MEDIA
	mediaS3   = "s3"   // a bucket of an S3-compatible service (--s3-*)
)

// mediaStore is the media store as kino serve and kino worker use it.
type mediaStore interface {
	httpapi.Media
	transcoder.Media
	Sweep(ctx context.Context, live func(id string) (bool, error)) ([]string, error)
	Fetch(ctx context.Context, id, ext, dst string) error
}

var (
	_ mediaStore = (*media.Dir)(nil)
	_ mediaStore = (*media.Bucket)(nil)
)

// mediaCacheFlag adds --media-cache-mb to kino serve.
func mediaCacheFlag(fs *pflag.FlagSet, p *int) {
	fs.IntVar(p, "media-cache-mb", envInt("KINO_MEDIA_CACHE_MB", 1024), "with --media nats or s3: MiB of local copies (under <data>/media/.cache) of the objects /cdn serves, so a segment read again is not fetched again; 0 keeps none (env KINO_MEDIA_CACHE_MB)")
}

// mediaFlag adds --media and the --s3-* flags that go with --media s3.
// None of them holds a secret: the S3 keys come from
// --s3-credentials-file or the AWS environment.
func mediaFlag(fs *pflag.FlagSet, p *string, c *s3.Config) {
	fs.StringVar(p, "media", env("KINO_MEDIA", mediaDir), `where media is kept: "dir" (<data>/media; every API node and worker must share it), "nats" (the JetStream object store, replicated like the streams) or "s3" (a bucket of an S3-compatible service, --s3-*); with nats and s3, <data>/media holds only uploads in flight, transcode scratch and the cache (env KINO_MEDIA)`)
	s3Flags(fs, c)
}

// s3Flags adds the --s3-* flags of a bucket.
func s3Flags(fs *pflag.FlagSet, c *s3.Config) {
	fs.StringVar(&c.Endpoint, "s3-endpoint", env("KINO_S3_ENDPOINT", ""), "S3 media store: the service's URL, e.g. https://s3.eu-west-1.amazonaws.com or http://127.0.0.1:9000 (env KINO_S3_ENDPOINT)")
	fs.StringVar(&c.Bucket, "s3-bucket", env("KINO_S3_BUCKET", ""), "S3 media store: the bucket, which must exist (env KINO_S3_BUCKET)")
	fs.StringVar(&c.Region, "s3-region", env("KINO_S3_REGION", ""), "S3 media store: the bucket's region; unset: asked of the service (env KINO_S3_REGION)")
	fs.BoolVar(&c.PathStyle, "s3-path-style", envBool("KINO_S3_PATH_STYLE"), "S3 media store: address the bucket as <endpoint>/<bucket> (MinIO, Garage, Ceph) instead of <bucket>.<endpoint> (env KINO_S3_PATH_STYLE)")
	fs.StringVar(&c.Prefix, "s3-prefix", env("KINO_S3_PREFIX", ""), "S3 media store: put before every object name, e.g. kino/, to share the bucket (env KINO_S3_PREFIX)")
	fs.StringVar(&c.CredentialsFile, "s3-credentials-file", env("KINO_S3_CREDENTIALS_FILE", ""), "S3 media store: an AWS shared credentials file holding the keys (profile AWS_PROFILE, else default); unset: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then ~/.aws/credentials, then the instance's IAM role (env KINO_S3_CREDENTIALS_FILE)")
}

// openMedia opens the media backend kind (with s3c for s3); data/media is
// its local directory (all of it with dir; with nats and s3 scratch only,
// and cacheMB MiB of copies of the objects /cdn serves).
func openMedia(ctx context.Context, kind string, s3c s3.Config, store *eventstore.Store, data string, cacheMB int) (mediaStore, error) {
	local := filepath.Join(data, "media")
	switch kind {
	case mediaDir, "":
		return media.OpenDir(local)
	case mediaNATS:
		obj, err := objects.Open(ctx, store)
		if err != nil {
			return nil, err
		}
		return media.OpenBucket(obj, local, int64(cacheMB)<<20)
	case mediaS3:
		if s3c.Endpoint == "" || s3c.Bucket == "" {
			return nil, fmt.Errorf("--media s3 needs --s3-endpoint and --s3-bucket")
		}
		obj, err := s3.Open(ctx, s3c)
		if err != nil {
			return nil, err
		}
		return media.OpenBucket(obj, local, int64(cacheMB)<<20)
	}
	return nil, fmt.Errorf("--media %q: want %q, %q or %q", kind, mediaDir, mediaNATS, mediaS3)
}
