package kv

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// DirectUploadsBucket is the KV bucket of direct upload URLs (POST
// /v1/uploads): one record per URL, under the hash of its token. A URL is
// not an event: it lives an hour or so, means nothing once used or
// expired, and must be redeemable on any API node at once, so it lives in
// a replicated bucket beside the stream, removed by the bucket's TTL.
const DirectUploadsBucket = natsconn.DirectUploadsBucket

// DirectUploadTTL is how long a record stays in the bucket: longer than
// the longest-lived direct upload URL (the API bounds those to 24 h).
const DirectUploadTTL = natsconn.DirectUploadTTL

// DirectUploads stores direct upload records (opaque bytes, JSON in
// practice) by key.
type DirectUploads struct {
	kv jetstream.KeyValue
}

// OpenDirectUploads creates (kino serve) or opens the bucket.
func OpenDirectUploads(ctx context.Context, s *eventstore.Store) (*DirectUploads, error) {
	c := s.NATS()
	// Retried while a forming cluster elects the bucket's leader.
	var kv jetstream.KeyValue
	err := c.UntilReady(ctx, func() (err error) {
		kv, err = c.Bucket(ctx, c.Manage, natsconn.DirectUploadsBucketConfig(c.Replicas))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("direct uploads: %w", err)
	}
	return &DirectUploads{kv: kv}, nil
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
