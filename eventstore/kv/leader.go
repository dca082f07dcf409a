package kv

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/eventstore"
)

// leaderGet is the value of key in bucket b and its revision, asked of the
// bucket's leader (STREAM.MSG.GET), not of any replica (the bucket's
// direct get): a replica may be behind a write made through another node.
// found is false when there is none, or when its last entry is a delete,
// a purge or a marker the server left (a TTL expiry, say), or when the
// bucket's stream is gone.
func leaderGet(ctx context.Context, s *eventstore.Store, b jetstream.KeyValue, key string) (value []byte, revision uint64, found bool, err error) {
	if !validKey(key) {
		return nil, 0, false, jetstream.ErrInvalidKey
	}
	bucket := b.Bucket()
	m, ok, err := s.LeaderLast(ctx, "KV_"+bucket, "$KV."+bucket+"."+key)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// The bucket is gone (a server that lost its storage), and what
		// it held with it: the next write through its handle makes it
		// again.
		return nil, 0, false, nil
	}
	if err != nil || !ok {
		return nil, 0, false, err
	}
	if len(m.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(m.Header)
		if err != nil {
			return nil, 0, false, fmt.Errorf("%s: %w", bucket, err)
		}
		if h.Get("KV-Operation") != "" || h.Get(jetstream.MarkerReasonHeader) != "" {
			return nil, 0, false, nil
		}
	}
	return m.Data, m.Seq, true, nil
}
