package eventstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
)

// Tail delivers every event from sequence from onward, in stream order, to
// fn, and keeps following new ones until ctx ends or fn fails. caughtUp is
// true on the last event the stream held when it was delivered: a natural
// point to commit a batch.
func (s *Store) Tail(ctx context.Context, from uint64, fn func(e domain.Event, caughtUp bool) error) error {
	return s.follow(ctx, from, nil, true, fn)
}

// Scan delivers the events matching the subject filters (all when none),
// oldest first, up to the stream's end as of the call, then returns.
func (s *Store) Scan(ctx context.Context, filters []string, fn func(domain.Event) error) error {
	if len(filters) > 0 {
		found := false
		for _, f := range filters {
			if _, err := s.stream.GetLastMsgForSubject(ctx, f); err == nil {
				found = true
			} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
				return fmt.Errorf("scan %v: %w", filters, err)
			}
		}
		if !found {
			return nil
		}
	} else if last, err := s.LastSeq(ctx); err != nil || last == 0 {
		return err
	}
	return s.follow(ctx, 1, filters, false, func(e domain.Event, caughtUp bool) error {
		if err := fn(e); err != nil {
			return err
		}
		if caughtUp {
			return errStop
		}
		return nil
	})
}

var errStop = errors.New("stop")

func (s *Store) follow(ctx context.Context, from uint64, filters []string, forever bool, fn func(domain.Event, bool) error) error {
	if from == 0 {
		from = 1
	}
	cons, err := s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: filters,
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    from,
	})
	if err != nil {
		return fmt.Errorf("follow stream from %d: %w", from, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return fmt.Errorf("follow stream from %d: %w", from, err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return ctx.Err()
			}
			return fmt.Errorf("follow stream: %w", err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("follow stream: metadata: %w", err)
		}
		e := s.decodeStored(msg.Subject(), msg.Headers().Get(HeaderEventType), msg.Data(), meta.Sequence.Stream)
		if err := fn(e, meta.NumPending == 0); err != nil {
			if errors.Is(err, errStop) && !forever {
				return nil
			}
			return err
		}
	}
}

// decodeStored decodes a stored message and checks that its subject is the
// one its body names, <aggregate>.<id>.<Type>. A message that is not (a
// client with the right to write one subject passing off another event as
// it), or that cannot be decoded at all (not JSON, an unknown type, a
// version this kino does not know), comes back as a domain.Refused event,
// logged, so that no reader applies or decides on it and none stops on it:
// one bad message must not halt the read models of every account.
func (s *Store) decodeStored(subject, typeHeader string, data []byte, seq uint64) domain.Event {
	e, err := domain.DecodeAs(typeHeader, data)
	if err != nil {
		s.cfg.Log.Error("event refused: it cannot be decoded (written by a newer kino, or forged)",
			"seq", seq, "subject", subject, "err", err)
		return domain.Event{Type: domain.Refused{}.EventType(), Seq: seq,
			Data: domain.Refused{Subject: subject, Reason: err.Error()}}
	}
	e.Seq = seq
	if !subjectNames(subject, e.Data.Aggregate(), e.AggregateID, e.Type) {
		named := e.Data.Aggregate() + "." + e.AggregateID + "." + e.Type
		s.cfg.Log.Error("event refused: its body names another subject than the one it was stored under",
			"seq", seq, "subject", subject, "named", named)
		e.Data, e.Type = domain.Refused{Subject: subject, Named: named, Reason: "stored under another subject"}, domain.Refused{}.EventType()
	}
	return e
}

// subjectNames reports whether subject is aggregate.id.typ, without
// building that string: it runs for every event read.
func subjectNames(subject, aggregate, id, typ string) bool {
	if len(subject) != len(aggregate)+len(id)+len(typ)+2 {
		return false
	}
	a, rest := subject[:len(aggregate)], subject[len(aggregate):]
	if a != aggregate || rest[0] != '.' || rest[1:1+len(id)] != id || rest[1+len(id)] != '.' {
		return false
	}
	return rest[2+len(id):] == typ
}
