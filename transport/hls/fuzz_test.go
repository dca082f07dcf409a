package hls

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse reads anything as a master and as a media playlist: never a
// panic; what reads writes back to bytes that read and write back to
// themselves, no larger than twice what was read; and rewriting each line
// of it keeps every line break.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.m3u8"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "#EXTM3U", "#EXTM3U\r\n#EXTINF:4,\r\nseg.ts\r\n", "#EXTM3U\n#EXT-X-STREAM-INF:A=\"x\n",
		"#EXTM3U\n#EXT-X-MEDIA:URI=\"a\"x,URI=\"b\"\n", "#EXTM3U\n#EXTINF:0x1p2,\nseg.ts\n", "#EXTM3U\x00\n",
		"#EXTM3U\n#EXT-X-STREAM-INF:\n x \n\n", "#EXTM3U\n#EXTINF:1e308,\na\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, rewrite := range []func([]byte) ([]byte, error){rewriteMaster, rewriteMedia} {
			out, err := rewrite(data)
			if errors.Is(err, errUnread) {
				continue
			}
			if err != nil {
				t.Fatalf("read but not written: %v", err)
			}
			if len(out) > 2*len(data)+16 {
				t.Fatalf("%d bytes written of %d read", len(out), len(data))
			}
			back, err := rewrite(out)
			if err != nil {
				t.Fatalf("written but not read back: %v\n%q", err, out)
			}
			if string(back) != string(out) {
				t.Fatalf("not stable:\n%q\n%q", out, back)
			}
		}
		for l := range strings.Lines(string(data)) {
			got := RewriteURIs(strings.TrimRight(l, "\n"), func(string) string { return "u" })
			if strings.Contains(got, "\n") {
				t.Fatalf("RewriteURIs(%q) = %q", l, got)
			}
		}
	})
}

// errUnread is a playlist the rewrite could not read.
var errUnread = errors.New("not read")

// rewriteMaster reads data as a master playlist and writes it back.
func rewriteMaster(data []byte) ([]byte, error) {
	m, err := ParseMaster(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnread, err)
	}
	return m.Encode()
}

// rewriteMedia reads data as a media playlist and writes it back.
func rewriteMedia(data []byte) ([]byte, error) {
	m, err := ParseMedia(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnread, err)
	}
	return m.Encode()
}
