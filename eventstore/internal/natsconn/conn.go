// Package natsconn is what eventstore's sibling packages (the work
// queues, the KV-backed services, the object reader, the admin requests,
// the benchmarks) share of a Store's connection: the NATS connection and
// JetStream context, the settings every stream and bucket of kino is made
// with, the connection's health as far as they need it, and the opener of
// lasting KV buckets (bucket.go). It also holds the name and configuration
// of every stream and bucket beside the event stream (streams.go,
// buckets.go): eventstore.Open makes them all at once on a new cluster,
// the embedded server's permissions name them, and the services use them,
// so they are written once and never change. A Store hands it out with
// (*eventstore.Store).NATS; it is internal so that only packages under
// eventstore/ ever see it.
package natsconn

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
)

// ErrUnauthorized means NATS refused the credentials (or their absence).
var ErrUnauthorized = errors.New("not authorized")

// Conn is one Store's connection and the settings its streams use.
type Conn struct {
	NC     *nats.Conn
	JS     jetstream.JetStream
	Events jetstream.Stream // the event stream
	// What Open found (nil when missing for a client that may not make
	// them): the work queues' streams, the senders' and the progress
	// buckets.
	Jobs, Deliveries    jetstream.Stream
	SendLocks, Attempts jetstream.KeyValue
	Progress            jetstream.KeyValue

	// Decode turns a stored event message into an event, a Refused one
	// when it cannot be trusted (see eventstore's read.go).
	Decode func(subject, typeHeader string, data []byte, seq uint64) domain.Event

	// Manage: this process creates or updates kino's streams and buckets
	// (kino serve); others only open them.
	Manage bool
	// Replicas of the event stream, which every stream and bucket copies
	// (at least 1).
	Replicas int
	// ReadyWait bounds UntilReady's retries (0: none).
	ReadyWait time.Duration
	// DuplicateWindow is how long the event stream remembers Nats-Msg-Ids.
	DuplicateWindow time.Duration
	Log             *slog.Logger
	Now             func() time.Time // the store's clock, in milliseconds
	NewID           func() string

	// Op derives the context of one operation on NATS (see
	// eventstore.FailFast), Lost says whether an operation under it failed
	// because the connection dropped and, if so, the error to return.
	Op   func(ctx context.Context, name string) (context.Context, context.CancelFunc, error)
	Lost func(ctx context.Context, name string) error
	// NoQuorum is true while the event stream is known to have no quorum.
	NoQuorum func() bool
	// NextReconnect is closed at the next reconnection.
	NextReconnect func() <-chan struct{}
	// DownSince is the start of the current outage (zero while connected).
	DownSince func() time.Time
}

// UntilReady runs step until it succeeds, retrying for at most ReadyWait
// (not at all when that is 0): on a cluster being formed (or a node
// rejoining), creating a replicated bucket waits for its Raft group's
// leader, and a first request can time out although the next succeeds; a
// worker may also find a bucket kino serve is still creating.
func (c *Conn) UntilReady(ctx context.Context, step func() error) error {
	deadline := time.Now().Add(c.ReadyWait)
	wait := 100 * time.Millisecond
	for {
		err := step()
		if err == nil || c.ReadyWait <= 0 || errors.Is(err, ErrUnauthorized) || time.Now().Add(wait).After(deadline) {
			return err
		}
		c.Log.Debug("not ready yet; retrying", "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// StorageRefusal reports whether the server refused an append for want of
// storage (it answers these at once).
func StorageRefusal(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case 10047, // storage resources exceeded
		10023, // insufficient resources
		10077: // stream store failed
		return true
	}
	return false
}

// WrongLastSequence reports whether err is the server refusing a write
// made against a sequence that is no longer the last (a concurrent
// change).
func WrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}
