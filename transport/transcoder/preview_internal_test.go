package transcoder

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// A preview passes as ffmpeg writes it (the transcoder's own previews pass
// in every transcode test), with or without audio, and fails
// cut short, without a video track, with its moov after its mdat, or when
// it is not an MP4 at all.
func TestCheckPreview(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ffmpegtest.Encode(t, dir, "src.mp4", 320, 180, 2, true, ffmpegtest.H264Options()...)
	mp4 := func(name string, args ...string) string {
		out := filepath.Join(dir, name)
		ffmpegtest.Run(t, append(append([]string{"-i", src}, args...), out)...)
		return out
	}
	ok := map[string]string{
		"with audio":    mp4("a.mp4", "-t", "1", "-c:v", "libx264", "-c:a", "aac", "-movflags", "+faststart"),
		"without audio": mp4("v.mp4", "-t", "1", "-an", "-c:v", "libx264", "-movflags", "+faststart"),
	}
	for name, file := range ok {
		if err := checkPreview(file); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	whole, err := os.ReadFile(ok["with audio"])
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	bad := map[string]string{
		"cut short":         write("cut.mp4", whole[:len(whole)*2/3]),
		"cut in a header":   write("head.mp4", whole[:len(whole)-3]),
		"audio only":        mp4("audio.mp4", "-t", "1", "-vn", "-c:a", "aac", "-movflags", "+faststart"),
		"moov after mdat":   mp4("late.mp4", "-t", "1", "-c:v", "libx264", "-c:a", "aac"),
		"not an MP4":        write("text.mp4", []byte("#EXTM3U\n#EXTINF:1,\nfile:///etc/passwd\n")),
		"empty":             write("empty.mp4", nil),
		"a huge 64-bit box": write("huge.mp4", append([]byte{0, 0, 0, 1, 'f', 't', 'y', 'p', 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, whole...)),
		"missing":           filepath.Join(dir, "nothing.mp4"),
	}
	for name, file := range bad {
		if err := checkPreview(file); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}

// The download rendition passes up to 1080 on its short side, either way
// round, with the size its tkhd gives; a larger one fails, as does every
// file checkPreview refuses.
func TestCheckDownload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mp4 := func(name string, w, h int) string {
		return ffmpegtest.Encode(t, dir, name, w, h, 0.08, true, "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-movflags", "+faststart")
	}
	for _, tt := range []struct {
		w, h int
		ok   bool
	}{{1920, 1080, true}, {1080, 1920, true}, {640, 360, true}, {1920, 1088, false}, {1088, 1920, false}} {
		file := mp4(fmt.Sprintf("%dx%d.mp4", tt.w, tt.h), tt.w, tt.h)
		var w, h int
		err := withTopBoxes(file, func(f *os.File, top []box) error {
			trak, err := videoTrack(f, top)
			if err == nil {
				w, h, err = trackSize(f, trak)
			}
			return err
		})
		if err != nil || w != tt.w || h != tt.h {
			t.Errorf("%dx%d: read %dx%d, %v", tt.w, tt.h, w, h, err)
		}
		if err := checkDownload(file); (err == nil) != tt.ok {
			t.Errorf("%dx%d: checkDownload = %v", tt.w, tt.h, err)
		}
	}
	late := filepath.Join(dir, "late.mp4")
	ffmpegtest.Run(t, "-i", mp4("src.mp4", 320, 180), "-c", "copy", late)
	if err := checkDownload(late); err == nil {
		t.Error("moov after mdat: passed")
	}
}
