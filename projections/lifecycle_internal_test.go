package projections

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// newFollower is a projector, not yet running, over a new read-model file
// and a stream of its own.
func newFollower(t *testing.T) (*eventstore.Store, *DB, *Projector) {
	t.Helper()
	s := eventstoretest.Run(t)
	db, err := OpenDB(filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p, err := NewProjector(db, s, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return s, db, p
}

// A projector stopped by an event it cannot apply is repaired by a
// Rebuild, and follows the stream again afterwards; a Rebuild while no
// projector runs at all also works.
func TestRebuildRepairsAFailedProjector(t *testing.T) {
	s, db, p := newFollower(t)
	ctx := context.Background()
	var err error
	exec := func(id domain.StreamID, cmd any) uint64 {
		t.Helper()
		var r eventstore.Result[domain.Collection]
		if id.Aggregate == domain.AggCollection {
			r, err = eventstore.Execute[domain.Collection](ctx, s, id, cmd)
		} else {
			var rv eventstore.Result[domain.Video]
			rv, err = eventstore.Execute[domain.Video](ctx, s, id, cmd)
			if err == nil {
				return rv.LastSeq()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		return r.LastSeq()
	}
	wait := func(seq uint64) error {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return p.WaitFor(wctx, seq)
	}

	// Rebuild with no projector running.
	seq := exec(domain.CollectionStream("acme", "a"), domain.CreateCollection{Account: "acme", Slug: "a", Name: "A"})
	if _, err := p.Rebuild(ctx, func(Progress) {}); err != nil {
		t.Fatal(err)
	}
	if err := wait(seq); err != nil {
		t.Fatal(err)
	}

	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	defer func() { stop(); <-done }()

	// Corrupt the collection's record: the next upload into it cannot apply.
	if err := db.update(func(tx *bolt.Tx) error { return tx.Bucket(bCollections).Put(key("acme", "a"), []byte("{broken")) }); err != nil {
		t.Fatal(err)
	}
	seq = exec(domain.StreamID{Aggregate: domain.AggVideo, ID: s.NewID()}, domain.AcceptUpload{Account: "acme", Collection: "a", Filename: "a.mp4", Size: 1})
	if err := wait(seq); err == nil || p.Err() == nil {
		t.Fatalf("the projector applied an event onto a corrupt record: %v", err)
	}

	rctx2, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := p.Rebuild(rctx2, func(Progress) {}); err != nil {
		t.Fatalf("rebuild of a failed projector: %v", err)
	}
	if p.Err() != nil {
		t.Fatalf("still failed after the rebuild: %v", p.Err())
	}
	c, ok, err := db.Collection("acme", "a")
	if err != nil || !ok || c.VideoCount != 1 {
		t.Fatalf("repaired collection %+v %v %v", c, ok, err)
	}
	// And it follows again.
	seq = exec(domain.StreamID{Aggregate: domain.AggVideo, ID: s.NewID()}, domain.AcceptUpload{Account: "acme", Collection: "a", Filename: "b.mp4", Size: 1})
	if err := wait(seq); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := db.Collection("acme", "a"); c.VideoCount != 2 {
		t.Fatalf("after the repair: %+v", c)
	}
}
