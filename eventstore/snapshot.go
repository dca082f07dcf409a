package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
)

// SnapshotBucket is the KV bucket of aggregates' snapshots: key
// <aggregate>.<id>, value a snapshot. Only kino serve and the admin CLI
// write it; workers read it.
const SnapshotBucket = "KINO_SNAPSHOTS"

// snapshotEvery is how many events Execute folds after a snapshot (or
// from the start) before it writes a new one: the most a command reads
// beyond the snapshot itself.
const snapshotEvery = 32

// snapshotted is an aggregate whose state may be kept as a snapshot. Its
// state must survive a JSON round trip, stay small whatever its history
// (domain.Account keeps its live keys, not every key it ever had), and
// change SnapshotVersion whenever its shape or Evolve changes.
type snapshotted interface {
	SnapshotVersion() int
}

// snapshot is an aggregate's state after the event at Seq, whose id is
// Event.
type snapshot struct {
	Version int             `json:"version"`
	Seq     uint64          `json:"seq"`
	Event   string          `json:"event"`
	State   json.RawMessage `json:"state"`
}

func snapshotKey(id domain.StreamID) string { return id.Aggregate + "." + id.ID }

// fromSnapshot loads a snapshotted aggregate: its latest snapshot, when
// one is stored, of this version, and its event is where it says in the
// stream; then the events after it. It returns the state, the aggregate's
// last sequence and how many events it folded. Without a usable snapshot
// it folds the whole stream, as Load does.
func fromSnapshot[S domain.State[S]](ctx context.Context, s *Store, id domain.StreamID, version int) (state S, last uint64, folded int, err error) {
	op := "load " + id.String()
	ctx, done, err := s.health.op(ctx, op)
	if err != nil {
		return state, 0, 0, err
	}
	defer done()
	if last, err = s.lastSeqOf(ctx, id.Filter()); err != nil || last == 0 {
		return state, 0, 0, err
	}
	from := uint64(1)
	if snap, ok := s.readSnapshot(ctx, id, version); ok && snap.Seq <= last {
		// The snapshot's own event must be in the stream at its sequence:
		// a snapshot newer than a restored stream (whose sequences were
		// given again to other events), or of another stream, is not used.
		// It is read by its sequence alone, which costs the same whatever
		// the stream holds.
		msg, err := s.stream.GetMsg(ctx, snap.Seq)
		switch {
		case err == nil && msg.Sequence == snap.Seq && ofStream(msg.Subject, id) && msg.Header.Get(jetstream.MsgIDHeader) == snap.Event:
			var st S
			if json.Unmarshal(snap.State, &st) == nil {
				state, from = st, snap.Seq+1
			}
		case err != nil && !errors.Is(err, jetstream.ErrMsgNotFound):
			return state, 0, 0, readFailed(ctx, op, err)
		}
	}
	last, err = s.each(ctx, op, id, from, last, func(e domain.Event) {
		if _, refused := e.Data.(domain.Refused); !refused {
			state = state.Evolve(e)
			folded++
		}
	})
	if err != nil {
		return state, 0, 0, err
	}
	return state, last, folded, nil
}

// ofStream reports whether subject is one of id's events.
func ofStream(subject string, id domain.StreamID) bool {
	prefix := id.Aggregate + "." + id.ID + "."
	return strings.HasPrefix(subject, prefix) && !strings.Contains(subject[len(prefix):], ".")
}

// readSnapshot is id's stored snapshot of version; none when there is
// none, it cannot be read (the bucket is missing or does not answer: the
// stream is the truth, folded whole), or it is of another version.
func (s *Store) readSnapshot(ctx context.Context, id domain.StreamID, version int) (snapshot, bool) {
	if s.snapshots == nil {
		return snapshot{}, false
	}
	entry, err := s.snapshots.Get(ctx, snapshotKey(id))
	if err != nil {
		return snapshot{}, false
	}
	var snap snapshot
	if json.Unmarshal(entry.Value(), &snap) != nil || snap.Version != version || snap.Seq == 0 || snap.Event == "" {
		return snapshot{}, false
	}
	return snap, true
}

// writeSnapshot stores state as id's snapshot after last, its last
// event. A failure only costs the next command a longer read: it is
// logged, not returned.
func (s *Store) writeSnapshot(ctx context.Context, id domain.StreamID, version int, last domain.Event, state any) {
	if s.snapshots == nil || last.Seq == 0 {
		return
	}
	b, err := json.Marshal(state)
	if err == nil {
		b, err = json.Marshal(snapshot{Version: version, Seq: last.Seq, Event: last.ID, State: b})
	}
	if err == nil {
		_, err = s.snapshots.Put(ctx, snapshotKey(id), b)
	}
	if err != nil {
		s.cfg.Log.Debug("snapshot not stored", "stream", id.String(), "err", err)
	}
}
