package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
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
