package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kino-video/kino/domain"
)

// TestPlaylistUploadPublishesNothing: an upload named innocent.mp4 whose
// bytes are an HLS playlist pointing at another account's original (by a
// relative path, as a file:// URL and as a plain absolute path) never gets
// ffmpeg to read it. The upload is refused (415) or ends FAILED, and /cdn
// serves nothing for it.
func TestPlaylistUploadPublishesNothing(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	victim := h.account("victim", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", victim, map[string]string{"slug": "v", "name": "V"}), 201)
	secret := h.uploadID(victim, "v", "secret.mkv", makeClip(t, "secret.mkv", 320, 180, 1, true))
	h.waitStatus(victim, secret, domain.StatusCompleted)
	original := filepath.Join(h.data, "media", secret, "original.mkv")

	mallory := h.account("mallory", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", mallory, map[string]string{"slug": "m", "name": "M"}), 201)
	for _, seg := range []string{"../" + secret + "/original.mkv", "file://" + original, original} {
		t.Run(seg, func(t *testing.T) {
			playlist := "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n" + seg + "\n#EXT-X-ENDLIST\n"
			r := h.upload(mallory, "m", "innocent.mp4", []byte(playlist))
			if r.status == 415 {
				return // refused at upload: nothing was stored
			}
			if r.status != 202 {
				t.Fatalf("upload: %d %s", r.status, r.body)
			}
			id := r.json(t)["video"].(map[string]any)["id"].(string)
			v := h.waitStatus(mallory, id, domain.StatusFailed)
			if v["errorMessage"] != "Not a video file kino can read." || v["playlistUrl"] != nil {
				t.Fatalf("failed video: %v", v)
			}
			cdn := h.m.CDNURL + "/" + id
			for _, p := range []string{"/hls/master.m3u8", "/hls/180p/index.m3u8", "/hls/180p/seg_00000.m4s", "/hls/180p/init_1.mp4", "/thumbnail.jpg", "/preview.mp4"} {
				if got := h.get(cdn + p); got.status != 404 || bytes.Contains(got.body, []byte("#EXTM3U")) {
					t.Errorf("GET %s: %d, %d bytes; want 404", p, got.status, len(got.body))
				}
			}
		})
	}
}

// passable lets a root kino's --ffmpeg-user (nobody) pass through dir and
// the directory go test made it in (both 0700), as kino requires of every
// directory above <data>/media.
func passable(t testing.TB, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
}
