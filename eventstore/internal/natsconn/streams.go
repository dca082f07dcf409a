package natsconn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The work queues' streams, consumers and buckets (eventstore/queue uses
// them; Open makes them, and the worker role's permissions name them).

// JobsStream is the work queue of transcode jobs: one subject per account,
// so that every account has a queue of its own and a worker chooses whose
// job runs next (FairWork). A job is removed once acknowledged.
const JobsStream = "KINO_JOBS"

// Durable consumers that workers run, named here so that the worker role's
// permissions (natsserver/creds.go) and the workers agree on them.
const (
	TranscodeIntake = "transcoder"       // on KINO_EVENTS: UploadAccepted and TranscodeRetried into KINO_JOBS
	DeliveryDurable = "webhook-delivery" // on KINO_DELIVERIES: the webhook sender
	FanoutDurable   = "webhook-fanout"   // on KINO_EVENTS: finished videos into KINO_DELIVERIES
)

// JobsSubjects are every subject of KINO_JOBS; JobsReady + account
// those of the jobs waiting or running.
const (
	JobsSubjects = "jobs.>"
	JobsReady    = "jobs.transcode."
)

// OpenJobs finds (manage: creates or updates) the jobs stream; without
// manage a missing one is nil, nil.
func OpenJobs(ctx context.Context, js jetstream.JetStream, manage bool, replicas int) (jetstream.Stream, error) {
	if !manage {
		s, err := js.Stream(ctx, JobsStream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			// An older kino serve: admin commands work without it; the
			// transcoder says so when it starts (jobsStream).
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("open event store: stream %s: %w", JobsStream, err)
		}
		return s, nil
	}
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        JobsStream,
		Description: "kino transcode jobs, one subject per account",
		Subjects:    []string{JobsSubjects},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.WorkQueuePolicy,
		Duplicates:  24 * time.Hour, // a re-read UploadAccepted never doubles a job
		Replicas:    replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("open event store: stream %s: %w", JobsStream, err)
	}
	return s, nil
}

// DeliveriesStream is the work queue of webhook deliveries: one message per
// (event, subscription), removed once acknowledged. The outcome of every
// attempt is recorded as an event on the subscription's stream.
const DeliveriesStream = "KINO_DELIVERIES"

// OpenDeliveries finds (manage: creates or updates) the deliveries
// stream.
func OpenDeliveries(ctx context.Context, js jetstream.JetStream, manage bool, replicas int) (jetstream.Stream, error) {
	if !manage {
		s, err := js.Stream(ctx, DeliveriesStream)
		if err != nil {
			return nil, fmt.Errorf("open event store: stream %s: %w", DeliveriesStream, err)
		}
		return s, nil
	}
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        DeliveriesStream,
		Description: "kino webhook deliveries waiting to be sent",
		Subjects:    []string{"delivery.>"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.WorkQueuePolicy,
		Duplicates:  24 * time.Hour, // a redelivered event never doubles a delivery
		Replicas:    replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("open event store: stream %s: %w", DeliveriesStream, err)
	}
	return s, nil
}

// Buckets beside KINO_DELIVERIES that let the senders of every process
// agree on two things the work queue cannot tell them.
const (
	// SendLocksBucket holds one key per subscription with a POST under
	// way: at most one delivery per subscription is in flight, across all
	// processes. An entry lives SendLockTTL after its last write; the
	// holder rewrites it while its POST runs, so a crashed sender's lock
	// lapses on its own.
	SendLocksBucket = "KINO_SEND_LOCKS"
	// AttemptsBucket counts, per delivery id, the POSTs started. The
	// message's own delivery count also counts the times it was handed
	// back because its subscription was busy, which are not attempts.
	AttemptsBucket = "KINO_DELIVERY_ATTEMPTS"
)

// SendLockTTL is how long a send lock outlives its last renewal.
const SendLockTTL = 30 * time.Second

// AttemptsTTL bounds how long a forgotten counter (its sender died between
// the final ack and the delete) is kept. Every attempt rewrites the
// counter, so it only has to outlast the longest wait between attempts.
const AttemptsTTL = 7 * 24 * time.Hour

// SendStateBuckets opens the webhook senders' buckets, creating missing
// ones when create is set.
func (c *Conn) SendStateBuckets(ctx context.Context, create bool) (locks, attempts jetstream.KeyValue, err error) {
	locks, err = c.Bucket(ctx, create, jetstream.KeyValueConfig{
		Bucket:      SendLocksBucket,
		Description: "kino: subscriptions with a webhook POST under way",
		TTL:         SendLockTTL,
		Storage:     VolatileStorage(c.Replicas),
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, nil, err
	}
	attempts, err = c.Bucket(ctx, create, jetstream.KeyValueConfig{
		Bucket:      AttemptsBucket,
		Description: "kino: attempts made per webhook delivery",
		TTL:         AttemptsTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, nil, err
	}
	return locks, attempts, nil
}

// WorkersBucket holds one heartbeat per running kino serve or kino worker
// process, rewritten every HeartbeatEvery: an entry lapses WorkerTTL after
// the last one, so a process that died drops out on its own. It is what
// GET /v1/admin/health lists as the workers seen.
const WorkersBucket = "KINO_WORKERS"

// HeartbeatEvery is how often a process rewrites its heartbeat; WorkerTTL
// is how long an entry outlives its last write.
const (
	HeartbeatEvery = 10 * time.Second
	WorkerTTL      = 30 * time.Second
)

// WorkersBucketConfig is the heartbeats' bucket.
func WorkersBucketConfig(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      WorkersBucket,
		Description: "kino: heartbeats of the running kino processes",
		TTL:         WorkerTTL,
		Storage:     VolatileStorage(replicas),
		Replicas:    replicas,
	}
}
