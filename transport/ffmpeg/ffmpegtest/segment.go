package ffmpegtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Segment is a file a decoder can open alone holding segment seg of the
// rendition whose files are in dir: an fMP4 segment (.m4s) after the
// rendition's initialization segment (init*.mp4), as a player joins them;
// an MPEG-TS segment as it is.
func Segment(t testing.TB, dir, seg string) string {
	t.Helper()
	if !strings.HasSuffix(seg, ".m4s") {
		return filepath.Join(dir, seg)
	}
	inits, err := filepath.Glob(filepath.Join(dir, "init*.mp4"))
	if err != nil || len(inits) != 1 {
		t.Fatalf("initialization segments of %s: %v %v, want one", dir, inits, err)
	}
	init, err := os.ReadFile(inits[0])
	if err != nil {
		t.Fatal(err)
	}
	media, err := os.ReadFile(filepath.Join(dir, seg))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(seg, ".m4s")+".mp4")
	if err := os.WriteFile(out, append(init, media...), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// Segments are the segments of the rendition whose files are in dir, in
// order, each as Segment gives it.
func Segments(t testing.TB, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "seg_*"))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Segment(t, dir, filepath.Base(n))
	}
	return out
}

// decodedLine is ffmpeg's verbose summary of one input's video stream.
var decodedLine = regexp.MustCompile(`Input stream #(\d+):\d+ \(video\): (\d+) packets read \(\d+ bytes\); (\d+) frames decoded`)

// Decoded decodes the first video stream of each file on its own (one
// ffmpeg for them all, each file an input of its own decoded to a null
// output) and returns, per file, the packets read and the frames decoded:
// a segment a player can start at decodes every packet it holds.
func Decoded(t testing.TB, files ...string) (packets, frames []int) {
	t.Helper()
	args := []string{"-nostdin", "-hide_banner", "-v", "verbose"}
	for _, f := range files {
		args = append(args, "-i", f)
	}
	for i := range files {
		args = append(args, "-map", strconv.Itoa(i)+":v:0", "-f", "null", "-")
	}
	out, err := exec.Command("ffmpeg", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg %q: %v\n%s", args, err, out)
	}
	packets, frames = make([]int, len(files)), make([]int, len(files))
	seen := 0
	for _, m := range decodedLine.FindAllStringSubmatch(string(out), -1) {
		i, _ := strconv.Atoi(m[1])
		if i < len(files) {
			packets[i], _ = strconv.Atoi(m[2])
			frames[i], _ = strconv.Atoi(m[3])
			seen++
		}
	}
	if seen != len(files) {
		t.Fatalf("ffmpeg summed up %d video streams of %d inputs:\n%s", seen, len(files), out)
	}
	return packets, frames
}
