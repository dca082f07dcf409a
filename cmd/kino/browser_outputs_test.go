package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// hls.js plays a ladder whose top rung is the source's own stream (the
// fast path) and switches to the lowest, encoded, rung: the rungs' segments
// line up although only one of them was encoded by kino.
func TestBrowserPlaysAFastPathLadder(t *testing.T) {
	chromium, node, dir := browserTools(t)
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
	seg := h.m.CDNURL + "/" + id + "/hls/360p/seg_00000.ts"
	profile, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=profile", "-of", "default=nw=1:nk=1", seg).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := strings.Cut(strings.TrimSpace(string(profile)), "\n"); got != "Constrained Baseline" {
		t.Fatalf("360p is %q: the fast path was not taken", got)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, filepath.Join(dir, "player.html")) })
	mux.HandleFunc("/hls.min.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(dir, "node_modules", "hls.js", "dist", "hls.min.js"))
	})
	site := httptest.NewServer(mux)
	defer site.Close()
	q := url.Values{"playlist": {v["playlistUrl"].(string)}, "thumbnail": {v["thumbnailUrl"].(string)}, "preview": {v["previewUrl"].(string)}}
	cmd := exec.Command(node, "playback.mjs", site.URL+"/?"+q.Encode(), "360,240")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KINO_CHROMIUM="+chromium)
	out, err := cmd.Output()
	var res struct {
		OK       bool    `json:"ok"`
		Error    string  `json:"error"`
		Levels   []int   `json:"levels"`
		PlayedTo float64 `json:"playedTo"`
		Lowest   int     `json:"lowestLevel"`
	}
	if jerr := json.Unmarshal(out, &res); jerr != nil || err != nil || !res.OK {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("playback: %v %v\n%s\n%s", err, jerr, out, stderr)
	}
	if res.Lowest != 240 || res.PlayedTo <= 1 {
		t.Fatalf("playback findings: %+v", res)
	}
	t.Logf("played to %.1fs; levels %v; switched to %dp", res.PlayedTo, res.Levels, res.Lowest)
}
