package eventstore_test

import (
	"context"
	"testing"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/eventstore/queue"
)

// The buckets a single server keeps in memory (send locks, progress,
// heartbeats) are gone after it restarts. Every service that opened one
// before keeps working: its next calls make the bucket again, and a
// progress follower sees the new bucket's values, not the old ones. Without
// that, webhook sending stalled for good ("no response from stream") until
// kino restarted.
func TestBucketsOutliveTheirServersRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := eventstoretest.Server(t, dir)
	s := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	send, err := queue.New(s).OpenSendState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	progress, err := kv.OpenProgress(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	followed := make(chan error, 1)
	go func() { followed <- progress.Follow(ctx) }()
	defer func() { cancel(); <-followed }()
	if err := progress.Set(ctx, "stale", 0.5); err != nil {
		t.Fatal(err)
	}
	eventstoretest.Eventually(t, "the follower to see a report", func() bool { _, ok := progress.Live("stale"); return ok })
	lock, err := send.TryLock(ctx, "sub-held")
	if err != nil {
		t.Fatal(err)
	}
	beats := make(chan error, 1)
	beatCtx, stopBeat := context.WithCancel(ctx)
	go func() { beats <- queue.New(s).Heartbeat(beatCtx, "serve", nil) }()
	defer func() { stopBeat(); <-beats }()
	eventstoretest.Eventually(t, "the heartbeat to be listed", func() bool {
		ws, err := queue.New(s).Workers(ctx)
		return err == nil && len(ws) == 1
	})

	eventstoretest.Restart(t, srv, dir)
	eventstoretest.Eventually(t, "the store to reconnect", func() bool { return s.Health().Connected })

	// A lock taken before the restart is gone with its bucket; taking
	// locks works again, and Release of the lost one is harmless.
	eventstoretest.Eventually(t, "a send lock to be taken", func() bool {
		l, err := send.TryLock(ctx, "sub-1")
		if err != nil {
			return false
		}
		return l.Release(ctx) == nil
	})
	if l, err := send.TryLock(ctx, "sub-held"); err != nil {
		t.Fatalf("lock held before the restart: %v", err)
	} else if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("release of a lock lost with its bucket: %v", err)
	}
	n, rev, err := send.Attempts(ctx, "delivery-1")
	if err != nil || n != 0 {
		t.Fatalf("attempts: %d, %v", n, err)
	}
	if err := send.SetAttempts(ctx, "delivery-1", 1, rev); err != nil {
		t.Fatal(err)
	}

	eventstoretest.Eventually(t, "progress reports to be stored again", func() bool { return progress.Set(ctx, "fresh", 0.25) == nil })
	eventstoretest.Eventually(t, "the follower to see the new bucket", func() bool {
		_, stale := progress.Live("stale")
		r, ok := progress.Live("fresh")
		return ok && r.Progress == 0.25 && !stale
	})
	if err := progress.Clear(ctx, "fresh"); err != nil {
		t.Fatal(err)
	}
	eventstoretest.Eventually(t, "the follower to see a clear", func() bool { _, ok := progress.Live("fresh"); return !ok })

	// The heartbeat writes again within a beat: listed again.
	eventstoretest.Eventually(t, "the heartbeat to be listed again", func() bool {
		ws, err := queue.New(s).Workers(ctx)
		return err == nil && len(ws) == 1
	})
}
