package eventstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// ErrConcurrency is the cause of the Conflict returned when an aggregate
// changed between load and append. Execute retries on it.
var ErrConcurrency = errors.New("aggregate changed concurrently")

// transient reports whether a failed publish may be retried as it is: the
// server may or may not have stored it.
func transient(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrConnectionReconnecting)
}

// Append stores events for one aggregate, expecting expected to be the
// sequence of its last event (0: the aggregate has none). Events get ids
// and timestamps if they lack them. It returns the events as stored.
//
// A wrong expectation is a domain Conflict wrapping ErrConcurrency. A publish
// whose answer was lost is retried with the same Nats-Msg-Id; if the retry
// meets a wrong expectation, the aggregate's last message id tells whether
// the earlier attempt landed.
func (s *Store) Append(ctx context.Context, id domain.StreamID, expected uint64, payloads []domain.Payload) ([]domain.Event, error) {
	now := s.Now()
	out := make([]domain.Event, 0, len(payloads))
	for _, p := range payloads {
		if p.Aggregate() != id.Aggregate {
			return out, domain.E("append", domain.Internal, "event %s does not belong to %s", p.EventType(), id.Aggregate)
		}
		e := domain.Event{ID: s.NewID(), Type: p.EventType(), AggregateID: id.ID, OccurredAt: now, Data: p}
		seq, err := s.publish(ctx, id, expected, e)
		if err != nil {
			return out, err
		}
		e.Seq, expected = seq, seq
		out = append(out, e)
	}
	return out, nil
}

func (s *Store) publish(ctx context.Context, id domain.StreamID, expected uint64, e domain.Event) (uint64, error) {
	body, err := domain.Encode(e)
	if err != nil {
		return 0, domain.Wrap("append", domain.Internal, err, "")
	}
	op := "append " + id.String()
	if err := s.health.admitWrite(op); err != nil {
		return 0, err
	}
	ctx, done, err := s.health.op(ctx, op)
	if err != nil {
		return 0, err
	}
	defer done()
	msg := &nats.Msg{Subject: id.Subject(e.Type), Data: body, Header: nats.Header{}}
	msg.Header.Set(HeaderEventType, e.Type)
	opts := []jetstream.PublishOpt{
		jetstream.WithMsgID(e.ID),
		jetstream.WithExpectStream(StreamName),
		jetstream.WithExpectLastSequenceForSubject(expected, id.Filter()),
	}
	for attempt := 1; ; attempt++ {
		conn := s.health.connCtx()
		actx, cancel := context.WithTimeout(ctx, s.cfg.AckTimeout)
		ack, err := s.js.PublishMsg(actx, msg, opts...)
		noAck := err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		dropped := conn.Err() != nil // the connection was down during the attempt
		cancel()
		switch {
		case err == nil:
			s.health.wrote(nil)
			return ack.Sequence, nil
		case natsconn.WrongLastSequence(err):
			s.health.wrote(nil) // the server answered: it takes writes
			if attempt > 1 {
				// Our earlier attempt may have landed before its ack was lost.
				if last, gerr := s.stream.GetLastMsgForSubject(ctx, id.Filter()); gerr == nil && last.Header.Get(jetstream.MsgIDHeader) == e.ID {
					return last.Sequence, nil
				}
			}
			return 0, domain.Wrap(op, domain.Conflict, ErrConcurrency, "the resource was changed by another request; retry")
		case errors.Is(context.Cause(ctx), errDisconnected):
			// Sent, perhaps stored: the outcome is unknown.
			return 0, unavailable(op, errDisconnected)
		case noAck && dropped:
			// Not the store's fault: the publish waited for the connection
			// (nats.go resends it on reconnect). Send it again, with the
			// same message id, for as long as ctx allows.
			continue
		case noAck || natsconn.StorageRefusal(err):
			// A server whose store failed a write (a full disk) answers
			// no append until it is restarted: say so at once to the
			// callers that follow instead of letting each wait.
			fault := errNoAck
			if !noAck {
				fault = err
			}
			s.health.wrote(fault)
			return 0, unavailable(op, fault)
		case transient(err) && attempt < 3 && ctx.Err() == nil:
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
			continue
		case transient(err):
			// Still no answer after the retries: on a cluster, the stream
			// has no leader (a quorum of its replicas is down, or being
			// elected). Unavailable, not internal: 503 with Retry-After,
			// and readiness says so until an append goes through again.
			s.health.wrote(err)
			return 0, unavailable(op, err)
		default:
			return 0, domain.Wrap(op, domain.Internal, err, "")
		}
	}
}

// HeaderEventType carries the event type on every stored message, so
// consumers can route without decoding bodies.
const HeaderEventType = "Kino-Event-Type"

// Load reads every event of one aggregate, oldest first, and the sequence
// of its last event (0 when it has none).
func (s *Store) Load(ctx context.Context, id domain.StreamID) ([]domain.Event, uint64, error) {
	op := "load " + id.String()
	ctx, done, err := s.health.op(ctx, op)
	if err != nil {
		return nil, 0, err
	}
	defer done()
	last, err := s.lastSeqOf(ctx, id.Filter())
	if err != nil || last == 0 {
		return nil, 0, err
	}
	var events []domain.Event
	last, err = s.each(ctx, op, id, 1, last, func(e domain.Event) {
		if _, refused := e.Data.(domain.Refused); !refused {
			events = append(events, e)
		}
	})
	if err != nil {
		return nil, 0, err
	}
	return events, last, nil
}

// each calls fn with id's events from sequence from up to last, the
// aggregate's last sequence as read before, oldest first, and returns the
// sequence of the last event it read (from-1 when none). It stops at last
// rather than asking for the next event until none is found: JetStream
// answers that final miss of a wildcard filter by reading every message
// after the aggregate's last one when the stream holds many subjects (more
// than 64k: a few thousand videos), so a command on an old video would
// cost as much as the whole stream since. Events appended after last are
// not read. A walk that ends before last (a replica answering behind the
// one that gave last, or a purge) returns what it read: an append
// expecting that is refused with a conflict, as it would be had the
// walk's events come a moment later.
func (s *Store) each(ctx context.Context, op string, id domain.StreamID, from, last uint64, fn func(domain.Event)) (uint64, error) {
	read := from - 1
	for seq := from; seq <= last; {
		msg, err := s.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(id.Filter()))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return read, nil
		}
		if err != nil {
			return 0, readFailed(ctx, op, err)
		}
		if msg.Sequence > last {
			return read, nil
		}
		fn(s.decodeStored(msg.Subject, msg.Header.Get(HeaderEventType), msg.Data, msg.Sequence))
		read, seq = msg.Sequence, msg.Sequence+1
	}
	return read, nil
}

// decisionTyped is an aggregate whose decisions depend only on a few event
// types, each stored at most once or counting only by its last (a plan
// change): loading reads the last of each (and the aggregate's last
// sequence) instead of its whole history.
type decisionTyped interface {
	DecisionTypes() []string
}

// loadForDecision loads what an aggregate's Decide needs, and the sequence
// to expect on append.
func loadForDecision[S domain.State[S]](ctx context.Context, log Log, id domain.StreamID) (S, uint64, error) {
	state, last, _, err := loadState[S](ctx, log, id)
	return state, last, err
}

// loadState is loadForDecision, also saying how many events it folded
// after a snapshot (0 for aggregates without snapshots).
func loadState[S domain.State[S]](ctx context.Context, log Log, id domain.StreamID) (S, uint64, int, error) {
	var zero S
	s, isStore := log.(*Store)
	if sn, ok := any(zero).(snapshotted); ok && isStore {
		return fromSnapshot[S](ctx, s, id, sn.SnapshotVersion())
	}
	state, last, err := loadTyped[S](ctx, log, id)
	return state, last, 0, err
}

// loadTyped loads an aggregate whole, or, when it is decisionTyped, the
// last event of each of its types.
func loadTyped[S domain.State[S]](ctx context.Context, log Log, id domain.StreamID) (S, uint64, error) {
	var zero S
	dt, ok := any(zero).(decisionTyped)
	s, isStore := log.(*Store)
	if !ok || !isStore {
		history, last, err := log.Load(ctx, id)
		if err != nil {
			return zero, 0, err
		}
		return domain.Fold[S](history), last, nil
	}
	op := "load " + id.String()
	ctx, done, err := s.health.op(ctx, op)
	if err != nil {
		return zero, 0, err
	}
	defer done()
	last, err := s.lastSeqOf(ctx, id.Filter())
	if err != nil || last == 0 {
		return zero, 0, err
	}
	var events []domain.Event
	for _, t := range dt.DecisionTypes() {
		msg, err := s.stream.GetLastMsgForSubject(ctx, id.Subject(t))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return zero, 0, readFailed(ctx, op, err)
		}
		e := s.decodeStored(msg.Subject, t, msg.Data, msg.Sequence)
		if _, refused := e.Data.(domain.Refused); !refused {
			events = append(events, e)
		}
	}
	slices.SortFunc(events, func(a, b domain.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return domain.Fold[S](events), last, nil
}

func (s *Store) lastSeqOf(ctx context.Context, filter string) (uint64, error) {
	msg, err := s.stream.GetLastMsgForSubject(ctx, filter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, readFailed(ctx, "load "+filter, err)
	}
	return msg.Sequence, nil
}

// readFailed is the error of a read that failed with err: Unavailable when
// NATS did not answer (the connection dropped, or the stream has no leader
// or replica to answer, e.g. a cluster without quorum), else Internal.
func readFailed(ctx context.Context, op string, err error) error {
	if lerr := lost(ctx, op); lerr != nil {
		return lerr
	}
	if IsUnavailable(err) {
		return domain.Wrap(op, domain.Unavailable, errors.Join(ErrUnavailable, err), "The event store is not answering; retry in a few seconds")
	}
	return domain.Wrap(op, domain.Internal, err, "")
}

// Log is what Execute and Current need of an event store. *Store is the
// one kino runs; a caller may hold its own narrower interface and pass
// that (a *Store behind it still reads only what a decision needs).
type Log interface {
	Load(ctx context.Context, id domain.StreamID) ([]domain.Event, uint64, error)
	Append(ctx context.Context, id domain.StreamID, expected uint64, payloads []domain.Payload) ([]domain.Event, error)
	Now() time.Time
}

var _ Log = (*Store)(nil)

// Current is an aggregate's state now, read as Execute reads it.
func Current[S domain.State[S]](ctx context.Context, s Log, id domain.StreamID) (S, error) {
	state, _, err := loadForDecision[S](ctx, s, id)
	return state, err
}

// Aggregate is what Execute needs of an aggregate's state.
type Aggregate[S any] interface {
	domain.State[S]
	Decide(cmd any, now time.Time) ([]domain.Payload, error)
}

// Result is what a command produced.
type Result[S any] struct {
	State  S              // the aggregate after the new events
	Events []domain.Event // the events appended (none when the command was a no-op)
}

// LastSeq is the stream sequence of the last appended event, or 0.
func (r Result[S]) LastSeq() uint64 {
	if len(r.Events) == 0 {
		return 0
	}
	return r.Events[len(r.Events)-1].Seq
}

// Execute loads an aggregate, folds it, decides cmd, and appends the
// outcome with the loaded sequence as expectation. When another writer got
// there first it starts over after a short random pause (retryPause), at
// most Config.MaxAttempts times (5 on a Log that is not a *Store). On a
// *Store, commands on one aggregate run one at a time in the process
// (aggregateLocks): only other processes' writers can get there first.
//
// A command an aggregate without events accepts (a creation) is first
// tried without loading: decided on the empty state and appended
// expecting no event on the aggregate's subjects, so creating costs one
// request to the store instead of two. If the aggregate has events the
// expectation fails, nothing is stored, and the command is decided again
// on the loaded state.
func Execute[S Aggregate[S]](ctx context.Context, s Log, id domain.StreamID, cmd any) (Result[S], error) {
	attempts := 5
	if st, ok := s.(*Store); ok {
		attempts = st.cfg.MaxAttempts
		unlock, err := st.writers.lock(ctx, id)
		if err != nil {
			return Result[S]{}, busy(cmd, id, err)
		}
		defer unlock()
	}
	if res, done, err := executeOnEmpty[S](ctx, s, id, cmd); done {
		return res, err
	}
	var err error
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(retryPause(attempt - 1)):
			case <-ctx.Done():
				return Result[S]{}, busy(cmd, id, errors.Join(ctx.Err(), err))
			}
		}
		var state S
		var last uint64
		var folded int
		state, last, folded, err = loadState[S](ctx, s, id)
		if err != nil {
			return Result[S]{}, err
		}
		var payloads []domain.Payload
		payloads, err = state.Decide(cmd, s.Now())
		if err != nil || len(payloads) == 0 {
			return Result[S]{State: state}, err
		}
		var events []domain.Event
		events, err = s.Append(ctx, id, last, payloads)
		for _, e := range events {
			state = state.Evolve(e)
		}
		if err == nil || !errors.Is(err, ErrConcurrency) || len(events) > 0 {
			res := Result[S]{State: state, Events: events}
			if sn, ok := any(state).(snapshotted); ok && err == nil && folded+len(events) >= snapshotEvery {
				if st, isStore := s.(*Store); isStore {
					st.writeSnapshot(ctx, id, sn.SnapshotVersion(), events[len(events)-1], state)
				}
			}
			return res, err
		}
	}
	return Result[S]{}, fmt.Errorf("execute %T on %s after %d attempts: %w", cmd, id, attempts, err)
}

// busy is the error of a command whose context ended while it waited
// for its aggregate's turn or to try again: the store is slow to answer
// the commands before it (an append waits up to Config.AckTimeout).
func busy(cmd any, id domain.StreamID, err error) error {
	return domain.Wrap(fmt.Sprintf("execute %T on %s", cmd, id), domain.Unavailable, errors.Join(ErrUnavailable, err),
		"The event store is busy; retry in a few seconds")
}

// executeOnEmpty decides cmd on the empty state and, if that yields
// events, appends them expecting the aggregate to have none. done is false
// when the empty state refuses cmd or the aggregate has events: Execute
// goes on as for any command.
func executeOnEmpty[S Aggregate[S]](ctx context.Context, s Log, id domain.StreamID, cmd any) (res Result[S], done bool, err error) {
	var state S
	payloads, derr := state.Decide(cmd, s.Now())
	if derr != nil || len(payloads) == 0 {
		return res, false, nil
	}
	events, err := s.Append(ctx, id, 0, payloads)
	if len(events) == 0 && errors.Is(err, ErrConcurrency) {
		return res, false, nil
	}
	for _, e := range events {
		state = state.Evolve(e)
	}
	return Result[S]{State: state, Events: events}, true, err
}
