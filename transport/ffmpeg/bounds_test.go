package ffmpeg

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// TestProbeEnforcesBounds: hostile inputs (frames hours apart, a length
// claimed past the plan's, huge pictures, a high frame rate) are refused at
// probe time, by ffprobe alone (nothing decoded), with a message naming
// the limit.
func TestProbeEnforcesBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	free := DefaultBounds()
	free.MaxDuration, free.Plan = time.Hour, "free"
	business := DefaultBounds()
	business.MaxDuration, business.Plan = 12*time.Hour, "business"
	gap := ffmpegtest.GapMKV(t, dir, 36000)
	made := func(name string, args ...string) string {
		p := filepath.Join(dir, name)
		ffmpegOK(t, append(args, p)...)
		return p
	}
	// A video starting lead seconds after its audio.
	late := func(name, lead, video string) string {
		return made(name, "-f", "lavfi", "-i", "anullsrc=d=121", "-itsoffset", lead, "-f", "lavfi", "-i", video,
			"-map", "1:v", "-map", "0:a", "-t", "121", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "flac")
	}

	tests := []struct {
		name   string
		path   string
		bounds Bounds
		want   string // the message; "" accepts the file
	}{
		{"VFR gap of ten hours, free plan: the claim is over the plan", gap, free,
			"the video claims to run 10h0m1s; the free plan allows at most 1h0m0s"},
		{"VFR gap of ten hours, business plan: the gap", gap, business,
			"the video has a gap of 10h0m0s between two frames; at most 1m0s is accepted"},
		{"16000x16000 still", ffmpegtest.HugeMJPEG(t, t.TempDir(), 16000, 16000, 1), free,
			"the video is 16000×16000; the largest picture accepted is 7680×4320 (either way round)"},
		{"8192x8192 clip", ffmpegtest.HugeMJPEG(t, t.TempDir(), 8192, 8192, 3), free,
			"the video is 8192×8192; the largest picture accepted is 7680×4320 (either way round)"},
		{"portrait 4320x7680 fits", ffmpegtest.HugeMJPEG(t, t.TempDir(), 4320, 7680, 1), free, ""},
		{"7700 wide is over even landscape", ffmpegtest.HugeMJPEG(t, t.TempDir(), 7700, 2000, 1), free,
			"the video is 7700×2000; the largest picture accepted is 7680×4320 (either way round)"},
		{"240 fps", made("fast.mkv", "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=240", "-t", "0.5", "-c:v", "libx264", "-preset", "ultrafast"),
			free, "the video has 240 frames per second; the limit is 120"},
		{"the video two minutes after the audio", late("late.mkv", "120", "testsrc2=size=64x64:rate=10:d=1"), free,
			"the video starts 2m0s after the file does; at most 1m0s is accepted"},
		{"a 2160p60 video 15 s after its audio: its held picture costs too much", late("late4k.mkv", "15", "color=c=gray:s=3840x2160:r=60:d=0.1"), free,
			"the video starts 15s after the file does; at most 10s is accepted at its size and frame rate"},
		{"two hours on a one-hour plan", ffmpegtest.ClaimMKV(t, t.TempDir(), 2, 7200), free,
			"the video claims to run 2h0m0s; the free plan allows at most 1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Probe(context.Background(), input(t, tt.path), ProbeOptions{Bounds: tt.bounds})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Probe: %v", err)
				}
				return
			}
			if domain.KindOf(err) != domain.Unsupported || domain.MessageOf(err) != tt.want {
				t.Fatalf("Probe = %v\nwant unsupported %q", err, tt.want)
			}
		})
	}
}

// TestProbeMeasuresWhatTheFileHolds: a few seconds claiming an hour have
// a Length of those seconds, which is what every time cap is derived from.
func TestProbeMeasuresWhatTheFileHolds(t *testing.T) {
	t.Parallel()
	path := ffmpegtest.ClaimMKV(t, t.TempDir(), 2, 3600)
	info, err := Probe(context.Background(), input(t, path), ProbeOptions{Bounds: DefaultBounds()})
	if err != nil {
		t.Fatal(err)
	}
	if info.Duration != 3600 || math.Abs(info.Span-2) > 0.1 || math.Abs(info.Length()-2) > 0.1 || info.Frames != 50 {
		t.Errorf("Probe = %+v (Length %v), want the claimed 3600 s, a span and length of 2 s, 50 frames", info, info.Length())
	}
}

func TestInfoLength(t *testing.T) {
	for _, tt := range []struct {
		info Info
		want float64
	}{
		{Info{Duration: 10, Span: 10}, 10},
		{Info{Duration: 3600, Span: 2}, 2},
		{Info{Duration: 5, Span: 6}, 5},
		{Info{Duration: 5}, 5},
		{Info{Span: 4}, 4},
		// The audio starts 3 s before the video: the output runs from the
		// file's start to the video's end, never past the claim.
		{Info{Duration: 8, Span: 5, Source: Source{Lead: 3}}, 8},
		{Info{Duration: 60, Span: 5, Source: Source{Lead: 3}}, 8},
		{Info{Duration: 6, Span: 5, Source: Source{Lead: 3}}, 6},
		{Info{Span: 5, Source: Source{Lead: 3}}, 5},
	} {
		if got := tt.info.Length(); got != tt.want {
			t.Errorf("%+v.Length() = %v, want %v", tt.info, got, tt.want)
		}
	}
}

// TestProbeDecodesNoPictureOverTheLimit: ffprobe runs under the decoders'
// pixel cap, so reading the headers of an H.264 stream over the limit
// (here lowered to 480x360) decodes none of its pictures, and the refusal
// still names its size. (A 16000x16000 frame cost ffprobe 662 MB without
// the cap, 149 MB with it; see docs/performance.md.)
func TestProbeDecodesNoPictureOverTheLimit(t *testing.T) {
	t.Parallel()
	path := ffmpegtest.Clip(t, t.TempDir(), "big.mkv", 640, 480, 0.2, false)
	b := Bounds{MaxWidth: 480, MaxHeight: 360}
	capped, err := runProbe(context.Background(), Jail{}, headerArgs(input(t, path), b), func(r io.Reader) error {
		_, err := io.Copy(io.Discard, r)
		return err
	})
	if capped == "" {
		t.Errorf("ffprobe under the cap: %v, and no picture refused: it decoded one over the limit", err)
	}
	// A cover picture over the limit too: ffmpeg would decode it on
	// opening the file.
	cover := ffmpegtest.CoverFirstMP4(t, t.TempDir(), 640, 480)
	for _, p := range []string{path, cover} {
		_, err = Probe(context.Background(), input(t, p), ProbeOptions{Bounds: b})
		if want := "the video is 640×480; the largest picture accepted is 480×360 (either way round)"; domain.KindOf(err) != domain.Unsupported || domain.MessageOf(err) != want {
			t.Errorf("Probe(%s) = %v, want unsupported %q", filepath.Base(p), err, want)
		}
	}
}

// TestProbeLateStarts: where a file's first timestamp is not 0, or its
// video comes after its audio or ends before it, the duration is where
// the video ends on the output's timeline (which starts with the file);
// a file cut short keeps the claim it breaks.
func TestProbeLateStarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 4 s of video whose timestamps start at 2 s: ffmpeg's Matroska muxer
	// claims 6 s (where the file ends), mkvmerge would claim 4 (its length).
	clock := filepath.Join(dir, "clock.mkv")
	ffmpegOK(t, "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:d=4", "-c:v", "libx264", "-preset", "ultrafast", "-output_ts_offset", "2", clock)
	length := filepath.Join(dir, "length.mkv")
	data, err := os.ReadFile(clock)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, []byte{0x44, 0x89, 0x88}) // Duration, an 8-byte float in ms
	if at < 0 || math.Float64frombits(binary.BigEndian.Uint64(data[at+3:])) != 6000 {
		t.Fatalf("no 6000 ms Duration element in %s", clock)
	}
	binary.BigEndian.PutUint64(data[at+3:], math.Float64bits(4000))
	if err := os.WriteFile(length, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Audio, then the video 3 s later, in a Matroska file written to a
	// pipe: no duration claimed at all.
	piped := filepath.Join(dir, "piped.mkv")
	out, err := os.Create(piped)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=d=6.5", "-itsoffset", "3", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:d=3.5",
		"-map", "1:v", "-map", "0:a", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "flac", "-f", "matroska", "pipe:1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, stderr.String())
	}
	out.Close()
	// Audio running 5 s past a 3 s video, whole and cut in half: the
	// whole file's claim is its audio's, the cut one's the file's promise.
	runsOn := filepath.Join(dir, "runson.mkv")
	ffmpegOK(t, "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:d=3", "-f", "lavfi", "-i", "sine=d=8",
		"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "flac", runsOn)
	whole, err := os.ReadFile(runsOn)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.mkv")
	if err := os.WriteFile(cut, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path             string
		duration, length float64
	}{
		{clock, 4, 4},
		{length, 4, 4},
		{piped, 6.5, 6.5},
		{runsOn, 3, 3},
		{cut, 8, -1}, // (what half the bytes hold)
	} {
		info, err := Probe(context.Background(), input(t, tt.path), ProbeOptions{Bounds: DefaultBounds()})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(info.Duration-tt.duration) > 0.05 || tt.length >= 0 && math.Abs(info.Length()-tt.length) > 0.05 {
			t.Errorf("%s: duration %v, length %v, want %v and %v", filepath.Base(tt.path), info.Duration, info.Length(), tt.duration, tt.length)
		}
	}
}
