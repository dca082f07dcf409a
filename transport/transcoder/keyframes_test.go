package transcoder_test

import (
	"context"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/media"
)

// TestFastPathRefusesNonIDRKeyframes: H.264 sources of the top rung's
// size within its cap whose flagged keyframes are not all IDR frames
// (x264's intra refresh, an open GOP) are encoded, not copied, and every
// segment of every rung decodes on its own (a copy cut at their recovery
// points gave segments ffprobe read no frame of); a closed-GOP one is
// still copied.
func TestFastPathRefusesNonIDRKeyframes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.account("carol", domain.PlanFree)
	dir := t.TempDir()
	h264 := ffmpegtest.H264Options()
	for _, tt := range []struct {
		name, params, profile string
	}{
		{"intra_refresh.mp4", "keyint=50:intra-refresh=1", "High"},
		{"open_gop.mp4", "keyint=50:open-gop=1:bframes=3:scenecut=0", "High"},
		{"closed_gop.mp4", "keyint=50", "Constrained Baseline"},
	} {
		// 5 s: two 4 s segments a rung, the second starting at a
		// keyframe that is not the first.
		src := ffmpegtest.Encode(t, dir, tt.name, 640, 360, 5, true, append(h264, "-x264-params", tt.params)...)
		id := e.uploadAsking(acct, tt.name, src, false)
		done := e.succeeded(id)
		if got := ffprobeField(t, ffmpegtest.Segment(t, e.file(id, "hls/360p"), "seg_00000.m4s"), "v:0", "profile"); got != tt.profile {
			t.Errorf("%s: 360p profile %q, want %q", tt.name, got, tt.profile)
		}
		var segs []string
		for _, rung := range done.Resolutions {
			rs := ffmpegtest.Segments(t, e.file(id, "hls/"+rung)) // each after its initialization segment, as a player joins them
			if len(rs) < 2 {
				t.Fatalf("%s %s: segments %v", tt.name, rung, rs)
			}
			segs = append(segs, rs...)
		}
		packets, frames := ffmpegtest.Decoded(t, segs...)
		for i, seg := range segs {
			if frames[i] == 0 || frames[i] != packets[i] {
				t.Errorf("%s %s alone: %d frames decoded of %d packets", tt.name, seg, frames[i], packets[i])
			}
		}
	}
}

// TestLadderProgressRises: while the ladder encodes, its worker reports
// progress between 0 and 1 well before the end (the storyboard made as a
// branch of the ladder's ffmpeg pass kept ffmpeg 5.1 from printing any
// progress until the end: 0, then done). The video still gets its
// storyboard.
func TestLadderProgressRises(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acc := e.account("dave", domain.PlanFree)
	src := longClip(t, "long.mkv", 120)
	progress := e.followProgress(t)
	id := e.uploadFile(acc, "long.mkv", src)
	deadline := time.Now().Add(3 * time.Minute)
	var seen []float64
	for {
		if r, ok := progress.Live(id); ok && (len(seen) == 0 || seen[len(seen)-1] != r.Progress) {
			seen = append(seen, r.Progress)
		}
		if len(seen) > 0 && seen[len(seen)-1] > 0 && seen[len(seen)-1] < 0.9 {
			break
		}
		if ended(t, e, id) || time.Now().After(deadline) {
			t.Fatalf("progress seen before the end %v: want one between 0 and 0.9", seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("progress seen %v", seen)
	if done := e.succeeded(id); !done.Storyboard {
		t.Errorf("no storyboard")
	}
	if w, h := probeSize(t, e.file(id, media.StoryboardImageName)); w != 1600 || h != 900 {
		t.Errorf("sprite %dx%d, want 10×10 tiles of 160x90", w, h)
	}
}

// ended says whether the video's attempt is over (succeeded or failed).
func ended(t *testing.T, e *env, id string) bool {
	t.Helper()
	events, _, err := e.store.Load(context.Background(), stream(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		switch ev.Data.(type) {
		case domain.TranscodeSucceeded, domain.TranscodeFailed:
			return true
		}
	}
	return false
}
