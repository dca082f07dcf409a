package eventstore

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/kino-video/kino/domain"
)

// Watch returns a channel that is closed as soon as an event of type
// eventType is appended to the stream id, for as long as the watch lasts
// (stop ends it). It is a core NATS subscription on the event's subject:
// nothing is stored, and events appended before Watch returns are not seen
// (check the aggregate after watching for those). The subscription is
// registered with the server before Watch returns.
func (s *Store) Watch(id domain.StreamID, eventType string) (fired <-chan struct{}, stop func(), err error) {
	ch := make(chan struct{})
	var once sync.Once
	sub, err := s.nc.Subscribe(id.Subject(eventType), func(*nats.Msg) {
		once.Do(func() { close(ch) })
	})
	if err != nil {
		return nil, nil, fmt.Errorf("watch %s %s: %w", id, eventType, err)
	}
	if err := s.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, nil, fmt.Errorf("watch %s %s: %w", id, eventType, err)
	}
	return ch, func() { _ = sub.Unsubscribe() }, nil
}
