package natsconn

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Buckets of the user service (sessions and API key use), and the keys of
// kino's playback tokens. None is readable by the worker role.
const (
	SessionsBucket     = "KINO_SESSIONS"      // SHA-256 of a session id -> session
	KeyUsageBucket     = "KINO_KEY_USAGE"     // API key id -> when it was last used
	PlaybackKeysBucket = "KINO_PLAYBACK_KEYS" // "ring" -> the playback-token keys, sealed
)

// DefaultSessionTTL is the sessions bucket's TTL until kino serve sets
// its own.
const DefaultSessionTTL = 24 * time.Hour

// SessionsBucketConfig is the sessions bucket: entries expire ttl after
// their last write.
func SessionsBucketConfig(replicas int, ttl time.Duration) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      SessionsBucket,
		Description: "kino: dashboard and admin sessions, by the SHA-256 of their id",
		TTL:         ttl,
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}
}

// KeyUsageBucketConfig is the bucket of the API keys' last use.
func KeyUsageBucketConfig(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      KeyUsageBucket,
		Description: "kino: when each API key was last used (to the minute)",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}
}

// RateBucket holds the API nodes' shares of each rate limit.
const RateBucket = "KINO_RATE"

// rateTTL drops the entries of keys no node has touched for a while.
const rateTTL = 10 * time.Minute

// RateBucketConfig is the rate ledger's bucket.
func RateBucketConfig(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      RateBucket,
		Description: "kino: the API nodes' shares of each rate limit",
		TTL:         rateTTL,
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}
}

// DirectUploadsBucket holds the direct upload URLs.
const DirectUploadsBucket = "KINO_DIRECT_UPLOADS"

// DirectUploadTTL is how long a record stays in the bucket: longer than
// the longest-lived direct upload URL (the API bounds those to 24 h).
const DirectUploadTTL = 25 * time.Hour

// DirectUploadsBucketConfig is the direct uploads' bucket.
func DirectUploadsBucketConfig(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      DirectUploadsBucket,
		Description: "kino: direct upload URLs, by the hash of their token",
		TTL:         DirectUploadTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}
}

// ProgressBucket holds the progress of running jobs.
const ProgressBucket = "KINO_PROGRESS"

// MaxProgressValue bounds a progress value read from the bucket: a
// report is some 40 bytes, and whoever may write the bucket (a worker's
// credentials) must not make every API node hold megabytes per key.
const MaxProgressValue = 256

// ProgressBucket opens (kino serve: creates) the progress bucket.
func (c *Conn) ProgressBucket(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := c.Bucket(ctx, c.Manage, jetstream.KeyValueConfig{
		Bucket:      ProgressBucket,
		Description: "kino: progress of running transcodes",
		TTL:         time.Hour,
		// Only buckets made by this version refuse bigger values; readers
		// ignore them either way (parseProgress).
		MaxValueSize: MaxProgressValue,
		Storage:      VolatileStorage(c.Replicas),
		Replicas:     c.Replicas,
	})
	if err != nil && !c.Manage {
		return nil, fmt.Errorf("progress bucket: %w (start kino serve first)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("progress bucket: %w", err)
	}
	return kv, nil
}

// VolatileStorage is the storage of buckets whose content may be lost
// (progress, send locks): memory on one server; files when replicated,
// because a replicated memory stream loses its copy on every restart of a
// node, and two of three nodes restarted after the third died could not
// elect a leader for it again (kino serve then refused to start).
func VolatileStorage(replicas int) jetstream.StorageType {
	if replicas > 1 {
		return jetstream.FileStorage
	}
	return jetstream.MemoryStorage
}
