package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/apiclient"
)

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUploadCommand(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	// 240 polls a minute: within the pro plan's 300 however slowly ffmpeg
	// runs (faster ones meet the rate limit, and --wait then honours a
	// Retry-After of up to a minute).
	api := []string{"--key", key, "--url", h.url + "/v1", "--poll", "250ms"}

	out, errOut, code := runCLI(append([]string{"upload", writeFile(t, "clip.mp4", clip(t)), "--collection", "main", "--wait"}, api...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || !strings.Contains(lines[0], "COMPLETED") || !strings.HasSuffix(lines[len(lines)-1], "/hls/master.m3u8") {
		t.Fatalf("upload --wait: exit %d\n%s%s", code, out, errOut)
	}
	// The player page it points to plays that playlist.
	player := strings.TrimPrefix(lines[1], "player: ")
	page := h.get(player)
	if page.status != 200 || !strings.Contains(page.header.Get("Content-Type"), "text/html") || !bytes.Contains(page.body, []byte(`"`+lines[2]+`"`)) {
		t.Fatalf("player %s: %d\n%s", player, page.status, page.body)
	}
	if r := h.get(h.url + "/play/01ARZ3NDEKTSV4RRFFQ69G5FAV"); r.status != 404 {
		t.Fatalf("player of an unknown video: %d", r.status)
	}

	out, _, code = runCLI(append([]string{"upload", writeFile(t, "clip.mp4", clip(t)), "--collection", "main", "--wait", "--json",
		"--title", "Launch talk", "--tag", "launch", "--tag", "talk", "--meta", "order_id=A-42"}, api...)...)
	var v apiclient.Video
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Status != "COMPLETED" || v.PlaylistURL == nil {
		t.Fatalf("upload --json: exit %d %v\n%s", code, err, out)
	}
	if v.Title != "Launch talk" || strings.Join(v.Tags, ",") != "launch,talk" || v.Metadata["order_id"] != "A-42" {
		t.Fatalf("upload --title --tag --meta: %+v", v.Details)
	}

	_, errOut, code = runCLI(append([]string{"upload", writeFile(t, "bad.mp4", notAVideo(2000)), "--collection", "main", "--wait"}, api...)...)
	if code == 0 || !strings.Contains(errOut, "FAILED") || !strings.Contains(errOut, "truncated or corrupt") {
		t.Fatalf("failed video: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCLI(append([]string{"upload", writeFile(t, "notes.mp4", []byte("#EXTM3U\n#EXTINF:2,\nfile:///etc/passwd\n")), "--collection", "main"}, api...)...)
	if code == 0 || !strings.Contains(errOut, "Unsupported media type (HTTP 415)") {
		t.Fatalf("a playlist named .mp4: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCLI(append([]string{"upload", writeFile(t, "big.mp4", notAVideo(300<<10)), "--collection", "main"}, api...)...)
	if code == 0 || !strings.Contains(errOut, "File too large (HTTP 413)") {
		t.Fatalf("oversize: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCLI("upload", writeFile(t, "c.mp4", clip(t)), "--collection", "main", "--url", h.url+"/v1", "--key", "")
	if code == 0 || !strings.Contains(errOut, "API key") {
		t.Fatalf("no key: exit %d\n%s", code, errOut)
	}

	// videos list / get / delete
	out, _, code = runCLI(append([]string{"videos", "list", "--status", "COMPLETED"}, api[:4]...)...)
	if code != 0 || strings.Count(out, "COMPLETED") != 2 || !strings.Contains(out, v.ID) {
		t.Fatalf("videos list: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(append([]string{"videos", "get", v.ID}, api[:4]...)...)
	if code != 0 || !strings.Contains(out, `"playlistUrl"`) {
		t.Fatalf("videos get: exit %d\n%s", code, out)
	}
	if _, _, code = runCLI(append([]string{"videos", "delete", v.ID}, api[:4]...)...); code != 0 {
		t.Fatal("videos delete failed")
	}
	_, errOut, code = runCLI(append([]string{"videos", "get", v.ID}, api[:4]...)...)
	if code == 0 || !strings.Contains(errOut, "Not found (HTTP 404)") {
		t.Fatalf("get after delete: exit %d\n%s", code, errOut)
	}
}

func TestClientUploadReportsProgressAndErrors(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	c := apiclient.Client{BaseURL: h.url + "/v1", Key: key}
	data := clip(t)
	var last, calls int64
	up, err := c.Upload(context.Background(), bytes.NewReader(data), int64(len(data)), "c.mp4", "main", func(sent, total int64) {
		calls++
		if sent < last || total != int64(len(data)) {
			t.Errorf("progress %d/%d after %d", sent, total, last)
		}
		last = sent
	})
	if err != nil || up.Video.Status != "PENDING" || last != int64(len(data)) || calls == 0 {
		t.Fatalf("upload: %+v %v; progress reached %d of %d", up, err, last, len(data))
	}
	_, err = c.Upload(context.Background(), bytes.NewReader(data), int64(len(data)), "c.mp4", "nope", nil)
	var apiErr *apiclient.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Label != "Not found" || apiErr.Message == "" {
		t.Fatalf("unknown collection: %v", err)
	}
	bad := apiclient.Client{BaseURL: h.url + "/v1", Key: "svc_live_" + strings.Repeat("x", 32)}
	if _, err := bad.Videos(context.Background(), apiclient.ListOptions{}); !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Label != "Invalid API key" {
		t.Fatalf("bad key: %v", err)
	}
}
