// Package storeaccess hands eventstore's own subpackages (benchstore) the
// JetStream handles of a Store, so that what only benchmarks need stays
// out of eventstore's public API.
package storeaccess

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Handles are a Store's JetStream context and event stream, with the
// settings a stream configured like it needs.
type Handles struct {
	JS              jetstream.JetStream
	Events          jetstream.Stream
	Replicas        int
	DuplicateWindow time.Duration
}

// Of returns the handles of an *eventstore.Store; eventstore sets it when
// it is initialised.
var Of func(store any) Handles
