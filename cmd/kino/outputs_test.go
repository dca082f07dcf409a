package main

import (
	"encoding/binary"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

// A COMPLETED video of a collection with downloads on (the default) has
// storyboardUrl and downloadUrl, and /cdn serves them: the WebVTT track,
// the sprite every cue points at (relative to the track), and an MP4 with
// its moov first. A collection with downloads off gives a storyboard and
// no download, and /cdn has none to serve.
func TestStoryboardAndDownloadThroughTheBinary(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]any{"slug": "main", "name": "Main"}), 201)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]any{"slug": "nodl", "name": "No downloads", "downloads": false}), 201)
	data := makeClip(t, "a.mp4", 640, 360, 3, true)
	id := h.uploadID(key, "main", "a.mp4", data)
	plain := h.uploadID(key, "nodl", "a.mp4", data)

	v := h.waitStatus(key, id, domain.StatusCompleted)
	base := h.m.CDNURL + "/" + id + "/"
	if v["storyboardUrl"] != base+"storyboard.vtt" || v["downloadUrl"] != base+"download.mp4" {
		t.Fatalf("storyboardUrl %v downloadUrl %v", v["storyboardUrl"], v["downloadUrl"])
	}
	track := h.get(v["storyboardUrl"].(string))
	if track.status != 200 || !strings.HasPrefix(track.header.Get("Content-Type"), "text/vtt") || !strings.HasPrefix(string(track.body), "WEBVTT\n") {
		t.Fatalf("track: %d %q %q", track.status, track.header.Get("Content-Type"), track.body)
	}
	refs := regexp.MustCompile(`(?m)^(\S+)#xywh=\d+,\d+,\d+,\d+$`).FindAllStringSubmatch(string(track.body), -1)
	if len(refs) != 3 {
		t.Fatalf("%d cues in %q, want one a second", len(refs), track.body)
	}
	trackURL, _ := url.Parse(v["storyboardUrl"].(string))
	for _, ref := range refs {
		img, err := trackURL.Parse(ref[1])
		if err != nil {
			t.Fatal(err)
		}
		if sprite := h.get(img.String()); sprite.status != 200 || sprite.header.Get("Content-Type") != "image/jpeg" || len(sprite.body) < 100 {
			t.Fatalf("sprite %s: %d %q", img, sprite.status, sprite.header.Get("Content-Type"))
		}
	}
	dl := h.get(v["downloadUrl"].(string))
	if dl.status != 200 || dl.header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("download: %d %q", dl.status, dl.header.Get("Content-Type"))
	}
	boxes := mp4Boxes(dl.body)
	if m, d := slices.Index(boxes, "moov"), slices.Index(boxes, "mdat"); m < 0 || d < 0 || m > d {
		t.Fatalf("download boxes %v: want moov before mdat", boxes)
	}
	if w, hgt := ffprobe(t, v["downloadUrl"].(string)).video(); w != 640 || hgt != 360 {
		t.Fatalf("download is %dx%d, want the 360p rung", w, hgt)
	}

	p := h.waitStatus(key, plain, domain.StatusCompleted)
	if p["storyboardUrl"] != h.m.CDNURL+"/"+plain+"/storyboard.vtt" || p["downloadUrl"] != nil {
		t.Fatalf("downloads off: storyboardUrl %v downloadUrl %v", p["storyboardUrl"], p["downloadUrl"])
	}
	if r := h.get(h.m.CDNURL + "/" + plain + "/download.mp4"); r.status != 404 {
		t.Fatalf("download of a video without one: %d", r.status)
	}
}

// mp4Boxes lists the types of an MP4's top-level boxes in order.
func mp4Boxes(b []byte) []string {
	var out []string
	for off := uint64(0); off+8 <= uint64(len(b)); {
		size := uint64(binary.BigEndian.Uint32(b[off:]))
		if size == 1 && off+16 <= uint64(len(b)) {
			size = binary.BigEndian.Uint64(b[off+8:])
		}
		if size < 8 {
			return append(out, "?")
		}
		out = append(out, string(b[off+4:off+8]))
		off += size
	}
	return out
}
