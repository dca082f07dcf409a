package eventstore

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RawStream is a stream beside kino's, configured like the event stream,
// for measuring bare JetStream appends on the same server (`kino bench`).
// Its subjects are raw.<anything>; nothing of kino reads it.
type RawStream struct {
	js   jetstream.JetStream
	name string
}

// OpenRawStream creates (or recreates, empty) the stream name.
func (s *Store) OpenRawStream(ctx context.Context, name string) (*RawStream, error) {
	_ = s.js.DeleteStream(ctx, name)
	_, err := s.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{"raw.>"}, Storage: jetstream.FileStorage,
		Duplicates: duplicateWindow, Replicas: max(s.cfg.Replicas, 1), AllowDirect: true,
	})
	if err != nil {
		return nil, fmt.Errorf("raw stream %s: %w", name, err)
	}
	return &RawStream{js: s.js, name: name}, nil
}

// Publish appends data on raw.<subject> expecting the subject's last
// sequence to be expected: the same concurrency check Append makes, and
// nothing else.
func (r *RawStream) Publish(ctx context.Context, subject string, expected uint64, data []byte) (uint64, error) {
	subject = "raw." + subject
	ack, err := r.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data},
		jetstream.WithExpectStream(r.name), jetstream.WithExpectLastSequenceForSubject(expected, subject))
	if err != nil {
		return 0, fmt.Errorf("publish %s: %w", subject, err)
	}
	return ack.Sequence, nil
}

// Delete removes the stream.
func (r *RawStream) Delete(ctx context.Context) error { return r.js.DeleteStream(ctx, r.name) }
