package projections

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// Events that arrive while a commit is under way share the next
// transaction (group commit): a hundred writes during one slow commit
// cost at most two commits, not a hundred, and each is applied once.
func TestEventsArrivingDuringACommitShareTheNext(t *testing.T) {
	s, db, p := newFollower(t)
	ctx := context.Background()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	create := func(slug string) uint64 {
		t.Helper()
		r, err := eventstore.Execute[domain.Collection](ctx, s, domain.CollectionStream("acme", slug),
			domain.CreateCollection{Account: "acme", Slug: slug, Name: slug})
		if err != nil {
			t.Fatal(err)
		}
		return r.LastSeq()
	}
	wait := func(seq uint64) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := p.WaitFor(wctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	wait(create("first"))
	before := p.commits.Load()

	// Hold bbolt's writer lock: the committer blocks in its next commit
	// while the stream's reader goes on filling the group.
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = db.update(func(*bolt.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	var last uint64
	for i := range 100 {
		last = create("c" + string(rune('a'+i/26)) + string(rune('a'+i%26)))
	}
	eventstoretest.Eventually(t, "the reader to read every event", func() bool { return p.read.Load() == last })
	close(release)
	wait(last)
	if n := p.commits.Load() - before; n > 2 {
		t.Fatalf("%d commits for 100 events that arrived during one commit, want at most 2", n)
	}
	cs, err := db.Collections("acme")
	if err != nil || len(cs) != 101 {
		t.Fatalf("collections: %d %v", len(cs), err)
	}
}

// closingSource is a stream whose first Tail ends at once with err (nil:
// its reader closed, as a consumer deleted under it), and whose later
// Tails wait for their ctx.
type closingSource struct {
	err   error
	tails atomic.Int32
}

func (c *closingSource) Tail(ctx context.Context, _ uint64, _ func(domain.Event, bool) error) error {
	if c.tails.Add(1) == 1 {
		return c.err
	}
	<-ctx.Done()
	return ctx.Err()
}

func (c *closingSource) LastSeq(context.Context) (uint64, error) { return 0, nil }

// A stream reader that closes is followed again; one that fails stops the
// projector with its own error, not with the cancellation of the group's
// committer.
func TestFollowEndsForTheTailsReason(t *testing.T) {
	cause := errors.New("consumer deleted")
	for _, c := range []struct {
		name string
		err  error
	}{{"closed", nil}, {"failed", cause}} {
		t.Run(c.name, func(t *testing.T) {
			_, db, _ := newFollower(t)
			src := &closingSource{err: c.err}
			p, err := NewProjector(db, src, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			if c.err == nil {
				eventstoretest.Eventually(t, "a second Tail", func() bool { return src.tails.Load() == 2 })
				if err := p.Err(); err != nil {
					t.Fatalf("the projector stopped: %v", err)
				}
			} else {
				eventstoretest.Eventually(t, "the projector to stop", func() bool { return p.Err() != nil })
				if err := p.Err(); !errors.Is(err, cause) {
					t.Fatalf("stopped for %v, want %v", err, cause)
				}
			}
			stop()
			<-done
		})
	}
}
