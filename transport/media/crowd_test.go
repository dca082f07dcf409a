package media_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/media/mediatest"
)

// heldObjects is an object store whose reads of object contents wait
// until released, counting them and the Stats before them.
type heldObjects struct {
	media.ObjectStore
	gets, stats atomic.Int32
	released    chan struct{}
}

func (h *heldObjects) Get(ctx context.Context, name string, offset int64) (io.ReadCloser, media.ObjectInfo, error) {
	h.gets.Add(1)
	<-h.released
	return h.ObjectStore.Get(ctx, name, offset)
}

func (h *heldObjects) Stat(ctx context.Context, name string) (media.ObjectInfo, error) {
	h.stats.Add(1)
	return h.ObjectStore.Stat(ctx, name)
}

// A crowd of requests for a segment no local copy holds yet (players
// starting a video at once) reads it from the object store once; every
// one of them is served the copy.
func TestACrowdMissingTheCacheReadsTheStoreOnce(t *testing.T) {
	t.Parallel()
	disk, err := newDiskObjects(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	obj := &heldObjects{ObjectStore: disk, released: make(chan struct{})}
	s, err := media.OpenBucket(obj, t.TempDir(), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	s.Grace = 0
	segment := []byte("a segment of a video that a crowd asks for at once")
	close(obj.released) // publishing reads nothing back, but let it
	id := mediatest.NewVideo(t, s, map[string][]byte{"hls/720p/seg_00000.m4s": segment})
	obj.released = make(chan struct{})
	obj.gets.Store(0)
	obj.stats.Store(0)

	const crowd = 20
	var wg sync.WaitGroup
	got := make([][]byte, crowd)
	errs := make([]error, crowd)
	for i := range crowd {
		wg.Go(func() {
			f, err := s.Open(context.Background(), id, "hls/720p/seg_00000.m4s")
			if err != nil {
				errs[i] = err
				return
			}
			defer f.Close()
			got[i], errs[i] = io.ReadAll(f)
		})
	}
	// Every request has looked the object up and found no copy before
	// the first read of its bytes may go on.
	eventstoretest.Eventually(t, "every request to look the object up", func() bool {
		_, misses := s.CacheStats()
		return misses == crowd
	})
	close(obj.released)
	wg.Wait()
	for i := range crowd {
		if errs[i] != nil || string(got[i]) != string(segment) {
			t.Fatalf("request %d: %q, %v", i, got[i], errs[i])
		}
	}
	if n := obj.gets.Load(); n != 1 {
		t.Fatalf("the object was read %d times for %d requests, want once", n, crowd)
	}
	if hits, misses := s.CacheStats(); hits+misses != crowd {
		t.Fatalf("hits %d + misses %d, want %d", hits, misses, crowd)
	}
}

// replacingObjects replaces one object with other bytes of the same size
// right after its first Stat: a name published again between the
// description /cdn reads and the fetch of its bytes.
type replacingObjects struct {
	media.ObjectStore
	name     string
	with     []byte
	replaced atomic.Bool
}

func (r *replacingObjects) Stat(ctx context.Context, name string) (media.ObjectInfo, error) {
	info, err := r.ObjectStore.Stat(ctx, name)
	if err == nil && strings.HasSuffix(name, r.name) && r.replaced.CompareAndSwap(false, true) {
		if _, perr := r.ObjectStore.Put(ctx, name, bytes.NewReader(r.with)); perr != nil {
			return info, perr
		}
	}
	return info, err
}

// The local copy is kept under the digest of the bytes fetched, never
// under a description read before the object was replaced: another video
// holding the old bytes is served them, not the new ones.
func TestACopyIsNeverKeptUnderAnotherObjectsDigest(t *testing.T) {
	t.Parallel()
	disk, err := newDiskObjects(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old, fresh := []byte("the segment as first published"), []byte("the segment as published again")
	obj := &replacingObjects{ObjectStore: disk, name: "hls/720p/seg_00000.m4s", with: fresh}
	obj.replaced.Store(true) // not while publishing
	s, err := media.OpenBucket(obj, t.TempDir(), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	s.Grace = 0
	a := mediatest.NewVideo(t, s, map[string][]byte{"hls/720p/seg_00000.m4s": old})
	b := mediatest.NewVideo(t, s, map[string][]byte{"hls/720p/seg_00000.m4s": old})
	obj.name = a + "/hls/720p/seg_00000.m4s"
	obj.replaced.Store(false)
	read := func(id string) string {
		t.Helper()
		f, err := s.Open(context.Background(), id, "hls/720p/seg_00000.m4s")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		got, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	if got := read(a); got != string(fresh) {
		t.Fatalf("video a, replaced while opened: %q", got)
	}
	if got := read(b); got != string(old) {
		t.Fatalf("video b, whose segment was never replaced: %q", got)
	}
}
