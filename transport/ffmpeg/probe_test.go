package ffmpeg

import (
	"context"
	"crypto/rand"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

func TestProbeRealFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mp4 := makeClip(t, dir, "source.mp4", clip{W: 320, H: 180, Seconds: 2, Audio: true})

	tests := []struct {
		name    string
		make    func(t *testing.T) string
		want    Info // Duration compared within 0.1 s
		wantSrc durationSource
	}{
		{
			name:    "mp4 with audio: stream duration",
			make:    func(t *testing.T) string { return mp4 },
			want:    Info{Duration: 2, Width: 320, Height: 180, HasAudio: true, AudioStream: 1, FrameRate: 25, EncodeRate: 25, VideoCodec: "h264"},
			wantSrc: fromStream,
		},
		{
			name: "mkv: no stream duration, format duration",
			make: func(t *testing.T) string {
				out := filepath.Join(t.TempDir(), "copy.mkv")
				ffmpegOK(t, "-i", mp4, "-c", "copy", out)
				return out
			},
			want:    Info{Duration: 2, Width: 320, Height: 180, HasAudio: true, AudioStream: 1, FrameRate: 25, EncodeRate: 25, VideoCodec: "h264"},
			wantSrc: fromFormat,
		},
		{
			name: "webm vp8 opus: format duration",
			make: func(t *testing.T) string {
				return makeClip(t, t.TempDir(), "source.webm", clip{W: 320, H: 180, Seconds: 2, Audio: true,
					Codecs: []string{"-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "200k", "-c:a", "libopus"}})
			},
			want:    Info{Duration: 2, Width: 320, Height: 180, HasAudio: true, AudioStream: 1, FrameRate: 25, EncodeRate: 25, VideoCodec: "vp8"},
			wantSrc: fromFormat,
		},
		{
			// The muxer cannot seek back to write the duration, and the
			// input (a remux without -t) gave it none up front.
			name: "mkv written to a pipe: no duration at all, the scanned span",
			make: func(t *testing.T) string {
				out := filepath.Join(t.TempDir(), "piped.mkv")
				ffmpegToFile(t, out, "-i", mp4, "-c", "copy", "-f", "matroska", "pipe:1")
				return out
			},
			want:    Info{Duration: 2, Width: 320, Height: 180, HasAudio: true, AudioStream: 1, FrameRate: 25, EncodeRate: 25, VideoCodec: "h264"},
			wantSrc: fromScan,
		},
		{
			// ffmpeg 5.1 writes rotate=90 as a +90° (counter-clockwise)
			// display matrix, which is 270° clockwise.
			name:    "rotation metadata: displayed size",
			make:    func(t *testing.T) string { return rotated(t, mp4, t.TempDir(), "rotated.mp4") },
			want:    Info{Duration: 2, Width: 180, Height: 320, Rotation: 270, HasAudio: true, AudioStream: 1, FrameRate: 25, EncodeRate: 25, VideoCodec: "h264"},
			wantSrc: fromStream,
		},
		{
			name: "video only",
			make: func(t *testing.T) string {
				return makeClip(t, t.TempDir(), "silent.mp4", clip{W: 200, H: 100, Seconds: 1})
			},
			want:    Info{Duration: 1, Width: 200, Height: 100, FrameRate: 25, EncodeRate: 25, VideoCodec: "h264"},
			wantSrc: fromStream,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := tt.make(t)
			got, src, err := probe(context.Background(), input(t, path), ProbeOptions{})
			if err != nil {
				t.Fatalf("probe: %v", err)
			}
			if src != tt.wantSrc {
				t.Errorf("duration from %s, want %s", src, tt.wantSrc)
			}
			if math.Abs(got.Duration-tt.want.Duration) > 0.1 {
				t.Errorf("Duration = %v, want %v ± 0.1", got.Duration, tt.want.Duration)
			}
			// The scan sees every frame of the 25 fps clip, evenly spaced.
			if math.Abs(got.Span-tt.want.Duration) > 0.1 || got.Frames != int(tt.want.Duration*25) || math.Abs(got.MaxGap-0.04) > 0.005 {
				t.Errorf("scan: %d frames over %v s, largest gap %v; want %d over %v, gap 0.04",
					got.Frames, got.Span, got.MaxGap, int(tt.want.Duration*25), tt.want.Duration)
			}
			got.Duration, got.Frames, got.Span, got.MaxGap = tt.want.Duration, 0, 0, 0
			got.Source = Source{} // what the fast path reads: TestChooseFastPath
			if got != tt.want {
				t.Errorf("Probe = %+v\nwant    %+v", got, tt.want)
			}
			// Probe is probe without the source.
			if info, err := probePath(context.Background(), path); err != nil || info.Width != got.Width {
				t.Errorf("Probe = %+v, %v", info, err)
			}
			// ProbeHeader reads the same streams and format, and scans no
			// packet.
			head, err := ProbeHeader(context.Background(), input(t, path), ProbeOptions{})
			if err != nil || head.Frames != 0 || head.Span != 0 || head.Width != got.Width || head.Height != got.Height ||
				head.VideoCodec != got.VideoCodec || head.HasAudio != got.HasAudio {
				t.Errorf("ProbeHeader = %+v, %v", head, err)
			}
		})
	}
}

func TestProbeRejectsWhatIsNotAVideo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	audioOnly := filepath.Join(dir, "tone.m4a")
	ffmpegOK(t, "-f", "lavfi", "-i", "sine=frequency=440", "-t", "1", "-c:a", "aac", audioOnly)

	noise := make([]byte, 64<<10)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	random := filepath.Join(dir, "random.mp4")
	writeFile(t, random, noise)
	randomBin := filepath.Join(dir, "random.bin")
	writeFile(t, randomBin, noise)
	textWebm := filepath.Join(dir, "text.webm")
	writeFile(t, textWebm, []byte("hello, this is not a video\n"))

	// ffmpeg writes the moov atom at the end, so the first half has none.
	whole := makeClip(t, dir, "whole.mp4", clip{W: 320, H: 180, Seconds: 2, Audio: true})
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.mp4")
	writeFile(t, truncated, data[:len(data)/2])

	tests := []struct {
		name    string
		path    string
		message string
		cause   string // in the error chain, for the logs
	}{
		{"audio only", audioOnly, "no video stream found", ""},
		// Names do not matter: the bytes are no container kino reads.
		{"random bytes named .mp4", random, NotVideoMessage, ""},
		{"random bytes named .bin", randomBin, NotVideoMessage, ""},
		{"text named .webm", textWebm, NotVideoMessage, ""},
		{"truncated mp4", truncated, "the file is truncated or corrupt", "moov atom not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := probePath(context.Background(), tt.path)
			if kind := domain.KindOf(err); kind != domain.Unsupported {
				t.Fatalf("Probe error %v has kind %v, want unsupported", err, kind)
			}
			if msg := domain.MessageOf(err); msg != tt.message {
				t.Errorf("message %q, want %q", msg, tt.message)
			}
			if !strings.Contains(err.Error(), tt.cause) {
				t.Errorf("error %q does not carry ffprobe's %q", err, tt.cause)
			}
		})
	}
}

func TestProbeTransientFailures(t *testing.T) {
	dir := t.TempDir()
	mp4 := makeClip(t, dir, "source.mp4", clip{W: 64, H: 64, Seconds: 1})

	t.Run("missing file", func(t *testing.T) {
		_, err := probePath(context.Background(), filepath.Join(dir, "nope.mp4"))
		if err == nil || domain.KindOf(err) != domain.Other || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Probe(missing) = %v (kind %v), want a plain not-exist error", err, domain.KindOf(err))
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := probePath(ctx, mp4)
		if !errors.Is(err, context.Canceled) || domain.KindOf(err) != domain.Other {
			t.Errorf("Probe(cancelled) = %v (kind %v), want plain context.Canceled", err, domain.KindOf(err))
		}
	})
	t.Run("no ffprobe binary", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := probePath(context.Background(), mp4)
		if !errors.Is(err, exec.ErrNotFound) || domain.KindOf(err) != domain.Other {
			t.Errorf("Probe without ffprobe = %v (kind %v), want plain exec.ErrNotFound", err, domain.KindOf(err))
		}
	})
}

// TestParseProbe covers ffprobe outputs that are awkward to generate here:
// a phone's display matrix, older ffprobes' rotate tag, cover art, NTSC
// rates.
func TestParseProbe(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		want    Info
		wantSrc durationSource
		wantErr string
	}{
		{
			name: "phone portrait: display matrix -90 is 90 clockwise",
			json: `{"streams":[{"codec_type":"video","codec_name":"h264","width":1920,"height":1080,
				"avg_frame_rate":"30000/1001","r_frame_rate":"30/1","duration":"12.345",
				"side_data_list":[{"side_data_type":"Display Matrix","rotation":-90}]},
				{"codec_type":"audio","codec_name":"aac","duration":"12.3"}],"format":{"duration":"12.4"}}`,
			want:    Info{Duration: 12.345, Width: 1080, Height: 1920, Rotation: 90, HasAudio: true, FrameRate: 29.97, VideoCodec: "h264"},
			wantSrc: fromStream,
		},
		{
			name: "legacy rotate tag",
			json: `{"streams":[{"codec_type":"video","codec_name":"h264","width":1280,"height":720,
				"avg_frame_rate":"0/0","r_frame_rate":"24000/1001","tags":{"rotate":"90"}}],"format":{"duration":"3.5"}}`,
			want:    Info{Duration: 3.5, Width: 720, Height: 1280, Rotation: 90, FrameRate: 23.976, VideoCodec: "h264"},
			wantSrc: fromFormat,
		},
		{
			name: "upside down keeps its size",
			json: `{"streams":[{"codec_type":"video","codec_name":"hevc","width":1280,"height":720,"avg_frame_rate":"25/1",
				"duration":"N/A","side_data_list":[{"side_data_type":"Display Matrix","rotation":180}]}],"format":{}}`,
			want:    Info{Width: 1280, Height: 720, Rotation: 180, FrameRate: 25, VideoCodec: "hevc"},
			wantSrc: fromNowhere,
		},
		{
			name: "HDV: 1440×1080 with 4:3 pixels is shown 1920 wide",
			json: `{"streams":[{"codec_type":"video","codec_name":"h264","width":1440,"height":1080,"sample_aspect_ratio":"4:3",
				"avg_frame_rate":"25/1","duration":"2"}],"format":{}}`,
			want:    Info{Duration: 2, Width: 1920, Height: 1080, FrameRate: 25, VideoCodec: "h264"},
			wantSrc: fromStream,
		},
		{
			name: "DVD 4:3, rotated: 720×480 with 8:9 pixels is 640×480, then turned",
			json: `{"streams":[{"codec_type":"video","codec_name":"mpeg2video","width":720,"height":480,"sample_aspect_ratio":"8:9",
				"avg_frame_rate":"30000/1001","duration":"2","tags":{"rotate":"90"}}],"format":{}}`,
			want:    Info{Duration: 2, Width: 480, Height: 640, Rotation: 90, FrameRate: 29.97, VideoCodec: "mpeg2video"},
			wantSrc: fromStream,
		},
		{
			name: "unset sample aspect ratio",
			json: `{"streams":[{"codec_type":"video","codec_name":"h264","width":641,"height":360,"sample_aspect_ratio":"0:1",
				"avg_frame_rate":"25/1","duration":"2"}],"format":{}}`,
			want:    Info{Duration: 2, Width: 641, Height: 360, FrameRate: 25, VideoCodec: "h264"},
			wantSrc: fromStream,
		},
		{
			name: "MPEG-TS: the duration counts from its start",
			json: `{"streams":[{"codec_type":"video","codec_name":"h264","width":320,"height":180,"avg_frame_rate":"30/1"}],
				"format":{"format_name":"mpegts","start_time":"3001.400000","duration":"5.000000"}}`,
			want:    Info{Duration: 5, Width: 320, Height: 180, FrameRate: 30, VideoCodec: "h264"},
			wantSrc: fromFormat,
		},
		{
			name: "MP4 whose audio starts first: the video's own duration ends later",
			json: `{"streams":[{"codec_type":"video","codec_name":"h264","width":320,"height":180,"avg_frame_rate":"10/1",
				"start_time":"2.5","duration":"3.5"}],"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2","start_time":"0.000000","duration":"6.0"}}`,
			want:    Info{Duration: 6, Width: 320, Height: 180, FrameRate: 10, VideoCodec: "h264"},
			wantSrc: fromStream,
		},
		{
			name: "cover art is not a video",
			json: `{"streams":[{"codec_type":"audio","codec_name":"mp3"},
				{"codec_type":"video","codec_name":"mjpeg","width":500,"height":500,"disposition":{"attached_pic":1}}],
				"format":{"duration":"200"}}`,
			wantErr: "no video stream found",
		},
		{
			name:    "undecodable video stream",
			json:    `{"streams":[{"codec_type":"video","width":0,"height":0}],"format":{"duration":"2"}}`,
			wantErr: "no video stream found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, src, _, err := parseProbe([]byte(tt.json))
			if tt.wantErr != "" {
				if domain.KindOf(err) != domain.Unsupported || domain.MessageOf(err) != tt.wantErr {
					t.Fatalf("parseProbe error = %v, want unsupported %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || src != tt.wantSrc {
				t.Errorf("parseProbe = %+v from %s\nwant        %+v from %s", got, src, tt.want, tt.wantSrc)
			}
		})
	}
}

// TestDisplayedWidth: a sample aspect ratio widens or narrows the
// picture, even; square, unset, broken or absurd ratios (beyond 4:1
// either way) leave it.
func TestDisplayedWidth(t *testing.T) {
	for _, tt := range []struct {
		w    int
		sar  string
		want int
	}{
		{1440, "4:3", 1920}, {720, "64:45", 1024}, {720, "8:9", 640}, {352, "12:11", 384}, {641, "1:1", 641},
		{641, "0:1", 641}, {641, "N/A", 641}, {641, "", 641}, {641, "4:0", 641}, {641, "-4:3", 641}, {641, "4:3:1", 641},
		{640, "4:1", 2560}, {640, "1:4", 160}, {640, "100:1", 640}, {640, "1:100", 640},
		{7680, "9223372036854775807:1", 7680}, {7680, "1:9223372036854775807", 7680},
	} {
		if got := displayedWidth(tt.w, tt.sar); got != tt.want {
			t.Errorf("displayedWidth(%d, %q) = %d, want %d", tt.w, tt.sar, got, tt.want)
		}
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
