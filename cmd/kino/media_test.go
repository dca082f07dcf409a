package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/transport/s3"
	"github.com/kino-video/kino/transport/s3/s3test"
)

// With --media nats or s3 a worker that shares no directory with kino
// serve transcodes a video: it fetches the original from the object store
// and publishes the outputs there, and kino serve plays them on /cdn
// (ranges, ETag) with nothing of the video on its disk, itself (nats) or
// by redirects to the bucket (s3, --media-redirect). A delete removes
// them.
func TestMediaInTheObjectStoreNeedsNoSharedDirectory(t *testing.T) {
	t.Parallel()
	t.Run("nats", func(t *testing.T) {
		t.Parallel()
		testMediaInAnObjectStore(t, mediaNATS, s3.Config{}, nil)
	})
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		srv := s3test.Start(t)
		c := srv.Bucket(t)
		c.Prefix = "media/"
		testMediaInAnObjectStore(t, mediaS3, c, []string{"--s3-endpoint", c.Endpoint, "--s3-bucket", c.Bucket, "--s3-region", c.Region,
			"--s3-path-style", "--s3-prefix", c.Prefix, "--s3-credentials-file", c.CredentialsFile})
	})
}

func testMediaInAnObjectStore(t *testing.T, kind string, s3c s3.Config, s3Flags []string) {
	redirect := kind == mediaS3
	h := start(t, t.TempDir(), func(c *Config) { c.Media, c.S3, c.MediaCache, c.MediaRedirect = kind, s3c, 64, redirect })
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	// 4 s: the browser plays past 1 s, then 0.5 s more after a level switch.
	id := h.uploadID(key, "main", "a.mp4", makeClip(t, "a.mp4", 426, 240, 4, true))

	elsewhere := t.TempDir()
	passable(t, elsewhere) // the worker's flags run ffmpeg as nobody under root
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- run(ctx, append([]string{"worker", "--media", kind, "--nats", h.nats, "--data", elsewhere,
			"--nats-creds", natsserver.CredsFile(h.data, eventstore.RoleWorker), "--workers", "1", "--webhook-workers", "0", "--log-level", "error"}, s3Flags...), &out, &errb)
	}()
	stopped := false
	stop := func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		return <-done
	}
	defer stop()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kino worker: %s", errb.String())
		}
	})

	v := h.waitStatus(key, id, domain.StatusCompleted)
	if _, err := os.Stat(filepath.Join(h.data, "media", id)); !os.IsNotExist(err) {
		t.Fatalf("the video has a directory on kino serve's disk: %v", err)
	}
	master := h.get(v["playlistUrl"].(string))
	if master.status != 200 || master.header.Get("Content-Type") != "application/vnd.apple.mpegurl" || master.header.Get("Cache-Control") != "public, max-age=60" {
		t.Fatalf("master: %d %v", master.status, master.header)
	}
	if _, hgt := ffprobe(t, h.m.CDNURL+"/"+id+"/hls/240p/index.m3u8").video(); hgt != 240 {
		t.Fatalf("240p decodes at height %d", hgt)
	}
	preview := h.get(v["previewUrl"].(string))
	etag := preview.header.Get("ETag")
	if preview.status != 200 || etag == "" || preview.header.Get("Last-Modified") == "" || preview.header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("preview: %d %v", preview.status, preview.header)
	}
	part := h.get(v["previewUrl"].(string), "Range", "bytes=100-199")
	if part.status != 206 || !bytes.Equal(part.body, preview.body[100:200]) {
		t.Fatalf("range: %d, %d bytes", part.status, len(part.body))
	}
	if again := h.get(v["previewUrl"].(string), "If-None-Match", etag); again.status != 304 {
		t.Fatalf("If-None-Match: %d", again.status)
	}
	// Read again, from kino serve's local copy: the same bytes.
	if again := h.get(v["previewUrl"].(string)); again.status != 200 || !bytes.Equal(again.body, preview.body) || again.header.Get("ETag") != etag {
		t.Fatalf("preview read again: %d, %d bytes", again.status, len(again.body))
	}
	if redirect {
		// hls.js in Chromium, on a page of another origin, plays it
		// through the redirects to the bucket (CORS), and shows its
		// thumbnail and preview.
		if res := browserTools(t).playback(t, v, "240"); res.PlayedTo <= 1 || len(res.Thumbnail) != 2 || res.Thumbnail[0] == 0 {
			t.Fatalf("playback through the bucket: %+v", res)
		}
		wantRedirects(t, h, key, id, v["previewUrl"].(string), s3c.Endpoint)
	} else if entries, err := os.ReadDir(filepath.Join(h.data, "media", ".cache")); err != nil || len(entries) == 0 {
		t.Fatalf("no local copies: %v", err)
	}
	for _, p := range []string{"/original.mp4", "/index.json", "/hls/"} {
		if r := h.get(h.m.CDNURL + "/" + id + p); r.status != 404 {
			t.Errorf("GET %s: %d, want 404", p, r.status)
		}
	}

	// Deleted: 404, although kino serve still holds local copies.
	wantStatus(t, h.do("DELETE", "/v1/videos/"+id, key, nil), 200)
	for _, u := range []string{v["playlistUrl"].(string), v["thumbnailUrl"].(string), v["previewUrl"].(string)} {
		if r := h.get(u); r.status != 404 {
			t.Fatalf("%s after delete: %d", u, r.status)
		}
	}
	if err := h.m.media.Fetch(context.Background(), id, ".mp4", filepath.Join(t.TempDir(), "x")); !domain.IsKind(err, domain.NotFound) {
		t.Fatalf("original after delete: %v", err)
	}
	if kind == mediaS3 {
		// Nothing of the video is left in the bucket.
		store, err := s3.Open(context.Background(), s3c)
		if err != nil {
			t.Fatal(err)
		}
		if left, err := store.List(context.Background()); err != nil || len(left) != 0 {
			t.Fatalf("objects left in the bucket: %+v %v", left, err)
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("kino worker exit %d: %s", code, errb.String())
	}
}

// wantRedirects checks /cdn's redirects to the bucket at endpoint: a GET
// of the preview is a 302 to a presigned URL there, kept by the browser
// only; a HEAD is answered by kino; a signed video's file needs its token
// before any redirect.
func wantRedirects(t *testing.T, h *harness, key, id, previewURL, endpoint string) {
	t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(method, u string) *http.Response {
		req, _ := http.NewRequest(method, u, nil)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := get("GET", previewURL)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, endpoint+"/") ||
		!strings.Contains(loc, "X-Amz-Signature=") || resp.Header.Get("Cache-Control") != "private, max-age=60" {
		t.Fatalf("GET preview: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := get("HEAD", previewURL); resp.StatusCode != http.StatusOK || resp.ContentLength <= 0 || resp.Header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("HEAD preview: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := get("GET", h.m.CDNURL+"/"+id+"/hls/master.m3u8"); resp.StatusCode != http.StatusOK {
		t.Fatalf("playlists are served by kino: %d", resp.StatusCode)
	}
	if resp := get("GET", h.m.CDNURL+"/"+id+"/hls/9999p/seg_00000.ts"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a file the video lacks: %d", resp.StatusCode)
	}

	wantStatus(t, h.do("PATCH", "/v1/videos/"+id, key, map[string]any{"playbackPolicy": "signed"}), 200)
	if resp := get("GET", previewURL); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
		t.Fatalf("signed, no token: %d %v", resp.StatusCode, resp.Header)
	}
	r := h.do("POST", "/v1/videos/"+id+"/playback-tokens", key, map[string]any{"ttl": 600})
	wantStatus(t, r, 201)
	var tok struct{ Token string }
	if err := json.Unmarshal(r.body, &tok); err != nil {
		t.Fatal(err)
	}
	resp = get("GET", previewURL+"?token="+tok.Token)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("signed, with its token: %d %v", resp.StatusCode, resp.Header)
	}
	signed := h.get(resp.Header.Get("Location"))
	if signed.status != 200 || signed.header.Get("Cache-Control") != "private, max-age=3600" {
		t.Fatalf("the signed preview in the bucket: %d %v", signed.status, signed.header)
	}
}
