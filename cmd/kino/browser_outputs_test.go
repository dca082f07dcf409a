package main

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// hls.js plays a ladder whose top rung is the source's own stream (the
// fast path), choosing the level itself (abr.mjs): the top on an open
// link, the lowest, encoded, rung on a link throttled below the top's
// BANDWIDTH, the top again once it opens, and no segment over its
// level's BANDWIDTH. The rungs' segments line up although only one of
// them was encoded by kino, the copied rung names its codecs as the
// encoded one does, and the encoded rung costs enough less than the copy
// for a player to choose.
func TestBrowserPlaysAFastPathLadder(t *testing.T) {
	t.Parallel()
	b := browserTools(t)
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	// 60 s, longer than the test plays (10 s encoded, looped by copy): the
	// player fetches segments, each a sample of the link, until it ends.
	dir := t.TempDir()
	src := filepath.Join(dir, "fast.mp4")
	ffmpegtest.Run(t, "-stream_loop", "5", "-i", ffmpegtest.Encode(t, dir, "ten.mp4", 640, 360, 10, true, ffmpegtest.H264Options()...), "-c", "copy", src)
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

	var res struct {
		OK       bool  `json:"ok"`
		Switches []int `json:"switches"`
		Levels   []struct {
			Height    int `json:"height"`
			Bandwidth int `json:"bandwidth"`
		} `json:"levels"`
		Throttle int     `json:"throttle"`
		Worst    float64 `json:"worst"`
	}
	site := b.site(t, "abr.html", nil)
	b.run(t, "abr", &res, "abr.mjs", site+"/?"+url.Values{"playlist": {v["playlistUrl"].(string)}}.Encode())
	if !slices.Contains(res.Switches, 240) || len(res.Levels) != 2 {
		t.Fatalf("abr findings: %+v", res)
	}
	t.Logf("levels %+v; throttled to %d bit/s; played %v; segments at most %.2f of their BANDWIDTH", res.Levels, res.Throttle, res.Switches, res.Worst)
}
