package eventstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/eventstore/internal/storeaccess"
)

// MediaBucket is the JetStream Object Store bucket of kino's media when
// it is kept in NATS (kino --media nats). eventstore/objects reads and
// writes it.
const MediaBucket = "KINO_MEDIA"

// mediaStream is the stream behind MediaBucket.
const mediaStream = "OBJ_" + MediaBucket

func init() {
	storeaccess.OpenMediaBucket = func(ctx context.Context, store any) (storeaccess.MediaBucket, error) {
		s := store.(*Store)
		var b storeaccess.MediaBucket
		err := s.untilReady(ctx, func() (err error) {
			b, err = s.openMediaBucket(ctx)
			return err
		})
		return b, err
	}
}

// openMediaBucket opens the media bucket. A store that manages kino's
// streams (kino serve) creates it when missing, with the streams' replica
// count; any other (a worker) only opens it.
func (s *Store) openMediaBucket(ctx context.Context) (storeaccess.MediaBucket, error) {
	obs, err := s.js.ObjectStore(ctx, MediaBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) && s.cfg.Manage {
		obs, err = s.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      MediaBucket,
			Description: "kino media: originals and processed outputs, named <videoId>/<path>",
			Storage:     jetstream.FileStorage,
			Replicas:    max(s.cfg.Replicas, 1),
		})
	}
	if err != nil {
		return storeaccess.MediaBucket{}, fmt.Errorf("media bucket %s: %w (start kino serve with --media nats first)", MediaBucket, err)
	}
	stream, err := s.js.Stream(ctx, mediaStream)
	if err != nil {
		return storeaccess.MediaBucket{}, fmt.Errorf("media bucket %s: %w", MediaBucket, err)
	}
	return storeaccess.MediaBucket{Conn: s.nc, Objects: obs, Stream: stream, Name: MediaBucket}, nil
}
