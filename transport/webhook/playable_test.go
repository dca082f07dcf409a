package webhook

import (
	"testing"

	"github.com/kino-video/kino/domain"
)

// video.playable goes once per processing run, to the subscriptions that
// list it, before video.completed: not again for a second attempt after a
// crash, again after a retry of a FAILED video (whose completion records
// it first). Its body is the video at that moment: PROCESSING, with its
// playlistUrl.
func TestFanoutPlayableOncePerRun(t *testing.T) {
	env := newFanoutEnv(t)
	env.subscribe(t, "acme", "/all", domain.EventVideoPlayable, domain.EventVideoCompleted, domain.EventVideoFailed)
	env.subscribe(t, "acme", "/done", domain.EventVideoCompleted)
	env.createFanoutConsumer(t)

	a := env.upload(t, "acme", "a.mp4")
	do[domain.Video](t, env.serve, a, domain.SetPlaybackPolicy{Account: "acme", Policy: domain.PlaybackSigned})
	playable := do[domain.Video](t, env.worker, a, domain.MarkPlayable{Resolutions: []string{"180p"}})[0]
	do[domain.Video](t, env.worker, a, domain.InterruptTranscode{Reason: domain.InterruptCrash})
	do[domain.Video](t, env.worker, a, domain.StartTranscode{Worker: "test:2", MaxAttempts: 3})
	again := do[domain.Video](t, env.worker, a, domain.MarkPlayable{Resolutions: []string{"180p"}})
	if len(again) != 1 || again[0].Type != domain.TypeTranscodePlayable {
		t.Fatalf("second attempt recorded %v", again)
	}
	env.deliverAll(t, again[0].Seq)
	got := env.rc.bodies("/all")
	if len(got) != 1 || got[0].Type != domain.EventVideoPlayable || got[0].ID != playable.ID {
		t.Fatalf("after two playable attempts: %+v, want one video.playable", got)
	}
	v := got[0].Data.Video
	if v.Status != domain.StatusProcessing || v.PlaylistURL == nil || *v.PlaylistURL != testCDN+"/"+a.ID+"/hls/master.m3u8" ||
		v.PlaybackPolicy != domain.PlaybackSigned || v.Duration != nil {
		t.Fatalf("video.playable body: %s", mustJSON(t, v))
	}
	if n := len(env.rc.bodies("/done")); n != 0 {
		t.Fatalf("a subscription without video.playable got %d deliveries", n)
	}
	done := env.complete(t, a)
	if done.Type != domain.TypeTranscodeSucceeded {
		t.Fatalf("completing a playable video recorded %s first", done.Type)
	}

	// B fails, is retried and completes: a second run, told again.
	b := env.upload(t, "acme", "b.mp4")
	do[domain.Video](t, env.worker, b, domain.MarkPlayable{Resolutions: []string{"180p"}})
	do[domain.Video](t, env.worker, b, domain.FailTranscode{Reason: "Processing failed.", Final: true})
	do[domain.Video](t, env.serve, b, domain.RetryTranscode{Account: "acme"})
	do[domain.Video](t, env.worker, b, domain.StartTranscode{Worker: "test:3", MaxAttempts: 3})
	last := do[domain.Video](t, env.worker, b, domain.CompleteTranscode{Duration: 2.5, Width: 320, Height: 180,
		Resolutions: []string{"180p"}, ProcessedSize: 4321, Storyboard: true, Download: true})
	if len(last) != 2 || last[0].Type != domain.TypeTranscodePlayable {
		t.Fatalf("completing a retried video recorded %v", last)
	}
	env.deliverAll(t, last[1].Seq)

	kinds := map[string][]string{}
	order := map[string][]Body{}
	for _, body := range env.rc.bodies("/all") {
		kinds[body.Data.Video.ID] = append(kinds[body.Data.Video.ID], body.Type)
		order[body.Data.Video.ID] = append(order[body.Data.Video.ID], body)
	}
	count := func(id, kind string) (n int) {
		for _, k := range kinds[id] {
			if k == kind {
				n++
			}
		}
		return n
	}
	if count(a.ID, domain.EventVideoPlayable) != 1 || count(a.ID, domain.EventVideoCompleted) != 1 {
		t.Fatalf("a: %v, want one video.playable and one video.completed", kinds[a.ID])
	}
	if count(b.ID, domain.EventVideoPlayable) != 2 || count(b.ID, domain.EventVideoFailed) != 1 || count(b.ID, domain.EventVideoCompleted) != 1 {
		t.Fatalf("b: %v, want video.playable twice (two runs), video.failed, video.completed", kinds[b.ID])
	}
	// Deliveries are not ordered; what the fan-out queued is, and the
	// bodies say it: every video.playable's event comes before its run's
	// video.completed (event ids are ULIDs, in stream order).
	for _, id := range []string{a.ID, b.ID} {
		var completed string
		for _, body := range order[id] {
			if body.Type == domain.EventVideoCompleted {
				completed = body.ID
			}
		}
		for _, body := range order[id] {
			if body.Type == domain.EventVideoPlayable && body.ID >= completed {
				t.Fatalf("%s: video.playable %s not before video.completed %s", id, body.ID, completed)
			}
		}
	}
	for _, body := range order[b.ID] {
		v := body.Data.Video
		if body.Type == domain.EventVideoPlayable && v.ErrorMessage != nil {
			t.Fatalf("b's video.playable after the retry carries the old error: %s", mustJSON(t, v))
		}
		if body.Type == domain.EventVideoCompleted && (v.StoryboardURL == nil || v.DownloadURL == nil) {
			t.Fatalf("b's video.completed without its storyboard and download: %s", mustJSON(t, v))
		}
	}
}
