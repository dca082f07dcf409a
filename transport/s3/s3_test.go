package s3_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/media/mediatest"
	"github.com/kino-video/kino/transport/s3"
	"github.com/kino-video/kino/transport/s3/s3test"
)

// openBucket is a media.Bucket on a fresh bucket of srv.
func openBucket(t *testing.T, srv *s3test.Server, cache int64) *media.Bucket {
	t.Helper()
	store, err := s3.Open(context.Background(), srv.Bucket(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := media.OpenBucket(store, t.TempDir(), cache)
	if err != nil {
		t.Fatal(err)
	}
	b.Grace = 0
	return b
}

// A Bucket on S3 passes the suite every media backend passes, with and
// without local copies of what /cdn reads.
func TestConformance(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	for _, tc := range []struct {
		name  string
		cache int64
	}{
		{name: "uncached"},
		{name: "cached", cache: 600 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mediatest.Run(t, func(t *testing.T) mediatest.Store { return openBucket(t, srv, tc.cache) })
		})
	}
}

// A library in a directory is copied into S3 (kino media migrate --to s3).
func TestImport(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	mediatest.RunImport(t, func(t *testing.T) mediatest.SourceStore {
		s, err := media.OpenDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, func(t *testing.T) mediatest.Importer { return openBucket(t, srv, 0) })
}

// In a shared bucket, the reconcile pass removes the objects of videos
// that are gone and nothing else: not another application's, not another
// kino's under a prefix that starts like its own.
func TestReconcileLeavesOthersObjects(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	ctx := context.Background()
	cfg := srv.Bucket(t)
	cfg.Prefix = "kino" // no trailing slash: it is a folder all the same
	others := cfg
	others.Prefix = ""
	raw, err := s3.Open(ctx, others)
	if err != nil {
		t.Fatal(err)
	}
	const gone = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	for _, name := range []string{"backups/db.tar", "kino2/" + gone + "/original.mp4", "kino/notkinos.txt", "kino/" + gone + "/original.mp4"} {
		if _, err := raw.Put(ctx, name, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	store, err := s3.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := media.OpenBucket(store, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	b.Grace = 0
	removed, err := b.Reconcile(ctx, func(string) (bool, error) { return false, nil })
	if err != nil || len(removed) != 1 || removed[0] != gone+"/original.mp4" {
		t.Fatalf("removed %v: %v", removed, err)
	}
	left, _ := raw.List(ctx)
	if len(left) != 3 {
		t.Fatalf("left %+v", left)
	}
}
