package queue

import (
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// Names of the queues' streams and of the consumers workers run (the
// worker role's permissions name them too).
const (
	JobsStream       = natsconn.JobsStream
	DeliveriesStream = natsconn.DeliveriesStream
	TranscodeIntake  = natsconn.TranscodeIntake
	DeliveryDurable  = natsconn.DeliveryDurable
	FanoutDurable    = natsconn.FanoutDurable
	SendLocksBucket  = natsconn.SendLocksBucket
	AttemptsBucket   = natsconn.AttemptsBucket
	SendLockTTL      = natsconn.SendLockTTL
	WorkersBucket    = natsconn.WorkersBucket
	HeartbeatEvery   = natsconn.HeartbeatEvery
	WorkerTTL        = natsconn.WorkerTTL
)

// Queues are the work queues on one store's connection.
type Queues struct {
	c *natsconn.Conn
}

// New returns the work queues on store's connection.
func New(store *eventstore.Store) *Queues { return &Queues{c: store.NATS()} }
