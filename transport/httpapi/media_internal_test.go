package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/httpapi/player"
)

// completedVideo uploads a file and records a finished transcode for it
// (as the transcoder would, worker identity included), with a thumbnail on
// disk, and returns its id.
func (a *testAPI) completedVideo(key string) string {
	a.t.Helper()
	r := a.upload(key, "clip.mp4", []byte("\x00\x00\x00\x18ftypmp42 video"))
	if r.status != 202 {
		a.t.Fatalf("upload: %d %s", r.status, r.body)
	}
	var up struct{ Video struct{ ID string } }
	if err := json.Unmarshal(r.body, &up); err != nil {
		a.t.Fatal(err)
	}
	id := up.Video.ID
	ctx := context.Background()
	if _, err := eventstore.Execute[domain.Video](ctx, a.store, videoStream(id), domain.StartTranscode{Worker: "worker-host-7.internal:4242", MaxAttempts: 3}); err != nil {
		a.t.Fatal(err)
	}
	res, err := eventstore.Execute[domain.Video](ctx, a.store, videoStream(id), domain.CompleteTranscode{
		Duration: 1, Width: 320, Height: 180, Resolutions: []string{"180p"}, ProcessedSize: 100})
	if err != nil {
		a.t.Fatal(err)
	}
	a.settle(res.LastSeq())
	dir, err := a.media.Dir(id)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "thumbnail.jpg"), make([]byte, 1000), 0o644); err != nil {
		a.t.Fatal(err)
	}
	return id
}

// /cdn serves at most 16 ranges per request; more are refused with 416
// and the error body, at the cost of counting commas.
func TestCDNRangeCap(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	id := a.completedVideo(key)
	ranges := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = strconv.Itoa(i*2) + "-" + strconv.Itoa(i*2)
		}
		return "bytes=" + strings.Join(parts, ",")
	}
	get := func(rangeHeader string) response {
		req, _ := http.NewRequest("GET", a.srv.URL+"/cdn/"+id+"/thumbnail.jpg", nil)
		if rangeHeader != "" {
			req.Header.Set("Range", rangeHeader)
		}
		return a.request(req, "")
	}
	tests := []struct {
		name   string
		header string
		status int
	}{
		{name: "no range", header: "", status: 200},
		{name: "one range", header: "bytes=0-99", status: 206},
		{name: "sixteen ranges", header: ranges(16), status: 206},
		{name: "seventeen ranges", header: ranges(17), status: 416},
		{name: "forty thousand ranges", header: ranges(40000), status: 416},
		{name: "range beyond the file", header: "bytes=5000-6000", status: 416},
		{name: "malformed range", header: "bytes=x-y", status: 416},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := get(tc.header)
			if tc.status == 416 {
				wantError(t, r, 416, "Range not satisfiable")
				if r.header.Get("Content-Range") != "bytes */1000" || r.header.Get("Cache-Control") != "" {
					t.Fatalf("416 headers: %v", r.header)
				}
				return
			}
			if r.status != tc.status {
				t.Fatalf("status %d, want %d", r.status, tc.status)
			}
		})
	}
}

// A tenant reading a video's events sees no worker identity (host:pid);
// the events keep their shape otherwise.
func TestVideoEventsHideTheWorker(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	id := a.completedVideo(key)
	r := a.do("GET", "/v1/videos/"+id+"/events", key, "")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), "worker-host-7") || strings.Contains(string(r.body), "4242") || strings.Contains(string(r.body), `"worker"`) {
		t.Fatalf("events show the worker: %s", r.body)
	}
	var got struct {
		Events []struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range got.Events {
		types = append(types, e.Type)
		if e.Type == domain.TypeTranscodeStarted && (e.Data["attempt"] != float64(1) || e.Data["account"] != "acme" || len(e.Data) != 2) {
			t.Fatalf("TranscodeStarted data: %v", e.Data)
		}
	}
	if strings.Join(types, ",") != "UploadAccepted,TranscodeStarted,TranscodePlayable,TranscodeSucceeded" {
		t.Fatalf("event types %v", types)
	}
}

var inlineScript = regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`)

// /play: a strict CSP (nothing inline, scripts and styles from kino,
// media from the cdn origin), nosniff, a referrer policy, frame-ancestors;
// hls.js from kino itself, never from a public CDN.
func TestPlayPageHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		ancestors []string
		wantFA    string
	}{
		{name: "default", wantFA: "frame-ancestors 'self'"},
		{name: "operator allows embedding", ancestors: []string{"https://blog.example.com", "https://*.example.org"},
			wantFA: "frame-ancestors 'self' https://blog.example.com https://*.example.org"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAPI(t, func(c *Config) { c.Playback.FrameAncestors = tc.ancestors })
			key := a.account("acme", domain.PlanPro)
			id := a.completedVideo(key)
			r := a.do("GET", "/play/"+id, "", "")
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			// HEAD answers as GET does, without the page.
			if h := a.do("HEAD", "/play/"+id, "", ""); h.status != 200 || h.header.Get("Content-Security-Policy") != r.header.Get("Content-Security-Policy") {
				t.Fatalf("HEAD /play: %d %v", h.status, h.header)
			}
			csp := r.header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'",
				"media-src 'self' http://cdn.example.test:8443 blob:", "connect-src 'self' http://cdn.example.test:8443",
				"object-src 'none'", "base-uri 'none'", tc.wantFA} {
				if !strings.Contains(csp, want) {
					t.Fatalf("CSP %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe") || strings.Contains(csp, "*;") {
				t.Fatalf("CSP allows too much: %q", csp)
			}
			if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Referrer-Policy") != "no-referrer" {
				t.Fatalf("headers: %v", r.header)
			}
			if xfo := r.header.Get("X-Frame-Options"); (xfo == "SAMEORIGIN") != (len(tc.ancestors) == 0) {
				t.Fatalf("X-Frame-Options %q", xfo)
			}
			page := string(r.body)
			if inlineScript.MatchString(page) || strings.Contains(page, "style=") || strings.Contains(page, "<style") {
				t.Fatalf("inline script or style:\n%s", page)
			}
			if strings.Contains(page, "jsdelivr") || strings.Contains(page, "https://") {
				t.Fatalf("page loads from elsewhere:\n%s", page)
			}
			if !strings.Contains(page, `<script src="/assets/play.js"></script>`) || !strings.Contains(page, `data-src="http://cdn.example.test:8443/cdn/`+id+`/hls/master.m3u8"`) {
				t.Fatalf("page:\n%s", page)
			}
			if player.AssetsBuilt() != strings.Contains(page, `<script src="/assets/hls.min.js"></script>`) || player.AssetsBuilt() == strings.Contains(page, "player assets were not built") {
				t.Fatalf("hls.js built: %v; page:\n%s", player.AssetsBuilt(), page)
			}
		})
	}
}

func TestAssets(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	r := a.do("GET", "/assets/play.js", "", "")
	if r.status != 200 || r.header.Get("Content-Type") != "text/javascript; charset=utf-8" || r.header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(string(r.body), "data-src") {
		t.Fatalf("play.js: %d %v", r.status, r.header)
	}
	if r := a.do("GET", "/assets/play.css", "", ""); r.status != 200 || r.header.Get("Content-Type") != "text/css; charset=utf-8" {
		t.Fatalf("play.css: %d %v", r.status, r.header)
	}
	r = a.do("GET", "/assets/hls.min.js", "", "")
	if player.AssetsBuilt() && (r.status != 200 || len(r.body) < 100000) {
		t.Fatalf("hls.min.js: %d, %d bytes", r.status, len(r.body))
	}
	if !player.AssetsBuilt() {
		wantError(t, r, 404, "Not found")
	}
	for _, p := range []string{"/assets/", "/assets/missing.js", "/assets/..%2fplay.go", "/assets/play.go"} {
		if r := a.do("GET", p, "", ""); r.status != 404 {
			t.Fatalf("%s: %d", p, r.status)
		}
	}
	if err := player.CheckOrigin("https://a.example; script-src *"); err == nil {
		t.Fatal("an origin that breaks out of the CSP was accepted")
	}
	cfg := a.s.cfg
	cfg.Playback.FrameAncestors = []string{"https://ok.example", "javascript:alert(1)"}
	if _, err := New(cfg); err == nil {
		t.Fatal("a bad frame ancestor was accepted")
	}
}

// /cdn never follows a symlink, wherever it stands on the way to a file:
// one planted in a video's outputs (by a process of ffmpeg's user) would
// otherwise serve any file kino can read, such as a NATS seed.
func TestCDNRefusesSymlinks(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	id := a.completedVideo(key)
	dir, err := a.media.Dir(id)
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "serve.nk")
	if err := os.WriteFile(secret, []byte("SUAM-the-seed"), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "240p")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(elsewhere, "seg_00000.ts"), []byte("SUAM-the-seed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "hls", "180p"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"preview.mp4":           secret,
		"hls/180p/seg_00000.ts": secret,
		"hls/240p":              elsewhere,
		"hls/master.m3u8":       filepath.Join(dir, "thumbnail.jpg"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"preview.mp4", "hls/180p/seg_00000.ts", "hls/240p/seg_00000.ts", "hls/master.m3u8"} {
		r := a.do("GET", "/cdn/"+id+"/"+path, "", "")
		if strings.Contains(string(r.body), "SUAM") {
			t.Fatalf("%s served the linked file", path)
		}
		wantError(t, r, 404, "Not found")
	}
	if r := a.do("GET", "/cdn/"+id+"/thumbnail.jpg", "", ""); r.status != 200 {
		t.Fatalf("the plain thumbnail: %d", r.status)
	}
}
