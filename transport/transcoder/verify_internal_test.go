package transcoder

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kino-video/kino/transport/hls"
)

// An #EXT-X-MAP names a whole file beside its playlist, named as ffmpeg
// names it, or nothing is published.
func TestInitSegmentOf(t *testing.T) {
	for tag, want := range map[hls.Tag]string{
		`#EXT-X-MAP:URI="init.mp4"`:                     "init.mp4",
		`#EXT-X-MAP:URI="init_12.mp4"`:                  "init_12.mp4",
		`#EXT-X-MAP:URI="../init.mp4"`:                  "",
		`#EXT-X-MAP:URI="/tmp/init.mp4"`:                "",
		`#EXT-X-MAP:URI="https://example.com/init.mp4"`: "",
		`#EXT-X-MAP:URI="init.mp4",BYTERANGE="720@0"`:   "",
		`#EXT-X-MAP:URI="original.mp4"`:                 "",
		`#EXT-X-MAP:URI="init_1.mp4.m3u8"`:              "",
		`#EXT-X-MAP:URI=init.mp4`:                       "",
		`#EXT-X-MAP:`:                                   "",
	} {
		got, err := initSegmentOf(tag)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("%s: %q %v, want %q", tag, got, err, want)
		}
	}
}

// A rendition's playlist lists whole files beside it and names nothing
// else: no second initialization segment or key between its segments.
func TestCheckMediaPlaylist(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"init_1.mp4", "seg_00000.m4s", "seg_00001.m4s"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const head = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n"
	for name, tt := range map[string]struct {
		playlist string
		ok       bool
	}{
		"whole":                     {head + `#EXT-X-MAP:URI="init_1.mp4"` + "\n#EXTINF:4.0,\nseg_00000.m4s\n#EXTINF:1.0,\nseg_00001.m4s\n#EXT-X-ENDLIST\n", true},
		"no initialization segment": {head + "#EXTINF:4.0,\nseg_00000.m4s\n#EXT-X-ENDLIST\n", false},
		"a missing one":             {head + `#EXT-X-MAP:URI="init_2.mp4"` + "\n#EXTINF:4.0,\nseg_00000.m4s\n#EXT-X-ENDLIST\n", false},
		"a second one between segments": {head + `#EXT-X-MAP:URI="init_1.mp4"` + "\n#EXTINF:4.0,\nseg_00000.m4s\n" +
			`#EXT-X-MAP:URI="init_1.mp4"` + "\n#EXTINF:1.0,\nseg_00001.m4s\n#EXT-X-ENDLIST\n", false},
		"a key between segments": {head + `#EXT-X-MAP:URI="init_1.mp4"` + "\n#EXTINF:4.0,\nseg_00000.m4s\n" +
			`#EXT-X-KEY:METHOD=AES-128,URI="https://example.com/k"` + "\n#EXTINF:1.0,\nseg_00001.m4s\n#EXT-X-ENDLIST\n", false},
		"a key in the header": {head + `#EXT-X-KEY:METHOD=AES-128,URI="k"` + "\n" + `#EXT-X-MAP:URI="init_1.mp4"` + "\n#EXTINF:4.0,\nseg_00000.m4s\n#EXT-X-ENDLIST\n", false},
	} {
		if err := os.WriteFile(filepath.Join(dir, "index.m3u8"), []byte(tt.playlist), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := checkMediaPlaylist(dir, "index.m3u8"); (err == nil) != tt.ok {
			t.Errorf("%s: %v, want ok %t", name, err, tt.ok)
		}
	}
}
