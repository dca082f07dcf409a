package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// hls.js plays a ladder whose top rung is the source's own stream (the
// fast path) and switches to the lowest, encoded, rung: the rungs' segments
// line up although only one of them was encoded by kino.
func TestBrowserPlaysAFastPathLadder(t *testing.T) {
	t.Parallel()
	b := browserTools(t)
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	src := ffmpegtest.Encode(t, t.TempDir(), "fast.mp4", 640, 360, 6, true, ffmpegtest.H264Options()...)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	id := h.uploadID(key, "main", "fast.mp4", data)
	v := h.waitStatus(key, id, domain.StatusCompleted)
	rung := h.m.CDNURL + "/" + id + "/hls/360p/index.m3u8" // its segments, after their initialization segment
	profile, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=profile", "-of", "default=nw=1:nk=1", rung).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := strings.Cut(strings.TrimSpace(string(profile)), "\n"); got != "Constrained Baseline" {
		t.Fatalf("360p is %q: the fast path was not taken", got)
	}

	res := b.playback(t, v, "360,240")
	if res.Lowest != 240 || res.PlayedTo <= 1 {
		t.Fatalf("playback findings: %+v", res)
	}
	t.Logf("played to %.1fs; levels %v; switched to %dp", res.PlayedTo, res.Levels, res.Lowest)
}
