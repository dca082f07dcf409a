package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// readRate is how many times faster than real time heldFFmpeg's ladders
// read their input, and the browser plays a video still processing.
const readRate = 2

// heldFFmpeg makes a directory of ffmpeg tools, for the transcoder the
// returned option points at it (--ffmpeg-dir, after withTranscoder): its
// ffmpeg's HLS ladders read their input at readRate times its own rate
// (-readrate), so that a test can play a clip while it is still being
// encoded, and, once encoded, do not exit until the returned file gate
// exists: the video stays PROCESSING until the test (or its browser
// script) has seen it play and creates gate, however loaded the machine.
// Its other runs (thumbnail, preview, storyboard) and its ffprobe are the
// real ones, at full speed, so the video completes soon after. The test's
// end creates gate too: no ladder outlives a failed test.
func heldFFmpeg(t *testing.T) (gate string, use func(*Config)) {
	t.Helper()
	real, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("no ffmpeg")
	}
	probe, err := exec.LookPath("ffprobe")
	if err != nil {
		t.Skip("no ffprobe")
	}
	dir := t.TempDir()
	passable(t, dir)
	gate = filepath.Join(dir, "release")
	script := "#!/bin/sh\ncase \"$*\" in *\"-f hls\"*)\n" +
		"\t" + real + " -readrate " + strconv.Itoa(readRate) + " \"$@\"; code=$?\n" +
		"\twhile [ ! -e " + gate + " ]; do sleep 0.05; done\n" +
		"\texit $code ;;\nesac\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "ffmpeg"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(probe, filepath.Join(dir, "ffprobe")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o644) })
	return gate, func(c *Config) { c.Workers.FFmpeg.Dir = dir }
}

// waitPlayable polls the read models (what the API answers) until the
// video is playable while PROCESSING; it fails should it complete first.
func (h *harness) waitPlayable(id string) {
	h.t.Helper()
	eventstoretest.EventuallyEvery(h.t, "video "+id+" playable while processing", 20*time.Millisecond, func() (bool, string) {
		v, ok, err := h.m.db.Video(id)
		if err != nil {
			h.t.Fatal(err)
		}
		if ok && (v.Status == domain.StatusCompleted || v.Status == domain.StatusFailed) {
			h.t.Fatalf("video %s %s before it was playable while processing", id, v.Status)
		}
		return ok && v.Status == domain.StatusProcessing && v.Playable, fmt.Sprintf("%+v", v)
	})
}

// TestBrowserProgressivePlayback: a video plays in Chromium with hls.js
// while it is still PROCESSING (its status read from the API at the moment
// a frame played), from its start, not from the live edge, and keeps
// playing to its end ("ended") once it completed and its playlists became
// VOD. The ladder runs in lanes (split in two ffmpeg processes), the more
// involved of the two ways: the player starts on the low lane's master
// (240p and the audio) and ends on it; the master of the completed video
// lists every rung. (A video in one lane plays while processing in
// TestBrowserDashboardWhileProcessing.)
func TestBrowserProgressivePlayback(t *testing.T) {
	// Not parallel: beside the package's other tests at their start, its
	// real-time playback and encodes starved other packages' tests on two
	// cores (clean CI runs: as long, and flakier).
	const lanes, length = "two", 16
	b := browserTools(t)
	clip := makeClip(t, "clip.mp4", 640, 360, length, true)
	gate, held := heldFFmpeg(t)
	h := start(t, t.TempDir(), withTranscoder, held, func(c *Config) { c.Workers.Lanes = lanes })
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	id := h.uploadID(key, "main", "clip.mp4", clip)
	h.waitPlayable(id)
	r := h.do("GET", "/v1/videos/"+id, key, nil)
	v := r.json(t)
	playlist, _ := v["playlistUrl"].(string)
	if v["status"] != string(domain.StatusProcessing) || playlist == "" {
		t.Fatalf("playable video: %s", r.body)
	}
	// What the video played at first: the low lane's rungs in lanes (the
	// merged master may already have replaced the first one: the high
	// lane, slowed to real time like the low one, is as safe to start).
	var history struct {
		Events []struct {
			Type string `json:"type"`
			Data struct {
				Resolutions []string `json:"resolutions"`
			} `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(h.do("GET", "/v1/videos/"+id+"/events", key, nil).body, &history); err != nil {
		t.Fatal(err)
	}
	want := "240p"
	for _, ev := range history.Events {
		if ev.Type == domain.TypeTranscodePlayable && strings.Join(ev.Data.Resolutions, ",") != want {
			t.Fatalf("playable at %v, want %s (lanes %s)", ev.Data.Resolutions, want, lanes)
		}
	}

	var mu sync.Mutex
	var statusAtPlay string
	// The page calls /played the moment a frame played: the video's
	// status, as the API answers it then.
	site := b.site(t, "progressive.html", func(mux *http.ServeMux) {
		mux.HandleFunc("/played", func(w http.ResponseWriter, r *http.Request) {
			req, _ := http.NewRequest("GET", h.url+"/v1/videos/"+id, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			defer resp.Body.Close()
			var got struct {
				Status string `json:"status"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&got)
			mu.Lock()
			statusAtPlay = got.Status
			mu.Unlock()
			// Seen playing while processing: the ladder may now end.
			_ = os.WriteFile(gate, nil, 0o644)
			_, _ = w.Write([]byte(got.Status))
		})
	})

	var res struct {
		OK        bool     `json:"ok"`
		Error     string   `json:"error"`
		PlayedAt  float64  `json:"playedAt"`
		FirstTime *float64 `json:"firstTime"`
		Live      *bool    `json:"live"`
		Status    string   `json:"status"`
		EndedAt   float64  `json:"endedAt"`
		Duration  float64  `json:"duration"`
		Stalls    int      `json:"stalls"`
		Console   []string `json:"console"`
	}
	b.run(t, "progressive playback", &res, "progressive.mjs", site+"/?"+url.Values{"playlist": {playlist}, "rate": {strconv.Itoa(readRate)}}.Encode())
	mu.Lock()
	defer mu.Unlock()
	if statusAtPlay != string(domain.StatusProcessing) {
		t.Fatalf("a frame played when the video was %q, want PROCESSING (%+v)", statusAtPlay, res)
	}
	if res.FirstTime == nil || *res.FirstTime > 1 {
		t.Fatalf("playback started at %v, want the start (EXT-X-START:TIME-OFFSET=0), not the live edge", res.FirstTime)
	}
	if res.Live == nil || !*res.Live {
		t.Fatalf("hls.js did not see a growing (EVENT) playlist when the frame played: %+v", res)
	}
	if res.EndedAt < length-1 || res.Duration < length-1 {
		t.Fatalf("ended at %.1f s of %.1f s, want the whole %d s clip", res.EndedAt, res.Duration, length)
	}
	// The player ends as soon as the playlists are VOD, which comes just
	// before the video is COMPLETED.
	h.waitStatus(key, id, domain.StatusCompleted)
	if master := string(h.get(playlist).body); !strings.Contains(master, "360p/index.m3u8") || !strings.Contains(master, "240p/index.m3u8") || strings.Contains(master, ".high") {
		t.Fatalf("master once completed:\n%s", master)
	}
	pl := h.get(strings.Replace(playlist, "master.m3u8", "360p/index.m3u8", 1))
	body := string(pl.body)
	if !strings.Contains(body, "#EXT-X-PLAYLIST-TYPE:VOD") || !strings.Contains(body, "#EXT-X-ENDLIST") {
		t.Fatalf("completed playlist:\n%s", body)
	}
	t.Logf("played at %.1fs while PROCESSING (started at %.2fs), ended at %.1fs of %.1fs, %d stalls", res.PlayedAt, *res.FirstTime, res.EndedAt, res.Duration, res.Stalls)
}
