package kv

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// PlaybackKeysBucket holds kino's playback-token keys (one entry, the
// ring). Only kino serve and the admin CLI may read or write it: a worker
// may not, so a worker's credentials cannot mint playback tokens.
const PlaybackKeysBucket = natsconn.PlaybackKeysBucket

// ringKey is the one entry of the bucket.
const ringKey = "ring"

// ErrNoPlaybackKeys: a client that does not manage kino's streams found
// the bucket missing (start kino serve first).
var ErrNoPlaybackKeys = errors.New("the playback keys bucket does not exist yet: start kino serve first")

// PlaybackKeys stores the ring of playback-token keys as one value,
// replaced by compare-and-set. What the ring holds (sealed keys, which
// one signs) is package playback's business.
type PlaybackKeys struct {
	store *eventstore.Store
	kv    jetstream.KeyValue // nil: missing, for a client that may not make it
}

// OpenPlaybackKeys opens the bucket; kino serve (Config.Manage) creates it.
func OpenPlaybackKeys(ctx context.Context, s *eventstore.Store) (*PlaybackKeys, error) {
	c := s.NATS()
	b := &PlaybackKeys{store: s}
	err := c.UntilReady(ctx, func() (err error) {
		b.kv, err = c.Bucket(ctx, c.Manage, jetstream.KeyValueConfig{
			Bucket:      PlaybackKeysBucket,
			Description: "kino: the keys of kino's playback tokens, sealed with the secret key",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    c.Replicas,
		})
		if !c.Manage && errors.Is(err, jetstream.ErrBucketNotFound) {
			b.kv, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Get is the ring and its revision (0 and found false when none is
// stored yet), asked of the bucket's leader: a key revoked through another
// node is never read back from a replica that has not seen it.
func (b *PlaybackKeys) Get(ctx context.Context) (value []byte, revision uint64, found bool, err error) {
	if b.kv == nil {
		return nil, 0, false, ErrNoPlaybackKeys
	}
	return leaderGet(ctx, b.store, b.kv, ringKey)
}

// Put stores the ring over the one read at revision (0: none stored); it
// fails with a domain Conflict when another write came first (read it
// again and decide again).
func (b *PlaybackKeys) Put(ctx context.Context, value []byte, revision uint64) error {
	if b.kv == nil {
		return ErrNoPlaybackKeys
	}
	var err error
	if revision == 0 {
		_, err = b.kv.Create(ctx, ringKey, value)
	} else {
		_, err = b.kv.Update(ctx, ringKey, value, revision)
	}
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return domain.Wrap("store playback keys", domain.Conflict, err, "the playback key ring changed meanwhile")
	}
	return err
}
