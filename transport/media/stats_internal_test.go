package media

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"testing"
	"time"
)

// described is an object store of one description per name that counts
// the descriptions asked of it, and runs during, if set, while it answers.
type described struct {
	ObjectStore // nil: only Stat is called
	mu          sync.Mutex
	infos       map[string]ObjectInfo
	asked       map[string]int
	during      func()
	held        chan error // set: Stat waits until its context ends, and sends why
}

func (d *described) Stat(ctx context.Context, name string) (ObjectInfo, error) {
	d.mu.Lock()
	d.asked[name]++
	during, held := d.during, d.held
	d.mu.Unlock()
	if during != nil {
		during()
	}
	if held != nil {
		<-ctx.Done()
		held <- ctx.Err()
		return ObjectInfo{}, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	info, ok := d.infos[name]
	if !ok {
		return info, fs.ErrNotExist
	}
	return info, nil
}

func (d *described) set(name, digest string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.infos[name] = ObjectInfo{Name: name, Digest: digest}
}

func (d *described) times(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asked[name]
}

func (d *described) answering(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.during = f
}

// landed waits until the description of name being asked of the store,
// if any, has been answered and kept.
func (s *stats) landed(name string) {
	s.mu.Lock()
	f := s.flights[name]
	s.mu.Unlock()
	if f != nil {
		<-f.done // closed with s.mu held, under which the answer is kept too
	}
}

// A segment is described by the store once in statFor, then again; other
// files every time; a video changed by this node is described again at
// once, and a description the store gave while that happened is not kept.
func TestSegmentsAreDescribedOnceASecond(t *testing.T) {
	ctx := context.Background()
	seg, playlist := "01ARZ3NDEKTSV4RRFFQ69G5FAV/hls/720p/seg_00000.m4s", "01ARZ3NDEKTSV4RRFFQ69G5FAV/hls/720p/index.m3u8"
	d := &described{infos: map[string]ObjectInfo{seg: {Name: seg, Digest: "one"}, playlist: {Name: playlist}}, asked: map[string]int{}}
	var s stats
	t0 := time.Now()
	stat := func(name, rel string, at time.Duration) ObjectInfo {
		t.Helper()
		info, err := s.stat(ctx, d, name, rel, t0.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	const segRel = "hls/720p/seg_00000.m4s"
	for _, at := range []time.Duration{0, statFor / 4, statFor/2 - 1} {
		stat(seg, segRel, at)
		stat(playlist, "hls/720p/index.m3u8", at)
	}
	if d.times(seg) != 1 || d.times(playlist) != 3 {
		t.Fatalf("described %d and %d times, want 1 and 3", d.times(seg), d.times(playlist))
	}
	// In the second half of statFor the description is asked again ahead
	// of time, and used from then on.
	d.set(seg, "two")
	if got := stat(seg, segRel, statFor/2); got.Digest != "one" {
		t.Fatalf("in the second half: %q, want the description held", got.Digest)
	}
	s.landed(seg)
	if got := stat(seg, segRel, statFor-1); got.Digest != "two" || d.times(seg) != 2 {
		t.Fatalf("after the description asked ahead: %q (described %d times)", got.Digest, d.times(seg))
	}
	d.set(seg, "three")
	if got := stat(seg, segRel, statFor/2+statFor); got.Digest != "three" || d.times(seg) != 3 {
		t.Fatalf("a second after the last description: %q (described %d times)", got.Digest, d.times(seg))
	}
	d.set(seg, "four")
	s.forget("01ARZ3NDEKTSV4RRFFQ69G5FAV")
	if got := stat(seg, segRel, statFor/2+statFor); got.Digest != "four" {
		t.Fatalf("after forget: %q", got.Digest)
	}
	// A forget while the store answers: that answer is used once, not kept.
	s.forget("")
	d.answering(func() { s.forget("01ARZ3NDEKTSV4RRFFQ69G5FAV") })
	stat(seg, segRel, statFor)
	d.answering(nil)
	asked := d.times(seg)
	stat(seg, segRel, statFor)
	if d.times(seg) != asked+1 {
		t.Fatal("a description read while the video changed was kept")
	}
	// Another video's publishing while the store answers does not keep
	// this one's description from being kept.
	other := "01ARZ3NDEKTSV4RRFFQ69G5FAW"
	for i := 'X'; stripe(other) == stripe("01ARZ3NDEKTSV4RRFFQ69G5FAV"); i++ {
		other = other[:25] + string(i)
	}
	s.forget("")
	d.answering(func() { s.forget(other) })
	stat(seg, segRel, statFor)
	d.answering(nil)
	asked = d.times(seg)
	stat(seg, segRel, statFor)
	if d.times(seg) != asked {
		t.Fatal("another video's forget kept this video's description from being kept")
	}
	if _, err := s.stat(ctx, d, "01ARZ3NDEKTSV4RRFFQ69G5FAV/hls/720p/seg_00009.m4s", "hls/720p/seg_00009.m4s", t0); err == nil {
		t.Fatal("a missing segment was described")
	}
}

// A crowd asking a segment no one described yet asks the store once and
// waits for that answer; a crowd in the second half of statFor waits for
// nothing, while one description is asked ahead. A request that ends
// stops waiting.
func TestACrowdAsksTheStoreOnce(t *testing.T) {
	seg := "01ARZ3NDEKTSV4RRFFQ69G5FAV/hls/720p/seg_00003.m4s"
	const rel = "hls/720p/seg_00003.m4s"
	d := &described{infos: map[string]ObjectInfo{seg: {Name: seg, Digest: "one"}}, asked: map[string]int{}}
	var s stats
	t0 := time.Now()
	release := make(chan struct{})
	d.answering(func() { <-release })

	const crowd = 50
	var wg sync.WaitGroup
	errs := make(chan error, crowd)
	for range crowd {
		wg.Go(func() {
			info, err := s.stat(context.Background(), d, seg, rel, t0)
			if err == nil && info.Digest != "one" {
				err = fmt.Errorf("described as %q", info.Digest)
			}
			errs <- err
		})
	}
	for waiting := 0; waiting < crowd; runtime.Gosched() {
		s.mu.Lock()
		if f := s.flights[seg]; f != nil {
			waiting = f.waiting
		}
		s.mu.Unlock()
	}
	// One request gives up: the others still get the answer.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.stat(gone, d, seg, rel, t0); !errors.Is(err, context.Canceled) {
		t.Fatalf("a request that ended: %v", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := d.times(seg); n != 1 {
		t.Fatalf("%d requests asked the store %d times, want once", crowd+1, n)
	}

	// The second half: nobody waits on the store, which answers later.
	release = make(chan struct{})
	d.answering(func() { <-release })
	for range crowd {
		if info, err := s.stat(context.Background(), d, seg, rel, t0.Add(statFor*3/4)); err != nil || info.Digest != "one" {
			t.Fatalf("in the second half: %+v %v", info, err)
		}
	}
	close(release)
	s.landed(seg)
	if n := d.times(seg); n != 2 {
		t.Fatalf("the second half asked the store %d times, want once more", n-1)
	}

	// A request after this node changed the video does not wait on a
	// description asked before the change: it asks again.
	s.forget("")
	release = make(chan struct{})
	d.answering(func() { <-release })
	before := make(chan ObjectInfo, 1)
	go func() {
		info, _ := s.stat(context.Background(), d, seg, rel, t0)
		before <- info
	}()
	for asked := 2; asked == 2; runtime.Gosched() {
		asked = d.times(seg)
	}
	d.set(seg, "two")
	s.forget("01ARZ3NDEKTSV4RRFFQ69G5FAV")
	s.mu.Lock()
	_, joinable := s.flights[seg]
	s.mu.Unlock()
	if joinable {
		close(release)
		t.Fatal("a description asked before the change is still there to wait on")
	}
	d.answering(nil)
	if info, err := s.stat(context.Background(), d, seg, rel, t0); err != nil || info.Digest != "two" {
		t.Fatalf("after the change: %+v %v", info, err)
	}
	close(release)
	if info := <-before; info.Digest != "one" && info.Digest != "two" {
		t.Fatalf("the request before the change: %+v", info)
	}
}

// A description asked for requests that all gave up is no longer asked:
// a client cannot leave the store working on names it dropped. The next
// request asks again.
func TestADescriptionNoOneWaitsForEnds(t *testing.T) {
	seg := "01ARZ3NDEKTSV4RRFFQ69G5FAV/hls/720p/seg_00042.m4s"
	const rel = "hls/720p/seg_00042.m4s"
	held := make(chan error, 1)
	d := &described{infos: map[string]ObjectInfo{seg: {Name: seg, Digest: "one"}}, asked: map[string]int{}, held: held}
	var s stats
	ctx, cancel := context.WithCancel(context.Background())
	gave := make(chan error, 1)
	go func() {
		_, err := s.stat(ctx, d, seg, rel, time.Now())
		gave <- err
	}()
	for d.times(seg) == 0 {
		runtime.Gosched()
	}
	cancel()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("the request that gave up: %v", err)
	}
	s.mu.Lock()
	_, flying := s.flights[seg]
	s.mu.Unlock()
	if flying {
		t.Fatal("the description is still asked for no one")
	}
	if err := <-held; !errors.Is(err, context.Canceled) {
		t.Fatalf("the store's call ended by %v, want cancelled", err)
	}
	d.mu.Lock()
	d.held = nil
	d.mu.Unlock()
	if info, err := s.stat(context.Background(), d, seg, rel, time.Now()); err != nil || info.Digest != "one" || d.times(seg) != 2 {
		t.Fatalf("the next request: %+v %v (asked %d times)", info, err, d.times(seg))
	}
}

// Only HLS segments count as unchanging.
func TestImmutableIsSegmentsOnly(t *testing.T) {
	for rel, want := range map[string]bool{
		"hls/720p/seg_00000.m4s": true, "hls/720p/seg_00012.ts": true, "hls/720p/init.mp4": true, "hls/audio/init_1.mp4": true,
		"hls/720p/index.m3u8": false, "hls/master.m3u8": false, "thumbnail.jpg": false, "preview.mp4": false,
		"download.mp4": false, "storyboard.jpg": false, "hls/captions/01ARZ3NDEKTSV4RRFFQ69G5FAV.vtt": false, "seg_00000.m4s": false,
	} {
		if immutable(rel) != want {
			t.Errorf("immutable(%q) = %v", rel, !want)
		}
	}
}
