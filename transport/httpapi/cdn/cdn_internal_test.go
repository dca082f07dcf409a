package cdn

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

// Only a video's published files match /cdn's paths: never an original,
// a work file, a directory or a path that climbs out.
func TestCDNPath(t *testing.T) {
	const id = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	tests := []struct {
		name string
		path string
		ok   bool
	}{
		{name: "master", path: "/cdn/" + id + "/hls/master.m3u8", ok: true},
		{name: "rendition", path: "/cdn/" + id + "/hls/720p/index.m3u8", ok: true},
		{name: "segment", path: "/cdn/" + id + "/hls/audio/seg_00001.ts", ok: true},
		{name: "fMP4 segment", path: "/cdn/" + id + "/hls/1080p/seg_00001.m4s", ok: true},
		{name: "initialization segment", path: "/cdn/" + id + "/hls/1080p/init_1.mp4", ok: true},
		{name: "one rendition's initialization segment", path: "/cdn/" + id + "/hls/audio/init.mp4", ok: true},
		{name: "another mp4 beside the segments", path: "/cdn/" + id + "/hls/1080p/original.mp4"},
		{name: "initialization segment of the master's directory", path: "/cdn/" + id + "/hls/init.mp4"},
		{name: "storyboard", path: "/cdn/" + id + "/storyboard.vtt", ok: true},
		{name: "original", path: "/cdn/" + id + "/original.mp4"},
		{name: "directory", path: "/cdn/" + id + "/hls/"},
		{name: "climbing", path: "/cdn/" + id + "/hls/../original.mp4"},
		{name: "lower-case id", path: "/cdn/" + strings.ToLower(id) + "/thumbnail.jpg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := cdnPath.MatchString(tc.path); got != tc.ok {
				t.Fatalf("%s: matched %v, want %v", tc.path, got, tc.ok)
			}
		})
	}
}

// More than maxRanges ranges are refused with 416 and Content-Range
// bytes */size before anything parses them.
func TestCheckRanges(t *testing.T) {
	tests := []struct {
		name   string
		ranges string
		ok     bool
	}{
		{name: "none", ok: true},
		{name: "one", ranges: "bytes=0-99", ok: true},
		{name: "the most", ranges: "bytes=" + strings.Repeat("0-1,", maxRanges-1) + "2-3", ok: true},
		{name: "too many", ranges: "bytes=" + strings.Repeat("0-1,", maxRanges) + "2-3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/cdn/x", nil)
			if tc.ranges != "" {
				r.Header.Set("Range", tc.ranges)
			}
			w := httptest.NewRecorder()
			err := checkRanges(w, r, 1000)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if domain.KindOf(err) != domain.Unsatisfiable || w.Header().Get("Content-Range") != "bytes */1000" {
				t.Fatalf("%v, Content-Range %q", err, w.Header().Get("Content-Range"))
			}
		})
	}
}

// A signed video's playlists and storyboard are rewritten and cached by
// the browser only; a public video's playlists follow its status.
func TestGrantCacheControl(t *testing.T) {
	tests := []struct {
		name    string
		grant   Grant
		rel     string
		rewrite bool
		cache   string
	}{
		{name: "public, processing playlist", grant: Grant{}, rel: "hls/master.m3u8", cache: "no-cache"},
		{name: "public, completed playlist", grant: Grant{completed: true}, rel: "hls/720p/index.m3u8", cache: "public, max-age=60"},
		{name: "public, completed segment", grant: Grant{completed: true}, rel: "hls/720p/seg_00000.ts", cache: "public, max-age=31536000, immutable"},
		{name: "public thumbnail", grant: Grant{completed: true}, rel: "thumbnail.jpg", cache: "public, max-age=300"},
		{name: "signed thumbnail", grant: Grant{signed: true, completed: true}, rel: "thumbnail.jpg", cache: "private, max-age=300"},
		{name: "signed playlist", grant: Grant{signed: true, completed: true}, rel: "hls/master.m3u8", rewrite: true, cache: "private, no-cache"},
		{name: "signed storyboard", grant: Grant{signed: true, completed: true}, rel: "storyboard.vtt", rewrite: true, cache: "private, no-cache"},
		{name: "signed segment", grant: Grant{signed: true, completed: true}, rel: "hls/720p/seg_00000.ts", cache: "private, max-age=3600"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, cache, rewrite := tc.grant.headers(tc.rel)
			if rewrite != tc.rewrite {
				t.Fatalf("rewrite %v, want %v", rewrite, tc.rewrite)
			}
			if cache != tc.cache {
				t.Fatalf("Cache-Control %q, want %q", cache, tc.cache)
			}
		})
	}
}
