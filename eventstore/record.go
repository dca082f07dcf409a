package eventstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/kino-video/kino/domain"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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
