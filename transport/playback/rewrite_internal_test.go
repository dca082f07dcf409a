package playback

import (
	"bytes"
	"strings"
	"testing"
)

// The rewriting itself, on hostile playlists: only relative URIs get the
// token (a token never goes to another host), a quoted value that merely
// contains URI= is not an attribute, existing queries get &token=, and
// nothing but the token is added.
func TestRewritePlaylist(t *testing.T) {
	const tok = "aaa.bbb.ccc"
	tests := []struct{ name, in, want string }{
		{"uri lines", "#EXTM3U\nseg_00000.ts\n\nseg_00001.ts", "#EXTM3U\nseg_00000.ts?token=aaa.bbb.ccc\n\nseg_00001.ts?token=aaa.bbb.ccc"},
		{"crlf", "#EXTM3U\r\n180p/index.m3u8\r\n", "#EXTM3U\r\n180p/index.m3u8?token=aaa.bbb.ccc\r\n"},
		{"existing query", "seg.ts?x=1", "seg.ts?x=1&token=aaa.bbb.ccc"},
		{"fragment", "seg.ts#t=1", "seg.ts?token=aaa.bbb.ccc#t=1"},
		{"absolute URIs untouched", "https://evil.example/steal\n//evil.example/x\ndata:,x", "https://evil.example/steal\n//evil.example/x\ndata:,x"},
		{"uri attributes", `#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",URI="audio/index.m3u8"` + "\n" + `#EXT-X-MAP:URI="init.mp4",BYTERANGE="1@0"`,
			`#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",URI="audio/index.m3u8?token=aaa.bbb.ccc"` + "\n" + `#EXT-X-MAP:URI="init.mp4?token=aaa.bbb.ccc",BYTERANGE="1@0"`},
		{"URI= inside a quoted value", `#EXT-X-MEDIA:NAME="x,URI=y",URI="a.m3u8"`, `#EXT-X-MEDIA:NAME="x,URI=y",URI="a.m3u8?token=aaa.bbb.ccc"`},
		{"an absolute URI attribute", `#EXT-X-KEY:METHOD=AES-128,URI="https://keys.example/k"`, `#EXT-X-KEY:METHOD=AES-128,URI="https://keys.example/k"`},
		{"unterminated quote", `#EXT-X-MEDIA:NAME="x,URI="a.m3u8`, `#EXT-X-MEDIA:NAME="x,URI="a.m3u8`},
		{"comments", "# URI=\"x\"\n#EXTINF:2.0,\nseg.ts", "# URI=\"x\"\n#EXTINF:2.0,\nseg.ts?token=aaa.bbb.ccc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(rewritePlaylist([]byte(tc.in), tok)); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func rewritePlaylist(pl []byte, token string) []byte {
	var out bytes.Buffer
	_ = Rewrite(&out, bytes.NewReader(pl), token, false)
	return out.Bytes()
}

// A storyboard's cues get the token on their image references only.
func TestRewriteStoryboard(t *testing.T) {
	in := "WEBVTT\n\n00:00.000 --> 00:02.000\nstoryboard.jpg#xywh=0,0,160,90\n\nNOTE x.jpg\n"
	want := "WEBVTT\n\n00:00.000 --> 00:02.000\nstoryboard.jpg?token=t.t.t#xywh=0,0,160,90\n\nNOTE x.jpg\n"
	var out bytes.Buffer
	if err := Rewrite(&out, strings.NewReader(in), "t.t.t", true); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}
