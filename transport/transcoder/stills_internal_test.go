package transcoder

import (
	"bytes"
	"context"
	"image/jpeg"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/media"
)

// The thumbnail, the preview, the animated preview and the storyboard's
// tiles come from one ffmpeg pass, the same pictures as one pass each
// would make; when that pass
// leaves one of them out (a thumbnail asked past the last frame, as a file
// whose duration lies makes it: ffmpeg exits 0 without it, or fails when
// the animation has no frame either), they are made one by one, with the
// thumbnail's fallback to the first frame, as before, and the storyboard
// is left to its own pass.
func TestStillsInOnePassAndOneByOne(t *testing.T) {
	t.Parallel()
	src := ffmpegtest.Encode(t, t.TempDir(), "in.mp4", 320, 180, 4, true, ffmpegtest.H264Options()...)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		lie      float64 // seconds the file claims, 0: the truth
		asked    float64 // the thumbnail's time
		oneByOne bool
		animated bool
	}{
		// The thumbnail at 3.5 s, the animation from 1 s: the pass reads
		// each from its own opening of the source.
		{"one pass", 0, 3.5, false, true},
		// The thumbnail at 5.9 s, past the last frame; the animation from 3 s.
		{"thumbnail past the end", 6, 5.9, true, true},
		// Both past the end: the pass fails; no animation.
		{"both past the end", 60, 59.9, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			work := t.TempDir()
			if err := os.WriteFile(filepath.Join(work, "input.mp4"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			in := ffmpeg.Input{Path: "input.mp4", Demuxer: ffmpeg.DemuxMOV}
			jail := ffmpeg.Jail{Dir: work}
			info, err := ffmpeg.Probe(context.Background(), in, ffmpeg.ProbeOptions{Jail: jail, Bounds: ffmpeg.DefaultBounds()})
			if err != nil {
				t.Fatal(err)
			}
			if tt.lie > 0 {
				info.Duration, info.Span = tt.lie, tt.lie
			}
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			opts := ffmpeg.RunOptions{Duration: info.Length(), Jail: jail}
			sb := ffmpeg.PlanStoryboard(info, 320, 180)
			animated, tiled, err := stills(context.Background(), log, in, work, info, &tt.asked, sb, opts)
			if err != nil {
				t.Fatal(err)
			}
			if animated != tt.animated || tiled == tt.oneByOne || strings.Contains(logs.String(), "stills one by one") != tt.oneByOne {
				t.Fatalf("animated %v, want %v; tiled %v; one by one: want %v; log:\n%s", animated, tt.animated, tiled, tt.oneByOne, logs.String())
			}
			if tiles, _ := filepath.Glob(filepath.Join(work, "storyboard_tile_*")); len(tiles) > 0 {
				t.Fatalf("tiles left: %v", tiles)
			}
			if _, err := os.Stat(filepath.Join(work, media.StoryboardImageName)); (err == nil) != tiled {
				t.Fatalf("sprite on disk: %v, want %v", err == nil, tiled)
			}
			f, err := os.Open(filepath.Join(work, media.ThumbnailName))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if img, err := jpeg.Decode(f); err != nil || img.Bounds().Dx() != 320 || img.Bounds().Dy() != 180 {
				t.Fatalf("thumbnail: %v %v", img.Bounds(), err)
			}
			preview, err := ffmpeg.ProbeHeader(context.Background(), ffmpeg.Input{Path: media.PreviewName, Demuxer: ffmpeg.DemuxMOV},
				ffmpeg.ProbeOptions{Jail: jail, Bounds: ffmpeg.DefaultBounds()})
			if err != nil || !preview.HasAudio || preview.Duration < 3.9 || preview.Duration > 4.1 {
				t.Fatalf("preview %+v: %v", preview, err)
			}
			_, err = os.Stat(filepath.Join(work, media.AnimatedName))
			if (err == nil) != tt.animated {
				t.Fatalf("animated preview on disk: %v, want %v", err == nil, tt.animated)
			}
			if tt.oneByOne {
				return
			}
			// One pass each makes the same thumbnail and animation.
			apart := t.TempDir()
			if err := os.WriteFile(filepath.Join(apart, "input.mp4"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			opts.Jail.Dir = apart
			at := ffmpeg.ThumbnailAt(info, &tt.asked)
			if err := thumbnail(context.Background(), in, apart, info, at, opts); err != nil {
				t.Fatal(err)
			}
			if !animatedPreview(context.Background(), log, in, apart, info, at, opts) {
				t.Fatal("no animated preview apart")
			}
			if err := storyboardPass(context.Background(), log, in, apart, info, plan{storyboard: sb}, opts); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{media.ThumbnailName, media.AnimatedName, media.StoryboardImageName} {
				a, errA := os.ReadFile(filepath.Join(work, name))
				b, errB := os.ReadFile(filepath.Join(apart, name))
				if errA != nil || errB != nil || !bytes.Equal(a, b) {
					t.Errorf("%s: one pass (%d bytes, %v) differs from its own pass (%d bytes, %v)", name, len(a), errA, len(b), errB)
				}
			}
		})
	}
}
