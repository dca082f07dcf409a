package ffmpegtest

import (
	"os"
	"path/filepath"
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
