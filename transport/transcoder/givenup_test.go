package transcoder_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/transcoder"
)

// A video whose attempts crashed until the budget ran out is FAILED when
// the next worker takes its job, and what those attempts published (a
// progressive attempt publishes as it goes) is removed: a FAILED video
// serves nothing, and a retry starts clean.
func TestGivenUpVideoLosesItsOutputs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *transcoder.Config) { c.MaxCrashes = 1 })
	acc := e.account("acme", domain.PlanFree) // one transcode at a time
	// A long video holds the account's only slot while B is set up.
	long := e.uploadFile(acc, "long.mkv", longClip(t, "long.mkv", 300))
	deadline := time.Now().Add(60 * time.Second)
	for {
		events, _, err := e.store.Load(context.Background(), stream(long))
		if err != nil {
			t.Fatal(err)
		}
		if domain.Fold[domain.Video](events).Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the long video never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	b := e.uploadFile(acc, "b.mkv", ffmpegtest.Clip(t, t.TempDir(), "b.mkv", 64, 48, 1, false))
	// B's attempt "ran" on a worker that died after publishing a segment.
	if _, err := eventstore.Execute[domain.Video](context.Background(), e.store, stream(b), domain.StartTranscode{Worker: "gone:1"}); err != nil {
		t.Fatal(err)
	}
	dir, err := e.media.Dir(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "hls", "180p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hls", "180p", "seg_00000.ts"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Free the slot: B's job runs, finds the crashed attempt, gives up.
	if _, err := eventstore.Execute[domain.Video](context.Background(), e.store, stream(long), domain.DeleteVideo{Account: acc}); err != nil {
		t.Fatal(err)
	}
	if o := e.wait(b, time.Minute); o.status != domain.StatusFailed {
		t.Fatalf("b ended %s (%s)", o.status, o.reason)
	}
	if out := e.outputsLeft(b); len(out) > 0 {
		t.Fatalf("outputs of a given-up video left: %v", out)
	}
}
