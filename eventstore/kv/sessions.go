package kv

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// Buckets of the sessions. Neither is readable by the worker role.
const (
	SessionsBucket = natsconn.SessionsBucket // SHA-256 of a session id -> session
	KeyUsageBucket = natsconn.KeyUsageBucket // API key id -> when it was last used
)

// ErrNoSessionBuckets: a client that does not manage kino's streams found
// the sessions or usage bucket missing.
var ErrNoSessionBuckets = errors.New("the sessions buckets do not exist yet: start kino serve first")

// Sessions holds the login sessions (opaque values by key, expiring ttl
// after their last write) and when each API key was last used, so that
// any API node serves any session. What a session holds and when it ends
// is the user service's business.
type Sessions struct {
	store    *eventstore.Store
	sessions jetstream.KeyValue // nil: missing, for a client that may not make it
	usage    jetstream.KeyValue // nil: missing, for a client that may not make it
}

// OpenSessions opens the sessions and key-usage buckets; kino serve
// (Config.Manage) creates them, or updates the sessions bucket's TTL to
// ttl. Another client (the CLI) finding them missing gets Sessions that
// answer ErrNoSessionBuckets.
func OpenSessions(ctx context.Context, s *eventstore.Store, ttl time.Duration) (*Sessions, error) {
	c := s.NATS()
	b := &Sessions{store: s}
	err := c.UntilReady(ctx, func() (err error) {
		sessions := natsconn.SessionsBucketConfig(c.Replicas, ttl)
		if c.Manage {
			if b.sessions, err = c.OpenBucket(ctx, sessions, natsconn.CreateOrUpdate); err != nil {
				return err
			}
		} else if b.sessions, err = c.Bucket(ctx, false, sessions); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return err
		}
		b.usage, err = c.Bucket(ctx, c.Manage, natsconn.KeyUsageBucketConfig(c.Replicas))
		if !c.Manage && errors.Is(err, jetstream.ErrBucketNotFound) {
			err = nil // a CLI before any kino serve made them: users only
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Create stores a new session's value under key; it fails when the key
// exists.
func (b *Sessions) Create(ctx context.Context, key string, value []byte) error {
	if b.sessions == nil {
		return ErrNoSessionBuckets
	}
	_, err := b.sessions.Create(ctx, key, value)
	return err
}

// Get is the session under key and its revision; found is false when
// there is none (never made, ended or expired). It asks the bucket's
// leader (STREAM.MSG.GET), not any replica (the bucket's direct get): a
// replica may be behind the write that began or ended the session through
// another node, so a login there would be refused a moment after it
// succeeded, and a logout honoured late.
func (b *Sessions) Get(ctx context.Context, key string) (value []byte, revision uint64, found bool, err error) {
	if b.sessions == nil {
		return nil, 0, false, ErrNoSessionBuckets
	}
	value, revision, found, err = leaderGet(ctx, b.store, b.sessions, key)
	if err != nil {
		err = fmt.Errorf("read session: %w", err)
	}
	return value, revision, found, err
}

// Update replaces the session under key if it is still at revision (a
// logout in between stays a logout), which restarts its TTL.
func (b *Sessions) Update(ctx context.Context, key string, value []byte, revision uint64) error {
	if b.sessions == nil {
		return ErrNoSessionBuckets
	}
	_, err := b.sessions.Update(ctx, key, value, revision)
	return err
}

// Delete marks the session under key deleted.
func (b *Sessions) Delete(ctx context.Context, key string) error {
	if b.sessions == nil {
		return ErrNoSessionBuckets
	}
	return b.sessions.Delete(ctx, key)
}

// End removes the session under key and its history (logout); ending an
// unknown one is no error.
func (b *Sessions) End(ctx context.Context, key string) error {
	if b.sessions == nil {
		return ErrNoSessionBuckets
	}
	if err := b.sessions.Purge(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
	}
	return nil
}

// RecordsKeyUse reports whether the key-usage bucket exists (a CLI before
// any kino serve has none).
func (b *Sessions) RecordsKeyUse() bool { return b.usage != nil }

// PutKeyUse records that API key keyID was used at t.
func (b *Sessions) PutKeyUse(ctx context.Context, keyID string, t time.Time) error {
	if b.usage == nil {
		return nil
	}
	_, err := b.usage.Put(ctx, keyID, []byte(strconv.FormatInt(t.UnixMilli(), 10)))
	return err
}

// KeyUse is when API key keyID was last recorded used; found is false
// when never.
func (b *Sessions) KeyUse(ctx context.Context, keyID string) (t time.Time, found bool, err error) {
	if b.usage == nil {
		return time.Time{}, false, nil
	}
	e, err := b.usage.Get(ctx, keyID)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	ms, err := strconv.ParseInt(string(e.Value()), 10, 64)
	if err != nil {
		return time.Time{}, false, nil // not ours: as if never used
	}
	return time.UnixMilli(ms).UTC(), true, nil
}

// validKey is what a KV key may be (the jetstream package's rule): letters,
// digits and -/_=. , not starting or ending with a dot.
func validKey(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' {
		return false
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-/_=.", r)) {
			return false
		}
	}
	return true
}
