package storeaccess

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MediaBucket is the JetStream object store bucket of kino's media, with
// the connection and the stream behind it (eventstore/objects reads its
// chunks with direct gets and purges what a delete leaves).
type MediaBucket struct {
	Conn    *nats.Conn
	Objects jetstream.ObjectStore
	Stream  jetstream.Stream
	Name    string // the bucket's
}

// OpenMediaBucket opens the media bucket of an *eventstore.Store (creating
// it when the store manages kino's streams), retrying while the server is
// not ready; eventstore sets it when it is initialised.
var OpenMediaBucket func(ctx context.Context, store any) (MediaBucket, error)
