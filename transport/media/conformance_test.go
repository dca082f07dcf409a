package media_test

import (
	"context"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/media/mediatest"
)

func TestDirConformance(t *testing.T) {
	mediatest.Run(t, func(t *testing.T) mediatest.Store {
		s, err := media.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestObjectsConformance(t *testing.T) {
	mediatest.Run(t, func(t *testing.T) mediatest.Store {
		return openObjects(t, 0)
	})
}

// With local copies of what /cdn reads (a small cache, so copies are
// evicted too).
func TestCachedObjectsConformance(t *testing.T) {
	mediatest.Run(t, func(t *testing.T) mediatest.Store {
		return openObjects(t, 600<<10)
	})
}

func openObjects(t testing.TB, cache int64) *media.Objects {
	t.Helper()
	obj, err := eventstoretest.Run(t).OpenObjects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s, err := media.OpenObjects(obj, t.TempDir(), cache)
	if err != nil {
		t.Fatal(err)
	}
	s.Grace = 0
	return s
}

// Objects is ready while its bucket answers, and says so when the NATS
// server behind it is gone (a node that cannot serve /cdn must leave the
// load balancer).
func TestObjectsReadyFollowsTheBucket(t *testing.T) {
	srv := eventstoretest.Server(t, t.TempDir())
	store := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	obj, err := store.OpenObjects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s, err := media.OpenObjects(obj, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(context.Background()); err != nil {
		t.Fatalf("ready with NATS up: %v", err)
	}
	srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err == nil {
		t.Fatal("ready with NATS gone")
	}
}
