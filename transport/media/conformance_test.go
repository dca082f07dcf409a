package media_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/eventstore/objects"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/media/mediatest"
)

func TestDirConformance(t *testing.T) {
	t.Parallel()
	mediatest.Run(t, func(t *testing.T) mediatest.Store {
		s, err := media.OpenDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestJetStreamBucketConformance(t *testing.T) {
	t.Parallel()
	mediatest.Run(t, func(t *testing.T) mediatest.Store {
		return openJetStreamBucket(t, 0)
	})
}

// With local copies of what /cdn reads (a small cache, so copies are
// evicted too).
func TestCachedJetStreamBucketConformance(t *testing.T) {
	t.Parallel()
	mediatest.Run(t, func(t *testing.T) mediatest.Store {
		return openJetStreamBucket(t, 600<<10)
	})
}

// A Bucket on another object store, a directory, runs the same suite:
// index, cache and scratch hold nothing of NATS.
func TestDiskBucketConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cache int64
	}{
		{name: "uncached"},
		{name: "cached", cache: 600 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mediatest.Run(t, func(t *testing.T) mediatest.Store {
				obj, err := newDiskObjects(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				s, err := media.OpenBucket(obj, t.TempDir(), tc.cache)
				if err != nil {
					t.Fatal(err)
				}
				s.Grace = 0
				return s
			})
		})
	}
}

func openJetStreamBucket(t testing.TB, cache int64) *media.Bucket {
	t.Helper()
	obj, err := objects.Open(context.Background(), eventstoretest.Run(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := media.OpenBucket(obj, t.TempDir(), cache)
	if err != nil {
		t.Fatal(err)
	}
	s.Grace = 0
	return s
}

// A Bucket is ready while its JetStream bucket answers, and says so when
// the NATS server behind it is gone (a node that cannot serve /cdn must
// leave the load balancer).
func TestBucketReadyFollowsTheJetStreamBucket(t *testing.T) {
	t.Parallel()
	srv := eventstoretest.Server(t, t.TempDir())
	s := bucketOn(t, srv)
	if err := s.Ready(context.Background()); err != nil {
		t.Fatalf("ready with NATS up: %v", err)
	}
	srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err == nil {
		t.Fatal("ready with NATS gone")
	}
}

// A commit the bucket does not take (its NATS server gone) leaves the
// upload's file where it was, the caller's, so that the commit can be
// tried again once the server is back.
func TestBucketCommitFailureKeepsTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := eventstoretest.Server(t, dir)
	s := bucketOn(t, srv)
	data := []byte("\x00\x00\x00\x18ftypmp42 the upload")
	f := incoming(t, s, data)
	id := ulid.Make().String()
	host := strings.TrimPrefix(srv.URL(), "nats://")
	srv.Shutdown()
	// As a request does: fail at once while NATS is away.
	ctx := eventstore.FailFast(context.Background())
	if err := s.Commit(ctx, f, id, ".mp4"); err == nil {
		t.Fatal("commit with the bucket's server gone succeeded")
	}
	if got, err := os.ReadFile(f); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the upload's file after a failed commit: %q, %v", got, err)
	}

	back, err := natsserver.StartEmbedded(dir, host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(back.Shutdown)
	deadline := time.Now().Add(20 * time.Second)
	for s.Ready(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the bucket did not answer again after its server restarted")
		}
		time.Sleep(10 * time.Millisecond) // poll
	}
	if err := s.Commit(ctx, f, id, ".mp4"); err != nil {
		t.Fatalf("commit once the server is back: %v", err)
	}
	if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the upload's file stays after a commit: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "in.mp4")
	if err := s.Fetch(ctx, id, ".mp4", dst); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
		t.Fatalf("stored original %q, want %q", got, data)
	}
}

// bucketOn is a Bucket on the JetStream bucket of the NATS server srv.
func bucketOn(t *testing.T, srv *natsserver.Embedded) *media.Bucket {
	t.Helper()
	store := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	obj, err := objects.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	s, err := media.OpenBucket(obj, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// incoming is the path of a file from s.Incoming holding data.
func incoming(t *testing.T, s interface{ Incoming() (*os.File, error) }, data []byte) string {
	t.Helper()
	f, err := s.Incoming()
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// A library is copied into a Bucket from a Dir and from another Bucket
// (kino media migrate).
func TestImport(t *testing.T) {
	t.Parallel()
	bucket := func(t *testing.T) *media.Bucket {
		obj, err := newDiskObjects(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		s, err := media.OpenBucket(obj, t.TempDir(), 0)
		if err != nil {
			t.Fatal(err)
		}
		s.Grace = 0
		return s
	}
	target := func(t *testing.T) mediatest.Importer { return bucket(t) }
	t.Run("from a directory", func(t *testing.T) {
		t.Parallel()
		mediatest.RunImport(t, func(t *testing.T) mediatest.SourceStore {
			s, err := media.OpenDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, target)
	})
	t.Run("from a bucket", func(t *testing.T) {
		t.Parallel()
		mediatest.RunImport(t, func(t *testing.T) mediatest.SourceStore { return bucket(t) }, target)
	})
}
