package transcoder_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/media"
)

// A thumbnailTime given at upload is where the transcode takes the
// thumbnail; one asked for later remakes thumbnail.jpg from the original
// without encoding the ladder again (no TranscodeStarted), and the video
// keeps its animated preview.
func TestThumbnailTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.account("acme", domain.PlanPro)
	clip := ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 320, 180, 3, false)
	data, err := os.ReadFile(clip)
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.media.Incoming()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write(data)
	f.Close()
	id := e.store.NewID()
	if err := e.media.Commit(context.Background(), f.Name(), id, ".mp4"); err != nil {
		t.Fatal(err)
	}
	at := 0.5
	if _, err := eventstore.Execute[domain.Video](context.Background(), e.store, stream(id), domain.AcceptUpload{
		Account: acct, Collection: "c", CollectionName: "C", Filename: "clip.mp4", Size: int64(len(data)), ThumbnailTime: &at}); err != nil {
		t.Fatal(err)
	}
	if o := e.wait(id, time.Minute); o.status != domain.StatusCompleted {
		t.Fatalf("%+v", o)
	}
	v, err := eventstore.Current[domain.Video](context.Background(), e.store, stream(id))
	if err != nil {
		t.Fatal(err)
	}
	if v.ThumbnailAt == nil || *v.ThumbnailAt != 0.5 || !v.Animated {
		t.Fatalf("completed with thumbnail at %v, animated %v; want 0.5 and an animated preview", v.ThumbnailAt, v.Animated)
	}
	dir, err := e.media.Dir(id)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first, anim := read(media.ThumbnailName), read(media.AnimatedName)

	later := 2.5
	if _, err := eventstore.Execute[domain.Video](context.Background(), e.store, stream(id), domain.UpdateVideo{Account: acct, ThumbnailTime: &later}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if v, _ = eventstore.Current[domain.Video](context.Background(), e.store, stream(id)); v.ThumbnailAt != nil && *v.ThumbnailAt == later {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thumbnail still at %v", v.ThumbnailAt)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if second := read(media.ThumbnailName); bytes.Equal(first, second) || !bytes.HasPrefix(second, []byte{0xFF, 0xD8}) {
		t.Fatal("thumbnail.jpg is not a new JPEG")
	}
	if !bytes.Equal(anim, read(media.AnimatedName)) || v.Attempts != 1 {
		t.Fatalf("the remake touched more than the thumbnail: %d attempts", v.Attempts)
	}
	if dirs := e.workDirs(); len(dirs) != 0 {
		t.Errorf("work directories left: %v", dirs)
	}
}
