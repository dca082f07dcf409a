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

// Import appends already-formed events (ids and times set) without
// concurrency checks, many in flight at once. For loading synthetic
// streams in benchmarks and for tools that copy streams; never for
// commands.
func (s *Store) Import(ctx context.Context, events []domain.Event) error {
	const window = 4096
	futures := make([]jetstream.PubAckFuture, 0, window)
	wait := func() error {
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("import: %w", err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		futures = futures[:0]
		return nil
	}
	for _, e := range events {
		body, err := domain.Encode(e)
		if err != nil {
			return err
		}
		id := domain.StreamID{Aggregate: e.Data.Aggregate(), ID: e.AggregateID}
		msg := &nats.Msg{Subject: id.Subject(e.Type), Data: body, Header: nats.Header{}}
		msg.Header.Set(HeaderEventType, e.Type)
		f, err := s.js.PublishMsgAsync(msg, jetstream.WithMsgID(e.ID))
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		if futures = append(futures, f); len(futures) == window {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	return wait()
}

// RawTail delivers the raw bodies of the stream's messages from sequence 1
// up to upTo to fn: the floor any reader of the stream pays, for
// benchmarks to measure against.
func (s *Store) RawTail(ctx context.Context, upTo uint64, fn func(seq uint64, body []byte) error) error {
	cons, err := s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return err
	}
	defer it.Stop()
	for {
		msg, err := it.Next()
		if err != nil {
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		if err := fn(meta.Sequence.Stream, msg.Data()); err != nil {
			return err
		}
		if meta.Sequence.Stream >= upTo {
			return nil
		}
	}
}
