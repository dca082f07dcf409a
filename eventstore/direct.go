package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
)

// DirectUploadsBucket is the KV bucket of direct upload URLs (POST
// /v1/uploads): one record per URL, under the hash of its token. A URL is
// not an event: it lives an hour or so, means nothing once used or
// expired, and must be redeemable on any API node at once, so it lives in
// a replicated bucket beside the stream, removed by the bucket's TTL.
const DirectUploadsBucket = "KINO_DIRECT_UPLOADS"

// DirectUploadTTL is how long a record stays in the bucket: longer than
// the longest-lived direct upload URL (the API bounds those to 24 h).
const DirectUploadTTL = 25 * time.Hour

// DirectUploads stores direct upload records (opaque bytes, JSON in
// practice) by key.
type DirectUploads struct {
	kv jetstream.KeyValue
}

// OpenDirectUploads creates (kino serve) or opens the bucket.
func (s *Store) OpenDirectUploads(ctx context.Context) (*DirectUploads, error) {
	// Retried while a forming cluster elects the bucket's leader.
	var kv jetstream.KeyValue
	err := s.untilReady(ctx, func() (err error) {
		kv, err = s.bucket(ctx, s.cfg.Manage, directUploadsBucketConfig(s.cfg.Replicas))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("direct uploads: %w", err)
	}
	return &DirectUploads{kv: kv}, nil
}

func directUploadsBucketConfig(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      DirectUploadsBucket,
		Description: "kino: direct upload URLs, by the hash of their token",
		TTL:         DirectUploadTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}
}

// Create stores a new record; Conflict when key exists.
func (d *DirectUploads) Create(ctx context.Context, key string, val []byte) error {
	_, err := d.kv.Create(ctx, key, val)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return domain.Wrap("direct upload", domain.Conflict, err, "the direct upload exists already")
	}
	if err != nil {
		return fmt.Errorf("direct upload: create: %w", err)
	}
	return nil
}

// Get is a record and its revision (for Update); NotFound when there is
// none (never created, or removed by the TTL).
func (d *DirectUploads) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	e, err := d.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, domain.Wrap("direct upload", domain.NotFound, err, "direct upload URL not found")
	}
	if err != nil {
		return nil, 0, fmt.Errorf("direct upload: get: %w", err)
	}
	return e.Value(), e.Revision(), nil
}

// Update replaces a record if it is still at revision rev; Conflict when
// someone changed it first.
func (d *DirectUploads) Update(ctx context.Context, key string, val []byte, rev uint64) error {
	_, err := d.kv.Update(ctx, key, val, rev)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return domain.Wrap("direct upload", domain.Conflict, err, "the direct upload URL has already been used")
	}
	if err != nil {
		return fmt.Errorf("direct upload: update: %w", err)
	}
	return nil
}
