// Package backup saves kino's JetStream state to a directory while kino
// serves, and restores it into an empty server: each stream kino cannot
// rebuild, with its consumers' positions, through JetStream's snapshot API
// (github.com/nats-io/jsm.go, what the nats CLI uses).
//
// Saved: the event stream KINO_EVENTS (the truth: the read models are
// rebuilt from it), the webhook deliveries KINO_DELIVERIES and the
// transcode queues KINO_JOBS (with their consumers, so that a restored
// kino neither sends a webhook again nor loses a queued job), the playback
// key ring KV_KINO_PLAYBACK_KEYS (sealed: it needs the secret key), and,
// with --media nats, the media bucket OBJ_KINO_MEDIA. Not saved, as kino
// makes them again: sessions (people log in again), direct upload URLs,
// rate ledgers, progress, heartbeats, account snapshots, delivery locks.
//
// Each stream's snapshot is consistent by itself; the streams are taken
// one after the other, the event stream first, so a restore may hold a
// delivery or a job of an event it lacks (kino drops those) and lacks the
// deliveries and jobs of the last events (the intake and fan-out follow
// the event stream from their restored positions and make them).
package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/jsm.go"
	"github.com/nats-io/nats.go"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// Streams are what Save saves, in order; a missing one (no media bucket)
// is skipped.
var Streams = []string{
	eventstore.StreamName,
	natsconn.DeliveriesStream,
	natsconn.JobsStream,
	"KV_" + natsconn.PlaybackKeysBucket,
	"OBJ_" + eventstore.MediaBucket,
}

// Saved describes one stream saved.
type Saved struct {
	Stream   string `json:"stream"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	LastSeq  uint64 `json:"lastSeq"`
}

// Save writes a snapshot of each of Streams that exists on nc's server
// into dir/<stream>/ (dir must not hold one already).
func Save(ctx context.Context, nc *nats.Conn, dir string, progress func(stream string)) ([]Saved, error) {
	mgr, err := jsm.New(nc)
	if err != nil {
		return nil, err
	}
	var out []Saved
	for _, name := range Streams {
		known, err := mgr.IsKnownStream(name)
		if err != nil {
			return out, fmt.Errorf("backup: %s: %w", name, err)
		}
		if !known {
			continue
		}
		if progress != nil {
			progress(name)
		}
		s, err := mgr.LoadStream(name)
		if err != nil {
			return out, fmt.Errorf("backup: %s: %w", name, err)
		}
		if _, err := s.SnapshotToDirectory(ctx, filepath.Join(dir, name), jsm.SnapshotConsumers(), jsm.SnapshotHealthCheck()); err != nil {
			return out, fmt.Errorf("backup: snapshot of %s: %w", name, err)
		}
		st, err := s.State()
		if err != nil {
			return out, fmt.Errorf("backup: %s: %w", name, err)
		}
		out = append(out, Saved{Stream: name, Messages: st.Msgs, Bytes: st.Bytes, LastSeq: st.LastSeq})
	}
	return out, nil
}

// Restore puts back every stream saved under dir into nc's server, where
// none of them may exist yet (an empty data directory's server).
func Restore(ctx context.Context, nc *nats.Conn, dir string, progress func(stream string)) error {
	mgr, err := jsm.New(nc)
	if err != nil {
		return err
	}
	found := false
	for _, name := range Streams {
		sdir := filepath.Join(dir, name)
		if _, err := os.Stat(sdir); errors.Is(err, os.ErrNotExist) {
			continue
		}
		found = true
		if known, err := mgr.IsKnownStream(name); err != nil {
			return fmt.Errorf("restore: %s: %w", name, err)
		} else if known {
			return fmt.Errorf("restore: the stream %s exists already: restore into an empty data directory", name)
		}
		if progress != nil {
			progress(name)
		}
		if _, _, err := mgr.RestoreSnapshotFromDirectory(ctx, name, sdir); err != nil {
			return fmt.Errorf("restore: %s: %w", name, err)
		}
	}
	if !found {
		return fmt.Errorf("restore: %s holds no stream of a kino backup", dir)
	}
	return nil
}
