// Package benchstore is what `kino bench` and the benchmarks need of the
// event store beyond kino's own use of it: loading synthetic streams, the
// bare floors (raw appends, a raw read of the stream) kino is measured
// against. Nothing of the product uses it.
package benchstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
)

// Import appends already-formed events (ids and times set) to s's event
// stream without concurrency checks, many in flight at once: for loading
// synthetic streams, never for commands.
func Import(ctx context.Context, s *eventstore.Store, events []domain.Event) error {
	js := s.NATS().JS
	// Below jetstream's limit of outstanding async publishes (4000): at
	// the limit a publish waits only 200 ms for acks before it fails,
	// which a loaded machine misses.
	const window = 1024
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
		id := domain.StreamOf(e.Data.Aggregate(), e.AggregateID)
		msg := &nats.Msg{Subject: id.Subject(e.Type), Data: body, Header: nats.Header{}}
		msg.Header.Set(eventstore.HeaderEventType, e.Type)
		f, err := js.PublishMsgAsync(msg, jetstream.WithMsgID(e.ID))
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

// RawTail delivers the raw bodies of s's event stream from sequence 1 up
// to upTo to fn: the floor any reader of the stream pays.
func RawTail(ctx context.Context, s *eventstore.Store, upTo uint64, fn func(seq uint64, body []byte) error) error {
	cons, err := s.NATS().Events.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
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

// RawStream is a stream beside kino's on the same server, configured like
// the event stream, for measuring bare JetStream appends. Its subjects are
// raw.<anything>; nothing of kino reads it.
type RawStream struct {
	js     jetstream.JetStream
	name   string
	prefix string // of its subjects: raw.<name>., so raw streams never overlap
}

// OpenRawStream creates (or recreates, empty) the stream name on s's
// server.
func OpenRawStream(ctx context.Context, s *eventstore.Store, name string) (*RawStream, error) {
	h := s.NATS()
	_ = h.JS.DeleteStream(ctx, name)
	prefix := "raw." + strings.ToLower(name) + "."
	_, err := h.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{prefix + ">"}, Storage: jetstream.FileStorage,
		Duplicates: h.DuplicateWindow, Replicas: h.Replicas, AllowDirect: true,
	})
	if err != nil {
		return nil, fmt.Errorf("raw stream %s: %w", name, err)
	}
	return &RawStream{js: h.JS, name: name, prefix: prefix}, nil
}

// Publish appends data on the stream's subject ending in subject, expecting the subject's last
// sequence to be expected: the same concurrency check Append makes, and
// nothing else.
func (r *RawStream) Publish(ctx context.Context, subject string, expected uint64, data []byte) (uint64, error) {
	subject = r.prefix + subject
	ack, err := r.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data},
		jetstream.WithExpectStream(r.name), jetstream.WithExpectLastSequenceForSubject(expected, subject))
	if err != nil {
		return 0, fmt.Errorf("publish %s: %w", subject, err)
	}
	return ack.Sequence, nil
}

// Delete removes the stream.
func (r *RawStream) Delete(ctx context.Context) error { return r.js.DeleteStream(ctx, r.name) }
