package natsconn

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Buckets of the user service (sessions and API key use). Neither is
// readable by the worker role.
const (
	SessionsBucket = "KINO_SESSIONS"  // SHA-256 of a session id -> session
	KeyUsageBucket = "KINO_KEY_USAGE" // API key id -> when it was last used
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
