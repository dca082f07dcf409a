package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Enqueue stores a delivery for subscription sub under the message id
// msgID: the same id enqueued twice is one delivery.
func (s *Queues) Enqueue(ctx context.Context, sub, msgID string, body []byte, header map[string]string) error {
	msg := &nats.Msg{Subject: "delivery." + sub, Data: body, Header: nats.Header{}}
	for k, v := range header {
		msg.Header.Set(k, v)
	}
	if _, err := s.c.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(DeliveriesStream)); err != nil {
		return fmt.Errorf("enqueue delivery %s: %w", msgID, err)
	}
	return nil
}

// DeliveriesQueued is the number of deliveries in KINO_DELIVERIES: queued,
// waiting out a backoff or being sent. A delivery leaves it when it is
// acknowledged (sent, given up or dropped).
func (s *Queues) DeliveriesQueued(ctx context.Context) (uint64, error) {
	info, err := s.c.Deliveries.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", DeliveriesStream, err)
	}
	return info.State.Msgs, nil
}

// ErrBusy is returned by TryLock when another sender holds the lock.
var ErrBusy = errors.New("busy")

// SendState is the shared state of the webhook senders.
type SendState struct {
	locks    jetstream.KeyValue
	attempts jetstream.KeyValue
}

// OpenSendState opens (creating them when missing) the send-lock and
// attempt-count buckets, or returns those Open found.
func (s *Queues) OpenSendState(ctx context.Context) (*SendState, error) {
	locks, attempts := s.c.SendLocks, s.c.Attempts
	if locks == nil || attempts == nil {
		var err error
		if locks, attempts, err = s.c.SendStateBuckets(ctx, true); err != nil {
			return nil, err
		}
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
