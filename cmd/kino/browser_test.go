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
	"github.com/kino-video/kino/transport/httpapi"
)

// browserTools finds Chromium, node and the test's node modules. Without
// them the test is skipped on a workstation, but it fails under CI, where
// .ci/run installs them (`just ensure-browser`).
func browserTools(t *testing.T) (chromium, node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs(filepath.Join("testdata", "browser"))
	chromium = os.Getenv("KINO_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	node, err := exec.LookPath("node")
	var missing []string
	if err != nil {
		missing = append(missing, "node")
	}
	if _, err := os.Stat(chromium); err != nil {
		missing = append(missing, chromium)
	}
	for _, m := range []string{"playwright-core", "hls.js"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", m)); err != nil {
			missing = append(missing, "node_modules/"+m)
		}
	}
	if !httpapi.PlayerAssetsBuilt() {
		missing = append(missing, "hls.js built into kino (`just assets`)")
	}
	if len(missing) > 0 {
		msg := "browser test needs " + strings.Join(missing, ", ") + ": run `just ensure-browser assets`"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return chromium, node, dir
}

// TestBrowserPlayback plays a processed video in a real Chromium with
// hls.js, from a page on another origin than the CDN: it plays past 1 s,
// hls.js sees exactly the video's resolutions, a forced switch to the
// lowest level keeps playing, the thumbnail loads and the preview plays.
func TestBrowserPlayback(t *testing.T) {
	chromium, node, dir := browserTools(t)
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	id := h.uploadID(key, "main", "clip.mp4", makeClip(t, "clip.mp4", 640, 360, 3, true))
	v := h.waitStatus(key, id, domain.StatusCompleted)

	// The page's own origin: a different port from kino's /cdn.
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, filepath.Join(dir, "player.html")) })
	mux.HandleFunc("/hls.min.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(dir, "node_modules", "hls.js", "dist", "hls.min.js"))
	})
	site := httptest.NewServer(mux)
	defer site.Close()
	q := url.Values{"playlist": {v["playlistUrl"].(string)}, "thumbnail": {v["thumbnailUrl"].(string)}, "preview": {v["previewUrl"].(string)}}

	var heights []string
	for _, r := range v["resolutions"].([]any) {
		heights = append(heights, strings.TrimSuffix(r.(string), "p"))
	}
	cmd := exec.Command(node, "playback.mjs", site.URL+"/?"+q.Encode(), strings.Join(heights, ","))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KINO_CHROMIUM="+chromium)
	out, err := cmd.Output()
	var res struct {
		OK        bool     `json:"ok"`
		Error     string   `json:"error"`
		Levels    []int    `json:"levels"`
		PlayedTo  float64  `json:"playedTo"`
		Lowest    int      `json:"lowestLevel"`
		Thumbnail []int    `json:"thumbnail"`
		Console   []string `json:"console"`
	}
	if jerr := json.Unmarshal(out, &res); jerr != nil || err != nil || !res.OK {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("playback: %v %v\n%s\n%s", err, jerr, out, stderr)
	}
	if res.Lowest != 240 || len(res.Thumbnail) != 2 || res.Thumbnail[0] == 0 || res.PlayedTo <= 1 {
		t.Fatalf("playback findings: %+v", res)
	}
	t.Logf("played to %.1fs; levels %v; switched to %dp; thumbnail %v", res.PlayedTo, res.Levels, res.Lowest, res.Thumbnail)

	// kino's own /play page plays it too, under its CSP, with hls.js from
	// kino, and no request leaves localhost.
	cmd = exec.Command(node, "play.mjs", h.url+"/play/"+id)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KINO_CHROMIUM="+chromium)
	out, err = cmd.Output()
	var play struct {
		OK        bool     `json:"ok"`
		Error     string   `json:"error"`
		PlayedTo  float64  `json:"playedTo"`
		Requests  int      `json:"requests"`
		Elsewhere []string `json:"elsewhere"`
	}
	if jerr := json.Unmarshal(out, &play); jerr != nil || err != nil || !play.OK || len(play.Elsewhere) > 0 || play.Requests == 0 {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("/play: %v %v\n%s\n%s", err, jerr, out, stderr)
	}
	t.Logf("/play played to %.1fs with %d requests, all to localhost", play.PlayedTo, play.Requests)
}
