package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/asr/asrtest"
	"github.com/kino-video/kino/transport/captions"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/httpapi/player"
)

// browser is what a browser test drives Chromium with: Chromium itself,
// node, and testdata/browser, the directory of the test's scripts and
// pages and their node modules (playwright-core, hls.js).
type browser struct{ chromium, node, dir string }

// browserTools finds Chromium, node and the test's node modules. Without
// them the test is skipped on a workstation, but it fails under CI, where
// .ci/run installs them (`just ensure-browser`).
func browserTools(t *testing.T) browser {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "browser"))
	chromium := os.Getenv("KINO_CHROMIUM")
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
	if !player.AssetsBuilt() {
		missing = append(missing, "hls.js built into kino (`just assets`)")
	}
	if len(missing) > 0 {
		msg := "browser test needs " + strings.Join(missing, ", ") + ": run `just ensure-browser assets`"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return browser{chromium: chromium, node: node, dir: dir}
}

// site serves page (a file of b.dir) at / and hls.js at /hls.min.js, with
// the handlers more adds (if not nil), until the test ends, and returns
// its URL: the page's own origin, another port than kino's /cdn.
func (b browser) site(t *testing.T, page string, more func(*http.ServeMux)) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, filepath.Join(b.dir, page)) })
	mux.HandleFunc("/hls.min.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(b.dir, "node_modules", "hls.js", "dist", "hls.min.js"))
	})
	if more != nil {
		more(mux)
	}
	site := httptest.NewServer(mux)
	t.Cleanup(site.Close)
	return site.URL
}

// scriptTimeout bounds a browser script's run: the longest waits a few
// minutes for a video to process.
const scriptTimeout = 8 * time.Minute

// run runs script (a node script of b.dir, which drives Chromium) with
// args and decodes the findings it prints, JSON, into res. It fails the
// test, saying what ran, when the script fails, prints no JSON or does not
// report "ok"; with the step and error it reports, if any.
func (b browser) run(t *testing.T, what string, res any, script string, args ...string) {
	t.Helper()
	// Every script bounds its own waits; this bounds the script, so that a
	// wait without one ends as this test's failure, not the package's.
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.node, append([]string{script}, args...)...)
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), "KINO_CHROMIUM="+b.chromium, "KINO_CHROMIUM_WS="+b.shared(t))
	out, err := cmd.Output()
	var report struct {
		OK    bool   `json:"ok"`
		Step  string `json:"step"`
		Error string `json:"error"`
	}
	jerr := json.Unmarshal(out, res)
	if jerr == nil {
		jerr = json.Unmarshal(out, &report)
	}
	if jerr != nil || err != nil || !report.OK {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		if report.Step != "" {
			what = fmt.Sprintf("%s at step %q: %s\n", what, report.Step, report.Error)
		} else {
			what += ": "
		}
		t.Fatalf("%s%v %v\n%s\n%s", what, err, jerr, out, stderr)
	}
}

// chromium is the package's one Chromium (browser_server.mjs), started
// by the first browser test that runs a script. It runs until the test
// binary exits, which closes its standard input.
var chromium struct {
	once  sync.Once
	ws    string // the address scripts connect to
	err   error
	cmd   *exec.Cmd
	stdin io.WriteCloser // held open for as long as the binary runs
}

// shared returns the address of the package's Chromium, starting it first.
func (b browser) shared(t *testing.T) string {
	t.Helper()
	chromium.once.Do(func() {
		cmd := exec.Command(b.node, "browser_server.mjs")
		cmd.Dir = b.dir
		cmd.Env = append(os.Environ(), "KINO_CHROMIUM="+b.chromium)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			chromium.err = err
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			chromium.err = err
			return
		}
		if err := cmd.Start(); err != nil {
			chromium.err = err
			return
		}
		chromium.cmd, chromium.stdin = cmd, stdin
		line := make(chan string, 1)
		go func() {
			s, _ := bufio.NewReader(stdout).ReadString('\n')
			line <- strings.TrimSpace(s)
			_, _ = io.Copy(io.Discard, stdout)
		}()
		select {
		case ws := <-line:
			if !strings.HasPrefix(ws, "ws://") {
				chromium.err = fmt.Errorf("browser_server.mjs printed %q, not an address", ws)
			}
			chromium.ws = ws
		case <-time.After(time.Minute):
			chromium.err = errors.New("browser_server.mjs printed no address within a minute")
		}
	})
	if chromium.err != nil {
		t.Fatalf("the package's Chromium: %v", chromium.err)
	}
	return chromium.ws
}

// playbackFindings is what playback.mjs reports.
type playbackFindings struct {
	OK        bool     `json:"ok"`
	Error     string   `json:"error"`
	Levels    []int    `json:"levels"`
	PlayedTo  float64  `json:"playedTo"`
	Lowest    int      `json:"lowestLevel"`
	Thumbnail []int    `json:"thumbnail"`
	Console   []string `json:"console"`
}

// playback plays the video v (as the API answers it) with hls.js in
// player.html, served from its own origin, by playback.mjs: heights are
// the levels hls.js must see, comma-separated.
func (b browser) playback(t *testing.T, v map[string]any, heights string) playbackFindings {
	t.Helper()
	site := b.site(t, "player.html", nil)
	q := url.Values{"playlist": {v["playlistUrl"].(string)}, "thumbnail": {v["thumbnailUrl"].(string)}, "preview": {v["previewUrl"].(string)}}
	var res playbackFindings
	b.run(t, "playback", &res, "playback.mjs", site+"/?"+q.Encode(), heights)
	return res
}

// TestBrowserPlayback plays a processed video in a real Chromium with
// hls.js, from a page on another origin than the CDN: it plays past 1 s,
// hls.js sees exactly the video's resolutions, a forced switch to the
// lowest level keeps playing, the thumbnail loads and the preview plays.
//
// The clip speaks (Festival): an SRT track and a generated one are shown
// by hls.js, shaka-player and video.js with every cue at its WebVTT's
// times, each of the three plays every rung of the ladder (480p to 240p),
// and /play and /embed offer both tracks in their captions menu.
func TestBrowserPlayback(t *testing.T) {
	t.Parallel()
	b := browserTools(t)
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	id := h.uploadID(key, "main", "clip.mp4", speechClip(t, 854, 480))
	v := h.waitStatus(key, id, domain.StatusCompleted)

	var heights []string
	for _, r := range v["resolutions"].([]any) {
		heights = append(heights, strings.TrimSuffix(r.(string), "p"))
	}
	res := b.playback(t, v, strings.Join(heights, ","))
	if res.Lowest != 240 || len(res.Thumbnail) != 2 || res.Thumbnail[0] == 0 || res.PlayedTo <= 1 {
		t.Fatalf("playback findings: %+v", res)
	}
	t.Logf("played to %.1fs; levels %v; switched to %dp; thumbnail %v", res.PlayedTo, res.Levels, res.Lowest, res.Thumbnail)

	// kino's own /play page plays it too, under its CSP, with hls.js from
	// kino, and no request leaves localhost.
	type pageFindings struct {
		OK        bool     `json:"ok"`
		Error     string   `json:"error"`
		PlayedTo  float64  `json:"playedTo"`
		Requests  int      `json:"requests"`
		Elsewhere []string `json:"elsewhere"`
	}
	labels := h.inPlayers(t, b, key, id)
	var play pageFindings
	b.run(t, "/play", &play, "play.mjs", append([]string{h.url + "/play/" + id}, labels...)...)
	if len(play.Elsewhere) > 0 || play.Requests == 0 {
		t.Fatalf("/play findings: %+v", play)
	}
	t.Logf("/play played to %.1fs with %d requests, all to localhost", play.PlayedTo, play.Requests)

	// Its /embed plays alone in the frame and shows the storyboard's
	// thumbnail over the seek bar.
	play = pageFindings{}
	b.run(t, "/embed", &play, "play.mjs", append([]string{h.url + "/embed/" + id}, labels...)...)
	if len(play.Elsewhere) > 0 || play.Requests == 0 {
		t.Fatalf("/embed findings: %+v", play)
	}
}

// speechClip is a w×h clip of testsrc2 whose audio is a sentence said by
// Festival (asrtest.Speech), as MP4.
func speechClip(t *testing.T, w, h int) []byte {
	t.Helper()
	dir := t.TempDir()
	corpus := asrtest.Speech(t, dir, "speech.mp4", asrtest.Sentences[:1], asrtest.Layout{Lead: 500 * time.Millisecond})
	out := filepath.Join(dir, "clip.mp4")
	ffmpegtest.Run(t, "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=25", w, h), "-i", corpus.Path,
		"-map", "0:v", "-map", "1:a", "-shortest", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "copy", out)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// captionSRT is the SRT the browser test uploads: plain text, so every
// player gives it back as written.
const captionSRT = "1\r\n00:00:00,400 --> 00:00:01,600\r\nFirst words\r\n\r\n2\r\n00:00:02,000 --> 00:00:03,250\r\nThen more\r\n"

// inPlayers gives video id an SRT track and a generated one (waiting
// until it is READY), checks that hls.js, shaka-player and video.js list
// both and hold each one's cues at the times of its WebVTT, and that each
// plays every rung of the video, fixed on it, from the start (the
// pictures shown are the rung's height); it returns the two labels.
func (h *harness) inPlayers(t *testing.T, b browser, key, id string) []string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("language", "en")
	_ = mw.WriteField("label", "English (SRT)")
	fw, _ := mw.CreateFormFile("file", "talk.srt")
	_, _ = fw.Write([]byte(captionSRT))
	_ = mw.Close()
	wantStatus(t, h.request("POST", "/v1/videos/"+id+"/captions", key, mw.FormDataContentType(), &body), 201)
	r := h.do("POST", "/v1/videos/"+id+"/captions/generate", key, map[string]string{"language": "en"})
	wantStatus(t, r, 202)
	var gen struct{ ID, Label string }
	if err := json.Unmarshal(r.body, &gen); err != nil {
		t.Fatal(err)
	}
	var vtt []byte
	deadline := time.Now().Add(3 * time.Minute)
	for {
		tr := h.do("GET", "/v1/videos/"+id+"/captions/"+gen.ID, key, nil)
		var track struct{ Status, ErrorMessage string }
		_ = json.Unmarshal(tr.body, &track)
		if track.Status == "READY" {
			vtt = h.get(h.url+"/v1/videos/"+id+"/captions/"+gen.ID, "Authorization", "Bearer "+key, "Accept", "text/vtt").body
			break
		}
		if track.Status == "FAILED" || time.Now().After(deadline) {
			t.Fatalf("generated track: %s", tr.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	srt, _, err := captions.Parse([]byte(captionSRT))
	if err != nil {
		t.Fatal(err)
	}
	generated, _, err := captions.Parse(vtt)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]captions.Cue{"English (SRT)": srt.Cues, gen.Label: generated.Cues}
	labels := []string{"English (SRT)", gen.Label}

	var res struct {
		Players map[string]struct {
			Labels []string `json:"labels"`
			Cues   map[string][]struct {
				Start float64 `json:"start"`
				End   float64 `json:"end"`
				Text  string  `json:"text"`
			} `json:"cues"`
			Rungs []struct {
				Rung     int     `json:"rung"`   // the height the player was held on
				First    int     `json:"first"`  // the height of the first picture shown
				Height   int     `json:"height"` // of the picture shown past 0.5 s
				PlayedTo float64 `json:"playedTo"`
				Frames   int     `json:"frames"`
			} `json:"rungs"`
			Errors []string `json:"errors"`
		} `json:"players"`
	}
	site := b.site(t, "players.html", func(mux *http.ServeMux) {
		for name, file := range map[string]string{"/shaka-player.compiled.js": "shaka-player/dist/shaka-player.compiled.js", "/video.min.js": "video.js/dist/video.min.js"} {
			mux.HandleFunc(name, func(w http.ResponseWriter, r *http.Request) {
				http.ServeFile(w, r, filepath.Join(b.dir, "node_modules", file))
			})
		}
	})
	v := h.do("GET", "/v1/videos/"+id, key, nil)
	var video struct {
		PlaylistURL string
		Resolutions []string
	}
	_ = json.Unmarshal(v.body, &video)
	b.run(t, "players", &res, "players.mjs", append([]string{site, video.PlaylistURL}, labels...)...)
	if len(res.Players) != 3 {
		t.Errorf("%d players reported, want hls.js, shaka and video.js", len(res.Players))
	}
	for name, p := range res.Players {
		if len(p.Errors) > 0 {
			t.Errorf("%s: errors %v", name, p.Errors)
		}
		var played []string
		for _, r := range p.Rungs {
			if r.First == r.Rung && r.Height == r.Rung && r.Frames > 0 && r.PlayedTo > 0.5 {
				played = append(played, fmt.Sprintf("%dp", r.Rung))
			}
		}
		slices.Sort(played)
		if all := slices.Sorted(slices.Values(video.Resolutions)); !slices.Equal(played, all) {
			t.Errorf("%s played rungs %v from the start (%+v), want every one of %v", name, played, p.Rungs, video.Resolutions)
		}
		for _, label := range labels {
			if !slices.Contains(p.Labels, label) {
				t.Errorf("%s lists %q, not %q", name, p.Labels, label)
			}
			got := p.Cues[label]
			if len(got) != len(want[label]) {
				t.Errorf("%s, %s: %d cues, want %d: %+v", name, label, len(got), len(want[label]), got)
				continue
			}
			for i, c := range want[label] {
				g := got[i]
				if math.Abs(g.Start-c.Start.Seconds()) > 0.1 || math.Abs(g.End-c.End.Seconds()) > 0.1 || g.Text != c.Text {
					t.Errorf("%s, %s: cue %d is %.3f-%.3f %q; its WebVTT says %.3f-%.3f %q", name, label, i,
						g.Start, g.End, g.Text, c.Start.Seconds(), c.End.Seconds(), c.Text)
				}
			}
		}
	}
	t.Logf("hls.js, shaka-player and video.js show both tracks and play each of %v; generated:\n%s", video.Resolutions, vtt)
	return labels
}
