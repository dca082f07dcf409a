package media

import (
	"context"
	"io/fs"
	"testing"
	"time"
)

// described is an object store of one description per name that counts
// the descriptions asked of it, and runs during, if set, while it answers.
type described struct {
	ObjectStore // nil: only Stat is called
	infos       map[string]ObjectInfo
	asked       map[string]int
	during      func()
}

func (d *described) Stat(_ context.Context, name string) (ObjectInfo, error) {
	d.asked[name]++
	if d.during != nil {
		d.during()
	}
	info, ok := d.infos[name]
	if !ok {
		return info, fs.ErrNotExist
	}
	return info, nil
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
	for _, at := range []time.Duration{0, statFor / 2, statFor - 1} {
		stat(seg, "hls/720p/seg_00000.m4s", at)
		stat(playlist, "hls/720p/index.m3u8", at)
	}
	if d.asked[seg] != 1 || d.asked[playlist] != 3 {
		t.Fatalf("described %d and %d times, want 1 and 3", d.asked[seg], d.asked[playlist])
	}
	d.infos[seg] = ObjectInfo{Name: seg, Digest: "two"}
	if got := stat(seg, "hls/720p/seg_00000.m4s", statFor); got.Digest != "two" || d.asked[seg] != 2 {
		t.Fatalf("after a second: %q (described %d times)", got.Digest, d.asked[seg])
	}
	d.infos[seg] = ObjectInfo{Name: seg, Digest: "three"}
	s.forget("01ARZ3NDEKTSV4RRFFQ69G5FAV")
	if got := stat(seg, "hls/720p/seg_00000.m4s", statFor); got.Digest != "three" {
		t.Fatalf("after forget: %q", got.Digest)
	}
	// A forget while the store answers: that answer is used once, not kept.
	s.forget("")
	d.during = func() { s.forget("01ARZ3NDEKTSV4RRFFQ69G5FAV") }
	stat(seg, "hls/720p/seg_00000.m4s", statFor)
	d.during = nil
	asked := d.asked[seg]
	stat(seg, "hls/720p/seg_00000.m4s", statFor)
	if d.asked[seg] != asked+1 {
		t.Fatal("a description read while the video changed was kept")
	}
	// Another video's publishing while the store answers does not keep
	// this one's description from being kept.
	other := "01ARZ3NDEKTSV4RRFFQ69G5FAW"
	for i := 'X'; stripe(other) == stripe("01ARZ3NDEKTSV4RRFFQ69G5FAV"); i++ {
		other = other[:25] + string(i)
	}
	s.forget("")
	d.during = func() { s.forget(other) }
	stat(seg, "hls/720p/seg_00000.m4s", statFor)
	d.during = nil
	asked = d.asked[seg]
	stat(seg, "hls/720p/seg_00000.m4s", statFor)
	if d.asked[seg] != asked {
		t.Fatal("another video's forget kept this video's description from being kept")
	}
	if _, err := s.stat(ctx, d, "01ARZ3NDEKTSV4RRFFQ69G5FAV/hls/720p/seg_00009.m4s", "hls/720p/seg_00009.m4s", t0); err == nil {
		t.Fatal("a missing segment was described")
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
