package ffmpeg

import (
	"context"
	"errors"
	"fmt"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// Holes that hostile files found in the probe and the runner (a cover
// picture as stream 0, a picture that grows after its headers, frames far
// apart, ffmpeg writing without a progress line): each test fails on the
// code that had them.

// TestCoverPictureFirstIsNeverEncoded: a cover picture that is stream 0
// (and larger than the video) is not what the ladder, the thumbnail or
// the preview encode: they map exactly the streams Probe checked.
func TestCoverPictureFirstIsNeverEncoded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ffmpegtest.CoverFirstMP4(t, dir, 640, 480)
	info, err := Probe(context.Background(), input(t, src), ProbeOptions{Bounds: DefaultBounds()})
	if err != nil {
		t.Fatal(err)
	}
	if info.VideoStream != 1 || !info.HasAudio || info.AudioStream != 2 || info.Width != 320 || info.Height != 240 {
		t.Fatalf("Probe = %+v, want video stream 1 (320x240), audio stream 2", info)
	}

	out := filepath.Join(dir, "hls")
	rungs := Ladder(info)
	if err := Run(context.Background(), HLSArgs(input(t, src), out, info, rungs), RunOptions{Duration: info.Duration}); err != nil {
		t.Fatalf("Run(HLSArgs): %v", err)
	}
	seg, err := probePath(context.Background(), ffmpegtest.Segment(t, filepath.Join(out, rungs[0].Name), "seg_00000.m4s"))
	if err != nil {
		t.Fatal(err)
	}
	if seg.Width != 320 || seg.Height != 240 || seg.Frames < 40 {
		t.Errorf("the %s rung is %dx%d with %d frames, want the 320x240 video's 50 frames, not the cover",
			rungs[0].Name, seg.Width, seg.Height, seg.Frames)
	}
	if !hasAudio(t, filepath.Join(out, AudioRendition, variantPlaylist)) {
		t.Error("the audio rendition has no audio")
	}

	thumb := filepath.Join(dir, "thumb.jpg")
	if err := Run(context.Background(), ThumbnailArgs(input(t, src), thumb, info), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(thumb)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cfg, err := jpeg.DecodeConfig(f); err != nil || cfg.Width != 320 || cfg.Height != 240 {
		t.Errorf("thumbnail %+v (%v), want 320x240 from the video", cfg, err)
	}

	preview := filepath.Join(dir, "preview.mp4")
	if err := Run(context.Background(), PreviewArgs(input(t, src), preview, info), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := probePath(context.Background(), preview)
	if err != nil {
		t.Fatal(err)
	}
	if p.Width != 320 || p.Height != 240 || p.Frames < 40 || !p.HasAudio {
		t.Errorf("preview = %+v, want the 320x240 video's frames and audio", p)
	}
}

func hasAudio(t *testing.T, playlist string) bool {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", playlist).Output()
	return err == nil && strings.Contains(string(out), "audio")
}

// TestGrowingPicture: a stream whose headers announce 320x240 and whose
// later frames are 640x480. Over the picture limit (here lowered to
// 480x360, so that the "huge" frames stay cheap) it is refused with
// ErrPictureTooLarge, its big frames never decoded; within the limit the
// big frames are scaled down to the rung. Either way no output frame is
// larger than its rendition.
func TestGrowingPicture(t *testing.T) {
	t.Parallel()
	small := Bounds{MaxWidth: 480, MaxHeight: 360, MaxFrameRate: 120, MaxGap: time.Minute}
	for _, tt := range []struct {
		ext     string
		bounds  Bounds
		refused bool
	}{
		{"ts", small, true},
		{"mkv", small, true},
		{"mp4", small, true},
		{"ts", DefaultBounds(), false},
	} {
		t.Run(fmt.Sprintf("%s refused %v", tt.ext, tt.refused), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := ffmpegtest.GrowingStream(t, dir, tt.ext, 640, 480)
			info, err := Probe(context.Background(), input(t, src), ProbeOptions{Bounds: tt.bounds})
			if err != nil {
				t.Fatalf("Probe: %v", err)
			}
			if info.Width != 320 || info.Height != 240 {
				t.Fatalf("Probe = %+v, want the 320x240 the headers announce", info)
			}
			out := filepath.Join(dir, "hls")
			rungs := Ladder(info)
			err = Run(context.Background(), HLSArgs(input(t, src), out, info, rungs), RunOptions{Duration: info.Length()})
			if tt.refused {
				if !errors.Is(err, ErrPictureTooLarge) {
					t.Errorf("Run(HLSArgs) = %v, want ErrPictureTooLarge", err)
				}
				if msg := tt.bounds.FrameTooLarge("transcode", err).Error(); !strings.Contains(msg, "480×360") {
					t.Errorf("FrameTooLarge = %q, want the limit named", msg)
				}
			} else if err != nil {
				t.Errorf("Run(HLSArgs) = %v, want success", err)
			}
			// Whatever was written holds only frames of the rung's size.
			segs := ffmpegtest.Segments(t, filepath.Join(out, rungs[0].Name))
			frames := 0
			for _, seg := range segs {
				sizes, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v",
					"-show_entries", "frame=width,height", "-of", "csv=p=0", seg).Output()
				if err != nil {
					t.Fatal(err)
				}
				for _, line := range strings.Fields(string(sizes)) {
					frames++
					if strings.TrimRight(line, ",") != fmt.Sprintf("%d,%d", rungs[0].Width, rungs[0].Height) {
						t.Fatalf("%s has a %s frame, want only %dx%d", seg, line, rungs[0].Width, rungs[0].Height)
					}
				}
			}
			if !tt.refused && frames < 45 {
				t.Errorf("%d frames readable, want the two seconds' 50, each scaled to the rung", frames)
			}
		})
	}
}

// TestSparseFramesAreEncodedAtTheirOwnRate: 4 frames 20 s apart at a
// nominal 30 fps become about 1 frame a second of output, not 30: the
// 1 800 frames ffmpeg would otherwise repeat into the gaps.
func TestSparseFramesAreEncodedAtTheirOwnRate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ffmpegtest.SparseMKV(t, dir, 320, 180, 4, 20)
	info, err := Probe(context.Background(), input(t, src), ProbeOptions{Bounds: DefaultBounds()})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hls")
	rungs := Ladder(info)
	if err := Run(context.Background(), HLSArgs(input(t, src), out, info, rungs), RunOptions{Duration: info.Length()}); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command("ffprobe", "-v", "error", "-count_packets", "-select_streams", "v",
		"-show_entries", "stream=nb_read_packets", "-of", "csv=p=0",
		filepath.Join(out, rungs[0].Name, variantPlaylist)).Output()
	if err != nil {
		t.Fatal(err)
	}
	frames, err := strconv.Atoi(strings.TrimSpace(strings.Split(string(got), "\n")[0]))
	if err != nil {
		t.Fatalf("frame count %q: %v", got, err)
	}
	if limit := int(info.Length()) + 10; frames < 4 || frames > limit {
		t.Errorf("%d output frames for %d frames over %.0f s, want at most %d (1 a second)", frames, info.Frames, info.Length(), limit)
	}
}

// TestRunCountsOutputGrowthAsProgress: ffmpeg printing no progress line
// while it writes its output (as when its filters repeat a frame across a
// gap) is not a stall; ffmpeg writing nothing still is (TestRunWatchdog).
func TestRunCountsOutputGrowthAsProgress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// No -progress: not one line on stdout. -re makes it take about 12 s
	// of wall time, more than twice the 5 s stall timeout, writing all
	// along. The timeout leaves ffmpeg time to start on a loaded machine,
	// where loading its libraries can take over 2 s: a stall before the
	// first byte, which this test is not about.
	args := []string{"-y", "-nostdin", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc2=size=64x64:rate=25", "-t", "12",
		"-f", "mpegts", "-flush_packets", "1", filepath.Join(dir, "out.ts")}
	err := Run(context.Background(), args, RunOptions{StallTimeout: 5 * time.Second, MaxRuntime: time.Minute, OutputDir: dir})
	if err != nil {
		t.Fatalf("Run = %v, want success: the output grew all along", err)
	}
}
