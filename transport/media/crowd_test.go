package media_test

import (
	"context"
	"io"
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
	eventstoretest.Eventually(t, "every request to look the object up", func() bool { return obj.stats.Load() == crowd })
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
