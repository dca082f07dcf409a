package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// DeliveriesStream is the work queue of webhook deliveries: one message per
// (event, subscription), removed once acknowledged. The outcome of every
// attempt is recorded as an event on the subscription's stream.
const DeliveriesStream = "KINO_DELIVERIES"

func openDeliveries(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	if !cfg.Manage {
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
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("open event store: stream %s: %w", DeliveriesStream, err)
	}
	return s, nil
}

// Enqueue stores a delivery for subscription sub under the message id
// msgID: the same id enqueued twice is one delivery.
func (s *Store) Enqueue(ctx context.Context, sub, msgID string, body []byte, header map[string]string) error {
	msg := &nats.Msg{Subject: "delivery." + sub, Data: body, Header: nats.Header{}}
	for k, v := range header {
		msg.Header.Set(k, v)
	}
	if _, err := s.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(DeliveriesStream)); err != nil {
		return fmt.Errorf("enqueue delivery %s: %w", msgID, err)
	}
	return nil
}

// DeliveriesQueued is the number of deliveries in KINO_DELIVERIES: queued,
// waiting out a backoff or being sent. A delivery leaves it when it is
// acknowledged (sent, given up or dropped).
func (s *Store) DeliveriesQueued(ctx context.Context) (uint64, error) {
	info, err := s.deliveries.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", DeliveriesStream, err)
	}
	return info.State.Msgs, nil
}

// Record appends facts that need no concurrency check (delivery attempts
// of a subscription: nothing is decided from them), with fresh ids.
func (s *Store) Record(ctx context.Context, id domain.StreamID, payloads ...domain.Payload) ([]domain.Event, error) {
	now := s.Now()
	out := make([]domain.Event, 0, len(payloads))
	for _, p := range payloads {
		if p.Aggregate() != id.Aggregate {
			return out, errors.New("record: event of another aggregate")
		}
		e := domain.Event{ID: s.NewID(), Type: p.EventType(), AggregateID: id.ID, OccurredAt: now, Data: p}
		body, err := domain.Encode(e)
		if err != nil {
			return out, err
		}
		msg := &nats.Msg{Subject: id.Subject(e.Type), Data: body, Header: nats.Header{}}
		msg.Header.Set(HeaderEventType, e.Type)
		ack, err := s.js.PublishMsg(ctx, msg, jetstream.WithMsgID(e.ID), jetstream.WithExpectStream(StreamName))
		if err != nil {
			return out, fmt.Errorf("record %s on %s: %w", e.Type, id, err)
		}
		e.Seq = ack.Sequence
		out = append(out, e)
	}
	return out, nil
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

// attemptsTTL bounds how long a forgotten counter (its sender died between
// the final ack and the delete) is kept. Every attempt rewrites the
// counter, so it only has to outlast the longest wait between attempts.
const attemptsTTL = 7 * 24 * time.Hour

// ErrBusy is returned by TryLock when another sender holds the lock.
var ErrBusy = errors.New("busy")

// SendState is the shared state of the webhook senders.
type SendState struct {
	locks    jetstream.KeyValue
	attempts jetstream.KeyValue
}

// OpenSendState opens (creating them when missing) the send-lock and
// attempt-count buckets, or returns those Open found.
func (s *Store) OpenSendState(ctx context.Context) (*SendState, error) {
	if s.sendState != nil {
		return s.sendState, nil
	}
	return s.openSendState(ctx, true)
}

// openSendState opens the buckets, creating missing ones when create is set.
func (s *Store) openSendState(ctx context.Context, create bool) (*SendState, error) {
	locks, err := s.bucket(ctx, create, jetstream.KeyValueConfig{
		Bucket:      SendLocksBucket,
		Description: "kino: subscriptions with a webhook POST under way",
		TTL:         SendLockTTL,
		Storage:     natsconn.VolatileStorage(s.cfg.Replicas),
		Replicas:    s.cfg.Replicas,
	})
	if err != nil {
		return nil, err
	}
	attempts, err := s.bucket(ctx, create, jetstream.KeyValueConfig{
		Bucket:      AttemptsBucket,
		Description: "kino: attempts made per webhook delivery",
		TTL:         attemptsTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    s.cfg.Replicas,
	})
	if err != nil {
		return nil, err
	}
	return &SendState{locks: locks, attempts: attempts}, nil
}

// SendLock is a held per-subscription lock.
type SendLock struct {
	kv  jetstream.KeyValue
	key string
	rev uint64
}

// TryLock takes the lock of subscription sub, or returns ErrBusy when
// another sender holds it.
func (st *SendState) TryLock(ctx context.Context, sub string) (*SendLock, error) {
	rev, err := st.locks.Create(ctx, sub, []byte("1"))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, ErrBusy
	}
	if err != nil {
		return nil, fmt.Errorf("send lock %s: %w", sub, err)
	}
	return &SendLock{kv: st.locks, key: sub, rev: rev}, nil
}

// Renew rewrites the lock so it lives another SendLockTTL. It fails when
// the lock lapsed and someone else took it.
func (l *SendLock) Renew(ctx context.Context) error {
	rev, err := l.kv.Update(ctx, l.key, []byte("1"), l.rev)
	if err != nil {
		return fmt.Errorf("renew send lock %s: %w", l.key, err)
	}
	l.rev = rev
	return nil
}

// Release deletes the lock if it is still this holder's.
func (l *SendLock) Release(ctx context.Context) error {
	err := l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return nil // not this holder's any more: it lapsed, or its bucket was made again
	}
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("release send lock %s: %w", l.key, err)
	}
	return nil
}

// Attempts is the number of attempts started for a delivery (0 when none
// are known), and the revision to pass to SetAttempts.
func (st *SendState) Attempts(ctx context.Context, deliveryID string) (int, uint64, error) {
	e, err := st.attempts.Get(ctx, deliveryID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("attempts of %s: %w", deliveryID, err)
	}
	n, err := strconv.Atoi(string(e.Value()))
	if err != nil {
		return 0, 0, fmt.Errorf("attempts of %s: %q: %w", deliveryID, e.Value(), err)
	}
	return n, e.Revision(), nil
}

// SetAttempts stores n attempts for a delivery if its count is still at
// revision rev (0: no count yet).
func (st *SendState) SetAttempts(ctx context.Context, deliveryID string, n int, rev uint64) error {
	var err error
	if rev == 0 {
		_, err = st.attempts.Create(ctx, deliveryID, []byte(strconv.Itoa(n)))
	} else {
		_, err = st.attempts.Update(ctx, deliveryID, []byte(strconv.Itoa(n)), rev)
	}
	if err != nil {
		return fmt.Errorf("count attempt of %s: %w", deliveryID, err)
	}
	return nil
}

// ForgetAttempts removes the count of a delivery that is finished.
func (st *SendState) ForgetAttempts(ctx context.Context, deliveryID string) error {
	err := st.attempts.Purge(ctx, deliveryID)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("forget attempts of %s: %w", deliveryID, err)
	}
	return nil
}
